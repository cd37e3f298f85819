//! What a plugin links: each plugin crate, resolved on its own (`cargo tree -p`, as
//! `cargo build -p` resolves it, without the workspace's feature unification), depends on
//! byoc-core without its `host` feature, so neither the ONNX importer (`prost`), NumPy I/O
//! (`npyz`) nor the artifact format (`sha2`, `ed25519-dalek`) is compiled into the plugin's `.so`.

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

#[test]
fn plugins_link_byoc_core_without_the_host_front_end() {
    for package in [
        "byoc-plugin-tinyacc",
        "byoc-plugin-csource",
        "byoc-plugin-vta",
        "byoc-plugin-posit",
        "byoc-plugin-dnnl",
        "byoc-json-runtime",
        "byoc-testplugin-faulty",
    ] {
        let deps = normal_deps(package);
        assert!(
            deps.iter().any(|(name, _)| name == "byoc-core"),
            "{package} does not depend on byoc-core: {deps:?}"
        );
        for (name, features) in &deps {
            assert!(
                !(name == "byoc-core" && features.split(',').any(|f| f == "host")),
                "{package} links byoc-core with the `host` feature"
            );
            assert!(
                !["prost", "npyz", "sha2", "ed25519-dalek"].contains(&name.as_str()),
                "{package} links {name}, a dependency of byoc-core's `host` feature"
            );
        }
    }
}
