//! Property-based fuzzing of every reader of untrusted input: the Relay text parser, the
//! pattern parser, the ONNX importer, the `.npz` reader, the artifact reader, the check of
//! native code before it loads (truncated and symbol-damaged shared objects, then loaded) and
//! the plugin options of the shipped plugins. Each reader gets
//! seed inputs mutated (byte flips, truncation, inserted and duplicated spans) and arbitrary
//! bytes, and must return a value or an error: no panic, no abort, no allocation larger than
//! the memory budget (set low here, so an unchecked size shows up as a refusal, not as an
//! exhausted machine).
//!
//! The number of cases is bounded (`CASES` per reader; proptest's `PROPTEST_CASES` overrides
//! it), so the test runs in the normal test suite. The same readers are cargo-fuzz targets
//! under `fuzz/` for open-ended runs (fuzz/README.md).

use std::collections::BTreeMap;
use std::io::Cursor;
use std::path::Path;
use std::sync::Arc;

use byoc_artifact::io::{read_npz_from, write_npz};
use byoc_artifact::Artifact;
use byoc_exec::plugin::{compile_externals, ReferenceRuntime, Runtimes};
use byoc_ir::infer_types;
use byoc_ir::memory::with_budget;
use byoc_ir::text::parse_module;
use byoc_ir::Tensor;
use byoc_onnx::{import_bytes, ImportOptions};
use byoc_patterns::Pattern;
use byoc_sdk::native::{check_shared_object, open};
use byoc_sdk::CompileOptions;
use proptest::prelude::*;

/// Cases per reader.
const CASES: u32 = 256;
/// The memory budget during the test: larger tensors are refused.
const BUDGET: u64 = 64 << 20;

/// One edit of a byte string; positions are taken modulo its length.
#[derive(Clone, Debug)]
enum Edit {
    Flip(usize, u8),
    Truncate(usize),
    Insert(usize, Vec<u8>),
    Duplicate(usize, usize),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        4 => (any::<usize>(), 1..=255u8).prop_map(|(at, x)| Edit::Flip(at, x)),
        1 => any::<usize>().prop_map(Edit::Truncate),
        1 => (any::<usize>(), proptest::collection::vec(any::<u8>(), 1..16))
            .prop_map(|(at, bytes)| Edit::Insert(at, bytes)),
        1 => (any::<usize>(), 1..64usize).prop_map(|(at, len)| Edit::Duplicate(at, len)),
    ]
}

fn apply(seed: &[u8], edits: &[Edit]) -> Vec<u8> {
    let mut b = seed.to_vec();
    for e in edits {
        let n = b.len().max(1);
        match e {
            Edit::Flip(at, x) => {
                if let Some(v) = b.get_mut(at % n) {
                    *v ^= x;
                }
            }
            Edit::Truncate(at) => b.truncate(at % n),
            Edit::Insert(at, bytes) => {
                let at = (at % n).min(b.len());
                b.splice(at..at, bytes.iter().copied());
            }
            Edit::Duplicate(at, len) => {
                let start = (at % n).min(b.len());
                let end = (start + len).min(b.len());
                let span = b[start..end].to_vec();
                b.splice(end..end, span);
            }
        }
    }
    b
}

/// Mutations of `seeds`, and arbitrary bytes.
fn inputs(seeds: Vec<Vec<u8>>) -> impl Strategy<Value = Vec<u8>> {
    let seeds = Arc::new(seeds);
    prop_oneof![
        4 => (any::<prop::sample::Index>(), proptest::collection::vec(edit(), 1..8))
            .prop_map(move |(i, edits)| {
                let seed: &Vec<u8> = i.get(&seeds[..]);
                apply(seed, &edits)
            }),
        1 => proptest::collection::vec(any::<u8>(), 0..512),
    ]
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(CASES),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

fn read(path: &str) -> Vec<u8> {
    std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).expect("seed file")
}

