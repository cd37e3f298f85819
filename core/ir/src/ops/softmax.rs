//! `nn.softmax` and `nn.log_softmax` along `axis` (default −1). Host kernels for float32 and
//! float64, max-subtracted for stability.

use super::nn_common::norm_axis;
use super::norm::AxisView;
use crate::op::{Arity, AttrDef, AttrKind, OpDef, OpImpl, OpPattern, TypeCtx, TypeError};
use crate::Type;

/// Softmax, or log-softmax when the flag is set.
pub struct Softmax(pub bool);

/// The view of the data around its normalized `axis` attribute.
pub fn view(ctx: &TypeCtx<'_>) -> Result<AxisView, TypeError> {
    let data = ctx.tensor(0)?;
    let axis = norm_axis(ctx, ctx.int("axis")?, data.rank())?;
    Ok(AxisView::new(&data.shape, axis))
}

impl OpImpl for Softmax {
    fn infer_type(&self, ctx: &TypeCtx<'_>) -> Result<Type, TypeError> {
        view(ctx)?;
        Ok(Type::Tensor(ctx.tensor(0)?.clone()))
    }
}

pub(crate) fn register(ops: &mut Vec<OpDef>) {
    ops.push(
        OpDef::new(
            "nn.softmax",
            "exp(x) / sum(exp(x)) along axis",
            Arity::Exact(1),
            OpPattern::OutEWiseFusable,
            Softmax(false),
        )
        .with_attrs(vec![AttrDef::new("axis", AttrKind::Int, -1i64)]),
    );
    ops.push(
        OpDef::new(
            "nn.log_softmax",
            "x - log(sum(exp(x))) along axis",
            Arity::Exact(1),
            OpPattern::Opaque,
            Softmax(true),
        )
        .with_attrs(vec![AttrDef::new("axis", AttrKind::Int, -1i64)]),
    );
}
