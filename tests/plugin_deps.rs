//! What a plugin links: each plugin crate, resolved on its own (`cargo tree -p`, as
//! `cargo build -p` resolves it, without the workspace's feature unification), depends on
//! byoc-core without its `host` feature, so neither the ONNX importer (`prost`), NumPy I/O
//! (`npyz`) nor the artifact format (`sha2`, `ed25519-dalek`) is compiled into the plugin's `.so`;
//! and without its `executor` feature (nor byoc-json-runtime's, which turns it on), so neither
//! the host executor, the host kernels (with `gemm`), the reference runtime nor the plugin loader
//! is. None of them (nor byoc-core) links LLVM: the host code generator's `inkwell` /
//! `llvm-sys` belong to `byoc-host-llvm` and the driver only.

use std::process::Command;

/// Each dependency of `package` in its normal (non-dev, non-build) graph, as
/// `(name, enabled features)`.
fn normal_deps(package: &str) -> Vec<(String, String)> {
    let out = Command::new(env!("CARGO"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["tree", "--offline", "--edges", "normal", "--prefix", "none"])
        .args(["--format", "{p}|{f}", "-p", package])
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
        .filter_map(|line| {
            let (pkg, features) = line.split_once('|')?;
            let name = pkg.split_whitespace().next()?;
            Some((name.to_owned(), features.trim().to_owned()))
        })
        .collect()
}

/// The crates that bring LLVM in.
const LLVM_CRATES: [&str; 3] = ["byoc-host-llvm", "inkwell", "llvm-sys"];

/// byoc-json-runtime is checked through the plugins that use it (tinyacc, dnnl): built alone it
/// has its default `executor` feature, for its own reference provider.
#[test]
fn plugins_link_byoc_core_without_the_host_front_end_and_executor() {
    for package in [
        "byoc-plugin-tinyacc",
        "byoc-plugin-csource",
        "byoc-plugin-vta",
        "byoc-plugin-posit",
        "byoc-plugin-dnnl",
        "byoc-testplugin-faulty",
    ] {
        let deps = normal_deps(package);
        assert!(
            deps.iter().any(|(name, _)| name == "byoc-core"),
            "{package} does not depend on byoc-core: {deps:?}"
        );
        for (name, features) in &deps {
            for feature in ["host", "executor"] {
                assert!(
                    !(["byoc-core", "byoc-json-runtime"].contains(&name.as_str())
                        && features.split(',').any(|f| f == feature)),
                    "{package} links {name} with the `{feature}` feature"
                );
            }
            assert!(
                !["prost", "npyz", "sha2", "ed25519-dalek"].contains(&name.as_str()),
                "{package} links {name}, a dependency of byoc-core's `host` feature"
            );
            assert!(
                name != "gemm",
                "{package} links gemm, a dependency of byoc-core's `executor` feature"
            );
            assert!(
                !LLVM_CRATES.contains(&name.as_str()),
                "{package} links {name}: LLVM belongs to byoc-host-llvm only"
            );
        }
    }
}

#[test]
fn llvm_stays_out_of_byoc_core_and_the_pipeline() {
    for package in ["byoc-core", "byoc-pipeline", "byoc-patterns"] {
        let deps = normal_deps(package);
        for (name, _) in &deps {
            assert!(
                !LLVM_CRATES.contains(&name.as_str()),
                "{package} links {name}: LLVM belongs to byoc-host-llvm only"
            );
        }
    }
    // The check itself finds LLVM where it is.
    let driver = normal_deps("byoc");
    assert!(
        driver.iter().any(|(name, _)| name == "inkwell"),
        "the driver links the host code generator: {driver:?}"
    );
}
