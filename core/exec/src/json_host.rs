//! [`HostProvider`]: a reference [`KernelProvider`] that runs kernel nodes with byoc's
//! host kernels, so JSON graphs (ours or TVM's) can be checked numerically.
//!
//! - An op kernel node (`nn.conv2d`, `add`, ...) is looked up in the op registry; its string
//!   attributes are decoded with the op's schema kinds, the declared output types are checked
//!   against the op's type relation, and the op's host kernel runs on the views directly.
//! - A composite kernel node cannot be re-expanded from JSON alone (TVM's graph carries only
//!   the root op's attributes). The provider understands the composite naming convention of
//!   TVM's DNNL pattern table, which is also what the DNNL runtime dispatches on:
//!   `<target>.<root>[_bias][_sum][_<relu|tanh|sigmoid|clip|swish>]` with root `conv2d`,
//!   `deconv2d` or `dense`. It rebuilds that op sequence as a small function: the root op
//!   with the node's attributes on inputs 0 and 1, `_bias` adds input 2 (`nn.bias_add` on the
//!   channel axis for a 1-D bias, a broadcasting `add` otherwise, as after TVM's
//!   `CanonicalizeOps`), `_sum` adds the last input, then the activation (`clip` reads the
//!   node's `a_min`/`a_max`). The function runs on the host executor. Any other composite
//!   name is refused with an error naming it.

use crate::{ExecOptions, Executor};
use byoc_ir::op::{Op, OpRegistry};
use byoc_ir::tensor::{TensorMut, TensorRef};
use byoc_ir::{Attrs, ExprId, FunctionBuilder};
use byoc_ir::{Module, TensorType, Type};
use byoc_kernels::HostKernel;

use byoc_json_runtime::attr_text::decode_attr;
use byoc_json_runtime::format::NodeAttrs;
use byoc_json_runtime::runtime::{KernelProvider, KernelSpec, NodeKernel, ProviderError};

/// The reference kernel provider (see the module documentation).
#[derive(Clone, Copy, Debug, Default)]
pub struct HostProvider;

/// A kernel built by [`HostProvider`].
pub enum HostNodeKernel {
    /// One op's host kernel.
    Op(Box<dyn HostKernel>),
    /// A composite's op sequence on the host executor.
    Composite(Box<Executor>),
}

impl std::fmt::Debug for HostNodeKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HostNodeKernel::Op(_) => f.write_str("HostNodeKernel::Op"),
            HostNodeKernel::Composite(e) => write!(f, "HostNodeKernel::Composite({e:?})"),
        }
    }
}

fn err(e: impl std::fmt::Display) -> ProviderError {
    ProviderError::new(e.to_string())
}

/// The node's attributes that `op`'s schema knows, decoded; the rest are left out.
fn decode_op_attrs(op: &Op, attrs: &NodeAttrs) -> Result<Attrs, ProviderError> {
    let mut out = Attrs::new();
    for def in &op.attrs {
        if let Some(strings) = attrs.get(def.name) {
            let value = decode_attr(def.name, def.kind, strings)
                .map_err(|e| ProviderError::new(format!("{}: {e}", op.name())))?;
            out.set(def.name, value);
        }
    }
    op.normalize_attrs(out).map_err(err)
}

fn tensor_types(types: &[TensorType]) -> Vec<Type> {
    types.iter().cloned().map(Type::Tensor).collect()
}

fn build_op(op: &Op, spec: &KernelSpec<'_>) -> Result<HostNodeKernel, ProviderError> {
    let attrs = decode_op_attrs(op, spec.attrs)?;
    let tensors = tensor_types(spec.inputs);
    let args = if op.arity.accepts(tensors.len()) {
        tensors
    } else {
        vec![Type::Tuple(tensors)]
    };
    op.check_arity(args.len()).map_err(err)?;
    let inferred = op.infer_type(&args, &attrs).map_err(err)?;
    let inferred: Vec<&TensorType> = inferred.flatten_tensors();
    if inferred.len() != spec.outputs.len()
        || inferred.iter().zip(spec.outputs).any(|(a, b)| *a != b)
    {
        return Err(ProviderError::new(format!(
            "{}: the graph declares outputs {} but the op gives {}",
            op.name(),
            list(spec.outputs.iter()),
            list(inferred.into_iter())
        )));
    }
    let kernel = byoc_kernels::host_kernel(op, &attrs, spec.inputs, spec.outputs).map_err(err)?;
    Ok(HostNodeKernel::Op(kernel))
}

fn list<'a>(types: impl Iterator<Item = &'a TensorType>) -> String {
    let items: Vec<String> = types.map(ToString::to_string).collect();
    format!("[{}]", items.join(", "))
}

/// A composite name split by TVM's DNNL convention.
struct CompositeName<'n> {
    root: &'static str,
    bias: bool,
    sum: bool,
    activation: Option<&'n str>,
}