fn text_seeds() -> Vec<Vec<u8>> {
    vec![
        read("examples/models/small_cnn.relay"),
        read("tests/data/plugins/faulty.relay"),
        b"def @main(%x: Tensor[(2, 3), float32]) { full(1f, shape=[2, 3], dtype=\"float32\") }"
            .to_vec(),
    ]
}

fn npz_seed() -> Vec<u8> {
    let dir = std::env::temp_dir().join(format!("byoc-fuzz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("seed.npz");
    let mut tensors = BTreeMap::new();
    tensors.insert(
        "x".to_string(),
        Tensor::from_vec(vec![2, 3], vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]).expect("tensor"),
    );
    tensors.insert(
        "i".to_string(),
        Tensor::from_vec(vec![4], vec![1i64, -2, 3, 4]).expect("tensor"),
    );
    write_npz(&path, &tensors).expect("write seed");
    let bytes = std::fs::read(&path).expect("read seed");
    std::fs::remove_dir_all(&dir).expect("remove temp dir");
    bytes
}

fn artifact_seed() -> Vec<u8> {
    let text = r#"
def @acc_0(%a: Tensor[(2, 2), float32], Compiler="acc", global_symbol="acc_0", Primitive=1) {
  nn.relu(add(%a, const((2, 2), float32, [1f, 2f, 3f, 4f])))
}
def @main(%x: Tensor[(2, 2), float32]) {
  %0 = multiply(%x, const((2, 2), float32, [0.5f, -1f, 2f, 3f]));
  @acc_0(%0)
}
"#;
    let mut m = parse_module(text).expect("seed module");
    infer_types(&mut m).expect("seed types");
    let ext = compile_externals(&m, &Runtimes::reference_for(&m), &CompileOptions::new())
        .expect("seed compiles");
    Artifact::build(&m, &ext)
        .and_then(|a| a.to_bytes())
        .expect("seed artifact")
}

/// A shared object built here with the system C compiler, and where its dynamic string table
/// (the names of the symbols it exports and of those the loader must bind) lies in it. Its
/// entry calls libc's `labs` through the PLT, so loading has a symbol to bind.
fn native_seed() -> &'static (Vec<u8>, std::ops::Range<usize>) {
    use object::{Object, ObjectSection};
    static SEED: std::sync::OnceLock<(Vec<u8>, std::ops::Range<usize>)> =
        std::sync::OnceLock::new();
    SEED.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("byoc-fuzz-native-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let (c, so) = (dir.join("entry.c"), dir.join("entry.so"));
        std::fs::write(
            &c,
            "long labs(long);\nlong byoc_entry(long x) { return labs(x) + 1; }\n",
        )
        .expect("write the source");
        let status = std::process::Command::new("cc")
            .args(["-shared", "-fPIC", "-O1", "-fno-builtin", "-o"])
            .arg(&so)
            .arg(&c)
            .status()
            .expect("the C compiler runs (cc)");
        assert!(status.success(), "cc failed");
        let bytes = std::fs::read(&so).expect("read the library");
        std::fs::remove_dir_all(&dir).expect("remove temp dir");
        let file = object::File::parse(bytes.as_slice()).expect("an ELF file");
        let (start, size) = file
            .section_by_name(".dynstr")
            .and_then(|s| s.file_range())
            .expect("a dynamic string table");
        let range = usize::try_from(start).unwrap()..usize::try_from(start + size).unwrap();
        (bytes, range)
    })
}

/// Damage to a shared object: a cut at a point, or a byte of a symbol name changed.
#[derive(Clone, Debug)]
enum NativeEdit {
    Truncate(prop::sample::Index),
    Rename(prop::sample::Index, u8),
}

fn native_edit() -> impl Strategy<Value = NativeEdit> {
    prop_oneof![
        (any::<prop::sample::Index>()).prop_map(NativeEdit::Truncate),
        (any::<prop::sample::Index>(), 1..=255u8).prop_map(|(at, x)| NativeEdit::Rename(at, x)),
    ]
}

