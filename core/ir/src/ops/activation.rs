//! Channel-wise and parametric activations: `nn.bias_add` (float32, float64, int32),
//! `nn.prelu`, `nn.leaky_relu` (float32, float64) and `nn.dropout` (identity at inference;
//! Relay types it as the 2-tuple `(out, mask)`, and the mask here is all ones).

use super::nn_common::norm_axis;
use super::norm::AxisView;
use crate::op::{Arity, AttrDef, AttrKind, OpDef, OpImpl, OpPattern, TypeCtx, TypeError};
use crate::Type;

/// The view of the data around `axis` after checking that argument 1 (`what`) is a vector of
/// the axis length and the data's dtype.
pub fn channel_view(ctx: &TypeCtx<'_>, what: &str) -> Result<AxisView, TypeError> {
    let data = ctx.tensor(0)?;
    let axis = norm_axis(ctx, ctx.int("axis")?, data.rank())?;
    let p = ctx.tensor(1)?;
    if p.shape != [data.shape[axis]] {
        return Err(ctx.err(format!(
            "{what} has shape {:?} but the data has {} channels on axis {axis}",
            p.shape, data.shape[axis]
        )));
    }
    if p.dtype != data.dtype {
        return Err(ctx.err(format!(
            "{what} dtype {} differs from data dtype {}",
            p.dtype, data.dtype
        )));
    }
    Ok(AxisView::new(&data.shape, axis))
}

/// `nn.bias_add`: adds a per-channel vector to the data along `axis`.
pub struct BiasAdd;

impl OpImpl for BiasAdd {
    fn infer_type(&self, ctx: &TypeCtx<'_>) -> Result<Type, TypeError> {
        channel_view(ctx, "bias")?;
        Ok(Type::Tensor(ctx.tensor(0)?.clone()))
    }
}

/// `nn.prelu`: `x` if `x >= 0`, else `alpha[c] * x` for channel `c` along `axis`.
pub struct Prelu;

impl OpImpl for Prelu {
    fn infer_type(&self, ctx: &TypeCtx<'_>) -> Result<Type, TypeError> {
        channel_view(ctx, "alpha")?;
        Ok(Type::Tensor(ctx.tensor(0)?.clone()))
    }
}

/// `nn.leaky_relu`: `x` if `x >= 0`, else `alpha * x`.
pub struct LeakyRelu;

impl OpImpl for LeakyRelu {
    fn infer_type(&self, ctx: &TypeCtx<'_>) -> Result<Type, TypeError> {
        ctx.float("alpha")?;
        Ok(Type::Tensor(ctx.tensor(0)?.clone()))
    }
}

/// `nn.dropout` at inference: the identity, typed as Relay's `(out, mask)` pair.
pub struct Dropout;

impl OpImpl for Dropout {
    fn infer_type(&self, ctx: &TypeCtx<'_>) -> Result<Type, TypeError> {
        let rate = ctx.float("rate")?;
        if !(0.0..1.0).contains(&rate) {
            return Err(ctx.err(format!("rate must be in [0, 1), got {rate}")));
        }
        let t = Type::Tensor(ctx.tensor(0)?.clone());
        Ok(Type::Tuple(vec![t.clone(), t]))
    }
}

pub(crate) fn register(ops: &mut Vec<OpDef>) {
    ops.push(
        OpDef::new(
            "nn.bias_add",
            "adds a vector along axis (default 1, the channels)",
            Arity::Exact(2),
            OpPattern::Broadcast,
            BiasAdd,
        )
        .with_attrs(vec![AttrDef::new("axis", AttrKind::Int, 1i64)]),
    );
    ops.push(
        OpDef::new(
            "nn.prelu",
            "x if x >= 0 else alpha[c] * x, c the index along axis",
            Arity::Exact(2),
            OpPattern::Broadcast,
            Prelu,
        )
        .with_attrs(vec![AttrDef::new("axis", AttrKind::Int, 1i64)]),
    );
    ops.push(
        OpDef::new(
            "nn.leaky_relu",
            "x if x >= 0 else alpha * x",
            Arity::Exact(1),
            OpPattern::ElemWise,
            LeakyRelu,
        )
        .with_attrs(vec![AttrDef::new("alpha", AttrKind::Float, 0.01)]),
    );
    ops.push(
        OpDef::new(
            "nn.dropout",
            "dropout; identity at inference, typed (out, mask)",
            Arity::Exact(1),
            OpPattern::Opaque,
            Dropout,
        )
        .with_attrs(vec![AttrDef::new("rate", AttrKind::Float, 0.5)]),
    );
}
