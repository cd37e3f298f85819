//! `JsonRuntime` as a plugin SDK `CompiledModule`: `run` hands kernels the caller's own
//! buffers (no copies), heads that are inputs or constants are filled, `serialize` gives the
//! byte record, and errors arrive as `PluginError`s naming the symbol and node.

use std::sync::{Arc, Mutex};

use byoc_ir::tensor::{Tensor, TensorMut, TensorRef};
use byoc_ir::{DType, TensorType};
use byoc_json_runtime::{
    ConstantMap, JsonRuntime, KernelProvider, KernelSpec, NodeKernel, ProviderError,
};
use byoc_sdk::CompiledModule;

/// Addresses a kernel saw: (first input, first output).
type Seen = Arc<Mutex<Vec<(usize, usize)>>>;

/// Builds `negate` kernels that record the addresses of their views; other names fail at run.
struct Recorder {
    seen: Seen,
}

struct Negate {
    seen: Seen,
    fail: bool,
}

impl NodeKernel for Negate {
    fn run(
        &self,
        inputs: &[TensorRef<'_>],
        outputs: &mut [TensorMut<'_>],
    ) -> Result<(), ProviderError> {
        if self.fail {
            return Err(ProviderError::new("the device is busy"));
        }
        let x = inputs[0]
            .as_slice::<f32>()
            .map_err(|e| ProviderError::new(e.to_string()))?;
        let out_at = outputs[0].bytes.as_ptr() as usize;
        let y = outputs[0]
            .as_slice_mut::<f32>()
            .map_err(|e| ProviderError::new(e.to_string()))?;
        for (d, s) in y.iter_mut().zip(x) {
            *d = -s;
        }
        self.seen
            .lock()
            .unwrap()
            .push((inputs[0].bytes.as_ptr() as usize, out_at));
        Ok(())
    }
}

impl KernelProvider for Recorder {
    type Kernel = Negate;
    fn build(&self, spec: &KernelSpec<'_>) -> Result<Negate, ProviderError> {
        Ok(Negate {
            seen: self.seen.clone(),
            fail: spec.name != "negate",
        })
    }
}

/// `x -> negate -> head 0`, plus a constant and the input itself as heads 1 and 2.
const GRAPH: &str = r#"{"symbol": "rec_0", "nodes": [
 {"op": "input", "name": "x", "attrs": {"shape": [[[2, 3]]], "dtype": [["float32"]]}},
 {"op": "const", "name": "rec_0_const_0", "attrs": {"shape": [[[2]]], "dtype": [["float32"]]}},
 {"op": "kernel", "name": "negate", "inputs": [[0, 0, 0]], "attrs": {"shape": [[[2, 3]]], "dtype": [["float32"]]}}
], "arg_nodes": [0, 1], "heads": [[2, 0, 0], [1, 0, 0], [0, 0, 0]], "node_row_ptr": [0, 1, 2, 3]}"#;

fn module(json: &str, seen: &Seen) -> Box<dyn CompiledModule> {
    let rt = JsonRuntime::new(json, Recorder { seen: seen.clone() }).unwrap();
    let c = Tensor::from_vec([2], vec![7.0f32, 8.0]).unwrap();
    rt.init(&ConstantMap::from([(
        "rec_0_const_0".to_string(),
        Arc::new(c),
    )]))
    .unwrap();
    Box::new(rt)
}

fn outputs() -> Vec<Tensor> {
    vec![
        Tensor::zeros(TensorType::new([2, 3], DType::Float32)),
        Tensor::zeros(TensorType::new([2], DType::Float32)),
        Tensor::zeros(TensorType::new([2, 3], DType::Float32)),
    ]
}

#[test]
fn run_passes_the_callers_buffers_to_the_kernels() {
    let seen = Seen::default();
    let m = module(GRAPH, &seen);
    let x = Tensor::from_vec([2, 3], vec![1.0f32, -2.0, 3.0, -4.0, 5.0, 0.0]).unwrap();
    let mut outs = outputs();
    let out_at = outs[0].as_bytes().as_ptr() as usize;
    let mut views: Vec<TensorMut<'_>> = outs.iter_mut().map(Tensor::view_mut).collect();
    m.run(&[x.view()], &mut views).unwrap();
    drop(views);
    assert_eq!(
        *seen.lock().unwrap(),
        [(x.as_bytes().as_ptr() as usize, out_at)],
        "the kernel reads the input and writes the output in place"
    );
    assert_eq!(
        outs[0].as_slice::<f32>().unwrap(),
        &[-1.0, 2.0, -3.0, 4.0, -5.0, -0.0]
    );
    assert_eq!(outs[1].as_slice::<f32>().unwrap(), &[7.0, 8.0]);
    assert_eq!(outs[2], x);

    // serialize is the byte record of the graph and its bound constants.
    let bytes = m.serialize().unwrap();
    let back = JsonRuntime::from_bytes(&bytes, Recorder { seen: seen.clone() }).unwrap();
    assert_eq!(back.to_bytes().unwrap(), bytes);
    assert_eq!(back.graph().symbol.as_deref(), Some("rec_0"));
}

#[test]
fn errors_are_plugin_errors_naming_symbol_and_node() {
    let seen = Seen::default();
    let x = Tensor::zeros(TensorType::new([2, 3], DType::Float32));
    let m = module(&GRAPH.replace("\"negate\"", "\"stall\""), &seen);
    let mut outs = outputs();
    let mut views: Vec<TensorMut<'_>> = outs.iter_mut().map(Tensor::view_mut).collect();
    let err = m.run(&[x.view()], &mut views).unwrap_err();
    assert_eq!(err.message, "rec_0: node 2 ('stall'): the device is busy");
    let err = m.run(&[], &mut views).unwrap_err();
    assert_eq!(err.message, "rec_0: expected 1 input tensors, got 0");
}
