//! The serializer: partitioned functions → JSON graphs identical to what TVM emits, stable
//! round trips, tuple handling, numerics against the host executor, and clear errors.

mod common;

use byoc_exec::json_host::HostProvider;
use byoc_exec::{ExecOptions, Executor};
use byoc_ir::infer_types;
use byoc_ir::text::parse_module;
use byoc_ir::{Module, Tensor};
use byoc_json_runtime::serialize::external_symbol;
use byoc_json_runtime::{serialize, Entry, JsonGraph, JsonRuntime, NodeKind, SerializeError};
use common::{assert_close, const_text, fixture, run, values};

/// The module `partition_for_dnnl` gives for conv2d+bias+relu → batch_flatten → dense+bias
/// (the graphs TVM's DNNL codegen writes), weights bound as constants.
fn dnnl_module() -> Module {
    let src = format!(
        r#"
def @main(%x: Tensor[(1, 3, 8, 8), float32]) {{
  %0 = @tvmgen_default_dnnl_main_0(%x);
  %1 = nn.batch_flatten(%0);
  @tvmgen_default_dnnl_main_1(%1)
}}
def @tvmgen_default_dnnl_main_0(%dnnl_0_i0: Tensor[(1, 3, 8, 8), float32], Compiler="dnnl", global_symbol="tvmgen_default_dnnl_main_0", Primitive=1) {{
  %0 = fn (%FunctionVar_0_0: Tensor[(1, 3, 8, 8), float32], %FunctionVar_0_1: Tensor[(16, 3, 3, 3), float32], %FunctionVar_0_2: Tensor[(16, 1, 1), float32], PartitionedFromPattern="nn.conv2d_add_nn.relu_", Composite="dnnl.conv2d_bias_relu") {{
    %1 = nn.conv2d(%FunctionVar_0_0, %FunctionVar_0_1, padding=[1, 1, 1, 1], channels=16, kernel_size=[3, 3]);
    %2 = add(%1, %FunctionVar_0_2);
    nn.relu(%2)
  }};
  %3 = {w1};
  %4 = {b1};
  %0(%dnnl_0_i0, %3, %4)
}}
def @tvmgen_default_dnnl_main_1(%dnnl_1_i0: Tensor[(1, 1024), float32], Compiler="dnnl", global_symbol="tvmgen_default_dnnl_main_1", Primitive=1) {{
  %0 = fn (%FunctionVar_1_0: Tensor[(1, 1024), float32], %FunctionVar_1_1: Tensor[(10, 1024), float32], %FunctionVar_1_2: Tensor[(10), float32], PartitionedFromPattern="nn.dense_add_", Composite="dnnl.dense_bias") {{
    %1 = nn.dense(%FunctionVar_1_0, %FunctionVar_1_1, units=10);
    add(%1, %FunctionVar_1_2)
  }};
  %3 = {w2};
  %4 = {b2};
  %0(%dnnl_1_i0, %3, %4)
}}
"#,
        w1 = const_text(&[16, 3, 3, 3], 1),
        b1 = const_text(&[16, 1, 1], 2),
        w2 = const_text(&[10, 1024], 3),
        b2 = const_text(&[10], 4),
    );
    typed(&src)
}

fn typed(src: &str) -> Module {
    let mut m = parse_module(src).unwrap();
    infer_types(&mut m).unwrap();
    m
}

fn serialize_global(m: &Module, name: &str) -> byoc_json_runtime::Serialized {
    let f = m.get(name).unwrap();
    serialize(f, &external_symbol(f).unwrap()).unwrap()
}

/// Runs global `name` of `m` alone on the host executor.
fn host_run(m: &Module, name: &str, inputs: &[Tensor]) -> Vec<Tensor> {
    let main = Module::from_main(m.get(name).unwrap().clone());
    Executor::new(&main, ExecOptions::default())
        .unwrap()
        .run(inputs)
        .unwrap()
}

#[test]
fn serializer_emits_what_tvm_emits() {
    let m = dnnl_module();
    for (global, tvm) in [
        ("tvmgen_default_dnnl_main_0", "tvm_dnnl_conv2d_bias_relu"),
        ("tvmgen_default_dnnl_main_1", "tvm_dnnl_dense_bias"),
    ] {
        let mut ours = serialize_global(&m, global).graph;
        let expected = JsonGraph::parse(&fixture(tvm).json).unwrap();
        // TVM's DNNL serializer drops PartitionedFromPattern; the generic one keeps it.
        let kernel = &mut ours.nodes[3];
        let pattern = kernel.attrs.remove("PartitionedFromPattern").unwrap();
        assert!(pattern[0].starts_with("nn."));
        assert_eq!(ours, expected, "{global}");
    }
}

