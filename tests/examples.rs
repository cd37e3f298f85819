//! The examples of `examples/` (see `examples/README.md`), run through the same code as
//! `cargo run --example NAME`: each example's module is included here and its `run` called,
//! then its report is checked for what the example claims (placement, numerics against
//! host-only execution, exit code). The CLI equivalents named in the README run too.
//!
//! The quickstart needs ONNX's light ResNet-50: its test is ignored by default and run by
//! `./scripts/dev test` with `BYOC_ONNX_LIGHT_DIR` naming the directory
//! `scripts/fetch_onnx_light.sh` prepared (as `tests/onnx_light.rs` is).

use std::path::PathBuf;
use std::process::{Command, Output};

#[path = "../examples/common/mod.rs"]
mod common;
#[path = "../examples/detection/detection.rs"]
mod detection;
#[path = "../examples/forum_case/forum.rs"]
mod forum;
mod plugin_build;
#[path = "../examples/posit_cnn/posit_cnn.rs"]
mod posit_cnn;
#[path = "../examples/quickstart/quickstart.rs"]
mod quickstart;
#[path = "../examples/vta_resnet/vta_resnet.rs"]
mod vta_resnet;

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

fn byoc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_byoc"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("the byoc binary starts")
}

#[test]
fn forum_case_offloads_only_the_second_conv2d_both_ways() {
    let result = forum::run();
    assert_eq!(common::exit_code("forum_case", &result), 0);
    let report = result.expect("the example runs");
    assert_eq!(report.placements.len(), 2);
    for p in &report.placements {
        let s = &p.summary;
        assert_eq!(s.functions.len(), 1, "{}: {s:?}", p.how);
        let f = &s.functions[0];
        assert_eq!((f.name.as_str(), f.target.as_str()), ("acc_0", "acc"));
        assert_eq!(f.ops, strings(&["nn.bias_add", "nn.conv2d", "nn.relu"]));
        // The offloaded block reads the first block's relu, %w2 and %b2.
        assert_eq!(f.num_inputs, 3, "{}", p.module);
        assert!(
            p.module.contains("Tensor[(1, 3, 8, 8), float32]"),
            "{}",
            p.module
        );
        assert_eq!(
            s.host_ops,
            strings(&["nn.bias_add", "nn.conv2d", "nn.relu", "nn.softmax"])
        );
        assert!(!p.errors.is_empty() && common::all_within(&p.errors));
    }
    let by_predicate = &report.placements[0].summary;
    assert_eq!(
        by_predicate.functions[0].composites,
        strings(&["acc.conv2d_bias_relu"])
    );
    assert!(
        by_predicate
            .rejected
            .iter()
            .any(|r| r.op == "nn.conv2d" && r.reason == "input has 8 channels, more than 3"),
        "{:?}",
        by_predicate.rejected
    );
    assert!(report.placements[1].summary.functions[0]
        .composites
        .is_empty());
    // The fused block's check turned the first block down too, with its reason.
    assert_eq!(
        by_predicate.declined.len(),
        1,
        "{:?}",
        by_predicate.declined
    );
    assert_eq!(
        (
            by_predicate.declined[0].pattern.as_str(),
            by_predicate.declined[0].reason.as_str()
        ),
        ("acc.conv2d_bias_relu", "input has 8 channels, more than 3")
    );
    let text = report.to_string();
    assert!(text.contains("declined by acc: nn.conv2d ×1 (input has 8 channels, more than 3)"));
    assert!(text.contains(
        "not fused as acc.conv2d_bias_relu: nn.relu ×1 (input has 8 channels, more than 3)"
    ));
}

