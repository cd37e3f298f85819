//! End-to-end tests of the `byoc` binary: the default model against a numpy reference, and bad
//! input of every kind giving a clear message and exit code 2, huge shapes refused against the
//! memory budget.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use byoc_artifact::io::read_npz;
use byoc_onnx::proto::{
    attribute_type, AttributeProto, Dimension, GraphProto, ModelProto, NodeProto,
    OperatorSetIdProto, TensorProto, TensorShapeProto, TypeProto, TypeProtoTensor, ValueInfoProto,
};
use common::{byoc, byoc_command, root, stderr};
use prost::Message as _;

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("byoc-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir.join(name)
}

fn write(name: &str, text: &str) -> PathBuf {
    let p = tmp(name);
    std::fs::write(&p, text).expect("write temp file");
    p
}

/// Asserts exit code 2, no panic, and that stderr contains every fragment.
fn assert_bad_input(out: &Output, fragments: &[&str]) {
    let err = stderr(out);
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
fn default_model_matches_numpy_reference() {
    let out_path = tmp("small_cnn_out.npz");
    let out = byoc(&[
        "run",
        "examples/models/small_cnn.relay",
        "--inputs",
        "tests/data/small_cnn/input.npz",
        "-o",
        out_path.to_str().expect("utf-8 temp path"),
        "--threads",
        "2",
    ]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let got = read_npz(&out_path).expect("outputs written");
    let want = read_npz(root().join("tests/data/small_cnn/expected.npz")).expect("reference");
    let (g, w) = (got["output_0"].to_f64_vec(), want["output_0"].to_f64_vec());
    assert_eq!(got["output_0"].shape(), want["output_0"].shape());
    for (a, b) in g.iter().zip(&w) {
        assert!((a - b).abs() <= 1e-5 + 1e-4 * b.abs(), "{a} vs {b}");
    }
}

#[test]
fn inspect_prints_the_typed_module() {
    let out = byoc(&[
        "inspect",
        "examples/models/small_cnn.relay",
        "--stage",
        "parse",
    ]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("def @main(%data: Tensor[(1, 3, 16, 16), float32]"),
        "{text}"
    );
    assert!(text.contains("ty=Tensor[(1, 10), float32]"), "{text}");
}

#[test]
fn inspect_stages_with_a_target_spec() {
    let spec = "examples/targets/myacc.json";
    let at = |stage: &str| {
        let out = byoc(&[
            "inspect",
            "examples/models/small_cnn.relay",
            "--target-spec",
            spec,
            "--stage",
            stage,
        ]);
        assert!(out.status.success(), "stderr: {}", stderr(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let composite = at("composite");
    assert_eq!(
        composite
            .matches("Composite=\"myacc.conv2d_bias_relu\"")
            .count(),
        2
    );
    assert!(!composite.contains("compiler_begin"));
    let annotate = at("annotate");
    assert!(annotate.contains("annotation.compiler_begin(%data, compiler=\"myacc\")"));
    let partition = at("partition");
    assert!(partition.contains("def @myacc_0(") && partition.contains("def @myacc_1("));
    assert!(partition.contains("Compiler=\"myacc\""));
    // dense is not in the op list: it stays in @main.
    assert!(partition.contains("= nn.dense("));

    let bad = write("bad_spec.json", r#"{"target": "x", "ops": ["nn.nope"]}"#);
    let out = byoc(&[
        "inspect",
        "examples/models/small_cnn.relay",
        "--target-spec",
        bad.to_str().unwrap(),
    ]);
    assert_bad_input(&out, &["bad_spec.json", "ops[0]: unknown op 'nn.nope'"]);
}

#[test]
fn random_inputs_are_deterministic() {
    let run = || {
        let out = byoc(&[
            "run",
            "examples/models/small_cnn.relay",
            "--random-inputs",
            "3",
        ]);
        assert!(out.status.success(), "stderr: {}", stderr(&out));
        out.stdout
    };
    assert_eq!(run(), run());
}

#[test]
fn missing_input_names_it() {
    let out = byoc(&["run", "examples/models/small_cnn.relay"]);
    assert_bad_input(&out, &["missing input 'data'", "--random-inputs"]);
}

/// Errors about the input and output files name the file (not the model) and give each reason
/// once; a model whose `@main` takes a non-tensor names the model and the parameter's position.
#[test]
fn input_and_output_file_errors_name_the_file_once() {
    use byoc_ir::{DType, Tensor, TensorType};
    let model = "examples/models/small_cnn.relay";
    let npz = |name: &str, tensors: &[(&str, Tensor)]| {
        let path = tmp(name);
        let map = tensors
            .iter()
            .map(|(k, t)| (k.to_string(), t.clone()))
            .collect();
        byoc_artifact::io::write_npz(&path, &map).expect("write the .npz");
        path.to_str().expect("utf-8 temp path").to_string()
    };
    let float64 = npz(
        "float64.npz",
        &[(
            "data",
            Tensor::zeros(TensorType::new([1, 3, 16, 16], DType::Float64)),
        )],
    );
    let expected = format!(
        "{float64}: input 'data' is Tensor[(1, 3, 16, 16), float64] but the model expects Tensor[(1, 3, 16, 16), float32]"
    );
    for command in ["run", "verify"] {
        let out = byoc(&[command, model, "--target", "csource", "--inputs", &float64]);
        assert_bad_input(&out, &[&expected]);
    }
    let empty = npz("no_arrays.npz", &[]);
    let out = byoc(&["run", model, "--inputs", &empty]);
    assert_bad_input(
        &out,
        &[&format!(
            "missing input 'data' of type Tensor[(1, 3, 16, 16), float32]: not in '{empty}'"
        )],
    );
    let garbage = write("garbage.npz", "not a zip archive");
    let out = byoc(&["run", model, "--inputs", garbage.to_str().unwrap()]);
    assert_bad_input(
        &out,
        &[&format!(
            "cannot read inputs: {}: not a valid .npz archive",
            garbage.display()
        )],
    );
    assert_eq!(stderr(&out).matches("not a valid .npz archive").count(), 1);
    // A write that fails part way (the device is full) names the array being written and the
    // operating system's reason, once; the zip writer prints nothing of its own.
    let out = byoc(&["run", model, "--random-inputs", "0", "-o", "/dev/full"]);
    assert_bad_input(
        &out,
        &["cannot write outputs: /dev/full, array 'output_0': No space left on device"],
    );
    let err = stderr(&out);
    assert!(
        err.matches("No space left").count() == 1 && !err.contains("ZipWriter"),
        "{err}"
    );
    assert!(!err.contains("not a valid .npz"), "{err}");
    let tuple = write(
        "tuple_param.relay",
        "def @main(%a: Tensor[(2), float32],\n          %x: (Tensor[(2), float32], Tensor[(2), float32])) {\n  %a\n}\n",
    );
    let out = byoc(&["run", tuple.to_str().unwrap(), "--random-inputs", "0"]);
    assert_bad_input(
        &out,
        &[&format!(
            "{}: 2:11: @main parameter %x has type (Tensor[(2), float32], Tensor[(2), float32]); only tensor inputs are supported",
            tuple.display()
        )],
    );
}

/// A model, target spec or key file without an end (here `/dev/zero`) is read only up to the
/// memory budget and refused, naming the file, instead of filling the machine's memory.
#[test]
fn files_without_an_end_are_refused_at_the_memory_budget() {
    let link = |name: &str| {
        let path = tmp(name);
        let _ = std::fs::remove_file(&path);
        std::os::unix::fs::symlink("/dev/zero", &path).expect("symlink");
        path.to_str().expect("utf-8 temp path").to_string()
    };
    let (relay, onnx, spec) = (link("zero.relay"), link("zero.onnx"), link("zero.json"));
    let stream = "the file gives more than 524288 bytes (512.0 KiB) and reading on would pass the memory budget of 1048576 bytes (1.0 MiB)";
    let model = "examples/models/small_cnn.relay";
    for args in [
        vec!["run", &relay, "--random-inputs", "0"],
        vec!["run", &onnx, "--random-inputs", "0"],
        vec!["inspect", model, "--target-spec", &spec],
    ] {
        let mut args = args;
        args.extend(["--max-memory", "1M"]);
        let out = byoc(&args);
        let file = args.iter().find(|a| a.contains("zero.")).expect("the file");
        assert_bad_input(&out, &[file, stream]);
    }
}

/// `byoc args` under an address-space limit of 1.5 GiB (`ulimit -v`).
fn under_address_space_limit(args: &[&str]) -> Output {
    std::process::Command::new("sh")
        .args(["-c", "ulimit -v 1572864 && exec \"$0\" \"$@\""])
        .arg(env!("CARGO_BIN_EXE_byoc"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("sh starts")
}

/// Every command that allocates by its input, over sizes from far within to far beyond a
/// 1.5 GiB address-space limit, with the default budget and with one raised past the limit,
/// ends with success or a clear refusal (exit 2, a budget or allocation message): never an
/// abort, a signal or a panic. (Sizes that fit but fill most of the limit are left out: they
/// succeed slowly in a debug build.)
#[test]
fn every_command_under_an_address_space_limit_ends_cleanly() {
    let refusals = [
        "over the memory budget",
        "cannot allocate",
        "are not available",
        "cannot be allocated",
    ];
    let check = |args: &[&str]| {
        let out = under_address_space_limit(args);
        let err = stderr(&out);
        assert!(
            matches!(out.status.code(), Some(0 | 2)),
            "{args:?}: {:?}: {err}",
            out.status
        );
        assert!(
            !err.contains("panicked") && !err.contains("memory allocation of"),
            "{args:?}: {err}"
        );
        if out.status.code() == Some(2) {
            assert!(refusals.iter().any(|r| err.contains(r)), "{args:?}: {err}");
        }
    };
    for elements in [1u64 << 18, 1 << 29, 1 << 31] {
        let model = write(
            &format!("limit_{elements}.relay"),
            &format!("def @main(%x: Tensor[({elements}), float32]) {{\n  nn.relu(exp(%x))\n}}\n"),
        );
        let model = model.to_str().expect("utf-8 temp path");
        for budget in [None, Some("64G")] {
            let budget: Vec<&str> = budget.map(|b| vec!["--max-memory", b]).unwrap_or_default();
            for command in [
                vec!["run", model, "--random-inputs", "0"],
                vec!["bench", model, "--iters", "2", "--warmup", "0"],
            ] {
                check(&[command, budget.clone()].concat());
            }
        }
    }
    let out = tmp("limit_quantized.relay");
    let out = out.to_str().expect("utf-8 temp path");
    for samples in ["10", "1000000", "100000000"] {
        for budget in [vec![], vec!["--max-memory", "64G"]] {
            let args = [
                "quantize",
                "examples/models/small_cnn.relay",
                "--calibrate",
                "kl",
                "--calibration-samples",
                samples,
                "-o",
                out,
            ];
            check(&[&args[..], &budget].concat());
        }
    }
}

/// Under an address-space limit (`ulimit -v`) the memory budget is at most that limit, also
/// when `--max-memory` asks for more: what cannot fit is refused before it is allocated.
#[test]
fn commands_under_an_address_space_limit_refuse_cleanly() {
    let model = write(
        "over_the_limit.relay",
        "def @main(%x: Tensor[(300, 1000, 1000), float32]) {\n  nn.relu(%x)\n}\n",
    );
    let model = model.to_str().expect("utf-8 temp path");
    let budget = "over the memory budget of 1610612736 bytes (1.5 GiB)";
    let out = under_address_space_limit(&["run", model, "--random-inputs", "0"]);
    assert_bad_input(
        &out,
        &[
            model,
            "brings the memory of one run to 2400000000 bytes",
            budget,
        ],
    );
    let out = under_address_space_limit(&[
        "quantize",
        "examples/models/small_cnn.relay",
        "--calibrate",
        "percentile",
        "--calibration-samples",
        "600000",
        "-o",
        tmp("under_limit.relay").to_str().expect("utf-8 temp path"),
    ]);
    assert_bad_input(&out, &["600000 calibration samples", budget]);
    assert_eq!(stderr(&out).matches(budget).count(), 1, "{}", stderr(&out));
    // A budget raised past the limit is held to it: nothing past it could be allocated.
    for command in ["run", "bench"] {
        let out = under_address_space_limit(&[
            command,
            model,
            "--random-inputs",
            "0",
            "--max-memory",
            "64G",
        ]);
        assert_bad_input(&out, &[model, budget]);
    }
}

#[test]
fn malformed_text_is_reported_with_position() {
    let cases: &[(&str, &str, &[&str])] = &[
        (
            "truncated.relay",
            "def @main(%x: Tensor[(2), float32]) {\n  nn.relu(%x",
            &["truncated.relay", "2:"],
        ),
        (
            "unknown_op.relay",
            "def @main(%x: Tensor[(2), float32]) {\n  nn.relux(%x)\n}\n",
            &["unknown_op.relay", "2:3", "nn.relux"],
        ),
        (
            "attr_type.relay",
            "def @main(%x: Tensor[(1, 2, 4, 4), float32]) {\n  nn.max_pool2d(%x, pool_size=\"big\")\n}\n",
            &["attr_type.relay", "2:", "pool_size"],
        ),
        (
            "duplicate.relay",
            "def @main(%x: Tensor[(2), float32], %x: Tensor[(2), float32]) {\n  %x\n}\n",
            &["duplicate.relay", "1:", "%x"],
        ),
        (
            "undefined.relay",
            "def @main(%x: Tensor[(2), float32]) {\n  add(%x, %y)\n}\n",
            &["undefined.relay", "2:", "%y"],
        ),
        (
            "type_error.relay",
            "def @main(%x: Tensor[(2, 3), float32], %y: Tensor[(4), float32]) {\n  add(%x, %y)\n}\n",
            &["type_error.relay", "2:3", "do not broadcast"],
        ),
    ];
    for (name, text, fragments) in cases {
        let path = write(name, text);
        let out = byoc(&["run", path.to_str().expect("utf-8"), "--random-inputs", "0"]);
        assert_bad_input(&out, fragments);
    }
}

#[test]
fn wrong_input_shape_and_dtype_are_named() {
    let model = write(
        "relu.relay",
        "def @main(%x: Tensor[(2, 3), float32]) {\n  nn.relu(%x)\n}\n",
    );
    let model = model.to_str().expect("utf-8");
    let mut inputs = std::collections::BTreeMap::new();
    inputs.insert(
        "x".to_string(),
        byoc_ir::Tensor::from_vec([3, 2], vec![0f32; 6]).expect("tensor"),
    );
    let shape_npz = tmp("wrong_shape.npz");
    byoc_artifact::io::write_npz(&shape_npz, &inputs).expect("write npz");
    let out = byoc(&["run", model, "--inputs", shape_npz.to_str().expect("utf-8")]);
    assert_bad_input(
        &out,
        &[
            "input 'x'",
            "Tensor[(2, 3), float32]",
            "Tensor[(3, 2), float32]",
        ],
    );

    inputs.insert(
        "x".to_string(),
        byoc_ir::Tensor::from_vec([2, 3], vec![0i32; 6]).expect("tensor"),
    );
    let dtype_npz = tmp("wrong_dtype.npz");
    byoc_artifact::io::write_npz(&dtype_npz, &inputs).expect("write npz");
    let out = byoc(&["run", model, "--inputs", dtype_npz.to_str().expect("utf-8")]);
    assert_bad_input(&out, &["input 'x'", "int32"]);

    inputs.insert(
        "y".to_string(),
        byoc_ir::Tensor::from_vec([1], vec![0f32]).expect("tensor"),
    );
    let extra_npz = tmp("extra.npz");
    byoc_artifact::io::write_npz(&extra_npz, &inputs).expect("write npz");
    let out = byoc(&["run", model, "--inputs", extra_npz.to_str().expect("utf-8")]);
    assert_bad_input(&out, &["input 'y' is not an input of the model"]);
}

#[test]
fn corrupt_npz_and_missing_files_are_reported() {
    let corrupt = write("corrupt.npz", "PK\u{3}\u{4} this is not a zip archive");
    let out = byoc(&[
        "run",
        "examples/models/small_cnn.relay",
        "--inputs",
        corrupt.to_str().expect("utf-8"),
    ]);
    assert_bad_input(&out, &["corrupt.npz"]);

    let out = byoc(&["run", "no/such/model.relay"]);
    assert_bad_input(&out, &["no/such/model.relay"]);

    let out = byoc(&["run", "model.pb"]);
    assert_bad_input(
        &out,
        &["unsupported model format", "expected .relay or .onnx"],
    );
}

#[test]
fn bad_usage_exits_2() {
    let out = byoc(&["run"]);
    assert_eq!(out.status.code(), Some(2));
    let out = byoc(&["frobnicate"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(Path::new(env!("CARGO_BIN_EXE_byoc")).exists());
}

#[test]
fn onnx_models_run_with_their_input_and_output_names() {
    let out_path = tmp("conv_out.npz");
    let out = byoc(&[
        "run",
        "tests/data/onnx/conv/model.onnx",
        "--random-inputs",
        "1",
        "-o",
        out_path.to_str().expect("utf-8 temp path"),
    ]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let got = read_npz(&out_path).expect("outputs written");
    let names: Vec<&str> = got.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "conv",
            "conv_g",
            "convt",
            "convt_g",
            "convt_shape",
            "same_l",
            "same_u",
            "valid"
        ]
    );
    let inspect = byoc(&["inspect", "tests/data/onnx/conv/model.onnx"]);
    assert!(inspect.status.success(), "stderr: {}", stderr(&inspect));
    assert!(String::from_utf8_lossy(&inspect.stdout).contains("nn.conv2d("));
}

#[test]
fn bad_onnx_and_input_shapes_are_reported() {
    let truncated = tmp("truncated.onnx");
    let bytes = std::fs::read(root().join("tests/data/onnx/conv/model.onnx")).expect("fixture");
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).expect("write");
    let out = byoc(&[
        "run",
        truncated.to_str().expect("utf-8"),
        "--random-inputs",
        "0",
    ]);
    assert_bad_input(&out, &["truncated.onnx", "cannot import"]);

    let out = byoc(&[
        "run",
        "tests/data/onnx/conv/model.onnx",
        "--input-shape",
        "x=1,four",
    ]);
    assert_bad_input(&out, &["--input-shape 'x=1,four'", "non-negative integers"]);

    let out = byoc(&[
        "run",
        "examples/models/small_cnn.relay",
        "--input-shape",
        "data=1,3,16,16",
    ]);
    assert_bad_input(&out, &["--input-shape applies to .onnx models"]);
}

#[test]
fn strict_refuses_host_fallback_and_names_the_ops() {
    let model = "examples/models/small_cnn.relay";
    let spec = "examples/targets/myacc.json";
    // myacc takes conv2d/bias_add/relu/add: the pools, flatten and dense stay on the host.
    let out = byoc(&[
        "run",
        model,
        "--target-spec",
        spec,
        "--random-inputs",
        "1",
        "--strict",
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "stderr: {err}");
    assert!(err.contains("--strict"), "{err}");
    assert!(err.contains("would fall back to the host"), "{err}");
    assert!(err.contains("nn.max_pool2d x"), "{err}");
    assert!(err.contains("nn.global_avg_pool2d x1"), "{err}");
    assert!(
        !err.contains("nn.conv2d x"),
        "offloaded ops are not listed: {err}"
    );

    // A target that takes every op of the model leaves nothing behind: --strict runs it.
    let spec = write(
        "all_ops.json",
        r#"{"target": "allacc", "ops": ["add", "nn.relu"], "prune": {"min_ops": 1}}"#,
    );
    let spec = spec.to_str().expect("utf-8 path");
    let all = write(
        "all_ops.relay",
        "def @main(%x: Tensor[(1, 4), float32]) {\n  %0 = add(%x, %x);\n  nn.relu(%0)\n}\n",
    );
    let all = all.to_str().expect("utf-8 path");
    let ok = byoc(&[
        "run",
        all,
        "--target-spec",
        spec,
        "--random-inputs",
        "1",
        "--strict",
    ]);
    assert!(ok.status.success(), "stderr: {}", stderr(&ok));
}

/// `inspect` with the README's model and target spec, plus `extra` arguments.
fn inspect_small_cnn(extra: &[&str]) -> Output {
    let mut args = vec![
        "inspect",
        "examples/models/small_cnn.relay",
        "--target-spec",
        "examples/targets/myacc.json",
    ];
    args.extend_from_slice(extra);
    byoc(&args)
}

/// The part of `--print-*` output under the `// <when> <pass>` line, up to the next one.
fn printed<'a>(err: &'a str, when: &str, pass: &str) -> Option<&'a str> {
    let start = err.find(&format!("// {when} {pass}\n"))?;
    let body = &err[start..];
    let body = &body[body.find('\n')? + 1..];
    Some(body.find("\n// ").map_or(body, |end| &body[..end]))
}

#[test]
fn print_before_and_after_work_for_every_pass_of_the_pipeline() {
    // What each pass of the pipeline leaves in small_cnn for myacc, checked in the printout.
    let after = [
        ("fold-constant", "nn.conv2d("),
        ("dead-code-elimination", "nn.conv2d("),
        ("merge-composite", "Composite=\"myacc.conv2d_bias_relu\""),
        ("annotate-target", "annotation.compiler_begin"),
        ("merge-compiler-regions", "compiler=\"myacc\""),
        ("partition-graph", "Compiler=\"myacc\""),
        ("prune", "def @myacc_0("),
    ];
    for (pass, mark) in after {
        let out = inspect_small_cnn(&["--print-before", pass, "--print-after", pass]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(0), "{pass}: {err}");
        let before = printed(&err, "before", pass).unwrap_or_else(|| panic!("{pass}: {err}"));
        let after = printed(&err, "after", pass).unwrap_or_else(|| panic!("{pass}: {err}"));
        assert!(after.contains(mark), "after {pass}: no {mark:?} in {after}");
        assert!(before.contains("def @main("), "before {pass}: {before}");
        byoc_ir::text::parse_module(after).unwrap_or_else(|e| panic!("after {pass}: {e}"));
    }
    // Composites appear with merge-composite, annotations with annotate-target.
    let out = inspect_small_cnn(&[
        "--print-before",
        "merge-composite",
        "--print-before",
        "annotate-target",
    ]);
    let err = stderr(&out);
    assert!(!printed(&err, "before", "merge-composite")
        .expect("printed")
        .contains("Composite="));
    let before_annotate = printed(&err, "before", "annotate-target").expect("printed");
    assert!(before_annotate.contains("Composite=") && !before_annotate.contains("annotation."));
    // Passes that do not run for this target or stage say so; standard output is unchanged.
    let plain = inspect_small_cnn(&[]);
    for pass in ["simplify-inference", "fold-scale-axis"] {
        let out = inspect_small_cnn(&["--print-after", pass]);
        assert!(
            stderr(&out).contains(&format!("// {pass} did not run")),
            "{}",
            stderr(&out)
        );
        assert_eq!(out.stdout, plain.stdout);
    }
    let out = inspect_small_cnn(&["--stage", "composite", "--print-after", "prune"]);
    assert!(stderr(&out).contains("// prune did not run"));
}

#[test]
fn print_after_refuses_an_unknown_pass_and_lists_the_names() {
    let out = inspect_small_cnn(&["--print-after", "merge-regions"]);
    assert_bad_input(
        &out,
        &["merge-regions", "merge-compiler-regions", "partition-graph"],
    );
    for pass in byoc_pipeline::pipeline::pass_names() {
        assert!(
            stderr(&out).contains(pass),
            "{pass} not listed: {}",
            stderr(&out)
        );
    }
    let out = inspect_small_cnn(&["--stage", "parse", "--print-after", "prune"]);
    assert_bad_input(
        &out,
        &["--print-before / --print-after need a pipeline stage"],
    );
}

#[test]
fn json_works_at_every_stage() {
    let json = |stage: &str| -> serde_json::Value {
        let out = inspect_small_cnn(&["--stage", stage, "--format", "json"]);
        assert_eq!(out.status.code(), Some(0), "{stage}: {}", stderr(&out));
        serde_json::from_slice(&out.stdout).expect("valid JSON")
    };
    let strings = |v: &serde_json::Value| -> Vec<String> {
        v.as_array()
            .expect("a list")
            .iter()
            .map(|s| s.as_str().expect("a string").to_string())
            .collect()
    };
    // small_cnn: two conv2d+bias_add+relu blocks (myacc's pattern), then max_pool2d between
    // them, global_avg_pool2d, batch_flatten, dense, bias_add and softmax (myacc takes none).
    let composites = serde_json::json!([{
        "name": "myacc.conv2d_bias_relu",
        "PartitionedFromPattern": "nn.conv2d_nn.bias_add_nn.relu_",
        "count": 2
    }]);
    let tail = [
        "nn.batch_flatten",
        "nn.bias_add",
        "nn.dense",
        "nn.global_avg_pool2d",
        "nn.max_pool2d",
        "nn.softmax",
    ];
    let composite = json("composite");
    assert_eq!(composite["stage"], "composite");
    assert_eq!(composite["composites"], composites);
    assert_eq!(composite["annotations"][0]["target"], "myacc");
    assert_eq!(composite["annotations"][0]["regions"], 0);
    let mut all: Vec<String> = tail.iter().map(|s| s.to_string()).collect();
    all.extend(
        [
            "nn.bias_add",
            "nn.bias_add",
            "nn.conv2d",
            "nn.conv2d",
            "nn.relu",
            "nn.relu",
        ]
        .map(String::from),
    );
    all.sort();
    assert_eq!(strings(&composite["host_ops"]), all);
    for (stage, regions) in [("annotate", 2), ("merge", 2)] {
        let v = json(stage);
        assert_eq!(v["stage"], stage);
        assert_eq!(v["composites"], composites);
        let acc = &v["annotations"][0];
        assert_eq!(acc["regions"], regions, "{stage}");
        assert_eq!(
            strings(&acc["ops"]),
            [
                "nn.bias_add",
                "nn.bias_add",
                "nn.conv2d",
                "nn.conv2d",
                "nn.relu",
                "nn.relu"
            ]
        );
        assert_eq!(strings(&acc["composites"]), ["myacc.conv2d_bias_relu"; 2]);
        assert_eq!(strings(&v["host_ops"]), tail);
        assert!(v["rejected"]
            .as_array()
            .expect("a list")
            .iter()
            .any(|r| r["op"] == "nn.softmax" && r["target"] == "myacc"));
    }
    // After partitioning the summary of partitions, as before.
    assert!(json("partition")["functions"].is_array());
}

#[test]
fn quantize_writes_the_realized_int8_module_and_verify_reports_its_accuracy() {
    let out_path = tmp("small_cnn_int8.relay");
    let out = byoc(&[
        "quantize",
        "examples/models/small_cnn.relay",
        "-o",
        out_path.to_str().expect("utf-8 temp path"),
    ]);
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let text = std::fs::read_to_string(&out_path).expect("quantized module written");
    assert!(text.contains("out_dtype=\"int32\""), "{text}");
    assert!(text.contains("dtype=\"int8\""), "{text}");
    // The written module is valid text that runs.
    let run = byoc(&[
        "run",
        out_path.to_str().expect("utf-8"),
        "--random-inputs",
        "1",
    ]);
    assert!(run.status.success(), "stderr: {}", stderr(&run));

    let verify = byoc(&[
        "verify",
        "examples/models/small_cnn.relay",
        "--quantize",
        "--calibrate",
        "percentile",
        "--calibration-samples",
        "2",
        "--samples",
        "2",
        "--min-cosine",
        "0.9",
    ]);
    let report = String::from_utf8_lossy(&verify.stdout);
    assert!(verify.status.success(), "stderr: {}", stderr(&verify));
    assert!(
        report.contains("cosine=") && report.contains("top1_agreement="),
        "{report}"
    );
    assert!(
        stderr(&verify).contains("seeded random inputs"),
        "{}",
        stderr(&verify)
    );
}

#[test]
fn bad_quantize_options_are_reported() {
    let model = "examples/models/small_cnn.relay";
    let out = byoc(&["quantize", model, "--global-scale", "6", "-o", "x.relay"]);
    assert_bad_input(&out, &["global scale 6 is not a positive power of two"]);
    let out = byoc(&["quantize", model, "--calibrate", "median", "-o", "x.relay"]);
    assert_eq!(out.status.code(), Some(2), "stderr: {}", stderr(&out));
    assert!(
        stderr(&out).contains("unknown calibration mode 'median'"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn calibration_that_does_not_fit_the_memory_budget_is_refused_before_it_runs() {
    let model = "examples/models/small_cnn.relay";
    let out_path = tmp("never_written.relay");
    let quantize = |samples: &str| {
        byoc(&[
            "quantize",
            model,
            "--calibrate",
            "percentile",
            "--calibration-samples",
            samples,
            "--max-memory",
            "1M",
            "-o",
            out_path.to_str().expect("utf-8 temp path"),
        ])
    };
    // 1000 random samples of 1x3x16x16 float32 inputs are 3072000 bytes.
    assert_bad_input(
        &quantize("1000"),
        &[
            "1000 calibration samples",
            "Tensor[(1000, 1, 3, 16, 16), float32] (3072000 bytes (2.9 MiB))",
            "over the memory budget of 1048576 bytes (1.0 MiB)",
            "calibrate on fewer samples",
        ],
    );
    // 300 samples (921600 bytes) fit, but not next to every value the one quantization point
    // (the second conv2d's 1x8x8x8 input; the first conv2d stays float) takes over them.
    assert_bad_input(
        &quantize("300"),
        &[
            "calibration on 300 samples keeps every value of the quantization points",
            "Tensor[(300, 1, 8, 8, 8), float32] (614400 bytes",
            "over the memory budget of 1048576 bytes (1.0 MiB)",
        ],
    );
    assert!(!out_path.exists());
}

// Huge shapes are refused with exit code 2 and a message naming the file, the tensor, its size
// and the memory budget, instead of aborting on allocation; `--max-memory` sets the budget.

#[test]
fn a_huge_parameter_is_refused_before_random_inputs_are_drawn() {
    let model = write(
        "huge_param.relay",
        "def @main(%x: Tensor[(1000000, 1000000), float32]) { nn.relu(%x) }\n",
    );
    let model = model.to_str().unwrap();
    let out = byoc(&["run", model, "--random-inputs", "1", "--max-memory", "1G"]);
    assert_bad_input(
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
    assert_bad_input(
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
    assert_bad_input(
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
        "def @main(%x: Tensor[(1000), float32]) { nn.relu(%x) }\n",
    );
    let out = byoc(&["inspect", model.to_str().unwrap(), "--max-memory", "lots"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("'lots' is not a byte count"));
    // The file (55 bytes) fits, the parameter does not.
    let out = byoc(&["inspect", model.to_str().unwrap(), "--max-memory", "100"]);
    assert_bad_input(
        &out,
        &[
            "%x: parameter Tensor[(1000), float32] needs 4000 bytes",
            "budget of 100 bytes",
        ],
    );
    // Nor does the file itself in 4 bytes.
    let out = byoc(&["inspect", model.to_str().unwrap(), "--max-memory", "4"]);
    assert_bad_input(
        &out,
        &["the file holds 55 bytes, over the memory budget of 4 bytes"],
    );
}

/// Writes a one-node ONNX model (opset 13): `node` over the float32 graph input `x` of `dims`,
/// with `initializers`, returning `y`.
fn onnx_model(
    name: &str,
    node: NodeProto,
    dims: &[i64],
    initializers: Vec<TensorProto>,
) -> PathBuf {
    let info = |name: &str, dims: Option<&[i64]>| ValueInfoProto {
        name: name.into(),
        r#type: Some(TypeProto {
            tensor_type: Some(TypeProtoTensor {
                elem_type: 1,
                shape: dims.map(|dims| TensorShapeProto {
                    dim: dims
                        .iter()
                        .map(|&d| Dimension {
                            dim_value: Some(d),
                            dim_param: None,
                        })
                        .collect(),
                }),
            }),
        }),
    };
    let model = ModelProto {
        ir_version: 8,
        opset_import: vec![OperatorSetIdProto {
            domain: String::new(),
            version: 13,
        }],
        producer_name: "byoc-tests".into(),
        graph: Some(GraphProto {
            node: vec![node],
            name: "g".into(),
            input: vec![info("x", Some(dims))],
            output: vec![info("y", None)],
            initializer: initializers,
            ..GraphProto::default()
        }),
    };
    let p = tmp(name);
    std::fs::write(&p, model.encode_to_vec()).expect("write temp file");
    p
}

/// An ONNX node `op_type(inputs) -> y` named `n0` with integer-list attributes.
fn onnx_node(op_type: &str, inputs: &[&str], ints: &[(&str, Vec<i64>)]) -> NodeProto {
    NodeProto {
        name: "n0".into(),
        op_type: op_type.into(),
        input: inputs.iter().map(|s| s.to_string()).collect(),
        output: vec!["y".into()],
        attribute: ints
            .iter()
            .map(|(name, values)| AttributeProto {
                name: (*name).into(),
                r#type: attribute_type::INTS,
                ints: values.clone(),
                ..AttributeProto::default()
            })
            .collect(),
        ..NodeProto::default()
    }
}

/// An initializer of `dims` holding `values` (float32 or int64).
fn onnx_tensor(name: &str, dims: &[i64], floats: Vec<f32>, ints: Vec<i64>) -> TensorProto {
    TensorProto {
        name: name.into(),
        dims: dims.to_vec(),
        data_type: if ints.is_empty() { 1 } else { 7 },
        float_data: floats,
        int64_data: ints,
        ..TensorProto::default()
    }
}

/// Asserts a refusal (see [`assert_bad_input`]) whose message names `file` and states
/// `problem` exactly once.
fn assert_refused_once(out: &Output, file: &Path, problem: &str) {
    let name = file.file_name().and_then(|n| n.to_str()).expect("utf-8");
    assert_bad_input(out, &[name, problem]);
    let err = stderr(out);
    assert_eq!(err.matches(problem).count(), 1, "repeated: {err}");
}

#[test]
fn huge_onnx_shapes_are_refused_at_import_naming_file_node_and_size() {
    const E40: i64 = 1 << 40;
    let weight = onnx_tensor("w", &[1, 1, 1, 1], vec![1.0], vec![]);
    let conv = onnx_model(
        "huge_conv_pads.onnx",
        onnx_node("Conv", &["x", "w"], &[("pads", vec![E40; 4])]),
        &[1, 1, 4, 4],
        vec![weight],
    );
    let pool = onnx_model(
        "huge_pool_kernel.onnx",
        onnx_node("AveragePool", &["x"], &[("kernel_shape", vec![E40, E40])]),
        &[1, 1, 4, 4],
        vec![],
    );
    let expand = onnx_model(
        "huge_expand.onnx",
        onnx_node("Expand", &["x", "s"], &[]),
        &[1, 1],
        vec![onnx_tensor("s", &[2], vec![], vec![1_000_000, 1_000_000])],
    );
    let resize = onnx_model(
        "huge_resize.onnx",
        onnx_node("Resize", &["x", "", "scales"], &[]),
        &[1, 1, 2, 2],
        vec![onnx_tensor(
            "scales",
            &[4],
            vec![1.0, 1.0, 250_000.0, 250_000.0],
            vec![],
        )],
    );
    let input = onnx_model(
        "huge_input.onnx",
        onnx_node("Relu", &["x"], &[]),
        &[E40, 1],
        vec![],
    );
    let cases = [
        (
            &conv,
            "node 'n0' (Conv): nn.conv2d: result Tensor[(1, 1, 2199023255556, 2199023255556), float32] is too large: its size overflows 64 bits",
        ),
        (
            &pool,
            "node 'n0' (AveragePool): nn.avg_pool2d: dilated pool window height 1099511627776 exceeds padded input height 4",
        ),
        (
            &expand,
            "Tensor[(1000000, 1000000), float32] needs 4000000000000 bytes (3.6 TiB), over the memory budget of 1073741824 bytes",
        ),
        (
            &resize,
            "node 'n0' (Resize): image.resize2d: result Tensor[(1, 1, 500000, 500000), float32] needs 1000000000000 bytes",
        ),
        (
            &input,
            "'x': graph input Tensor[(1099511627776, 1), float32] needs 4398046511104 bytes (4.0 TiB)",
        ),
    ];
    for (model, problem) in cases {
        let path = model.to_str().expect("utf-8");
        // `inspect` imports without running; `run` with random inputs must refuse as early.
        let out = byoc(&["inspect", path, "--max-memory", "1G"]);
        assert_refused_once(&out, model, problem);
        let out = byoc(&["run", path, "--random-inputs", "1", "--max-memory", "1G"]);
        assert_refused_once(&out, model, problem);
    }
}

#[test]
fn conv2d_transpose_with_huge_strides_is_refused() {
    let model = write(
        "huge_conv_transpose.relay",
        "def @main(%x: Tensor[(1, 1, 4, 4), float32], %w: Tensor[(1, 1, 3, 3), float32]) {\n  nn.conv2d_transpose(%x, %w, channels=1, kernel_size=[3, 3], strides=[1000000, 1000000])\n}\n",
    );
    let out = byoc(&[
        "run",
        model.to_str().expect("utf-8"),
        "--random-inputs",
        "1",
        "--max-memory",
        "1G",
    ]);
    assert_refused_once(
        &out,
        &model,
        "nn.conv2d_transpose: result Tensor[(1, 1, 3000003, 3000003), float32] needs 36000072000036 bytes",
    );
}

// The executor's buffers: a run whose buffers together exceed the budget is refused when it
// is planned, and memory the system refuses at run time is an error, not an abort.

#[test]
fn run_buffers_over_the_budget_are_refused_with_the_tensor_and_site() {
    // On the reference kernels the input, %0 and %1 are alive together and the result needs
    // its own buffer: four buffers of 400000 bytes, each within a budget of 1000000 bytes; the
    // third of them brings the run to 1200000.
    let model = write(
        "run_budget.relay",
        "def @main(%x: Tensor[(1, 100000), float32]) {\n  %0 = nn.relu(%x);\n  %1 = exp(%x);\n  add(%0, %1)\n}\n",
    );
    let path = model.to_str().expect("utf-8");
    let run = |budget: &str, codegen: &str| {
        byoc(&[
            "run",
            path,
            "--random-inputs",
            "1",
            "--max-memory",
            budget,
            "--host-codegen",
            codegen,
        ])
    };
    let out = run("1000000", "kernels");
    assert_refused_once(
        &out,
        &model,
        "@main:%2: the run buffer of Tensor[(1, 100000), float32] (400000 bytes (390.6 KiB)) brings the memory of one run to 1200000 bytes (1.1 MiB), over the memory budget of 1000000 bytes (976.6 KiB) (see --max-memory)",
    );
    let fits = run("1700000", "kernels");
    assert_eq!(fits.status.code(), Some(0), "{}", stderr(&fits));
    // Compiled, the three ops are one fused loop that writes only the result (with the input,
    // 800000 bytes).
    let fused = run("1000000", "llvm");
    assert_eq!(fused.status.code(), Some(0), "{}", stderr(&fused));
}

#[test]
fn memory_the_system_refuses_at_run_time_is_an_error_not_an_abort() {
    // 256 PiB: within a budget of 1 EiB, beyond any address space, so the allocation fails
    // without touching memory.
    let model = write(
        "huge_run_pad.relay",
        "def @main(%x: Tensor[(1, 1, 1, 1), float32]) {\n  nn.pad(%x, 0f, pad_width=[[8192, 8191], [8192, 8191], [8192, 8191], [8192, 8191]])\n}\n",
    );
    let out = byoc(&[
        "run",
        model.to_str().expect("utf-8"),
        "--random-inputs",
        "1",
        "--max-memory",
        "1048576T",
    ]);
    assert_refused_once(
        &out,
        &model,
        "Tensor[(16384, 16384, 16384, 16384), float32] needs 288230376151711744 bytes (256.0 PiB), which the system cannot allocate now (memory budget 1152921504606846976 bytes",
    );
}

// Dimensions, axes and strides at the ends of their integer range are refused or handled, never
// wrapped or saturated.

#[test]
fn extreme_dims_and_axes_in_relay_text_are_refused() {
    let cases = [
        (
            "negative_dim.relay",
            "def @main(%x: Tensor[(-1, 2), float32]) { nn.relu(%x) }\n",
            "1:23: expected a dimension (a non-negative integer) but found '-1'",
        ),
        (
            "huge_dim.relay",
            "def @main(%x: Tensor[(0, 9223372036854775808), float32]) { nn.relu(%x) }\n",
            "(0, 9223372036854775808)",
        ),
        (
            "min_axis.relay",
            "def @main(%x: Tensor[(2, 3), float32]) { nn.softmax(%x, axis=-9223372036854775808) }\n",
            "axis -9223372036854775808 is out of range for a rank-2 input",
        ),
        (
            "max_axis.relay",
            "def @main(%x: Tensor[(2, 3), float32]) { expand_dims(%x, axis=9223372036854775807) }\n",
            "axis 9223372036854775807 is out of range",
        ),
        (
            "max_pad.relay",
            "def @main(%x: Tensor[(2, 3), float32]) { nn.pad(%x, 0f, pad_width=[[0, 0], [9223372036854775807, 9223372036854775807]]) }\n",
            "padding axis 1 of size 3 by [9223372036854775807, 9223372036854775807] overflows 64 bits",
        ),
    ];
    for (name, text, problem) in cases {
        let model = write(name, text);
        let out = byoc(&["inspect", model.to_str().expect("utf-8")]);
        assert_bad_input(&out, &[name, problem]);
    }
}

#[test]
fn strided_slice_strides_at_the_integer_limits_slice_like_numpy() {
    // numpy: np.arange(6.)[1:6:2**63-1] == [1.], np.arange(6.)[4:-7:-2**63] == [4.]
    let cases = [
        ("9223372036854775807", 1, 6, 1.0f32),
        ("-9223372036854775808", 4, -7, 4.0),
    ];
    for (stride, begin, end, want) in cases {
        let model = write(
            "slice_limits.relay",
            &format!(
                "def @main(%x: Tensor[(6), float32]) {{ strided_slice(%x, begin=[{begin}], end=[{end}], strides=[{stride}]) }}\n"
            ),
        );
        let inputs = tmp("slice_limits_in.npz");
        let x =
            byoc_ir::Tensor::from_vec([6], vec![0.0f32, 1.0, 2.0, 3.0, 4.0, 5.0]).expect("tensor");
        byoc_artifact::io::write_npz(
            &inputs,
            &std::collections::BTreeMap::from([("x".to_string(), x)]),
        )
        .expect("npz");
        let output = tmp("slice_limits_out.npz");
        let out = byoc(&[
            "run",
            model.to_str().expect("utf-8"),
            "--inputs",
            inputs.to_str().expect("utf-8"),
            "-o",
            output.to_str().expect("utf-8"),
        ]);
        assert_eq!(out.status.code(), Some(0), "{stride}: {}", stderr(&out));
        let got = byoc_artifact::io::read_npz(&output).expect("outputs");
        let y = got.values().next().expect("one output");
        assert_eq!(y.shape(), [1], "{stride}");
        assert_eq!(y.as_slice::<f32>().expect("float32"), [want], "{stride}");
    }
}

/// `node` with an INT attribute `name` = `value` added.
fn with_int(mut node: NodeProto, name: &str, value: i64) -> NodeProto {
    node.attribute.push(AttributeProto {
        name: name.into(),
        r#type: attribute_type::INT,
        i: value,
        ..AttributeProto::default()
    });
    node
}

#[test]
fn onnx_attributes_at_the_i64_limits_are_refused_naming_node_and_attribute() {
    const MAX: i64 = i64::MAX;
    const MIN: i64 = i64::MIN;
    let weight = || onnx_tensor("w", &[1, 1, 1, 1], vec![1.0], vec![]);
    // A dilated window of about 2^126 pixels: its SAME padding does not fit an i64.
    let mut same = onnx_node(
        "Conv",
        &["x", "w"],
        &[
            ("kernel_shape", vec![MAX, MAX]),
            ("dilations", vec![MAX, MAX]),
        ],
    );
    same.attribute.push(AttributeProto {
        name: "auto_pad".into(),
        r#type: attribute_type::STRING,
        s: b"SAME_UPPER".to_vec(),
        ..AttributeProto::default()
    });
    let cases = [
        (
            onnx_model(
                "flatten_min_axis.onnx",
                with_int(onnx_node("Flatten", &["x"], &[]), "axis", MIN),
                &[2, 3],
                vec![],
            ),
            "node 'n0' (Flatten): axis -9223372036854775808 is out of range for rank 2 (allowed: -2..=2)",
        ),
        (
            onnx_model(
                "gather_max_axis.onnx",
                with_int(onnx_node("Gather", &["x", "i"], &[]), "axis", MAX),
                &[2, 3],
                vec![onnx_tensor("i", &[1], vec![], vec![0])],
            ),
            "node 'n0' (Gather): axis 9223372036854775807 is out of range for a tensor of rank 2",
        ),
        (
            onnx_model("conv_same_max_window.onnx", same, &[1, 1, 4, 4], vec![weight()]),
            "node 'n0' (Conv): the padding auto_pad asks for (42535295865117307919086767873688862721) does not fit a 64-bit integer",
        ),
        (
            onnx_model(
                "conv_max_pads.onnx",
                onnx_node("Conv", &["x", "w"], &[("pads", vec![MAX, MAX, MAX, MAX])]),
                &[1, 1, 4, 4],
                vec![weight()],
            ),
            "node 'n0' (Conv)",
        ),
        (
            onnx_model(
                "conv_min_dilations.onnx",
                onnx_node("Conv", &["x", "w"], &[("dilations", vec![MIN, MIN])]),
                &[1, 1, 4, 4],
                vec![weight()],
            ),
            "strides [1, 1] and dilations [-9223372036854775808, -9223372036854775808] must be positive",
        ),
        (
            onnx_model(
                "reshape_huge.onnx",
                onnx_node("Reshape", &["x", "s"], &[]),
                &[2, 3],
                vec![onnx_tensor("s", &[3], vec![], vec![MAX, MAX, -1])],
            ),
            "node 'n0' (Reshape): target shape [9223372036854775807, 9223372036854775807, -1]: the element count overflows 64 bits",
        ),
    ];
    for (model, problem) in &cases {
        let out = byoc(&["inspect", model.to_str().expect("utf-8")]);
        let name = model.file_name().and_then(|n| n.to_str()).expect("utf-8");
        assert_bad_input(&out, &[name, problem]);
    }
}

/// The ONNX model at `path`, edited by `edit`, written to `name`.
fn edited_onnx(path: &Path, name: &str, edit: impl FnOnce(&mut GraphProto)) -> PathBuf {
    let bytes = std::fs::read(path).expect("read the model");
    let mut model = ModelProto::decode(bytes.as_slice()).expect("a model");
    edit(model.graph.as_mut().expect("a graph"));
    let p = tmp(name);
    std::fs::write(&p, model.encode_to_vec()).expect("write temp file");
    p
}

// Issue #15's found list, ONNX part, through the binary: each is refused with exit code 2 and
// a message naming the file and the problem (the importer's own tests pin the messages).
#[test]
fn invalid_onnx_from_the_found_list_exits_2_naming_the_file() {
    let relu = onnx_model(
        "found_relu.onnx",
        onnx_node("Relu", &["x"], &[]),
        &[1, 4],
        vec![],
    );
    let resize = |name: &str, scale: f32| {
        onnx_model(
            name,
            onnx_node("Resize", &["x", "", "scales"], &[]),
            &[1, 1, 2, 2],
            vec![onnx_tensor(
                "scales",
                &[4],
                vec![1.0, 1.0, scale, 2.0],
                vec![],
            )],
        )
    };
    let mut split = onnx_node("Split", &["x", "split"], &[]);
    split.output = vec!["y".into(), "z".into()];
    let split = edited_onnx(
        &onnx_model(
            "found_split_base.onnx",
            with_int(split, "axis", 1),
            &[1, 4],
            vec![onnx_tensor("split", &[2], vec![], vec![3, 3])],
        ),
        "found_split.onnx",
        |g| {
            let mut z = g.output[0].clone();
            z.name = "z".into();
            g.output.push(z);
        },
    );
    let cases = [
        (
            edited_onnx(&relu, "found_huge_input.onnx", |g| {
                let tensor = g.input[0]
                    .r#type
                    .as_mut()
                    .unwrap()
                    .tensor_type
                    .as_mut()
                    .unwrap();
                tensor.shape.as_mut().unwrap().dim[0].dim_value = Some(i64::MAX);
            }),
            "'x': graph input Tensor[(9223372036854775807, 4), float32] is too large",
        ),
        (
            resize("found_resize_1e30.onnx", 1e30),
            "give an output dim of",
        ),
        (
            resize("found_resize_nan.onnx", f32::NAN),
            "every scale must be finite and positive",
        ),
        (
            resize("found_resize_inf.onnx", f32::INFINITY),
            "every scale must be finite and positive",
        ),
        (
            split,
            "input 1 (split) [3, 3] does not add up to dim 1 of [1, 4]",
        ),
        (
            edited_onnx(&relu, "found_twice.onnx", |g| {
                let again = g.input[0].clone();
                g.input.push(again);
            }),
            "graph input 'x' is declared twice",
        ),
        (
            edited_onnx(&relu, "found_initializer.onnx", |g| {
                g.initializer
                    .push(onnx_tensor("x", &[4, 1], vec![1.0; 4], vec![]));
            }),
            "initializer 'x' has shape [4, 1] but graph input 'x' declares [1, 4]",
        ),
        (
            edited_onnx(&relu, "found_no_outputs.onnx", |g| g.output.clear()),
            "the graph has no outputs",
        ),
    ];
    for (model, problem) in &cases {
        let path = model.to_str().expect("utf-8");
        let out = byoc(&["run", path, "--random-inputs", "1"]);
        let name = model.file_name().and_then(|n| n.to_str()).expect("utf-8");
        assert_bad_input(&out, &[name, problem]);
    }
}

#[test]
fn building_a_model_with_a_huge_partition_output_allocates_nothing_for_it() {
    // A 4 TB partition output within a 64 TiB budget: the host program stubs it with a
    // `zeros` call, so build is quick and the artifact small.
    let spec = write(
        "found_spec.json",
        r#"{"target": "acc", "ops": ["nn.relu"]}"#,
    );
    let model = write(
        "found_huge_partition.relay",
        "def @main(%x: Tensor[(1000000, 1000000), float32]) { nn.relu(%x) }\n",
    );
    let artifact = tmp("found_huge_partition.byoc");
    let config = tmp("found_config");
    let out = byoc_command(&[
        "build",
        model.to_str().expect("utf-8"),
        "--target-spec",
        spec.to_str().expect("utf-8"),
        "--max-memory",
        "64T",
        "-o",
        artifact.to_str().expect("utf-8"),
    ])
    .env("BYOC_CONFIG_DIR", &config)
    .output()
    .expect("byoc starts");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let size = std::fs::metadata(&artifact).expect("artifact").len();
    assert!(size < 64 * 1024, "artifact of {size} bytes");
}

#[test]
fn host_fuse_stage_shows_the_fused_groups() {
    let out = inspect_small_cnn(&["--stage", "host-fuse", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("valid JSON");
    assert_eq!(v["target"], "llvm");
    let groups = v["groups"].as_array().expect("a list of groups");
    // small_cnn with myacc: each conv block is offloaded; the host keeps bias_add after the
    // dense layer, which becomes one group.
    assert!(!groups.is_empty(), "{v}");
    for g in groups {
        assert!(g["function"].as_str().unwrap().starts_with("host_fused_"));
        assert_eq!(g["target"], "llvm");
        assert!(!g["ops"].as_array().unwrap().is_empty());
    }
    let text = byoc(&[
        "inspect",
        "examples/models/small_cnn.relay",
        "--stage",
        "host-fuse",
    ]);
    let text = String::from_utf8_lossy(&text.stdout).into_owned();
    assert!(text.contains("Compiler=\"llvm\""), "{text}");
    assert!(text.contains("def @host_fused_0("), "{text}");
}

#[test]
fn host_fuse_stage_names_the_kind_of_each_group_in_text_and_json() {
    let model = tmp("concat_relu.relay");
    std::fs::write(
        &model,
        "def @main(%x: Tensor[(1, 2, 3, 3), float32], %y: Tensor[(1, 2, 3, 3), float32]) {\n  \
         nn.relu(concatenate((%x, exp(%y)), axis=1))\n}\n",
    )
    .expect("model written");
    let model = model.to_str().expect("utf-8 path");
    let out = byoc(&["inspect", model, "--stage", "host-fuse", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("valid JSON");
    assert_eq!(v["groups"][0]["kind"], "injective", "{v}");
    assert_eq!(
        v["groups"][0]["ops"],
        serde_json::json!(["exp", "concatenate", "nn.relu"]),
        "{v}"
    );
    let out = byoc(&["inspect", model, "--stage", "host-fuse"]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        text.contains("// @host_fused_0: injective, llvm: exp, concatenate, nn.relu\n"),
        "{text}"
    );
}

#[test]
fn reduction_groups_are_named_built_into_artifacts_and_run_bit_identically() {
    let model = write(
        "mean_softmax.relay",
        "def @main(%x: Tensor[(2, 8, 6, 6), float32], %s: Tensor[(8, 1, 1), float32]) {\n  \
         %0 = mean(nn.relu(multiply(%x, %s)), axis=[2, 3]);\n  \
         %1 = nn.softmax(add(%0, 1f));\n  \
         sigmoid(%1)\n}\n",
    );
    let m = model.to_str().expect("utf-8 temp path");
    let out = byoc(&["inspect", m, "--stage", "host-fuse", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("valid JSON");
    let groups = v["groups"].as_array().expect("a list of groups");
    let kinds: Vec<(&str, &str)> = groups
        .iter()
        .map(|g| {
            (
                g["kind"].as_str().unwrap(),
                g["reduction"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [("reduction", "mean"), ("reduction", "nn.softmax")],
        "{v}"
    );
    let out = byoc(&["inspect", m, "--stage", "host-fuse"]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        text.contains("// @host_fused_0: reduction, llvm: multiply, nn.relu, mean, add\n"),
        "{text}"
    );
    // Built into an artifact, run without recompiling: equal to the reference kernels.
    let artifact = tmp("mean_softmax.byoc");
    let a = artifact.to_str().expect("utf-8 temp path");
    let built = byoc(&["build", m, "-o", a, "--strict-host-codegen"]);
    assert!(built.status.success(), "{}", stderr(&built));
    let (want, got) = (
        tmp("mean_softmax_kernels.npz"),
        tmp("mean_softmax_byoc.npz"),
    );
    let run = |what: &str, out: &PathBuf, extra: &[&str]| {
        let o = out.to_str().expect("utf-8 temp path");
        let args = [&["run", what, "--random-inputs", "3", "-o", o][..], extra].concat();
        let out = byoc(&args);
        assert!(out.status.success(), "{}", stderr(&out));
        out
    };
    run(m, &want, &["--host-codegen", "kernels"]);
    let profiled = run(a, &got, &["--profile"]);
    assert!(
        stderr(&profiled).contains("target llvm:"),
        "{}",
        stderr(&profiled)
    );
    let want = read_npz(&want).expect("reference outputs");
    let got = read_npz(&got).expect("artifact outputs");
    assert_eq!(got["output_0"], want["output_0"]);
}

#[test]
fn host_codegen_llvm_is_the_default_and_kernels_selects_the_reference() {
    let model = "examples/models/small_cnn.relay";
    let input = "tests/data/small_cnn/input.npz";
    let reference = tmp("small_cnn_kernels.npz");
    let compiled = tmp("small_cnn_llvm.npz");
    let explicit = tmp("small_cnn_llvm_explicit.npz");
    let from_artifact = tmp("small_cnn_artifact.npz");
    let artifact = tmp("small_cnn_llvm.byoc");
    let path = |p: &PathBuf| p.to_str().expect("utf-8 temp path").to_string();
    let run = |extra: &[&str], out: &PathBuf, what: &str| {
        let mut args = vec!["run", what, "--inputs", input, "--threads", "2"];
        let o = path(out);
        args.extend(["-o", &o]);
        args.extend(extra);
        let out = byoc(&args);
        assert!(out.status.success(), "{extra:?}: {}", stderr(&out));
        out
    };
    // `kernels` selects the reference kernels: no compiled host function runs.
    let kernels = run(
        &["--host-codegen", "kernels", "--profile"],
        &reference,
        model,
    );
    assert!(
        stderr(&kernels).contains("target default:") && !stderr(&kernels).contains("target llvm:"),
        "{}",
        stderr(&kernels)
    );
    // Without the flag, the fused host functions run compiled.
    let profiled = run(&["--profile"], &compiled, model);
    assert!(
        stderr(&profiled).contains("target llvm:"),
        "{}",
        stderr(&profiled)
    );
    run(&["--host-codegen", "llvm"], &explicit, model);
    let a = path(&artifact);
    let built = byoc(&["build", model, "-o", &a]);
    assert!(built.status.success(), "{}", stderr(&built));
    assert!(String::from_utf8_lossy(&built.stdout).contains("plugin host-llvm"));
    let from = run(&["--profile"], &from_artifact, &a);
    assert!(stderr(&from).contains("target llvm:"), "{}", stderr(&from));
    let want = read_npz(&reference).expect("reference outputs");
    for got in [&compiled, &explicit, &from_artifact] {
        let got = read_npz(got).expect("outputs written");
        // Same kernels for conv/dense/softmax, bit-identical fused loops: equal outputs.
        assert_eq!(got["output_0"], want["output_0"]);
    }
    // Without a target, verify checks the compiled host code against the reference kernels,
    // by default as with the flag; with the reference kernels on both sides it needs a target.
    for extra in [&[][..], &["--host-codegen", "llvm"][..]] {
        let verified = byoc(&[&["verify", model][..], extra].concat());
        assert_eq!(verified.status.code(), Some(0), "{}", stderr(&verified));
        let report = String::from_utf8_lossy(&verified.stdout);
        assert!(report.contains("output_0: max_abs_err=0.000e0"), "{report}");
    }
    let out = byoc(&["verify", model, "--host-codegen", "kernels"]);
    assert_bad_input(&out, &["give at least one --target"]);
    // The flags do not apply to an artifact, and strict needs llvm.
    let out = byoc(&["run", &a, "--host-codegen", "llvm", "--random-inputs", "1"]);
    assert_bad_input(&out, &["apply to models, not to built artifacts"]);
    let out = byoc(&[
        "run",
        model,
        "--strict-host-codegen",
        "--host-codegen",
        "kernels",
        "--random-inputs",
        "1",
    ]);
    assert_bad_input(&out, &["--strict-host-codegen needs --host-codegen llvm"]);
    let out = byoc(&[
        "run",
        model,
        "--strict-host-codegen",
        "--random-inputs",
        "1",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn host_codegen_falls_back_with_a_note_and_strict_refuses() {
    let model = write(
        "leaky.relay",
        "def @main(%x: Tensor[(4, 8), float32]) {\n  %0 = nn.leaky_relu(%x, alpha=0.1f);\n  multiply(%0, 2f)\n}\n",
    );
    let m = model.to_str().expect("utf-8 temp path");
    // The default host code generator notes the fallback.
    let out = byoc(&["run", m, "--random-inputs", "1", "--profile"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("host-codegen: @host_fused_0 (nn.leaky_relu, multiply) runs on the reference kernels: nn.leaky_relu: not supported"),
        "{}",
        stderr(&out)
    );
    let out = byoc(&[
        "run",
        m,
        "--random-inputs",
        "1",
        "--host-codegen",
        "llvm",
        "--strict-host-codegen",
    ]);
    assert_bad_input(
        &out,
        &["@host_fused_0 (nn.leaky_relu, multiply) cannot be compiled"],
    );
}

#[test]
fn concatenation_parts_in_place_show_in_the_profile_and_verify() {
    // Two poolings (ordinary op calls on either host code generator) concatenated along the
    // channels with batch 1: both write straight into the concatenation's output.
    let model = write(
        "concat_in_place.relay",
        "def @main(%x: Tensor[(1, 16, 8, 8), float32]) {\n  %0 = nn.max_pool2d(%x, pool_size=[2, 2], strides=[2, 2]);\n  %1 = nn.avg_pool2d(%x, pool_size=[2, 2], strides=[2, 2]);\n  concatenate((%0, %1), axis=1)\n}\n",
    );
    let m = model.to_str().expect("utf-8 temp path");
    for codegen in ["kernels", "llvm"] {
        let out = byoc(&[
            "run",
            m,
            "--random-inputs",
            "1",
            "--profile",
            "--host-codegen",
            codegen,
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(
            stderr(&out).contains(
                "concatenate in place: 1 call(s), 2 of 2 part(s) written by their producers"
            ),
            "{codegen}: {}",
            stderr(&out)
        );
    }
    // verify's reference side copies the parts: the two plans agree bit for bit.
    let verified = byoc(&["verify", m]);
    assert_eq!(verified.status.code(), Some(0), "{}", stderr(&verified));
    let report = String::from_utf8_lossy(&verified.stdout);
    assert!(report.contains("output_0: max_abs_err=0.000e0"), "{report}");
}

// Tolerances that make the check vacuous (NaN compares false, so nothing exceeds it) or
// impossible (a cosine above 1) are refused before anything runs.
#[test]
fn verify_refuses_vacuous_tolerances() {
    let model = "examples/models/small_cnn.relay";
    for (flag, value, problem) in [
        (
            "--rtol",
            "nan",
            "'nan' is not a finite number of at least 0",
        ),
        (
            "--rtol",
            "-1e-3",
            "'-1e-3' is not a finite number of at least 0",
        ),
        (
            "--floor",
            "nan",
            "'nan' is not a finite number of at least 0",
        ),
        (
            "--floor",
            "inf",
            "'inf' is not a finite number of at least 0",
        ),
        ("--min-cosine", "nan", "'nan' is not a number from -1 to 1"),
        ("--min-cosine", "inf", "'inf' is not a number from -1 to 1"),
        ("--min-cosine", "2", "'2' is not a number from -1 to 1"),
    ] {
        let out = byoc(&["verify", model, &format!("{flag}={value}")]);
        assert_bad_input(&out, &[flag, problem]);
    }
}
