//! `fixed_point_multiply(x, multiplier, shift)`: Relay's integer rescaling of an `int32`
//! tensor by a real factor `multiplier / 2^31 * 2^shift`, with the semantics of TVM v0.16's
//! lowering (`topi.fixed_point_multiply` → the `q_multiply_shift` intrinsic):
//!
//! ```text
//! left  = max(shift, 0),  right = max(-shift, 0)
//! y     = (((x as i64) << left) * multiplier + 2^(30 + right)) >> (31 + right)   as i32
//! ```
//!
//! The rounding is half up (the positive rounding constant is added whatever the sign), the
//! products wrap in 64 bits and the final narrowing keeps the low 32 bits, as the generated
//! code does. `multiplier` is an int32 Q31 value (TVM's `relay.fixed_point_multiply` takes
//! it as an int); `shift` must lie in `[-32, 31]` so every shift amount stays inside 64 bits.
//!
//! `fixed_point_multiply_per_axis(x, multiplier, shift, axis)` is the same rescaling with one
//! `(multiplier, shift)` pair per index of `axis`, given as two 1-D int32 tensors (TVM's
//! `fixed_point_multiply_per_axis`, for per-channel scales such as ONNX's per-channel
//! `QLinearConv`).

use super::nn_common::norm_axis;
use crate::op::{Arity, AttrDef, AttrKind, OpDef, OpImpl, OpPattern, TypeCtx, TypeError};
use crate::{DType, Type};

/// `fixed_point_multiply(x, multiplier, shift)`.
pub struct FixedPointMultiply;

/// The smallest and largest `shift` accepted.
pub const SHIFT_RANGE: (i64, i64) = (-32, 31);

/// The validated `(multiplier, shift)` attributes.
pub fn params(ctx: &TypeCtx<'_>) -> Result<(i32, i32), TypeError> {
    let multiplier = ctx.int("multiplier")?;
    let multiplier = i32::try_from(multiplier).map_err(|_| {
        ctx.err(format!(
            "multiplier {multiplier} does not fit in int32 (a Q31 fixed-point value)"
        ))
    })?;
    let shift = ctx.int("shift")?;
    if !(SHIFT_RANGE.0..=SHIFT_RANGE.1).contains(&shift) {
        return Err(ctx.err(format!(
            "shift {shift} is outside [{}, {}]",
            SHIFT_RANGE.0, SHIFT_RANGE.1
        )));
    }
    Ok((multiplier, shift as i32))
}

impl OpImpl for FixedPointMultiply {
    fn infer_type(&self, ctx: &TypeCtx<'_>) -> Result<Type, TypeError> {
        params(ctx)?;
        let t = ctx.tensor(0)?;
        if t.dtype != DType::Int32 {
            return Err(ctx.err(format!("requires an int32 tensor, got {}", t.dtype)));
        }
        Ok(Type::Tensor(t.clone()))
    }
}

/// `fixed_point_multiply_per_axis(x, multiplier, shift, axis)`.
pub struct FixedPointMultiplyPerAxis;

/// The normalized axis and its extent, after checking the operand types.
pub fn per_axis_setup(ctx: &TypeCtx<'_>) -> Result<(usize, usize), TypeError> {
    let x = ctx.tensor(0)?;
    if x.dtype != DType::Int32 {
        return Err(ctx.err(format!("requires an int32 tensor, got {}", x.dtype)));
    }
    let axis = norm_axis(ctx, ctx.int("axis")?, x.rank())?;
    let len = x.shape[axis];
    for (i, what) in [(1, "multiplier"), (2, "shift")] {
        let t = ctx.tensor(i)?;
        if t.dtype != DType::Int32 || t.shape != [len] {
            return Err(ctx.err(format!(
                "{what} must be an int32 vector of {len} values (axis {axis} of {}), got {}",
                x, t
            )));
        }
    }
    Ok((axis, len))
}

impl OpImpl for FixedPointMultiplyPerAxis {
    fn infer_type(&self, ctx: &TypeCtx<'_>) -> Result<Type, TypeError> {
        per_axis_setup(ctx)?;
        Ok(Type::Tensor(ctx.tensor(0)?.clone()))
    }
}

pub(crate) fn register(ops: &mut Vec<OpDef>) {
    ops.push(
        OpDef::new(
            "fixed_point_multiply_per_axis",
            "fixed_point_multiply with one (multiplier, shift) pair per index of axis",
            Arity::Exact(3),
            OpPattern::Broadcast,
            FixedPointMultiplyPerAxis,
        )
        .with_attrs(vec![AttrDef::new("axis", AttrKind::Int, 1i64)]),
    );
    ops.push(
        OpDef::new(
            "fixed_point_multiply",
            "x * multiplier / 2^31 * 2^shift in int32, rounding half up",
            Arity::Exact(1),
            OpPattern::ElemWise,
            FixedPointMultiply,
        )
        .with_attrs(vec![
            AttrDef::optional("multiplier", AttrKind::Int),
            AttrDef::optional("shift", AttrKind::Int),
        ]),
    );
}