#[test]
fn round_trip_is_byte_identical_and_deterministic() {
    let m = dnnl_module();
    for global in ["tvmgen_default_dnnl_main_0", "tvmgen_default_dnnl_main_1"] {
        let s = serialize_global(&m, global);
        let text = s.to_json();
        let parsed = JsonGraph::parse(&text).unwrap();
        assert_eq!(parsed, s.graph);
        assert_eq!(parsed.to_json(), text);
        assert_eq!(serialize_global(&m, global).to_json(), text);
        assert_eq!(serialize_global(&dnnl_module(), global).to_json(), text);
        let names: Vec<&String> = s.constants.keys().collect();
        assert_eq!(names.len(), 2);
        assert_eq!(parsed.const_names().iter().collect::<Vec<_>>(), names);
    }
}

#[test]
fn serialized_partitions_run_like_the_host_executor() {
    let m = dnnl_module();
    let x = Tensor::from_vec([1, 3, 8, 8], values(192, 7)).unwrap();
    let check = |global: &str, input: &Tensor| {
        let s = serialize_global(&m, global);
        let rt = JsonRuntime::new(&s.to_json(), HostProvider).unwrap();
        rt.init(&s.constants).unwrap();
        let ours = run(&rt, std::slice::from_ref(input));
        let reference = host_run(&m, global, std::slice::from_ref(input));
        assert_close(&ours[0], &reference[0], 1e-5, 1e-5);
        reference[0].clone()
    };
    let y = check("tvmgen_default_dnnl_main_0", &x);
    check(
        "tvmgen_default_dnnl_main_1",
        &y.reshaped(vec![1, 1024]).unwrap(),
    );
}

const TUPLES: &str = r#"
def @main(%x: Tensor[(1, 4, 2, 2), float32], %y: Tensor[(1, 4, 2, 2), float32], %t: (Tensor[(3), float32], Tensor[(3), float32]), Compiler="ccompiler", global_symbol="f") {
  %0 = nn.batch_norm(%x, GAMMA, BETA, MEAN, VAR);
  %1 = %0.0;
  %2 = add(%1, %y);
  %3 = %t.1;
  %4 = nn.relu(%3);
  %5 = nn.conv2d(%2, WEIGHT, padding=[1, 1]);
  %6 = clip(%5, a_min=0f, a_max=6f);
  (%6, %x, %6, %0.1, %4)
}
"#;

fn tuple_module() -> Module {
    let src = TUPLES
        .replace("GAMMA", &const_text(&[4], 11))
        .replace("BETA", &const_text(&[4], 12))
        .replace("MEAN", &const_text(&[4], 13))
        .replace("VAR", "const((4), float32, [0.5, 1.0, 1.5, 2.0])")
        .replace("WEIGHT", &const_text(&[2, 4, 3, 3], 14));
    typed(&src)
}

#[test]
fn tuples_are_flattened_and_tuple_outputs_become_heads() {
    let m = tuple_module();
    let s = serialize(m.main().unwrap(), "ccompiler_f").unwrap();
    let g = &s.graph;
    // Inputs 0..2, the tuple-typed parameter is one node with two outputs.
    assert_eq!(g.nodes[2].kind, NodeKind::Input);
    assert_eq!(g.nodes[2].outputs.len(), 2);
    // Constants are numbered in visit order.
    assert_eq!(g.nodes[3].name, "ccompiler_f_const_0");
    assert_eq!(g.nodes[6].name, "ccompiler_f_const_3");
    let bn = &g.nodes[7];
    assert_eq!(bn.name, "nn.batch_norm");
    assert_eq!(bn.outputs.len(), 3);
    assert_eq!(bn.attrs.get("epsilon").unwrap(), ["1.0000000000000001e-05"]);
    assert_eq!(bn.attrs.get("center").unwrap(), ["1"]);
    let add = &g.nodes[8];
    assert_eq!(add.inputs, [Entry::new(7, 0), Entry::new(1, 0)]);
    let conv = g.nodes.iter().find(|n| n.name == "nn.conv2d").unwrap();
    assert_eq!(conv.attrs.get("padding").unwrap(), ["1", "1", "1", "1"]);
    assert_eq!(conv.attrs.get("channels").unwrap(), [""]);
    let clip = g.nodes.iter().find(|n| n.name == "clip").unwrap();
    assert_eq!(clip.attrs.get("a_max").unwrap(), ["6"]);
    let relu = g.nodes.iter().position(|n| n.name == "nn.relu").unwrap();
    assert_eq!(g.nodes[relu].inputs, [Entry::new(2, 1)]);
    let clip_id = g.nodes.iter().position(|n| n.name == "clip").unwrap() as u32;
    assert_eq!(
        g.heads,
        [
            Entry::new(clip_id, 0),
            Entry::new(0, 0),
            Entry::new(clip_id, 0),
            Entry::new(7, 1),
            Entry::new(relu as u32, 0)
        ]
    );
    // node_row_ptr counts the tuple parameter and batch_norm's three outputs.
    assert_eq!(&g.node_row_ptr[..10], [0, 1, 2, 4, 5, 6, 7, 8, 11, 12]);
    assert_eq!(
        JsonGraph::parse(&s.to_json()).unwrap().to_json(),
        s.to_json()
    );
}

