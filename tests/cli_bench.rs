//! End-to-end tests of `byoc bench`: one JSON object on standard output with consistent
//! statistics, nothing on standard error when it is not a terminal, and clear errors for bad
//! arguments. Timings are checked for consistency only, never against wall-clock limits.

mod common;

use common::byoc;
use serde_json::Value;

/// Runs `byoc bench` with `args`, checks success and a quiet stderr, and parses the JSON.
fn bench_json(args: &[&str]) -> Value {
    let mut all = vec!["bench"];
    all.extend_from_slice(args);
    let out = byoc(&all);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stderr: {stderr}");
    assert!(stderr.is_empty(), "piped bench must be quiet: {stderr}");
    let stdout = String::from_utf8(out.stdout).expect("utf-8 output");
    assert_eq!(stdout.lines().count(), 1, "one JSON line: {stdout}");
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
}

fn num(v: &Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("'{key}' is not a number in {v}"))
}

#[test]
fn bench_prints_consistent_statistics() {
    let bench = |extra: &[&str]| {
        let mut args = vec![
            "examples/models/small_cnn.relay",
            "--iters",
            "5",
            "--warmup",
            "1",
            "--threads",
            "1",
        ];
        args.extend_from_slice(extra);
        bench_json(&args)
    };
    let v = bench(&["--host-codegen", "kernels"]);
    let (min, median, max) = (num(&v, "min_ms"), num(&v, "median_ms"), num(&v, "max_ms"));
    assert!(0.0 < min && min <= median && median <= max, "{v}");
    assert_eq!(v["iters"], 5);
    assert_eq!(v["warmup"], 1);
    assert_eq!(v["threads"], 1);
    let shares = v["shares"].as_object().expect("shares object");
    assert_eq!(shares.keys().collect::<Vec<_>>(), ["host"], "{v}");
    assert_eq!(shares["host"].as_f64(), Some(1.0));
    // By default the fused host functions run compiled: their time is the `llvm` share.
    let v = bench(&[]);
    let shares = v["shares"].as_object().expect("shares object");
    assert_eq!(shares.keys().collect::<Vec<_>>(), ["host", "llvm"], "{v}");
    let sum: f64 = shares.values().filter_map(Value::as_f64).sum();
    assert!(
        (sum - 1.0).abs() < 1e-3 && num(&v["shares"], "llvm") > 0.0,
        "{v}"
    );
}

#[test]
fn bench_runs_onnx_models_with_given_inputs() {
    let v = bench_json(&[
        "tests/data/onnx/conv/model.onnx",
        "--iters",
        "3",
        "--warmup",
        "0",
        "--threads",
        "2",
    ]);
    assert_eq!(v["iters"], 3);
    assert_eq!(v["threads"], 2);
    let v = bench_json(&[
        "examples/models/small_cnn.relay",
        "--inputs",
        "tests/data/small_cnn/input.npz",
        "--iters",
        "1",
    ]);
    assert_eq!(num(&v, "min_ms"), num(&v, "max_ms"));
}

#[test]
fn bench_rejects_bad_arguments() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["examples/models/small_cnn.relay", "--iters", "0"],
            "--iters must be at least 1",
        ),
        (
            &[
                "examples/models/small_cnn.relay",
                "--iters",
                "18446744073709551615",
            ],
            "--iters 18446744073709551615: at most 1000000 runs",
        ),
        (
            &["examples/models/small_cnn.relay", "--warmup", "1000001"],
            "--warmup 1000001: at most 1000000 runs",
        ),
        (&["no/such/model.onnx"], "no/such/model.onnx"),
        (
            &["examples/models/small_cnn.relay", "--threads", "many"],
            "invalid value 'many'",
        ),
        // Thread counts far over the cores are refused, not started (or hung on).
        (
            &["examples/models/small_cnn.relay", "--threads", "100000"],
            "100000 worker threads is more than",
        ),
        (
            &[
                "examples/models/small_cnn.relay",
                "--target",
                "csource",
                "--plugin-option",
                "threads=99999",
            ],
            "option 'threads': 99999 worker threads is more than",
        ),
    ];
    for (args, fragment) in cases {
        let mut all = vec!["bench"];
        all.extend_from_slice(args);
        let out = byoc(&all);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(fragment),
            "{args:?}: expected {fragment:?} in {err}"
        );
        assert!(!err.contains("panicked"), "{err}");
        assert!(out.stdout.is_empty(), "{args:?}: no JSON on failure");
    }
}
