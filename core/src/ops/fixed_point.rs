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
use crate::ir::{DType, Type};
use crate::op::{Arity, AttrDef, AttrKind, OpDef, OpImpl, OpPattern, TypeCtx, TypeError};
#[cfg(feature = "executor")]
use {
    super::elementwise::map_kernel,
    super::support::check_io,
    crate::kernels,
    crate::op::{HostKernel, KernelError, KernelSpec},
};

/// `fixed_point_multiply(x, multiplier, shift)`.
struct FixedPointMultiply;

/// The smallest and largest `shift` accepted.
const SHIFT_RANGE: (i64, i64) = (-32, 31);

/// TVM's `q_multiply_shift(x, multiplier, 31, shift)` on one value.
#[cfg(feature = "executor")]
pub(crate) fn fixed_point_multiply(x: i32, multiplier: i32, shift: i32) -> i32 {
    let (left, right) = if shift > 0 { (shift, 0) } else { (0, -shift) };
    let total_right = 31 + right as u32;
    let wide = (i64::from(x) << left).wrapping_mul(i64::from(multiplier));
    let rounded = wide.wrapping_add(1i64 << (total_right - 1));
    (rounded >> total_right) as i32
}

/// The validated `(multiplier, shift)` attributes.
fn params(ctx: &TypeCtx<'_>) -> Result<(i32, i32), TypeError> {
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

    #[cfg(feature = "executor")]
    fn host_kernel(&self, spec: &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> {
        check_io(spec, 1, 1)?;
        let (multiplier, shift) = super::support::with_type_ctx(spec, params)?;
        if spec.inputs[0].dtype != DType::Int32 {
            return Err(spec.unsupported(spec.inputs[0].dtype));
        }
        Ok(map_kernel(spec, move |x: i32| {
            fixed_point_multiply(x, multiplier, shift)
        }))
    }
}

/// `fixed_point_multiply_per_axis(x, multiplier, shift, axis)`.
struct FixedPointMultiplyPerAxis;

/// The normalized axis and its extent, after checking the operand types.
fn per_axis_setup(ctx: &TypeCtx<'_>) -> Result<(usize, usize), TypeError> {
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

    #[cfg(feature = "executor")]
    fn host_kernel(&self, spec: &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> {
        check_io(spec, 3, 1)?;
        let (axis, len) = super::support::with_type_ctx(spec, per_axis_setup)?;
        let inner: usize = spec.inputs[0].shape[axis + 1..].iter().product();
        let op = spec.op.to_string();
        Ok(kernels::kernel(
            spec.op,
            spec.inputs,
            spec.outputs,
            move |ins, outs, _threads| {
                let x = kernels::input::<i32>(ins, 0)?;
                let multiplier = kernels::input::<i32>(ins, 1)?;
                let shift = kernels::input::<i32>(ins, 2)?;
                if let Some(s) = shift
                    .iter()
                    .find(|&&s| !(SHIFT_RANGE.0..=SHIFT_RANGE.1).contains(&i64::from(s)))
                {
                    return Err(KernelError::new(
                        &op,
                        format!(
                            "shift {s} is outside [{}, {}]",
                            SHIFT_RANGE.0, SHIFT_RANGE.1
                        ),
                    ));
                }
                let y = kernels::output::<i32>(outs, 0)?;
                for (i, (out, &v)) in y.iter_mut().zip(x).enumerate() {
                    let c = (i / inner.max(1)) % len;
                    *out = fixed_point_multiply(v, multiplier[c], shift[c]);
                }
                Ok(())
            },
        ))
    }
}

pub(super) fn register(ops: &mut Vec<OpDef>) {
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

#[cfg(all(test, feature = "executor"))]
mod tests {
    use super::fixed_point_multiply;

    /// Exact rational reference: round-half-up of `x * m * 2^shift / 2^31`.
    fn reference(x: i32, m: i32, shift: i32) -> i32 {
        let num = i128::from(x) * i128::from(m) * (1i128 << (shift.max(0)));
        let den = 1i128 << (31 + (-shift).max(0));
        // floor((num + den/2) / den)
        (num + den / 2).div_euclid(den) as i32
    }

    #[test]
    fn matches_exact_rounding_half_up() {
        let m = 1_518_500_250; // 0.7071... in Q31
        for &(x, shift) in &[
            (0, 0),
            (1, 0),
            (-1, 0),
            (100, -3),
            (-100, -3),
            (12_345, 2),
            (-12_345, 2),
            (i32::MAX / 8, 1),
            (3, -1),
            (-3, -1),
        ] {
            assert_eq!(
                fixed_point_multiply(x, m, shift),
                reference(x, m, shift),
                "{x} {shift}"
            );
        }
        // Ties round up: 1 * 2^30 / 2^31 = 0.5 -> 1, and -0.5 -> 0.
        assert_eq!(fixed_point_multiply(1, 1 << 30, 0), 1);
        assert_eq!(fixed_point_multiply(-1, 1 << 30, 0), 0);
    }
}