#[test]
fn tuple_graph_runs_like_the_host_executor() {
    let m = tuple_module();
    let s = serialize(m.main().unwrap(), "ccompiler_f").unwrap();
    let rt = JsonRuntime::new(&s.to_json(), HostProvider).unwrap();
    rt.init(&s.constants).unwrap();
    let x = Tensor::from_vec([1, 4, 2, 2], values(16, 21)).unwrap();
    let y = Tensor::from_vec([1, 4, 2, 2], values(16, 22)).unwrap();
    let t0 = Tensor::from_vec([3], values(3, 23)).unwrap();
    let t1 = Tensor::from_vec([3], vec![-1.0f32, 0.5, 2.0]).unwrap();
    let ours = run(&rt, &[x.clone(), y.clone(), t0, t1]);
    assert_eq!(ours.len(), 5);
    // The host executor runs the same function with the tuple parameter removed.
    let reference_src = tuple_src_without_tuple_param();
    let mut reference = parse_module(&reference_src).unwrap();
    infer_types(&mut reference).unwrap();
    let expected = Executor::new(&reference, ExecOptions::default())
        .unwrap()
        .run(&[x.clone(), y])
        .unwrap();
    assert_close(&ours[0], &expected[0], 1e-5, 1e-5);
    assert_eq!(ours[1], x);
    assert_eq!(ours[2], ours[0]);
    assert_close(&ours[3], &expected[3], 1e-6, 1e-6);
    assert_eq!(ours[4].as_slice::<f32>().unwrap(), &[0.0, 0.5, 2.0]);
}

fn tuple_src_without_tuple_param() -> String {
    TUPLES
        .replace(", %t: (Tensor[(3), float32], Tensor[(3), float32])", "")
        .replace("  %3 = %t.1;\n  %4 = nn.relu(%3);\n", "")
        .replace(", %4)", ")")
        .replace("GAMMA", &const_text(&[4], 11))
        .replace("BETA", &const_text(&[4], 12))
        .replace("MEAN", &const_text(&[4], 13))
        .replace("VAR", "const((4), float32, [0.5, 1.0, 1.5, 2.0])")
        .replace("WEIGHT", &const_text(&[2, 4, 3, 3], 14))
}

#[test]
fn unsupported_expressions_are_errors() {
    let m = typed(
        r#"
def @g(%a: Tensor[(2), float32]) { nn.relu(%a) }
def @main(%x: Tensor[(2), float32]) { @g(%x) }
"#,
    );
    let err = serialize(m.main().unwrap(), "s").unwrap_err();
    assert!(matches!(err, SerializeError::Unsupported { .. }));
    assert!(
        err.to_string()
            .contains("does not support a call of global function @g"),
        "{err}"
    );

    let m = typed(
        r#"
def @main(%x: Tensor[(2), float32]) {
  %0 = fn (%p: Tensor[(2), float32]) { nn.relu(%p) };
  %0(%x)
}
"#,
    );
    let err = serialize(m.main().unwrap(), "s").unwrap_err();
    assert!(
        err.to_string().contains("without a Composite attribute"),
        "{err}"
    );

    let untyped = parse_module("def @main(%x: Tensor[(2), float32]) { nn.relu(%x) }").unwrap();
    let err = serialize(untyped.main().unwrap(), "s").unwrap_err();
    assert!(matches!(err, SerializeError::Untyped { .. }), "{err}");
    assert!(err.to_string().contains("run type inference"), "{err}");
}
