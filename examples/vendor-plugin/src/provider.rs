//! tinyacc's [`KernelProvider`]: the JSON runtime base asks it for one kernel per kernel node
//! of a partition's graph, once, when the compiled module is initialized.
//!
//! A node is an op (`add`, `multiply`, `nn.relu`, `clip`) or the fused composite
//! `tinyacc.add_relu`. Building checks what the accelerator needs (float32, operands and
//! result of one shape, clip bounds present) and picks the kernel from [`crate::kernels`];
//! running hands it the node's views, which are the host's own buffers or the runtime's
//! intermediates. The runtime adds the graph symbol and the node's id and name to every error.

use byoc_json_runtime::{KernelProvider, KernelSpec, NodeKernel, ProviderError};
use byoc_sdk::ir::tensor::{TensorMut, TensorRef};
use byoc_sdk::ir::DType;

use crate::kernels;

/// Builds tinyacc kernels for JSON graph nodes.
#[derive(Clone, Copy, Debug, Default)]
pub struct TinyaccProvider;

/// One node's kernel: which accelerator kernel runs, with its settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TinyaccKernel {
    /// `add`.
    Add,
    /// `multiply`.
    Multiply,
    /// `nn.relu`.
    Relu,
    /// `clip` between these bounds.
    Clip {
        /// `a_min`.
        lo: f32,
        /// `a_max`.
        hi: f32,
    },
    /// The composite `tinyacc.add_relu`: `nn.relu(add(a, b))` in one pass.
    AddRelu,
}

/// A clip bound from the node's attributes (TVM encodes floats as decimal strings).
fn bound(spec: &KernelSpec<'_>, name: &str) -> Result<f32, ProviderError> {
    let text = spec
        .attrs
        .get_str(name)
        .ok_or_else(|| ProviderError::new(format!("clip has no {name}")))?;
    let value: f64 = text
        .parse()
        .map_err(|_| ProviderError::new(format!("clip {name} '{text}' is not a number")))?;
    Ok(value as f32)
}

impl KernelProvider for TinyaccProvider {
    type Kernel = TinyaccKernel;

    fn build(&self, spec: &KernelSpec<'_>) -> Result<TinyaccKernel, ProviderError> {
        let (kernel, arity) = match spec.name {
            "add" => (TinyaccKernel::Add, 2),
            "multiply" => (TinyaccKernel::Multiply, 2),
            "tinyacc.add_relu" => (TinyaccKernel::AddRelu, 2),
            "nn.relu" => (TinyaccKernel::Relu, 1),
            "clip" => {
                let (lo, hi) = (bound(spec, "a_min")?, bound(spec, "a_max")?);
                (TinyaccKernel::Clip { lo, hi }, 1)
            }
            other => return Err(ProviderError::new(format!("tinyacc cannot run {other}"))),
        };
        let [out] = spec.outputs else {
            return Err(ProviderError::new("tinyacc kernels have one output"));
        };
        if out.dtype != DType::Float32 {
            return Err(ProviderError::new(format!(
                "result {out} is not float32 (tinyacc computes in float32 only)"
            )));
        }
        if spec.inputs.len() != arity {
            return Err(ProviderError::new(format!(
                "takes {arity} operand(s), the node has {}",
                spec.inputs.len()
            )));
        }
        // The accelerator does not broadcast: every operand has the result's type.
        if let Some(operand) = spec.inputs.iter().find(|t| *t != out) {
            return Err(ProviderError::new(format!(
                "operand {operand} differs from the result {out} (tinyacc does not broadcast)"
            )));
        }
        Ok(kernel)
    }
}

fn f32s<'a>(t: &TensorRef<'a>) -> Result<&'a [f32], ProviderError> {
    t.as_slice::<f32>()
        .map_err(|e| ProviderError::new(e.to_string()))
}

fn f32s_mut<'a>(t: &'a mut TensorMut<'_>) -> Result<&'a mut [f32], ProviderError> {
    t.as_slice_mut::<f32>()
        .map_err(|e| ProviderError::new(e.to_string()))
}

impl NodeKernel for TinyaccKernel {
    fn run(
        &self,
        inputs: &[TensorRef<'_>],
        outputs: &mut [TensorMut<'_>],
    ) -> Result<(), ProviderError> {
        match (*self, inputs, outputs) {
            (TinyaccKernel::Add, [a, b], [out]) => kernels::add(f32s(a)?, f32s(b)?, f32s_mut(out)?),
            (TinyaccKernel::Multiply, [a, b], [out]) => {
                kernels::multiply(f32s(a)?, f32s(b)?, f32s_mut(out)?)
            }
            (TinyaccKernel::AddRelu, [a, b], [out]) => {
                kernels::add_relu(f32s(a)?, f32s(b)?, f32s_mut(out)?)
            }
            (TinyaccKernel::Relu, [x], [out]) => kernels::relu(f32s(x)?, f32s_mut(out)?),
            (TinyaccKernel::Clip { lo, hi }, [x], [out]) => {
                kernels::clip(f32s(x)?, lo, hi, f32s_mut(out)?)
            }
            (kernel, ins, outs) => {
                return Err(ProviderError::new(format!(
                    "{kernel:?} got {} input(s) and {} output(s)",
                    ins.len(),
                    outs.len()
                )))
            }
        }
        Ok(())
    }
}