fn parse_composite_name(name: &str) -> Result<CompositeName<'_>, ProviderError> {
    let unknown = |why: &str| {
        ProviderError::new(format!(
            "composite '{name}' {why}; the host provider runs composites named \
             <target>.<conv2d|deconv2d|dense>[_bias][_sum][_relu|_tanh|_sigmoid|_clip|_swish]"
        ))
    };
    let (_, local) = name
        .split_once('.')
        .ok_or_else(|| unknown("has no '<target>.' prefix"))?;
    let mut parts = local.split('_');
    let root = match parts.next() {
        Some("conv2d") => "nn.conv2d",
        Some("deconv2d") => "nn.conv2d_transpose",
        Some("dense") => "nn.dense",
        _ => return Err(unknown("has an unknown root op")),
    };
    let mut parsed = CompositeName {
        root,
        bias: false,
        sum: false,
        activation: None,
    };
    for part in parts {
        match part {
            "bias" if !parsed.bias && !parsed.sum && parsed.activation.is_none() => {
                parsed.bias = true
            }
            "sum" if !parsed.sum && parsed.activation.is_none() => parsed.sum = true,
            "relu" | "tanh" | "sigmoid" | "clip" | "swish" if parsed.activation.is_none() => {
                parsed.activation = Some(part)
            }
            _ => {
                return Err(unknown(&format!(
                    "has an unknown or misplaced part '{part}'"
                )))
            }
        }
    }
    Ok(parsed)
}

/// The channel axis of the root op's output, for a 1-D bias.
fn channel_axis(root: &Attrs, rank: usize) -> i64 {
    let layout = match root.get_str("out_layout") {
        Some(l) if !l.is_empty() => Some(l),
        _ => root.get_str("data_layout"),
    };
    layout
        .and_then(|l| l.find('C'))
        .map_or(rank as i64 - 1, |c| c as i64)
}

fn build_composite(spec: &KernelSpec<'_>) -> Result<HostNodeKernel, ProviderError> {
    let parsed = parse_composite_name(spec.name)?;
    let expected_inputs = 2 + usize::from(parsed.bias) + usize::from(parsed.sum);
    if spec.inputs.len() != expected_inputs {
        return Err(ProviderError::new(format!(
            "composite '{}' takes {expected_inputs} inputs, the node has {}",
            spec.name,
            spec.inputs.len()
        )));
    }
    let root_op = OpRegistry::lookup(parsed.root)
        .ok_or_else(|| ProviderError::new(format!("op {} is not registered", parsed.root)))?;
    let root_attrs = decode_op_attrs(&root_op, spec.attrs)?;
    let mut b = FunctionBuilder::new();
    let params: Vec<ExprId> = spec
        .inputs
        .iter()
        .enumerate()
        .map(|(i, t)| b.param(format!("p{i}"), Type::Tensor(t.clone())))
        .collect();
    let mut x = b
        .call_op(&root_op, &params[..2], root_attrs.clone())
        .map_err(err)?;
    if parsed.bias {
        let bias = params[2];
        x = if spec.inputs[2].rank() == 1 {
            let rank = spec.outputs.first().map_or(0, TensorType::rank);
            let axis = channel_axis(&root_attrs, rank);
            b.call("nn.bias_add", &[x, bias], Attrs::new().with("axis", axis))
        } else {
            b.call("add", &[x, bias], Attrs::new())
        }
        .map_err(err)?;
    }
    if parsed.sum {
        x = b
            .call("add", &[x, params[expected_inputs - 1]], Attrs::new())
            .map_err(err)?;
    }
    x = match parsed.activation {
        None => x,
        Some("relu") => b.call("nn.relu", &[x], Attrs::new()).map_err(err)?,
        Some("tanh") => b.call("tanh", &[x], Attrs::new()).map_err(err)?,
        Some("sigmoid") => b.call("sigmoid", &[x], Attrs::new()).map_err(err)?,
        Some("swish") => {
            let s = b.call("sigmoid", &[x], Attrs::new()).map_err(err)?;
            b.call("multiply", &[x, s], Attrs::new()).map_err(err)?
        }
        Some(_) => {
            let clip = OpRegistry::lookup("clip")
                .ok_or_else(|| ProviderError::new("op clip is not registered"))?;
            let attrs = decode_op_attrs(&clip, spec.attrs)?;
            b.call_op(&clip, &[x], attrs).map_err(err)?
        }
    };
    let func = b.finish(params, x, Attrs::new()).map_err(err)?;
    let executor = Executor::new(
        &Module::from_main(func),
        ExecOptions {
            threads: 1,
            profile: false,
            memory_budget: None,
        },
    )
    .map_err(|e| ProviderError::new(format!("composite '{}': {e}", spec.name)))?;
    let produced = executor.result_type().flatten_tensors();
    if produced.len() != spec.outputs.len()
        || produced.iter().zip(spec.outputs).any(|(a, b)| *a != b)
    {
        return Err(ProviderError::new(format!(
            "composite '{}': the graph declares outputs {} but the op sequence gives {}",
            spec.name,
            list(spec.outputs.iter()),
            list(produced.into_iter())
        )));
    }
    Ok(HostNodeKernel::Composite(Box::new(executor)))
}

impl KernelProvider for HostProvider {
    type Kernel = HostNodeKernel;

    fn build(&self, spec: &KernelSpec<'_>) -> Result<HostNodeKernel, ProviderError> {
        match OpRegistry::lookup(spec.name) {
            Some(op) => build_op(&op, spec),
            None => build_composite(spec),
        }
    }
}

impl NodeKernel for HostNodeKernel {
    fn run(
        &self,
        inputs: &[TensorRef<'_>],
        outputs: &mut [TensorMut<'_>],
    ) -> Result<(), ProviderError> {
        match self {
            HostNodeKernel::Op(kernel) => kernel.run(inputs, outputs, 1).map_err(err),
            HostNodeKernel::Composite(executor) => {
                let owned: Vec<_> = inputs.iter().map(TensorRef::to_tensor).collect();
                let results = executor.run(&owned).map_err(err)?;
                for (out, result) in outputs.iter_mut().zip(&results) {
                    out.bytes.copy_from_slice(result.as_bytes());
                }
                Ok(())
            }
        }
    }
}
