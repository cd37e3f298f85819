//! The JSON graphs TVM v0.16 emits for DNNL (conv2d+bias+relu, dense+bias, and the combined
//! single-graph layout) are read, checked field by field, and run with the host provider
//! against numpy-computed outputs (scripts/fixtures/gen_json_runtime_fixtures.py).

mod common;

use byoc_exec::json_host::HostProvider;
use byoc_ir::{DType, TensorType};
use byoc_json_runtime::{Entry, JsonGraph, JsonRuntime, NodeKind};
use common::{assert_close, fixture, run};

fn run_fixture(name: &str, input: &str) {
    let fx = fixture(name);
    let rt = JsonRuntime::new(&fx.json, HostProvider).unwrap();
    let names = rt.graph().const_names();
    rt.init(&fx.constants(&names)).unwrap();
    assert_eq!(rt.input_names(), [input.to_string()]);
    let out = run(&rt, &[fx.arrays[input].clone()]);
    assert_close(&out[0], &fx.arrays["expected"], 1e-4, 1e-4);
}

#[test]
fn conv2d_bias_relu_graph_runs_like_numpy() {
    run_fixture("tvm_dnnl_conv2d_bias_relu", "dnnl_0_i0");
}

#[test]
fn dense_bias_graph_runs_like_numpy() {
    run_fixture("tvm_dnnl_dense_bias", "dnnl_1_i0");
}

#[test]
fn combined_graph_with_intermediates_runs_like_numpy() {
    run_fixture("tvm_dnnl_combined", "dnnl_0_i0");
}

#[test]
fn tvm_conv_graph_is_read_field_by_field() {
    let fx = fixture("tvm_dnnl_conv2d_bias_relu");
    let g = JsonGraph::parse(&fx.json).unwrap();
    assert_eq!(g.symbol.as_deref(), Some("dnnl_tvmgen_default_dnnl_main_0"));
    let kinds: Vec<NodeKind> = g.nodes.iter().map(|n| n.kind).collect();
    assert_eq!(
        kinds,
        [
            NodeKind::Input,
            NodeKind::Const,
            NodeKind::Const,
            NodeKind::Kernel
        ]
    );
    assert_eq!(
        g.const_names(),
        [
            "dnnl_tvmgen_default_dnnl_main_0_const_0",
            "dnnl_tvmgen_default_dnnl_main_0_const_1"
        ]
    );
    let k = &g.nodes[3];
    assert_eq!(k.name, "dnnl.conv2d_bias_relu");
    assert_eq!(
        k.inputs,
        [Entry::new(0, 0), Entry::new(1, 0), Entry::new(2, 0)]
    );
    assert_eq!(k.outputs, [TensorType::new([1, 16, 8, 8], DType::Float32)]);
    assert_eq!(k.attrs.get("padding").unwrap(), ["1", "1", "1", "1"]);
    assert_eq!(k.attrs.get_str("out_layout"), Some(""));
    assert_eq!(k.attrs.get_str("channels"), Some("16"));
    // num_inputs / num_outputs / shape / dtype are structure, not op attributes.
    assert!(k.attrs.get("num_inputs").is_none() && k.attrs.get("shape").is_none());
    let names: Vec<&str> = k.attrs.iter().map(|(n, _)| n).collect();
    assert_eq!(
        names,
        [
            "strides",
            "padding",
            "dilation",
            "groups",
            "channels",
            "kernel_size",
            "data_layout",
            "kernel_layout",
            "out_layout",
            "out_dtype"
        ]
    );
    assert_eq!(g.arg_nodes, [0, 1, 2]);
    assert_eq!(g.heads, [Entry::new(3, 0)]);
    assert_eq!(g.node_row_ptr, [0, 1, 2, 3, 4]);
}

#[test]
fn tvm_graphs_rewrite_to_a_stable_form() {
    for name in [
        "tvm_dnnl_conv2d_bias_relu",
        "tvm_dnnl_dense_bias",
        "tvm_dnnl_combined",
    ] {
        let fx = fixture(name);
        let g = JsonGraph::parse(&fx.json).unwrap();
        let text = g.to_json();
        let again = JsonGraph::parse(&text).unwrap();
        assert_eq!(again, g, "{name}");
        assert_eq!(again.to_json(), text, "{name}");
    }
}

#[test]
fn writer_uses_tvm_encoding() {
    let fx = fixture("tvm_dnnl_dense_bias");
    let text = JsonGraph::parse(&fx.json).unwrap().to_json();
    assert!(text.contains(
        r#"{"op": "kernel", "name": "dnnl.dense_bias", "inputs": [[0, 0, 0], [1, 0, 0], [2, 0, 0]], "attrs": {"num_inputs": "3", "num_outputs": "1", "units": [["10"]], "out_dtype": [[""]], "shape": [[[1, 10]]], "dtype": [["float32"]]}}"#
    ), "{text}");
    assert!(text.contains(r#""arg_nodes": [0, 1, 2],"#));
    assert!(text.contains(r#""node_row_ptr": [0, 1, 2, 3, 4]"#));
}

#[test]
fn two_element_entries_and_attr_key_are_accepted() {
    // TVM's reader takes [node, index] entries and the legacy "attr" key.
    let json = r#"{"nodes": [
        {"op": "input", "name": "x", "attr": {"shape": [[[2, 2]]], "dtype": [["float32"]]}},
        {"op": "kernel", "name": "nn.relu", "inputs": [[0, 0]],
         "attr": {"num_outputs": "1", "num_inputs": "1", "dtype": [["float32"]], "shape": [[[2, 2]]]}}],
      "heads": [[1, 0]], "arg_nodes": [0], "node_row_ptr": [0, 1, 2]}"#;
    let g = JsonGraph::parse(json).unwrap();
    assert_eq!(g.symbol, None);
    assert_eq!(g.heads, [Entry::new(1, 0)]);
    let rt = JsonRuntime::from_graph(g, HostProvider).unwrap();
    rt.init(&Default::default()).unwrap();
    let x = byoc_ir::Tensor::from_vec([2, 2], vec![-1.0f32, 2.0, -3.0, 4.0]).unwrap();
    let out = run(&rt, &[x]);
    assert_eq!(out[0].as_slice::<f32>().unwrap(), &[0.0, 2.0, 0.0, 4.0]);
}
