//! The reports of `byoc inspect` (`--format json|dot|html`) on real models: the JSON summary's
//! exact content, the DOT graph's structure (one cluster per partition, one colour per
//! target), and the HTML page's self-containment. The expected summaries are derived by hand
//! from the models and the targets' op lists (see each test's comment), not from the code.

use std::path::{Path, PathBuf};
use std::process::Command;

use byoc_ir::infer_types;
use byoc_ir::text::parse_module;
use byoc_pipeline::model::{load_model, LoadOptions};
use byoc_pipeline::pipeline::{partition, PartitionOptions, Partitioned, Stage};
use byoc_pipeline::report::graph::{ViewGraph, HOST_COLOUR, TARGET_COLOURS};
use byoc_pipeline::report::summary::Summary;
use byoc_pipeline::report::{render, Format, ReportError};
use byoc_pipeline::target::Target;
use serde_json::{json, Value};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn target(spec: &str) -> Target {
    Target::from_spec_json(spec).expect("test target spec loads")
}

fn run_file(model: &Path, targets: &[Target]) -> Partitioned {
    let module = load_model(&root().join(model), &LoadOptions::default()).expect("model loads");
    partition(&module, targets, &PartitionOptions::default()).expect("pipeline runs")
}

fn run_text(text: &str, targets: &[Target]) -> Partitioned {
    let mut module = parse_module(text).expect("module parses");
    infer_types(&mut module).expect("module types");
    partition(&module, targets, &PartitionOptions::default()).expect("pipeline runs")
}

fn summary_json(p: &Partitioned) -> Value {
    serde_json::from_str(&Summary::of(p).to_json()).expect("summary is JSON")
}

fn myacc() -> Target {
    let text = std::fs::read_to_string(root().join("examples/targets/myacc.json")).expect("spec");
    target(&text)
}

fn not_listed(op: &str, target: &str) -> Value {
    json!({"op": op, "target": target,
           "reason": format!("{op} is not in the op list of target {target}"), "count": 1})
}

/// small_cnn: two conv2d+bias_add+relu blocks, each matched by myacc's composite and each its
/// own partition (a host max_pool2d separates them); weights are bound constants, so each
/// partition has one input. The classifier stays on the host, one rejection per op.
#[test]
fn small_cnn_with_myacc() {
    let p = run_file(Path::new("examples/models/small_cnn.relay"), &[myacc()]);
    let block = |name: &str| {
        json!({"name": name, "target": "myacc",
               "ops": ["nn.bias_add", "nn.conv2d", "nn.relu"],
               "composites": ["myacc.conv2d_bias_relu"], "num_inputs": 1, "num_outputs": 1})
    };
    let host = [
        "nn.batch_flatten",
        "nn.bias_add",
        "nn.dense",
        "nn.global_avg_pool2d",
        "nn.max_pool2d",
        "nn.softmax",
    ];
    assert_eq!(
        summary_json(&p),
        json!({
            "functions": [block("myacc_0"), block("myacc_1")],
            "host_ops": host,
            "rejected": host.iter().map(|op| not_listed(op, "myacc")).collect::<Vec<_>>(),
            "pruned": [],
            "declined": [],
        })
    );
}

/// Two targets: `a` (higher priority) takes the conv2d and the add (both targets list add);
/// `b` takes the relus. conv2d -> relu -> relu -> add alternates a, b, a: three partitions
/// (b's two relus merged). `multiply` is on no list: one rejection per target. The relu
/// after it is a one-op partition of b, below b's `min_ops` of 2, so Prune inlines it back
/// (the pruned entry) and a relu joins the host ops.
#[test]
fn two_targets() {
    let a = target(r#"{"target": "a", "ops": ["nn.conv2d", "add"]}"#);
    let b = target(
        r#"{"target": "b", "ops": ["nn.relu", "add"],
            "prune": {"min_ops": 2}}"#,
    );
    let p = run_text(
        r#"def @main(%x: Tensor[(1, 2, 4, 4), float32], %w: Tensor[(2, 2, 1, 1), float32]) {
  %0 = nn.conv2d(%x, %w, channels=2, kernel_size=[1, 1]);
  %1 = nn.relu(%0);
  %2 = nn.relu(%1);
  %3 = add(%2, %x);
  %4 = multiply(%3, %3);
  %5 = nn.relu(%4);
  (%5, %3)
}"#,
        &[a, b],
    );
    assert_eq!(
        summary_json(&p),
        json!({
            "functions": [
                {"name": "a_0", "target": "a", "ops": ["nn.conv2d"], "composites": [],
                 "num_inputs": 2, "num_outputs": 1},
                {"name": "a_1", "target": "a", "ops": ["add"], "composites": [],
                 "num_inputs": 2, "num_outputs": 1},
                {"name": "b_0", "target": "b", "ops": ["nn.relu", "nn.relu"], "composites": [],
                 "num_inputs": 1, "num_outputs": 1},
            ],
            "host_ops": ["multiply", "nn.relu"],
            "rejected": [
                not_listed("multiply", "a"),
                not_listed("multiply", "b"),
            ],
            "pruned": [
                {"name": "b_1", "target": "b", "reason": "1 op(s), fewer than min_ops=2"},
            ],
            "declined": [],
        })
    );
}