/// Libraries written for loading, each under its own name (the loader caches by path).
static LOADED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Plugin option keys: every declared key of the csource plugin, the shared `threads`,
/// undeclared keys of its scope, another plugin's, and arbitrary text.
fn option_key() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(vec![
            "csource.cc", "csource.cflags", "csource.fast_math", "csource.march_native",
            "csource.embed_constants", "csource.fuse", "vta.config", "vta.virtual_threads",
            "threads", "csource.nope", "vta.", "csource", "other.key", "",
        ])
        .prop_map(String::from),
        1 => "[a-z.]{0,12}",
    ]
}

/// Plugin option values: flags, counts (and what only looks like one), compiler flags that
/// break the ABI, files that do not exist or never end, and arbitrary text.
fn option_value() -> impl Strategy<Value = String> {
    prop_oneof![
        2 => prop::sample::select(vec![
            "true", "false", "TRUE", "1", "0", "2", "-1", "18446744073709551616", "99999",
            "-O3", "-Dfloat=double", "-D malloc=x", "-m32", "-fsanitize=address", "-include",
            "-U", "/nonexistent.json", "/dev/zero", "", " ",
        ])
        .prop_map(String::from),
        1 => any::<u64>().prop_map(|n| n.to_string()),
        1 => ".{0,24}",
    ]
}

/// The C the csource plugin generates uses these names; flags are checked against them.
const GENERATED_C: &str =
    "#include <stdint.h>\nint byoc_entry(float *in, float *out) { return 0; }";

