//! Normalizations: `nn.batch_norm` (inference semantics; Relay's 3-tuple result),
//! `nn.layer_norm` and `nn.lrn` (TVM's formula). Host kernels for float32 and float64.
//!
//! batch_norm's second and third results are the moving mean and variance passed through, as
//! TVM computes them outside training.

use super::nn_common::norm_axis;
use crate::op::{Arity, AttrDef, AttrKind, OpDef, OpImpl, OpPattern, TypeCtx, TypeError};
use crate::{TensorType, Type};

/// The data (argument 0), its normalized `axis` attribute and the view around it; checks that
/// the per-channel arguments `params` are 1-D of the axis length and of the data's dtype.
pub fn axis_setup(
    ctx: &TypeCtx<'_>,
    params: &[&str],
) -> Result<(TensorType, usize, AxisView), TypeError> {
    let data = ctx.tensor(0)?;
    let axis = norm_axis(ctx, ctx.int("axis")?, data.rank())?;
    let len = data.shape[axis];
    for (i, name) in params.iter().enumerate() {
        let p = ctx.tensor(i + 1)?;
        if p.shape != [len] {
            return Err(ctx.err(format!(
                "{name} has shape {:?} but the data has {len} channels on axis {axis}",
                p.shape
            )));
        }
        if p.dtype != data.dtype {
            return Err(ctx.err(format!(
                "{name} dtype {} differs from data dtype {}",
                p.dtype, data.dtype
            )));
        }
    }
    Ok((data.clone(), axis, AxisView::new(&data.shape, axis)))
}

/// The per-channel arguments of `nn.batch_norm` after the data, in order.
pub const BATCH_NORM_PARAMS: [&str; 4] = ["gamma", "beta", "moving_mean", "moving_var"];

/// `nn.batch_norm` with inference semantics: `(out, moving_mean, moving_var)`.
pub struct BatchNorm;

impl OpImpl for BatchNorm {
    fn infer_type(&self, ctx: &TypeCtx<'_>) -> Result<Type, TypeError> {
        let (data, axis, _) = axis_setup(ctx, &BATCH_NORM_PARAMS)?;
        let stat = Type::tensor([data.shape[axis]], data.dtype);
        Ok(Type::Tuple(vec![Type::Tensor(data), stat.clone(), stat]))
    }
}

/// `nn.layer_norm`: normalization over `axis` with scale `gamma` and shift `beta`.
pub struct LayerNorm;

impl OpImpl for LayerNorm {
    fn infer_type(&self, ctx: &TypeCtx<'_>) -> Result<Type, TypeError> {
        Ok(Type::Tensor(axis_setup(ctx, &["gamma", "beta"])?.0))
    }
}

/// `nn.lrn`: local response normalization across `axis` (TVM's formula).
pub struct LrnOp;

impl OpImpl for LrnOp {
    fn infer_type(&self, ctx: &TypeCtx<'_>) -> Result<Type, TypeError> {
        let (data, _, _) = axis_setup(ctx, &[])?;
        if ctx.int("size")? < 1 {
            return Err(ctx.err(format!("size must be at least 1, got {}", ctx.int("size")?)));
        }
        Ok(Type::Tensor(data))
    }
}

fn norm_attrs(axis: i64) -> Vec<AttrDef> {
    vec![
        AttrDef::new("axis", AttrKind::Int, axis),
        AttrDef::new("epsilon", AttrKind::Float, 1e-5),
        AttrDef::new("center", AttrKind::Bool, true),
        AttrDef::new("scale", AttrKind::Bool, true),
    ]
}

pub(crate) fn register(ops: &mut Vec<OpDef>) {
    ops.push(
        OpDef::new(
            "nn.batch_norm",
            "batch normalization with moving statistics; (out, moving_mean, moving_var)",
            Arity::Exact(5),
            OpPattern::Opaque,
            BatchNorm,
        )
        .with_attrs(norm_attrs(1)),
    );
    ops.push(
        OpDef::new(
            "nn.layer_norm",
            "normalization over one axis with scale gamma and shift beta",
            Arity::Exact(3),
            OpPattern::Opaque,
            LayerNorm,
        )
        .with_attrs(norm_attrs(-1)),
    );
    ops.push(
        OpDef::new(
            "nn.lrn",
            "local response normalization across an axis",
            Arity::Exact(1),
            OpPattern::Opaque,
            LrnOp,
        )
        .with_attrs(vec![
            AttrDef::new("size", AttrKind::Int, 5i64),
            AttrDef::new("axis", AttrKind::Int, 1i64),
            AttrDef::new("bias", AttrKind::Float, 2.0),
            AttrDef::new("alpha", AttrKind::Float, 1e-4),
            AttrDef::new("beta", AttrKind::Float, 0.75),
        ]),
    );
}

/// A tensor seen as `[outer, len, inner]` around one axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AxisView {
    /// The product of the dimensions before the axis.
    pub outer: usize,
    /// The axis length.
    pub len: usize,
    /// The product of the dimensions after the axis (the axis's element stride).
    pub inner: usize,
}

impl AxisView {
    /// The view of `shape` around `axis` (already normalized to `0..rank`).
    pub fn new(shape: &[usize], axis: usize) -> Self {
        AxisView {
            outer: shape[..axis].iter().product(),
            len: shape[axis],
            inner: shape[axis + 1..].iter().product(),
        }
    }

    /// Elements per step of `outer`: `len * inner`.
    pub fn block(&self) -> usize {
        self.len * self.inner
    }
}
