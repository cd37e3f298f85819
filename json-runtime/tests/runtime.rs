//! The runtime base: lifecycle (init once, run many), binding checks, provider errors.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use byoc_exec::json_host::HostProvider;
use byoc_ir::tensor::{Tensor, TensorMut, TensorRef};
use byoc_ir::{DType, TensorType};
use byoc_json_runtime::{
    ConstantMap, JsonRuntime, KernelProvider, KernelSpec, NodeKernel, ProviderError, RuntimeError,
};
use common::{assert_close, fixture, run};

fn conv_runtime() -> (JsonRuntime<HostProvider>, common::Fixture) {
    let fx = fixture("tvm_dnnl_conv2d_bias_relu");
    (JsonRuntime::new(&fx.json, HostProvider).unwrap(), fx)
}

#[test]
fn run_before_init_is_an_error() {
    let (rt, fx) = conv_runtime();
    assert!(!rt.is_initialized());
    let x = fx.arrays["dnnl_0_i0"].clone();
    let mut out = Tensor::zeros(rt.output_types()[0].clone());
    let err = rt.run(&[x.view()], &mut [out.view_mut()]).unwrap_err();
    assert!(matches!(err, RuntimeError::NotInitialized { .. }));
    assert_eq!(
        err.to_string(),
        "dnnl_tvmgen_default_dnnl_main_0: run before init (constants are bound and kernels built by init)"
    );
}

#[test]
fn constants_are_checked_by_name_and_type() {
    let (rt, fx) = conv_runtime();
    let names = rt.graph().const_names();
    let mut consts = fx.constants(&names);
    consts.remove(&names[1]);
    let err = rt.init(&consts).unwrap_err();
    assert_eq!(
        err.to_string(),
        "dnnl_tvmgen_default_dnnl_main_0: constant 'dnnl_tvmgen_default_dnnl_main_0_const_1' (node 2) was not provided"
    );
    consts.insert(
        names[1].clone(),
        Arc::new(Tensor::zeros(TensorType::new([16], DType::Float32))),
    );
    let err = rt.init(&consts).unwrap_err();
    assert!(
        err.to_string().contains(
            "constant 'dnnl_tvmgen_default_dnnl_main_0_const_1' (node 2) is Tensor[(16), float32] but the graph declares Tensor[(16, 1, 1), float32]"
        ),
        "{err}"
    );
    assert!(!rt.is_initialized());
    // A failed init can be retried; init is idempotent after success.
    let good = fx.constants(&names);
    rt.init(&good).unwrap();
    rt.init(&ConstantMap::new()).unwrap();
    let out = run(&rt, &[fx.arrays["dnnl_0_i0"].clone()]);
    assert_close(&out[0], &fx.arrays["expected"], 1e-4, 1e-4);
}

#[test]
fn bound_tensors_are_checked_against_the_graph() {
    let (rt, fx) = conv_runtime();
    rt.init(&fx.constants(&rt.graph().const_names())).unwrap();
    let x = fx.arrays["dnnl_0_i0"].clone();
    let mut out = Tensor::zeros(rt.output_types()[0].clone());

    let err = rt.run(&[], &mut [out.view_mut()]).unwrap_err();
    assert!(
        err.to_string().ends_with("expected 1 input tensors, got 0"),
        "{err}"
    );

    let wrong = Tensor::zeros(TensorType::new([1, 3, 8, 7], DType::Float32));
    let err = rt.run(&[wrong.view()], &mut [out.view_mut()]).unwrap_err();
    assert!(
        err.to_string().ends_with(
            "input 0 ('dnnl_0_i0') is Tensor[(1, 3, 8, 7), float32] but the graph expects Tensor[(1, 3, 8, 8), float32]"
        ),
        "{err}"
    );

    let short = TensorRef {
        ty: x.ty(),
        bytes: &x.as_bytes()[..100],
    };
    let err = rt.run(&[short], &mut [out.view_mut()]).unwrap_err();
    assert!(
        err.to_string().ends_with(
            "input 0 ('dnnl_0_i0') has 100 bytes but Tensor[(1, 3, 8, 8), float32] takes 768"
        ),
        "{err}"
    );

    let buf = byoc_ir::tensor::AlignedBuf::zeroed(768 + 8);
    let misaligned = TensorRef {
        ty: x.ty(),
        bytes: &buf.as_bytes()[1..769],
    };
    let err = rt.run(&[misaligned], &mut [out.view_mut()]).unwrap_err();
    assert!(
        err.to_string()
            .contains("input 0 ('dnnl_0_i0') is not 8-byte aligned"),
        "{err}"
    );

    let mut wrong_out = Tensor::zeros(TensorType::new([1, 16, 8, 8], DType::Float16));
    let err = rt
        .run(&[x.view()], &mut [wrong_out.view_mut()])
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("output 0 ('dnnl.conv2d_bias_relu') is Tensor[(1, 16, 8, 8), float16]"),
        "{err}"
    );
    let err = rt.run(&[x.view()], &mut []).unwrap_err();
    assert!(
        err.to_string()
            .ends_with("expected 1 output tensors, got 0"),
        "{err}"
    );
}

fn build_error(json_edit: (&str, &str)) -> String {
    let fx = fixture("tvm_dnnl_conv2d_bias_relu");
    let json = fx.json.replacen(json_edit.0, json_edit.1, 1);
    assert_ne!(json, fx.json, "edit does not apply");
    let rt = JsonRuntime::new(&json, HostProvider).unwrap();
    rt.init(&fx.constants(&rt.graph().const_names()))
        .unwrap_err()
        .to_string()
}

