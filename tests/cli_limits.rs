//! Huge shapes are refused with exit code 2 and a message naming the file, the tensor, its
//! size and the memory budget, instead of aborting on allocation; `--max-memory` sets the
//! budget.

use std::path::PathBuf;
use std::process::{Command, Output};

fn byoc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_byoc"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("the byoc binary starts")
}

fn write(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("byoc-limits-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write temp file");
    p
}

fn assert_refused(out: &Output, fragments: &[&str]) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {err}");
    assert!(
        !err.contains("panicked") && !err.contains("internal error"),
        "{err}"
    );
    for f in fragments {
        assert!(err.contains(f), "expected {f:?} in: {err}");
    }
}

#[test]
fn a_huge_parameter_is_refused_before_random_inputs_are_drawn() {
    let model = write(
        "huge_param.relay",
        "def @main(%x: Tensor[(1000000, 1000000), float32]) { nn.relu(%x) }\n",
    );
    let model = model.to_str().unwrap();
    let out = byoc(&["run", model, "--random-inputs", "1", "--max-memory", "1G"]);
    assert_refused(
        &out,
        &[
            "huge_param.relay",
            "Tensor[(1000000, 1000000), float32] needs 4000000000000 bytes (3.6 TiB)",
            "over the memory budget of 1073741824 bytes (1.0 GiB)",
        ],
    );
}

#[test]
fn constant_folding_and_padding_respect_the_budget() {
    let full = write(
        "huge_full.relay",
        "def @main() { full(1f, shape=[1000000, 1000000], dtype=\"float32\") }\n",
    );
    let out = byoc(&["inspect", full.to_str().unwrap(), "--max-memory", "1G"]);
    assert_refused(
        &out,
        &[
            "huge_full.relay",
            "full: result Tensor[(1000000, 1000000), float32]",
        ],
    );
    let pad = write(
        "huge_pad.relay",
        "def @main(%x: Tensor[(1, 1, 4, 4), float32]) {\n  nn.pad(%x, 0f, pad_width=[[0, 0], [0, 0], [1000000, 1000000], [1000000, 1000000]])\n}\n",
    );
    let out = byoc(&["inspect", pad.to_str().unwrap(), "--max-memory", "1G"]);
    assert_refused(
        &out,
        &[
            "huge_pad.relay",
            "nn.pad: result Tensor[(1, 1, 2000004, 2000004), float32]",
        ],
    );
}

#[test]
fn the_budget_flag_is_checked() {
    let model = write(
        "small.relay",
        "def @main(%x: Tensor[(2), float32]) { nn.relu(%x) }\n",
    );
    let out = byoc(&["inspect", model.to_str().unwrap(), "--max-memory", "lots"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("'lots' is not a byte count"));
    let out = byoc(&["inspect", model.to_str().unwrap(), "--max-memory", "4"]);
    assert_refused(
        &out,
        &[
            "%x: parameter Tensor[(2), float32] needs 8 bytes",
            "budget of 4 bytes",
        ],
    );
}
