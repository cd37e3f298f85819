//! Runtime behaviour: several threads running one module, bad graphs and bad bindings give
//! errors that name the node and op, the plugin entry points.

mod common;

use std::sync::Arc;

use byoc_ir::Tensor;
use byoc_json_runtime::serialize::serialize;
use byoc_plugin_dnnl::{DnnlPlugin, DnnlRuntime};
use byoc_sdk::{CompileOptions, PartitionedFunction, Plugin};
use common::{compile_error, host, konst, partition, rel_err, run, tensor};

/// conv → relu → conv + residual add → pools: blocked layouts, reorders and arena reuse.
fn block() -> String {
    let w1 = konst(&[16, 5, 3, 3], 70);
    let w2 = konst(&[16, 16, 3, 3], 71);
    partition(
        "%x: Tensor[(1, 5, 12, 12), float32]",
        &format!(
            "  %0 = nn.conv2d(%x, {w1}, padding=[1, 1, 1, 1], channels=16, kernel_size=[3, 3]);\n  \
             %1 = nn.relu(%0);\n  \
             %2 = nn.conv2d(%1, {w2}, padding=[1, 1, 1, 1], channels=16, kernel_size=[3, 3]);\n  \
             %3 = add(%2, %1);\n  \
             %4 = nn.max_pool2d(%3, pool_size=[2, 2], strides=[2, 2]);\n  \
             nn.global_avg_pool2d(%4)"
        ),
    )
}