#[test]
fn host_provider_errors_name_the_node() {
    assert_eq!(
        build_error(("dnnl.conv2d_bias_relu", "dnnl.conv2d_bias_gelu")),
        "dnnl_tvmgen_default_dnnl_main_0: node 3 ('dnnl.conv2d_bias_gelu'): building the kernel failed: \
         composite 'dnnl.conv2d_bias_gelu' has an unknown or misplaced part 'gelu'; the host provider runs \
         composites named <target>.<conv2d|deconv2d|dense>[_bias][_sum][_relu|_tanh|_sigmoid|_clip|_swish]"
    );
    let err = build_error(("\"groups\": [[\"1\"]]", "\"groups\": [[\"one\"]]"));
    assert!(
        err.contains("node 3 ('dnnl.conv2d_bias_relu'): building the kernel failed: nn.conv2d: attribute 'groups' = [\"one\"] is not an integer"),
        "{err}"
    );
    let err = build_error((
        "\"shape\": [[[1, 16, 8, 8]]]",
        "\"shape\": [[[1, 16, 8, 9]]]",
    ));
    assert!(
        err.contains("the graph declares outputs [Tensor[(1, 16, 8, 9), float32]] but the op sequence gives [Tensor[(1, 16, 8, 8), float32]]"),
        "{err}"
    );
}

/// A provider that counts builds and doubles its single input: checks that kernels are built
/// once and that the runtime hands kernels the right views.
struct Doubler {
    builds: AtomicUsize,
}

struct Double;

impl NodeKernel for Double {
    fn run(
        &self,
        inputs: &[TensorRef<'_>],
        outputs: &mut [TensorMut<'_>],
    ) -> Result<(), ProviderError> {
        let x = inputs[0]
            .as_slice::<f32>()
            .map_err(|e| ProviderError::new(e.to_string()))?;
        let y = outputs[0]
            .as_slice_mut::<f32>()
            .map_err(|e| ProviderError::new(e.to_string()))?;
        for (d, s) in y.iter_mut().zip(x) {
            *d = 2.0 * s;
        }
        Ok(())
    }
}

impl KernelProvider for Doubler {
    type Kernel = Double;
    fn build(&self, spec: &KernelSpec<'_>) -> Result<Double, ProviderError> {
        self.builds.fetch_add(1, Ordering::SeqCst);
        if spec.name == "double" {
            Ok(Double)
        } else {
            Err(ProviderError::new(format!("no kernel for {}", spec.name)))
        }
    }
}

const CHAIN: &str = r#"{"nodes": [
 {"op": "input", "name": "x", "attrs": {"shape": [[[4]]], "dtype": [["float32"]]}},
 {"op": "kernel", "name": "double", "inputs": [[0, 0, 0]], "attrs": {"shape": [[[4]]], "dtype": [["float32"]]}},
 {"op": "kernel", "name": "double", "inputs": [[1, 0, 0]], "attrs": {"shape": [[[4]]], "dtype": [["float32"]]}},
 {"op": "kernel", "name": "double", "inputs": [[2, 0, 0]], "attrs": {"shape": [[[4]]], "dtype": [["float32"]]}},
 {"op": "kernel", "name": "double", "inputs": [[3, 0, 0]], "attrs": {"shape": [[[4]]], "dtype": [["float32"]]}}
], "arg_nodes": [0], "heads": [[4, 0, 0], [2, 0, 0], [0, 0, 0], [4, 0, 0]], "node_row_ptr": [0, 1, 2, 3, 4, 5]}"#;

#[test]
fn custom_provider_chain_reuses_buffers_and_copies_heads() {
    let rt = JsonRuntime::new(
        CHAIN,
        Doubler {
            builds: AtomicUsize::new(0),
        },
    )
    .unwrap();
    rt.init(&ConstantMap::new()).unwrap();
    rt.init(&ConstantMap::new()).unwrap();
    assert_eq!(rt.provider().builds.load(Ordering::SeqCst), 4);
    // Nodes 2 and 4 write heads in place; nodes 1 and 3 share one 16-byte arena buffer.
    assert_eq!(rt.arena_bytes(), 16);
    let x = Tensor::from_vec([4], vec![1.0f32, -2.0, 0.5, 3.0]).unwrap();
    for _ in 0..3 {
        let mut outs: Vec<Tensor> = rt
            .output_types()
            .iter()
            .map(|t| Tensor::zeros(t.clone()))
            .collect();
        let mut views: Vec<TensorMut<'_>> = outs.iter_mut().map(Tensor::view_mut).collect();
        rt.run(&[x.view()], &mut views).unwrap();
        drop(views);
        assert_eq!(
            outs[0].as_slice::<f32>().unwrap(),
            &[16.0, -32.0, 8.0, 48.0]
        );
        assert_eq!(outs[1].as_slice::<f32>().unwrap(), &[4.0, -8.0, 2.0, 12.0]);
        assert_eq!(outs[2], x);
        assert_eq!(outs[3], outs[0]);
    }
}

#[test]
fn provider_build_failure_names_node() {
    let json = CHAIN.replacen(
        "\"name\": \"double\", \"inputs\": [[2",
        "\"name\": \"triple\", \"inputs\": [[2",
        1,
    );
    let rt = JsonRuntime::new(
        &json,
        Doubler {
            builds: AtomicUsize::new(0),
        },
    )
    .unwrap();
    let err = rt.init(&ConstantMap::new()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "JSON graph: node 3 ('triple'): building the kernel failed: no kernel for triple"
    );
    assert!(!rt.is_initialized());
}
