//! Malformed datatype plugins loaded from `.so` files by the `byoc` CLI (the examples of
//! `tests/plugins/bad-datatype`): a datatype code the posit plugin already took, a lowering
//! table with an unknown op or a malformed cast key, and a lowering naming a function the
//! library does not export. Named explicitly, each is an error (exit code 2) naming the file,
//! the plugin, the datatype and the problem; found in a directory beside the posit plugin, each
//! is listed as refused while posits still run.

mod common;
mod plugin_build;
mod posit_plugin;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;

use common::{byoc, root, scratch, stderr};
use posit_plugin::posit_so;

/// `lib<name>.so` (the platform's spelling).
fn library_name(name: &str) -> String {
    format!(
        "{}{name}{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    )
}

/// The examples of `byoc-testplugin-bad-datatype`, built with the test binary's profile: the
/// directory holding their libraries.
fn bad_plugins_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let profile_dir = posit_so().parent().expect("a directory").to_path_buf();
        let mut cmd = std::process::Command::new(env!("CARGO"));
        cmd.current_dir(root())
            .args(["build", "-p", "byoc-testplugin-bad-datatype", "--examples"]);
        if profile_dir.file_name().is_some_and(|n| n == "release") {
            cmd.arg("--release");
        }
        assert!(
            cmd.status().expect("cargo runs").success(),
            "building the bad-datatype plugins failed"
        );
        profile_dir.join("examples")
    })
}

/// The library of one malformation (`taken_code`, `unknown_op`, `bad_cast`, `missing_symbol`).
fn bad_so(case: &str) -> PathBuf {
    bad_plugins_dir().join(library_name(&format!("byoc_testplugin_{case}")))
}

fn path(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 path")
}

/// The malformations: (example, plugin, datatype, the problem as the host words it).
const CASES: [(&str, &str, &str, &str); 4] = [
    (
        "taken_code",
        "takencode",
        "stolen",
        "conflicts with the registered custom[posites2]",
    ),
    (
        "unknown_op",
        "unknownop",
        "broken",
        "lowering Pow (16 bits) -> 'BrokenToFloat': unknown op (expected one of Add, Sub,",
    ),
    (
        "bad_cast",
        "badcast",
        "broken",
        "lowering Cast.broken.double (64, 16) -> 'BrokenFromFloat': 'double' with 64 bits is not float, int or uint",
    ),
    (
        "missing_symbol",
        "missingsymbol",
        "broken",
        "lowering Add (16 bits) names 'BrokenAdd', which the library does not export",
    ),
];

/// Checks a refusal: exit code 2, one message naming the file, plugin, datatype and problem.
fn assert_refused(
    out: &Output,
    so: &Path,
    (case, plugin, datatype, problem): (&str, &str, &str, &str),
) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(2), "{case}: {err}");
    assert!(
        err.contains(path(so))
            && err.contains(&format!("plugin '{plugin}'"))
            && err.contains(&format!("'{datatype}'"))
            && err.contains(problem),
        "{case}: {err}"
    );
    assert!(!err.contains("panicked"), "{case}: {err}");
}

/// A model with one op, in a scratch directory.
fn relu_model(dir: &Path) -> PathBuf {
    let model = dir.join("relu.relay");
    std::fs::write(
        &model,
        "def @main(%x: Tensor[(4), float32]) { nn.relu(%x) }",
    )
    .unwrap();
    model
}

#[test]
fn explicitly_named_malformed_datatype_plugins_are_errors() {
    let dir = scratch(
        &std::env::temp_dir().join("byoc-datatype-plugins"),
        "explicit",
    );
    let model = relu_model(&dir);
    for case in CASES {
        let so = bad_so(case.0);
        // The posit plugin comes first, so the taken code is the malformed plugin's problem.
        let listing = byoc(&[
            "plugins",
            "--plugin-path",
            path(posit_so()),
            "--plugin-path",
            path(&so),
        ]);
        assert_refused(&listing, &so, case);
        let run = byoc(&[
            "run",
            path(&model),
            "--random-inputs",
            "1",
            "--dtype",
            &format!("custom[{}]16", case.2),
            "--plugin-path",
            path(posit_so()),
            "--plugin-path",
            path(&so),
        ]);
        assert_refused(&run, &so, case);
    }
}

#[test]
fn malformed_datatype_plugins_in_a_directory_are_refused_and_posits_still_run() {
    let dir = scratch(
        &std::env::temp_dir().join("byoc-datatype-plugins"),
        "directory",
    );
    let plugins = dir.join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    // Plugin file names sort after `posit`, which loads first and owns code 132.
    std::fs::copy(posit_so(), plugins.join(library_name("byoc_plugin_posit"))).unwrap();
    for (case, ..) in CASES {
        let to = plugins.join(library_name(&format!("byoc_plugin_w_{case}")));
        std::fs::copy(bad_so(case), to).unwrap();
    }
    let out = byoc(&["plugins", "--plugin-path", path(&plugins)]);
    let listing = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        listing.contains("datatype: custom[posites2]8|16|32 (code 132"),
        "{listing}"
    );
    for (case, plugin, datatype, problem) in CASES {
        let refused = listing
            .lines()
            .find(|l| l.starts_with("refused:") && l.contains(&format!("byoc_plugin_w_{case}")))
            .unwrap_or_else(|| panic!("{case} is listed as refused: {listing}"));
        assert!(
            refused.contains(&format!("plugin '{plugin}'"))
                && refused.contains(&format!("'{datatype}'"))
                && refused.contains(problem),
            "{case}: {refused}"
        );
    }

    // The host goes on: posits run, and the refused datatypes are not registered.
    let model = relu_model(&dir);
    let inputs = dir.join("in.npz");
    let x = byoc_ir::Tensor::from_vec(vec![4], vec![-1.5f32, 0.0, 0.25, 3.0]).unwrap();
    byoc_artifact::io::write_npz(&inputs, &[("x".to_string(), x)].into_iter().collect()).unwrap();
    let out_npz = dir.join("out.npz");
    let run = |dtype: &str| {
        byoc(&[
            "run",
            path(&model),
            "--inputs",
            path(&inputs),
            "--dtype",
            dtype,
            "--plugin-path",
            path(&plugins),
            "-o",
            path(&out_npz),
        ])
    };
    let out = run("custom[posites2]16");
    assert!(out.status.success(), "{}", stderr(&out));
    let y = byoc_artifact::io::read_npz(&out_npz).unwrap()["output_0"].clone();
    assert_eq!(y.as_slice::<f32>().unwrap(), [0.0, 0.0, 0.25, 3.0]);
    let out = run("custom[broken]16");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "custom datatype 'broken' is not registered; registered: custom[posites2]8|16|32 (code 132)"
        ),
        "{}",
        stderr(&out)
    );
}