#[test]
fn detection_keeps_nms_on_the_host_and_offloads_the_rest() {
    let result = detection::run();
    assert_eq!(common::exit_code("detection", &result), 0);
    let report = result.expect("the example runs");
    let s = &report.summary;
    assert_eq!(
        s.host_ops,
        strings(&["vision.get_valid_counts", "vision.non_max_suppression"])
    );
    assert!(!s.functions.is_empty());
    for f in &s.functions {
        assert_eq!(f.target, "detacc");
        assert!(!f.ops.iter().any(|op| op.starts_with("vision.")), "{f:?}");
    }
    let offloaded: usize = s.functions.iter().map(|f| f.ops.len()).sum();
    assert!(
        offloaded >= 15,
        "the backbone and heads go to detacc: {s:?}"
    );

    // The profile: NMS ran on the host, the partitions on detacc, nothing else on the host.
    let host: Vec<&str> = report
        .calls
        .iter()
        .filter(|c| c.target == "host")
        .map(|c| c.op.as_str())
        .collect();
    assert_eq!(
        host,
        ["vision.get_valid_counts", "vision.non_max_suppression"]
    );
    let partitions = report.calls.iter().filter(|c| c.target == "detacc").count();
    assert_eq!(partitions, s.functions.len());

    // At most 8 boxes (max_output_size), scores above the 0.5 threshold, best first, and no
    // two kept boxes overlap with IoU >= 0.4.
    let d = &report.detections;
    assert!(!d.is_empty() && d.len() <= 8, "{d:?}");
    assert!(d.windows(2).all(|w| w[0][0] >= w[1][0]), "{d:?}");
    assert!(d.iter().all(|b| b[0] > 0.5), "{d:?}");
    let iou = |a: &[f32; 5], b: &[f32; 5]| {
        let w = (a[3].min(b[3]) - a[1].max(b[1])).max(0.0);
        let h = (a[4].min(b[4]) - a[2].max(b[2])).max(0.0);
        let area = |r: &[f32; 5]| (r[3] - r[1]) * (r[4] - r[2]);
        w * h / (area(a) + area(b) - w * h)
    };
    for (i, a) in d.iter().enumerate() {
        for b in &d[i + 1..] {
            assert!(iou(a, b) < 0.4, "{a:?} and {b:?} overlap");
        }
    }
    assert!(report
        .to_string()
        .contains("host     vision.non_max_suppression"));
}

#[test]
#[ignore = "needs the ONNX light models: ./scripts/fetch_onnx_light.sh"]
fn quickstart_on_resnet50() {
    let dir = std::env::var_os("BYOC_ONNX_LIGHT_DIR")
        .expect("BYOC_ONNX_LIGHT_DIR names the prepared models (./scripts/fetch_onnx_light.sh)");
    let artifact =
        std::env::temp_dir().join(format!("byoc-quickstart-{}.byoc", std::process::id()));
    let options = quickstart::Options {
        model: quickstart::locate(Some(PathBuf::from(dir))).expect("ResNet-50 is prepared"),
        artifact: artifact.clone(),
    };
    let result = quickstart::run(&options);
    let _ = std::fs::remove_file(&artifact);
    assert_eq!(common::exit_code("quickstart", &result), 0);
    let report = result.expect("the example runs");
    let s = &report.summary;
    assert!(!s.functions.is_empty());
    assert!(s.functions.iter().all(|f| f.target == "cnnacc"));
    let convs = s
        .functions
        .iter()
        .flat_map(|f| &f.ops)
        .filter(|op| *op == "nn.conv2d")
        .count();
    assert_eq!(convs, 53, "every conv2d of ResNet-50 is offloaded");
    assert_eq!(report.top5[0], report.top5[1]);
    assert_eq!(report.top5[0].len(), 5);
}

#[test]
fn quickstart_says_how_to_fetch_a_missing_model() {
    let err = quickstart::locate(Some(PathBuf::from("no/such/model.onnx")))
        .expect_err("a missing model is an error");
    let text = format!("{err:#}");
    assert!(text.contains("no/such/model.onnx"), "{text}");
    assert!(
        text.contains("./scripts/fetch_onnx_light.sh target/onnx-light"),
        "{text}"
    );
}

