//! Inference batch norms as per-channel scale and shift constants, the first step of HostFuse,
//! so that it can put them into the epilogue of the convolution before them.
//!
//! `%bn.0` of `%bn = nn.batch_norm(%x, %gamma, %beta, %mean, %var)` over `float32` data, with
//! the four statistics constant, becomes `add(multiply(%x, s), t)` with constants
//! `s = gamma / sqrt(var + eps)` and `t = beta - mean * s` (`gamma` 1 when `scale=false`,
//! `beta` 0 when `center=false`), shaped `[C, 1, ..., 1]` to broadcast along `axis`; `%bn.1`
//! and `%bn.2` become `%mean` and `%var`. `s` and `t` are computed here in `float32` exactly as
//! the reference batch-norm kernel computes them, and the kernel's per-element `x * s + t` is
//! the same multiply and add, so the rewrite is bit-identical to the kernel. (Core's
//! SimplifyInference, TVM's formula `1 / sqrt(var + eps) * gamma`, rounds differently.)
//!
//! Batch norms over non-constant statistics or other dtypes, and batch norms whose tuple is
//! used whole, are left alone.

use std::collections::HashMap;
use std::sync::Arc;

use byoc_ir::rewrite::Rebuild;
use byoc_ir::tensor::Tensor;
use byoc_ir::{Attrs, Call, DType, Expr, ExprId, Function, IrError, TensorType};

use super::eliminate_dead_code;

/// `f` with its batch norms rewritten (see the module docs); `f` is typed.
pub(crate) fn fold_batch_norms(f: &Function) -> Result<Function, IrError> {
    // The rewritten field 0 of each batch norm, so several `%bn.0` share one rewrite.
    let mut done: HashMap<ExprId, ExprId> = HashMap::new();
    let rewritten = Rebuild::new(f).run(|rb, id| -> Result<Option<ExprId>, IrError> {
        let Expr::TupleGetItem { tuple, index } = f.expr(id) else {
            return Ok(None);
        };
        let Some((op, call)) = f.expr(*tuple).as_op_call() else {
            return Ok(None);
        };
        if op.name() != "nn.batch_norm" {
            return Ok(None);
        }
        let Some(folded) = ScaleShift::of(f, call) else {
            return Ok(None);
        };
        match *index {
            0 => {
                if let Some(&new) = done.get(tuple) {
                    return Ok(Some(new));
                }
                let x = rb.get(call.args[0])?;
                let b = &mut rb.builder;
                let s = b.constant(folded.scale);
                let t = b.constant(folded.shift);
                let scaled = b.call("multiply", &[x, s], Attrs::new())?;
                let new = b.call("add", &[scaled, t], Attrs::new())?;
                done.insert(*tuple, new);
                Ok(Some(new))
            }
            1 | 2 => rb.get(call.args[index + 2]).map(Some),
            _ => Ok(None),
        }
    })?;
    eliminate_dead_code(&rewritten)
}

/// A batch norm's per-channel scale and shift, as broadcastable constants.
struct ScaleShift {
    scale: Arc<Tensor>,
    shift: Arc<Tensor>,
}

impl ScaleShift {
    /// The scale and shift of batch-norm call `call` in `f`, when its data is `float32` and
    /// its statistics are constant vectors of the data's channel count.
    fn of(f: &Function, call: &Call) -> Option<ScaleShift> {
        let data: &TensorType = f.ty(*call.args.first()?)?.as_tensor()?;
        if data.dtype != DType::Float32 || call.args.len() != 5 {
            return None;
        }
        let rank = data.rank() as i64;
        let axis = call.attrs.get("axis").and_then(|v| v.as_int()).unwrap_or(1);
        let axis = usize::try_from(if axis < 0 { axis + rank } else { axis }).ok()?;
        let channels = *data.shape.get(axis)?;
        let stat = |i: usize| -> Option<&[f32]> {
            let t = f.expr(call.args[i]).as_constant()?;
            t.as_slice::<f32>().ok().filter(|v| v.len() == channels)
        };
        let (gamma, beta, mean, var) = (stat(1)?, stat(2)?, stat(3)?, stat(4)?);
        let flag = |name: &str| {
            call.attrs
                .get(name)
                .and_then(|v| v.as_bool())
                .unwrap_or(true)
        };
        let (use_gamma, use_beta) = (flag("scale"), flag("center"));
        let eps = call
            .attrs
            .get("epsilon")
            .and_then(|v| v.as_f64())
            .unwrap_or(1e-5) as f32;
        let mut scale = Vec::with_capacity(channels);
        let mut shift = Vec::with_capacity(channels);
        for c in 0..channels {
            let g = if use_gamma { gamma[c] } else { 1.0 };
            let b = if use_beta { beta[c] } else { 0.0 };
            let s = g / (var[c] + eps).sqrt();
            scale.push(s);
            shift.push(b - mean[c] * s);
        }
        let shape: Vec<usize> = std::iter::once(channels)
            .chain(std::iter::repeat_n(1, data.rank() - axis - 1))
            .collect();
        Some(ScaleShift {
            scale: Arc::new(Tensor::from_vec(shape.clone(), scale).ok()?),
            shift: Arc::new(Tensor::from_vec(shape, shift).ok()?),
        })
    }
}
