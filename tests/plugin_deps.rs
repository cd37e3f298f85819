//! What a plugin links. The compiler is a folder of crates, one concept each; a plugin depends
//! on byoc-sdk (and byoc-json-runtime) only, so neither the host executor and its kernels
//! (byoc-exec, byoc-kernels, with `gemm` and `rayon`), the ONNX importer (`prost`), the
//! artifact format and NumPy I/O (`zip`, `ed25519-dalek`), the driver's CLI (`clap`, `anyhow`)
//! nor LLVM (`inkwell`, through byoc-host-llvm, which only byoc-pipeline's `build` and the driver
//! link) is compiled into a plugin's `.so`. The crate
//! graph is checked with `cargo tree`, and one plugin built on its own is checked by the
//! symbols of its `.so`.

use std::path::{Path, PathBuf};
use std::process::Command;

use object::{Object, ObjectSymbol};

/// Each dependency of `package` in its normal (non-dev, non-build) graph.
fn normal_deps(package: &str) -> Vec<String> {
    let out = Command::new(env!("CARGO"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["tree", "--offline", "--edges", "normal", "--prefix", "none"])
        .args(["--format", "{p}", "-p", package])
        .output()
        .expect("cargo tree runs");
    assert!(
        out.status.success(),
        "cargo tree -p {package} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("cargo tree prints UTF-8")
        .lines()
        .filter_map(|line| Some(line.split_whitespace().next()?.to_owned()))
        .collect()
}

/// What no plugin, and not the SDK, may link (a plugin may bring a thread pool of its own, as
/// dnnl does with rayon; the SDK brings none).
const HOST_ONLY: [&str; 11] = [
    "byoc-exec",
    "byoc-kernels",
    "byoc-passes",
    "byoc-onnx",
    "byoc-artifact",
    "byoc-pipeline",
    "prost",
    "zip",
    "ed25519-dalek",
    "gemm",
    "clap",
];

/// The crates that bring LLVM in, or the driver's error plumbing.
const NEVER_IN_PLUGINS: [&str; 4] = ["anyhow", "byoc-host-llvm", "inkwell", "llvm-sys"];

#[test]
fn the_sdk_links_none_of_the_host() {
    let deps = normal_deps("byoc-sdk");
    assert!(
        deps.iter().any(|d| d == "byoc-ir"),
        "byoc-sdk builds on byoc-ir: {deps:?}"
    );
    for name in HOST_ONLY.iter().chain(&NEVER_IN_PLUGINS).chain(&["rayon"]) {
        assert!(
            !deps.iter().any(|d| d == name),
            "byoc-sdk links {name}: {deps:?}"
        );
    }
}

#[test]
fn plugins_depend_on_the_sdk_only() {
    for package in [
        "byoc-plugin-tinyacc",
        "byoc-plugin-csource",
        "byoc-plugin-vta",
        "byoc-plugin-posit",
        "byoc-plugin-dnnl",
        "byoc-testplugin-faulty",
        "byoc-json-runtime",
    ] {
        let deps = normal_deps(package);
        assert!(
            deps.iter().any(|d| d == "byoc-sdk"),
            "{package} does not depend on byoc-sdk: {deps:?}"
        );
        for name in HOST_ONLY.iter().chain(&NEVER_IN_PLUGINS) {
            assert!(
                !deps.iter().any(|d| d == name),
                "{package} links {name}: {deps:?}"
            );
        }
    }
}

#[test]
fn llvm_stays_out_of_the_compiler_crates() {
    for package in [
        "byoc-ir",
        "byoc-passes",
        "byoc-exec",
        "byoc-patterns",
        "byoc-onnx",
    ] {
        let deps = normal_deps(package);
        for name in ["byoc-host-llvm", "inkwell", "llvm-sys"] {
            assert!(
                !deps.iter().any(|d| d == name),
                "{package} links {name}: LLVM belongs to byoc-host-llvm only"
            );
        }
    }
    // The check itself finds LLVM where it is: `build` compiles the host code.
    for package in ["byoc-pipeline", "byoc"] {
        let deps = normal_deps(package);
        assert!(
            deps.iter().any(|d| d == "inkwell"),
            "{package} links the host code generator: {deps:?}"
        );
    }
}

/// The defined symbols of a shared object, demangled names included as mangled (both carry
/// the crate names).
fn defined_symbols(so: &Path) -> Vec<String> {
    let bytes = std::fs::read(so).unwrap_or_else(|e| panic!("{}: {e}", so.display()));
    let file = object::File::parse(&*bytes).expect("an ELF shared object");
    file.symbols()
        .chain(file.dynamic_symbols())
        .filter(|s| s.is_definition())
        .filter_map(|s| s.name().ok().map(str::to_owned))
        .collect()
}

/// The template plugin, built alone (its own target directory, as a vendor builds it), defines
/// no symbol of the executor or the kernels; it does define the SDK's.
#[test]
#[ignore = "builds a plugin from scratch in its own target directory (about a minute); run by the test command"]
fn a_plugin_built_alone_holds_no_executor_or_kernel_code() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let target_dir: PathBuf = root.join("target/plugin-alone");
    let status = Command::new(env!("CARGO"))
        .current_dir(root)
        .args([
            "build",
            "--offline",
            "-p",
            "byoc-plugin-tinyacc",
            "--target-dir",
        ])
        .arg(&target_dir)
        .status()
        .expect("cargo build runs");
    assert!(
        status.success(),
        "cargo build -p byoc-plugin-tinyacc failed"
    );
    let so = target_dir.join("debug/libbyoc_plugin_tinyacc.so");
    let symbols = defined_symbols(&so);
    let with = |krate: &str| symbols.iter().filter(|s| s.contains(krate)).count();
    assert!(
        with("byoc_sdk") > 0,
        "{} defines no byoc_sdk symbol: the check would find nothing",
        so.display()
    );
    for krate in ["byoc_exec", "byoc_kernels", "gemm", "rayon_core"] {
        let found: Vec<_> = symbols
            .iter()
            .filter(|s| s.contains(krate))
            .take(3)
            .collect();
        assert!(
            found.is_empty(),
            "{} defines {} symbols of {krate}, e.g. {found:?}",
            so.display(),
            with(krate)
        );
    }
}