#[test]
fn readme_commands_of_the_examples_work() {
    // Manual annotation from the command line: the partition holds the second block.
    let out = byoc(&[
        "inspect",
        "examples/models/forum_annotated.relay",
        "--format",
        "json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON summary");
    assert_eq!(json["functions"][0]["name"], "acc_0");
    assert_eq!(
        json["functions"][0]["ops"],
        serde_json::json!(["nn.bias_add", "nn.conv2d", "nn.relu"])
    );

    // The detector with its accelerator spec: verified against host-only execution, and run
    // with the profile (NMS on the host).
    let spec = ["--target-spec", "examples/targets/detacc.json"];
    let mut args = vec!["verify", "examples/models/detector.relay"];
    args.extend(spec);
    let out = byoc(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut args = vec![
        "run",
        "examples/models/detector.relay",
        "--random-inputs",
        "3",
        "--profile",
    ];
    args.extend(spec);
    let out = byoc(&args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("target detacc:") && stderr.contains("target default:"),
        "{stderr}"
    );
}

/// The README's quick tour as written: every `target/release/byoc ...` line of its first `sh`
/// block runs with this build's binary, in a scratch directory that sees the repository's
/// `examples/` and `tests/` (so the files the tour writes land there), and must succeed.
#[test]
fn readme_quick_tour_works_as_written() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md");
    let tour = readme
        .split("## Quick tour")
        .nth(1)
        .and_then(|t| t.split("```sh\n").nth(1))
        .and_then(|t| t.split("```").next())
        .expect("the README has a quick tour with an sh block");
    let scratch = std::env::temp_dir().join(format!("byoc-readme-tour-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).expect("scratch directory");
    for dir in ["examples", "tests"] {
        let link = scratch.join(dir);
        if !link.exists() {
            std::os::unix::fs::symlink(root.join(dir), &link).expect("symlink");
        }
    }
    let mut ran = 0;
    for line in tour.lines().map(str::trim) {
        let Some(args) = line.strip_prefix("target/release/byoc ") else {
            continue;
        };
        let out = Command::new(env!("CARGO_BIN_EXE_byoc"))
            .args(args.split_whitespace())
            .current_dir(&scratch)
            .output()
            .expect("the byoc binary starts");
        assert!(
            out.status.success(),
            "README command failed: {line}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        ran += 1;
    }
    for written in ["out.npz", "report.html", "conv_out.npz", "small_cnn.byoc"] {
        assert!(scratch.join(written).is_file(), "the tour writes {written}");
    }
    let _ = std::fs::remove_dir_all(&scratch);
    assert!(ran >= 10, "only {ran} commands in the quick tour");
}

#[test]
fn vta_resnet_runs_every_layer_on_vta_bit_exact() {
    let result = vta_resnet::run();
    assert_eq!(common::exit_code("vta_resnet", &result), 0);
    let report = result.expect("the example runs");
    assert!(report.identical);
    // Two 3x3 convolutions (the second with the residual add), the 1x1 shortcut convolution
    // (its int32 result feeds the residual add) and the dense head.
    assert_eq!(report.layers.len(), 4, "{report}");
    for l in &report.layers {
        let ([(c1, u1), (c2, u2)], ideal) = (l.runs, l.ideal);
        assert!(c1 >= ideal && c2 >= ideal, "{report}");
        assert!(
            (0.0..=1.0).contains(&u1) && (0.0..=1.0).contains(&u2),
            "{report}"
        );
    }
}

#[test]
fn posit_cnn_reports_each_width_and_meets_its_claims() {
    let dir = plugin_build::build_next_to_byoc(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")),
        &["byoc-plugin-posit"],
    );
    let plugin = dir.join(format!(
        "{}byoc_plugin_posit{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    ));
    let result = posit_cnn::run(Some(plugin), posit_cnn::SAMPLES);
    assert_eq!(common::exit_code("posit_cnn", &result), 0);
    let report = result.expect("the example runs");
    let widths: Vec<u16> = report.rows.iter().map(|r| r.bits).collect();
    assert_eq!(widths, [32, 16, 8]);
    // Accuracy falls with the width.
    let errors: Vec<f64> = report.rows.iter().map(|r| r.accuracy.max_abs).collect();
    assert!(errors[0] < errors[1] && errors[1] < errors[2], "{report}");
    assert_eq!(
        report.rows[0].accuracy.top1_rows,
        posit_cnn::SAMPLES as usize
    );
}
