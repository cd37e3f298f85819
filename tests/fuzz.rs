//! Property-based fuzzing of every reader of untrusted input: the Relay text parser, the
//! pattern parser, the ONNX importer, the `.npz` reader and the artifact reader. Each gets
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
}