/// The ONNX conv fixture (tests/data/onnx/conv): the target takes group-1 conv2d and
/// bias_add, and keeps only partitions with a conv2d. conv2d+bias_add form one partition; the
/// three other group-1 convolutions read only the input, so each is its own partition. The
/// grouped conv2d and the three conv2d_transpose stay on the host; the bias_add after the
/// first conv2d_transpose forms a partition of its own that require_any prunes.
#[test]
fn onnx_conv_model() {
    let acc = target(
        r#"{"target": "acc", "ops": [{"op": "nn.conv2d", "attrs": {"groups": 1}}, "nn.bias_add"],
            "prune": {"require_any": ["nn.conv2d"]}}"#,
    );
    let p = run_file(Path::new("tests/data/onnx/conv/model.onnx"), &[acc]);
    let conv = |name: &str| {
        json!({"name": name, "target": "acc", "ops": ["nn.conv2d"], "composites": [],
               "num_inputs": 1, "num_outputs": 1})
    };
    let s = summary_json(&p);
    assert_eq!(
        s["functions"],
        json!([
            {"name": "acc_0", "target": "acc", "ops": ["nn.bias_add", "nn.conv2d"],
             "composites": [], "num_inputs": 1, "num_outputs": 1},
            conv("acc_1"),
            conv("acc_2"),
            conv("acc_3"),
        ])
    );
    assert_eq!(
        s["host_ops"],
        json!([
            "nn.bias_add",
            "nn.conv2d",
            "nn.conv2d_transpose",
            "nn.conv2d_transpose",
            "nn.conv2d_transpose"
        ])
    );
    let rejected = s["rejected"].as_array().expect("rejected is a list");
    assert_eq!(rejected.len(), 2, "{rejected:?}");
    assert_eq!(rejected[0]["op"], "nn.conv2d");
    assert_eq!(rejected[0]["count"], 1);
    let reason = rejected[0]["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("groups"), "{reason}");
    assert_eq!(rejected[1]["op"], "nn.conv2d_transpose");
    assert_eq!(rejected[1]["count"], 3, "three calls, one entry");
    assert_eq!(s["pruned"].as_array().map(Vec::len), Some(1));
    assert_eq!(s["pruned"][0]["target"], "acc");
    assert_eq!(s["pruned"][0]["reason"], "none of require_any=[nn.conv2d]");
}

/// Parses the DOT text into (cluster label, fill colours of its nodes) and host node fills.
fn dot_clusters(dot: &str) -> (Vec<(String, Vec<String>)>, Vec<String>) {
    let mut clusters: Vec<(String, Vec<String>)> = Vec::new();
    let mut host = Vec::new();
    let mut inside = false;
    for line in dot.lines() {
        let l = line.trim();
        if l.starts_with("subgraph \"cluster_") {
            inside = true;
            clusters.push((String::new(), Vec::new()));
        } else if l == "}" {
            inside = false;
        } else if let Some(label) = l.strip_prefix("label=\"") {
            if let Some(c) = clusters.last_mut().filter(|_| inside) {
                c.0 = label.trim_end_matches("\";").to_string();
            }
        } else if l.starts_with('n') && l.contains("fillcolor=\"") {
            let fill = l.split("fillcolor=\"").nth(1).unwrap_or("")[..7].to_string();
            match clusters.last_mut().filter(|_| inside) {
                Some(c) => c.1.push(fill),
                None => host.push(fill),
            }
        }
    }
    (clusters, host)
}

