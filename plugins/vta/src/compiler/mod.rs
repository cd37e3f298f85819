//! The VTA compiler: a partition of `vta.*` composites → one instruction stream per layer.
//!
//! - [`layer`]: reading a composite (int8 conv2d / dense + epilogue) into a [`layer::Layer`].
//! - [`tiling`]: tiles that fit the buffers, virtual-thread slots, the GEMM kernel plan.
//! - [`program`]: the LOAD / GEMM / ALU / STORE stream with tokens and micro-op kernels.
//! - [`pack`]: the DRAM layouts of activations, weights, operands and outputs.

pub mod layer;
pub mod pack;
pub mod program;
pub mod tiling;

use std::collections::HashMap;

use byoc_sdk::ir::{Callee, Expr, ExprId, Function};
use thiserror::Error;

use layer::{read_layer, Layer, Resolver, Source};

/// The prefix of the composites the compiler reads.
pub const COMPOSITE_PREFIX: &str = "vta.";

/// Why a partition could not be compiled.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CompileError {
    /// The partition holds something VTA does not run.
    #[error("vta: {0}")]
    Unsupported(String),
    /// A layer does not fit the configuration's buffers or fields.
    #[error("vta: {0}")]
    DoesNotFit(String),
}

impl CompileError {
    /// The message without the `vta:` prefix.
    pub fn message(&self) -> &str {
        match self {
            CompileError::Unsupported(m) | CompileError::DoesNotFit(m) => m,
        }
    }
}

/// A partition read into layers, in execution order, and what its outputs are.
#[derive(Clone, Debug)]
pub struct PartitionLayers {
    /// The layers.
    pub layers: Vec<Layer>,
    /// The partition's outputs: a parameter or a layer output each.
    pub outputs: Vec<Source>,
}

/// Reads the layers of a partition whose body is made of `vta.*` composite calls (and a tuple
/// of their results).
pub fn read_partition(f: &Function) -> Result<PartitionLayers, CompileError> {
    let mut layers = Vec::new();
    let mut layer_of: HashMap<ExprId, usize> = HashMap::new();
    let outer = |layer_of: &HashMap<ExprId, usize>, id: ExprId| -> Result<Source, CompileError> {
        match f.expr(id) {
            Expr::Var(_) => f
                .params
                .iter()
                .position(|&p| p == id)
                .map(Source::Param)
                .ok_or_else(|| CompileError::Unsupported(format!("{id} is not a parameter of the partition"))),
            Expr::Constant(t) => Ok(Source::Const(t.clone())),
            _ => layer_of.get(&id).map(|&i| Source::Layer(i)).ok_or_else(|| {
                CompileError::Unsupported(format!(
                    "{id} is not a {COMPOSITE_PREFIX}* composite call (only conv2d/dense composites run on vta)"
                ))
            }),
        }
    };
    for id in f.ids() {
        let Expr::Call(call) = f.expr(id) else {
            continue;
        };
        let Callee::Local(lit) = call.callee else {
            continue;
        };
        let Some(literal) = f.expr(lit).as_function() else {
            return Err(CompileError::Unsupported(format!(
                "{id} calls a non-function"
            )));
        };
        let name = literal.attrs.get_str("Composite").unwrap_or("");
        if !name.starts_with(COMPOSITE_PREFIX) {
            return Err(CompileError::Unsupported(format!(
                "{id} calls a function that is not a {COMPOSITE_PREFIX}* composite ({name:?})"
            )));
        }
        let resolve = |a: ExprId| outer(&layer_of, a);
        let r = Resolver {
            f,
            args: &call.args,
            params: &literal.params,
            outer: &resolve,
        };
        let layer = read_layer(&r, literal.body).map_err(|e| {
            CompileError::Unsupported(format!("composite {name} at {id}: {}", e.message()))
        })?;
        layer_of.insert(id, layers.len());
        layers.push(layer);
    }
    let roots = match f.expr(f.body) {
        Expr::Tuple(fields) => fields.clone(),
        _ => vec![f.body],
    };
    let outputs = roots
        .into_iter()
        .map(|id| match outer(&layer_of, id)? {
            Source::Const(_) => Err(CompileError::Unsupported(format!(
                "output {id} is a constant"
            ))),
            s => Ok(s),
        })
        .collect::<Result<_, _>>()?;
    Ok(PartitionLayers { layers, outputs })
}
