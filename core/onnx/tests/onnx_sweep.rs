//! The per-op ONNX sweep: every op the importer converts, alone, over its attribute space
//! (pads, strides, dilations, groups, ceil_mode, auto_pad, negative axes, keepdims, each Resize
//! mode), compared with onnxruntime; invalid attribute combinations must be refused with the
//! node and attribute named.
//!
//! The cases come from `scripts/fixtures/gen_onnx_sweep.py` (about 800 folders, generated under
//! `target/` by `./scripts/dev test`, which runs this test with `--include-ignored` and
//! `BYOC_ONNX_SWEEP_DIR` set). Run by hand:
//! `python3 scripts/fixtures/gen_onnx_sweep.py target/onnx-sweep &&
//! BYOC_ONNX_SWEEP_DIR=target/onnx-sweep cargo test -p byoc-onnx --test onnx_sweep -- --include-ignored`.

use std::path::PathBuf;

mod onnx_reference;

#[test]
#[ignore = "needs the cases of scripts/fixtures/gen_onnx_sweep.py (./scripts/dev test generates them)"]
fn every_op_alone_matches_onnxruntime() {
    let dir = PathBuf::from(
        std::env::var_os("BYOC_ONNX_SWEEP_DIR")
            .expect("BYOC_ONNX_SWEEP_DIR must name the folder gen_onnx_sweep.py wrote"),
    );
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|p| p.join("model.onnx").is_file())
        .collect();
    cases.sort();
    assert!(
        cases.len() >= 400,
        "{} holds {} cases; regenerate it with gen_onnx_sweep.py",
        dir.display(),
        cases.len()
    );
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|case| {
            let name = case.file_name()?.to_string_lossy().into_owned();
            onnx_reference::check_case(case)
                .err()
                .map(|e| format!("{name}: {e}"))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases differ from onnxruntime:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}