#[test]
fn several_threads_run_one_module() {
    let text = block();
    let f = PartitionedFunction::from_text(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let module = Arc::new(
        DnnlPlugin
            .compile(&f, &CompileOptions::new().with("threads", "1"))
            .unwrap(),
    );
    let inputs: Vec<Tensor> = (0..6).map(|i| tensor(&[1, 5, 12, 12], 100 + i)).collect();
    let want: Vec<Vec<Tensor>> = inputs
        .iter()
        .map(|x| host(&f, std::slice::from_ref(x)))
        .collect();
    std::thread::scope(|s| {
        for (x, w) in inputs.iter().zip(&want) {
            let module = Arc::clone(&module);
            s.spawn(move || {
                for _ in 0..20 {
                    let got = run(module.as_ref().as_ref(), std::slice::from_ref(x), w);
                    assert!(rel_err(&got[0], &w[0]) <= 1e-4);
                }
            });
        }
    });
}

#[test]
fn unsupported_dtypes_ops_and_layouts_are_named() {
    let e = compile_error(&partition("%x: Tensor[(4,), float64]", "  abs(%x)"));
    assert!(
        e.contains("node 0 ('x')") && e.contains("dtype float64"),
        "{e}"
    );
    // int32 tensors pass (quantized graphs) but only the int8 composites and `cast` take them.
    let e = compile_error(&partition("%x: Tensor[(4,), int32]", "  abs(%x)"));
    assert!(
        e.contains("node 1 ('abs')") && e.contains("dtype int32"),
        "{e}"
    );
    let e = compile_error(&partition("%x: Tensor[(4, 3), float32]", "  transpose(%x)"));
    assert!(
        e.contains("'transpose'") && e.contains("not supported"),
        "{e}"
    );
    let w = konst(&[3, 3, 2, 4], 80);
    let e = compile_error(&partition(
        "%x: Tensor[(1, 5, 5, 2), float32]",
        &format!("  nn.conv2d(%x, {w}, channels=4, kernel_size=[3, 3], data_layout=\"NHWC\", kernel_layout=\"HWIO\")"),
    ));
    assert!(e.contains("'nn.conv2d'") && e.contains("NHWC"), "{e}");
}

/// The JSON of a valid partition, edited into a bad one, and its constants.
fn edited(text: &str, from: &str, to: &str) -> Result<DnnlRuntime, String> {
    let f = PartitionedFunction::from_text(text).unwrap();
    let s = serialize(&f.function, "dnnl_test").unwrap();
    let json = s.to_json();
    assert!(json.contains(from), "{json}");
    DnnlRuntime::new(&json.replace(from, to), &s.constants, None).map_err(|e| e.to_string())
}

#[test]
fn bad_graphs_give_clear_errors() {
    let w = konst(&[4, 3, 3, 3], 81);
    let b = konst(&[4, 1, 1], 82);
    let text = partition(
        "%x: Tensor[(1, 3, 6, 6), float32]",
        &format!(
            "  %f = fn (%p0: Tensor[(1, 3, 6, 6), float32], %p1: Tensor[(4, 3, 3, 3), float32], %p2: Tensor[(4, 1, 1), float32], Composite=\"dnnl.conv2d_bias_relu\") {{\n    nn.relu(add(nn.conv2d(%p0, %p1, channels=4, kernel_size=[3, 3]), %p2))\n  }};\n  %f(%x, {w}, {b})"
        ),
    );
    assert!(edited(
        &text,
        "\"dnnl.conv2d_bias_relu\"",
        "\"dnnl.conv2d_bias_relu\""
    )
    .is_ok());
    let e = edited(
        &text,
        "\"dnnl.conv2d_bias_relu\"",
        "\"dnnl.conv3d_bias_relu\"",
    )
    .unwrap_err();
    assert!(
        e.contains("node 3 ('dnnl.conv3d_bias_relu')") && e.contains("unknown composite"),
        "{e}"
    );
    let e = edited(
        &text,
        "\"dnnl.conv2d_bias_relu\"",
        "\"dnnl.conv2d_bias_sum_relu\"",
    )
    .unwrap_err();
    assert!(e.contains("expected 4 input(s), got 3"), "{e}");
    let e = edited(
        &text,
        "\"dnnl.conv2d_bias_relu\"",
        "\"dnnl.conv2d_bias_mish\"",
    )
    .unwrap_err();
    assert!(e.contains("unknown part 'mish'"), "{e}");
    let e = edited(&text, "\"groups\": [[\"1\"]]", "\"groups\": [[\"x\"]]").unwrap_err();
    assert!(e.contains("attribute groups: 'x' is not an integer"), "{e}");
    let e = edited(&text, "\"groups\": [[\"1\"]]", "\"groups\": [[\"2\"]]").unwrap_err();
    assert!(e.contains("channels do not match"), "{e}");
    let e = edited(&text, "\"nodes\"", "\"nodez\"").unwrap_err();
    assert!(e.contains("invalid JSON graph"), "{e}");
    // A missing constant.
    let f = PartitionedFunction::from_text(&text).unwrap();
    let s = serialize(&f.function, "dnnl_test").unwrap();
    let e = DnnlRuntime::new(&s.to_json(), &Default::default(), None).unwrap_err();
    assert!(
        e.to_string().contains("dnnl_test_const_0") && e.to_string().contains("no value"),
        "{e}"
    );
}

#[test]
fn bad_bindings_and_bytes_are_errors() {
    let text = partition("%x: Tensor[(2, 3), float32]", "  nn.relu(%x)");
    let f = PartitionedFunction::from_text(&text).unwrap();
    let m = DnnlPlugin.compile(&f, &CompileOptions::new()).unwrap();
    let x = tensor(&[3, 2], 1);
    let mut y = Tensor::zeros(x.ty().clone());
    let e = m.run(&[x.view()], &mut [y.view_mut()]).unwrap_err();
    assert!(
        e.message.contains("input 0 is Tensor[(3, 2), float32]"),
        "{e}"
    );
    let e = m.run(&[], &mut []).unwrap_err();
    assert!(e.message.contains("expected 1 input(s) but got 0"), "{e}");
    let bytes = m.serialize().unwrap();
    let none = CompileOptions::new();
    assert!(DnnlPlugin.deserialize(&bytes, &none).is_ok());
    for bad in [&bytes[..bytes.len() - 1], &bytes[..5], b"NOTBYOC!xxxx"] {
        assert!(DnnlPlugin.deserialize(bad, &none).is_err());
    }
    let two = CompileOptions::new().with("threads", "two");
    let e = DnnlPlugin.compile(&f, &two).err().unwrap();
    assert!(e.message.contains("'threads=two'"), "{e}");
    // A module loaded from an artifact takes the loading process's thread count too.
    let e = DnnlPlugin.deserialize(&bytes, &two).err().unwrap();
    assert!(e.message.contains("'threads=two'"), "{e}");
    let one = CompileOptions::new().with("threads", "1");
    let m = DnnlPlugin.deserialize(&bytes, &one).unwrap();
    let x = tensor(&[2, 3], 2);
    let mut y = Tensor::zeros(x.ty().clone());
    m.run(&[x.view()], &mut [y.view_mut()]).unwrap();
    let relu: Vec<f64> = x.to_f64_vec().iter().map(|v| v.max(0.0)).collect();
    assert_eq!(y.to_f64_vec(), relu);
    assert_eq!(DnnlPlugin.name(), "dnnl");
}

/// A kernel node `dnnl.conv2d_bias_*` on 12 channels at 7x7 over `inputs` (entries).
fn conv_node(name: &str, inputs: &[u32]) -> String {
    let ins: Vec<String> = inputs.iter().map(|n| format!("[{n}, 0, 0]")).collect();
    format!(
        r#"{{"op": "kernel", "name": "{name}", "inputs": [{}], "attrs": {{"num_inputs": "{}", "num_outputs": "1", "padding": [["1", "1", "1", "1"]], "shape": [[[1, 12, 7, 7]]], "dtype": [["float32"]]}}}}"#,
        ins.join(", "),
        inputs.len()
    )
}

#[test]
fn residual_sum_accumulates_in_place_when_last_read() {
    // p = conv(x); q = conv(p); s = conv(q) + p: the sum is p's last reader, so s is computed
    // in p's buffer: no copy of p (a reorder between equal layouts) is planned.
    let t = |shape: &str| format!(r#""attrs": {{"shape": [[[{shape}]]], "dtype": [["float32"]]}}"#);
    let mut nodes = vec![format!(
        r#"{{"op": "input", "name": "x", {}}}"#,
        t("1, 12, 7, 7")
    )];
    for i in 0..3 {
        nodes.push(format!(
            r#"{{"op": "const", "name": "w{i}", {}}}"#,
            t("12, 12, 3, 3")
        ));
        nodes.push(format!(r#"{{"op": "const", "name": "b{i}", {}}}"#, t("12")));
    }
    nodes.push(conv_node("dnnl.conv2d_bias_relu", &[0, 1, 2]));
    nodes.push(conv_node("dnnl.conv2d_bias_relu", &[7, 3, 4]));
    nodes.push(conv_node("dnnl.conv2d_bias_sum_relu", &[8, 5, 6, 7]));
    let json = format!(
        r#"{{"nodes": [{}], "arg_nodes": [0, 1, 2, 3, 4, 5, 6], "heads": [[9, 0, 0]], "node_row_ptr": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]}}"#,
        nodes.join(",\n")
    );
    let mut constants = byoc_json_runtime::ConstantMap::new();
    for i in 0..3u64 {
        constants.insert(format!("w{i}"), Arc::new(tensor(&[12, 12, 3, 3], 90 + i)));
        constants.insert(format!("b{i}"), Arc::new(tensor(&[12], 95 + i)));
    }
    let rt = DnnlRuntime::new(&json, &constants, None).unwrap();
    let steps = rt.steps();
    assert_eq!(
        steps
            .iter()
            .filter(|s| s.label.starts_with("convolution"))
            .count(),
        3
    );
    for s in &steps {
        if let Some(rest) = s.label.strip_prefix("reorder ") {
            let (from, to) = rest.split_once(" -> ").unwrap();
            assert_ne!(
                from,
                to.split(' ').next().unwrap(),
                "copy planned: {steps:?}"
            );
        }
    }
    // Same graph with p also a result: p must survive, so it is copied.
    let json2 = json.replace(
        r#""heads": [[9, 0, 0]]"#,
        r#""heads": [[9, 0, 0], [7, 0, 0]]"#,
    );
    let rt2 = DnnlRuntime::new(&json2, &constants, None).unwrap();
    assert!(rt2.steps().len() > steps.len(), "{:?}", rt2.steps());
}

#[test]
fn a_channel_shuffle_node_that_is_not_one_is_refused() {
    let text = partition(
        "%x: Tensor[(1, 12, 5, 6), float32]",
        "  %f = fn (%p0: Tensor[(1, 12, 5, 6), float32], Composite=\"dnnl.channel_shuffle\") {\n    \
         %r = reshape(%p0, newshape=[1, 3, 4, 5, 6]);\n    \
         %t = transpose(%r, axes=[0, 2, 1, 3, 4]);\n    \
         reshape(%t, newshape=[1, 12, 5, 6])\n  };\n  %f(%x)",
    );
    let newshape = "\"newshape\": [[\"1\", \"3\", \"4\", \"5\", \"6\"]]";
    assert!(edited(&text, newshape, newshape).is_ok());
    for (to, message) in [
        (
            "[\"1\", \"5\", \"4\", \"5\", \"6\"]",
            "the first reshape is not (N, groups, C / groups, H, W) of the result (N, C, H, W)",
        ),
        (
            "[\"1\", \"3\", \"4\", \"30\"]",
            "newshape has 4 dimensions, not 5",
        ),
        (
            "[\"1\", \"-2\", \"4\", \"5\", \"6\"]",
            "newshape[1] = -2 is not supported here",
        ),
        ("[\"x\"]", "attribute newshape: 'x' is not an integer"),
    ] {
        let e = edited(&text, newshape, &format!("\"newshape\": [{to}]")).unwrap_err();
        assert!(
            e.contains("node 1 ('dnnl.channel_shuffle')") && e.contains(message),
            "{e}"
        );
    }
    let e = edited(
        &text,
        "\"dnnl.channel_shuffle\"",
        "\"dnnl.channel_shuffle_relu\"",
    )
    .unwrap_err();
    assert!(e.contains("unknown composite"), "{e}");
}