/// The native seed itself passes the check, loads and runs, so that the property below tries
/// the loader on damage the check lets through, not only on refusals.
#[test]
fn the_native_seed_loads_and_runs() {
    let (seed, dynstr) = native_seed();
    assert!(!dynstr.is_empty());
    assert_eq!(check_shared_object(seed, &["byoc_entry"]), Ok(()));
    let path = std::env::temp_dir().join(format!("byoc-fuzz-seed-{}.so", std::process::id()));
    std::fs::write(&path, seed).expect("write the library");
    // SAFETY: the library compiled by `native_seed`, unchanged.
    let lib = unsafe { open(&path) }.expect("the seed loads");
    std::fs::remove_file(&path).expect("remove the library");
    // SAFETY: `byoc_entry` is `long byoc_entry(long)`.
    let entry = unsafe { lib.get::<extern "C" fn(i64) -> i64>(b"byoc_entry") }.expect("entry");
    assert_eq!(entry(-41), 42);
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn the_text_parser_never_panics(bytes in inputs(text_seeds())) {
        let text = String::from_utf8_lossy(&bytes);
        with_budget(Some(BUDGET), || {
            if let Ok(mut m) = parse_module(&text) {
                let _ = infer_types(&mut m);
            }
        });
    }

    #[test]
    fn the_pattern_parser_never_panics(bytes in inputs(vec![
        b"nn.relu(nn.bias_add(nn.conv2d(*, *), *))".to_vec(),
        b"nn.conv2d(*, *){padding=[1, 1, 1, 1], channels=4}".to_vec(),
    ])) {
        let _ = String::from_utf8_lossy(&bytes).parse::<Pattern>();
    }

    #[test]
    fn the_onnx_importer_never_panics(bytes in inputs(vec![
        read("tests/data/onnx/conv/model.onnx"),
        read("tests/data/onnx/norm_pool/model.onnx"),
    ])) {
        with_budget(Some(BUDGET), || {
            let _ = import_bytes(&bytes, &ImportOptions::default());
        });
    }

    #[test]
    fn the_npz_reader_never_panics(bytes in inputs(vec![npz_seed()])) {
        let _ = with_budget(Some(BUDGET), || {
            read_npz_from(Cursor::new(bytes), Path::new("fuzz.npz"), &BTreeMap::new())
        });
    }

    #[test]
    fn the_artifact_reader_never_panics(bytes in inputs(vec![artifact_seed()])) {
        with_budget(Some(BUDGET), || {
            if let Ok(a) = Artifact::from_bytes(&bytes) {
                let _ = a.load_externals(
                    |_| Ok::<_, String>(Arc::new(ReferenceRuntime)),
                    &CompileOptions::new(),
                );
            }
        });
    }

    /// A truncated shared object, or one with damaged symbol names, is refused by the check
    /// (its segments, its exports) or by the loader (a name it cannot bind), or loads and runs:
    /// never a fault in the loader or at the first call.
    #[test]
    fn truncated_and_symbol_damaged_native_code_is_refused_or_runs(
        edits in proptest::collection::vec(native_edit(), 1..4)
    ) {
        let (seed, dynstr) = native_seed();
        let mut bytes = seed.clone();
        for edit in &edits {
            match edit {
                NativeEdit::Truncate(at) => bytes.truncate(at.index(bytes.len() + 1)),
                NativeEdit::Rename(at, x) => {
                    let at = dynstr.start + at.index(dynstr.len());
                    if let Some(b) = bytes.get_mut(at) {
                        *b ^= x;
                    }
                }
            }
        }
        if check_shared_object(&bytes, &["byoc_entry"]).is_ok() {
            let n = LOADED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let path = std::env::temp_dir()
                .join(format!("byoc-fuzz-load-{}-{n}.so", std::process::id()));
            std::fs::write(&path, &bytes).expect("write the library");
            // SAFETY: the library is the one compiled above, its code untouched: only its
            // symbol names or the part past its segments were damaged, which the check and
            // the loader (binding every symbol now) must refuse or accept whole.
            let loaded = unsafe { open(&path) };
            std::fs::remove_file(&path).expect("remove the library");
            if let Ok(lib) = loaded {
                // SAFETY: `byoc_entry` is `long byoc_entry(long)` in the source above.
                let entry = unsafe { lib.get::<extern "C" fn(i64) -> i64>(b"byoc_entry") };
                if let Ok(entry) = entry {
                    prop_assert_eq!(entry(-41), 42);
                }
            }
        }
    }

    /// Any set of plugin options is parsed or refused by the csource plugin, never a panic
    /// (the vta plugin's tests check its options: a test binary links one plugin crate, since
    /// each defines the plugin entry symbol); an undeclared key of a plugin's own scope and a flag that is neither `true` nor
    /// `false` are refused naming the key, and flags that break the ABI are refused.
    #[test]
    fn plugin_options_are_parsed_or_refused(
        entries in proptest::collection::vec((option_key(), option_value()), 0..6)
    ) {
        let mut options = CompileOptions::new();
        for (k, v) in &entries {
            options = options.with(k.clone(), v.clone());
        }
        with_budget(Some(BUDGET), || -> Result<(), TestCaseError> {
            let csource = byoc_plugin_csource::Settings::from_options(&options);
            let declared = byoc_plugin_csource::options_schema();
            // The keys the plugin must refuse: undeclared in its scope, or flags of bad value.
            let wrong: Vec<&String> = options
                .values
                .iter()
                .filter(|(k, v)| {
                    k.strip_prefix("csource.").is_some_and(|name| {
                        match declared.specs().iter().find(|s| s.name == name) {
                            None => true,
                            Some(spec) => {
                                spec.kind == byoc_sdk::OptionKind::Flag
                                    && v.as_str() != "true"
                                    && v.as_str() != "false"
                            }
                        }
                    })
                })
                .map(|(k, _)| k)
                .collect();
            match &csource {
                Ok(settings) => {
                    prop_assert!(wrong.is_empty(), "{:?}", entries);
                    let abi = byoc_plugin_csource::cflags::check_flags(
                        &settings.compiler.flags,
                        GENERATED_C,
                    );
                    if settings.compiler.flags.iter().any(|f| f == "-m32" || f == "-Dfloat=double") {
                        prop_assert!(abi.is_err(), "{:?}", settings.compiler.flags);
                    }
                }
                Err(e) => {
                    if !wrong.is_empty() {
                        let message = e.to_string();
                        prop_assert!(wrong.iter().any(|k| message.contains(k.as_str())), "{message}");
                    }
                }
            }
            let _ = byoc_sdk::check_scopes(&options, &["csource", "vta"]);
            Ok(())
        })?;
    }

}
