//! Host kernels of the fixed_point ops: the kernel half of [`byoc_ir::ops::fixed_point`].

use crate::registry::Builders;
use crate::KernelBuilder;
pub(crate) use byoc_ir::ops::fixed_point::*;
use byoc_ir::DType;

use {
    super::elementwise::map_kernel,
    super::support::check_io,
    crate::{HostKernel, KernelError, KernelSpec},
};

/// TVM's `q_multiply_shift(x, multiplier, 31, shift)` on one value.
pub(crate) fn fixed_point_multiply(x: i32, multiplier: i32, shift: i32) -> i32 {
    let (left, right) = if shift > 0 { (shift, 0) } else { (0, -shift) };
    let total_right = 31 + right as u32;
    let wide = (i64::from(x) << left).wrapping_mul(i64::from(multiplier));
    let rounded = wide.wrapping_add(1i64 << (total_right - 1));
    (rounded >> total_right) as i32
}

impl KernelBuilder for FixedPointMultiply {
    fn host_kernel(&self, spec: &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> {
        check_io(spec, 1, 1)?;
        let (multiplier, shift) = spec.with_type_ctx(params)?;
        if spec.inputs[0].dtype != DType::Int32 {
            return Err(spec.unsupported(spec.inputs[0].dtype));
        }
        Ok(map_kernel(spec, move |x: i32| {
            fixed_point_multiply(x, multiplier, shift)
        }))
    }
}

impl KernelBuilder for FixedPointMultiplyPerAxis {
    fn host_kernel(&self, spec: &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> {
        check_io(spec, 3, 1)?;
        let (axis, len) = spec.with_type_ctx(per_axis_setup)?;
        let inner: usize = spec.inputs[0].shape[axis + 1..].iter().product();
        let op = spec.op.to_string();
        Ok(crate::kernel(
            spec.op,
            spec.inputs,
            spec.outputs,
            move |ins, outs, _threads| {
                let x = crate::input::<i32>(ins, 0)?;
                let multiplier = crate::input::<i32>(ins, 1)?;
                let shift = crate::input::<i32>(ins, 2)?;
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
                let y = crate::output::<i32>(outs, 0)?;
                for (i, (out, &v)) in y.iter_mut().zip(x).enumerate() {
                    let c = (i / inner.max(1)) % len;
                    *out = fixed_point_multiply(v, multiplier[c], shift[c]);
                }
                Ok(())
            },
        ))
    }
}

/// Registers the builders of this family.
pub(crate) fn register(builders: &mut Builders) {
    builders.add::<FixedPointMultiply>();
    builders.add::<FixedPointMultiplyPerAxis>();
}

#[cfg(test)]
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