#[test]
fn dot_has_a_cluster_per_partition_and_a_colour_per_target() {
    let a = target(r#"{"target": "a", "ops": ["nn.conv2d"]}"#);
    let b = target(r#"{"target": "b", "ops": ["nn.relu", "add"]}"#);
    let p = run_text(
        r#"def @main(%x: Tensor[(1, 2, 4, 4), float32], %w: Tensor[(2, 2, 1, 1), float32]) {
  %0 = nn.conv2d(%x, %w, channels=2, kernel_size=[1, 1]);
  %1 = nn.relu(%0);
  %2 = add(%1, %x);
  %3 = tanh(%2);
  %4 = nn.conv2d(%3, %w, channels=2, kernel_size=[1, 1]);
  nn.relu(%4)
}"#,
        &[a, b],
    );
    let dot = render(Format::Dot, Stage::Partition, &p, &["a", "b"]).expect("dot renders");
    assert!(
        dot.starts_with("digraph main {\n") && dot.ends_with("}\n"),
        "{dot}"
    );
    let (clusters, host) = dot_clusters(&dot);
    let labels: Vec<&str> = clusters.iter().map(|c| c.0.as_str()).collect();
    assert_eq!(labels, ["a_0 (a)", "b_0 (b)", "a_1 (a)", "b_1 (b)"]);
    let (ca, cb) = (TARGET_COLOURS[0].fill, TARGET_COLOURS[1].fill);
    assert_ne!(ca, cb);
    let fills: Vec<Vec<&str>> = clusters
        .iter()
        .map(|c| c.1.iter().map(String::as_str).collect())
        .collect();
    assert_eq!(fills, [vec![ca], vec![cb, cb], vec![ca], vec![cb]]);
    // Inputs x and w, the tanh, the output: all host grey.
    assert_eq!(host, vec![HOST_COLOUR.fill; 4]);
    // Edges cross partition boxes: conv2d (a_0) -> relu (b_0), add (b_0) -> tanh (host).
    let graph = ViewGraph::of_main(&p.module, &["a", "b"]).expect("main exists");
    assert_eq!(graph.nodes.len(), 9);
    assert!(graph.edges.iter().all(|&(s, t)| s < t));
    assert_eq!(
        dot.matches(" -> ").count(),
        graph.edges.len(),
        "every edge is drawn once"
    );
}

#[test]
fn drawings_need_the_partition_stage() {
    let module = parse_module("def @main(%x: Tensor[(2), float32]) { nn.relu(%x) }").expect("ok");
    let opts = PartitionOptions {
        stop_after: Stage::Merge,
        ..PartitionOptions::default()
    };
    let p = partition(&module, &[], &opts).expect("pipeline runs");
    for format in [Format::Dot, Format::Html] {
        assert_eq!(
            render(format, Stage::Merge, &p, &[]),
            Err(ReportError::NeedsPartition {
                format: format.name(),
                stage: "merge"
            })
        );
    }
    assert!(render(Format::Text, Stage::Merge, &p, &[]).is_ok());
    assert!(render(Format::Json, Stage::Merge, &p, &[]).is_ok());
}

#[test]
fn html_is_self_contained_and_holds_the_tables() {
    let acc = target(
        r#"{"target": "acc", "ops": [{"op": "nn.conv2d", "attrs": {"groups": 1}}, "nn.bias_add"],
            "prune": {"require_any": ["nn.conv2d"]}}"#,
    );
    let p = run_file(Path::new("tests/data/onnx/conv/model.onnx"), &[acc]);
    let html = render(Format::Html, Stage::Partition, &p, &["acc"]).expect("html renders");
    assert!(html.starts_with("<!DOCTYPE html>"));
    for needle in [
        "<svg xmlns=\"http://www.w3.org/2000/svg\"",
        "<h2>Partitions</h2>",
        "<td>acc_0</td>",
        "<td>nn.conv2d_transpose</td><td>3</td>",
        "<h2>Rejected",
        "<h2>Pruned partitions",
        "none of require_any=[nn.conv2d]",
    ] {
        assert!(html.contains(needle), "missing {needle}");
    }
    assert!(!html.contains("<script"), "no scripts");
    let external = html.matches("http").count();
    assert_eq!(external, 1, "only the SVG namespace names a URL");
}

#[test]
fn cli_writes_every_format() {
    let dir = std::env::temp_dir().join(format!("byoc-report-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    for (format, head) in [
        ("json", "{"),
        ("dot", "digraph main {"),
        ("html", "<!DOCTYPE html>"),
    ] {
        let out = dir.join(format!("small_cnn.{format}"));
        let status = Command::new(env!("CARGO_BIN_EXE_byoc"))
            .current_dir(root())
            .args(["inspect", "examples/models/small_cnn.relay"])
            .args(["--target-spec", "examples/targets/myacc.json"])
            .args(["--format", format, "-o"])
            .arg(&out)
            .status()
            .expect("byoc starts");
        assert!(status.success());
        let text = std::fs::read_to_string(&out).expect("output written");
        assert!(text.starts_with(head), "{format}: {}", &text[..40]);
    }
    let refused = Command::new(env!("CARGO_BIN_EXE_byoc"))
        .current_dir(root())
        .args([
            "inspect",
            "examples/models/small_cnn.relay",
            "--stage",
            "annotate",
        ])
        .args(["--format", "dot"])
        .output()
        .expect("byoc starts");
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("needs --stage partition"));
}
