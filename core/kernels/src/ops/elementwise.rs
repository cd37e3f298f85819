//! Host kernels of the elementwise ops: the kernel half of [`byoc_ir::ops::elementwise`].

use crate::registry::Builders;
use crate::KernelBuilder;
pub(crate) use byoc_ir::ops::elementwise::*;
use byoc_ir::DType;

use {
    super::support::check_io,
    crate::{elementwise::map, Float, Scalar},
    crate::{HostKernel, KernelError, KernelSpec},
    byoc_ir::tensor::Element,
};

/// A host kernel computing `y[i] = f(x[i])`.
pub(super) fn map_kernel<T: Element, U: Element>(
    spec: &KernelSpec<'_>,
    f: impl Fn(T) -> U + Copy + Send + Sync + 'static,
) -> Box<dyn HostKernel> {
    crate::kernel(
        spec.op,
        spec.inputs,
        spec.outputs,
        move |ins, outs, threads| {
            let x = crate::input::<T>(ins, 0)?;
            let y = crate::output::<U>(outs, 0)?;
            map(x, y, threads, f);
            Ok(())
        },
    )
}

/// The op's lowering on custom datatypes (see [`crate::custom`]).
fn on_custom(op: UnaryOp) -> crate::custom::Unary {
    use crate::custom::Unary as C;
    use UnaryOp::*;
    match op {
        Exp => C::Intrinsic("tir.exp"),
        Log => C::Intrinsic("tir.log"),
        Sqrt => C::Intrinsic("tir.sqrt"),
        Erf => C::Intrinsic("tir.erf"),
        Tanh => C::Intrinsic("tir.tanh"),
        Sigmoid => C::Intrinsic("tir.sigmoid"),
        Round => C::Intrinsic("tir.round"),
        Floor => C::Intrinsic("tir.floor"),
        Ceil => C::Intrinsic("tir.ceil"),
        Rsqrt => C::Rsqrt,
        Relu => C::Relu,
        Negative => C::Negative,
        Abs => C::Abs,
        Copy => C::Copy,
    }
}

fn float_kernel<T: Float>(spec: &KernelSpec<'_>, op: UnaryOp) -> Box<dyn HostKernel> {
    use UnaryOp::*;
    match op {
        Exp => map_kernel(spec, |x: T| x.exp()),
        Log => map_kernel(spec, |x: T| x.ln()),
        Sqrt => map_kernel(spec, |x: T| x.sqrt()),
        Rsqrt => map_kernel(spec, |x: T| T::ONE.div(x.sqrt())),
        Erf => map_kernel(spec, |x: T| x.erf()),
        Tanh => map_kernel(spec, |x: T| x.tanh()),
        Sigmoid => map_kernel(spec, |x: T| T::ONE.div(T::ONE.add(x.neg().exp()))),
        Round => map_kernel(spec, |x: T| x.round_ties_even()),
        Floor => map_kernel(spec, |x: T| x.floor()),
        Ceil => map_kernel(spec, |x: T| x.ceil()),
        Relu | Abs | Negative | Copy => scalar_kernel::<T>(spec, op),
    }
}

/// Kernels of the ops defined for every numeric dtype.
fn scalar_kernel<T: Scalar>(spec: &KernelSpec<'_>, op: UnaryOp) -> Box<dyn HostKernel> {
    match op {
        UnaryOp::Relu => map_kernel(spec, |x: T| if x > T::ZERO { x } else { T::ZERO }),
        UnaryOp::Abs => map_kernel(spec, |x: T| x.abs()),
        UnaryOp::Negative => map_kernel(spec, |x: T| x.neg()),
        // Rounding is the identity on integers; float-only ops never reach here for them.
        _ => map_kernel(spec, |x: T| x),
    }
}

fn clip_kernel<T: Scalar>(spec: &KernelSpec<'_>, lo: f64, hi: f64) -> Box<dyn HostKernel> {
    let lo = T::from_wide(crate::Wide::Float(lo));
    let hi = T::from_wide(crate::Wide::Float(hi));
    map_kernel(spec, move |x: T| {
        if x < lo {
            lo
        } else if x > hi {
            hi
        } else {
            x
        }
    })
}

fn cast_kernel<S: Scalar>(
    spec: &KernelSpec<'_>,
    to: DType,
) -> Result<Box<dyn HostKernel>, KernelError> {
    if to == DType::Bool {
        return Ok(map_kernel(spec, |x: S| u8::from(x != S::ZERO)));
    }
    crate::with_numeric!(
        to,
        |D| Ok(map_kernel(spec, |x: S| D::from_wide(x.to_wide()))),
        Err(spec.unsupported(format_args!("casting to {to}")))
    )
}

impl KernelBuilder for Unary {
    fn host_kernel(&self, spec: &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> {
        check_io(spec, 1, 1)?;
        let dtype = spec.inputs[0].dtype;
        if dtype.is_custom() {
            return crate::custom::unary(spec, on_custom(self.0));
        }
        if self.0.float_only() && !dtype.is_float() {
            return Err(spec.unsupported(dtype));
        }
        if self.0 == UnaryOp::Copy {
            return Ok(crate::kernel(
                spec.op,
                spec.inputs,
                spec.outputs,
                |ins, outs, _| {
                    for (i, o) in ins.iter().zip(outs.iter_mut()) {
                        o.bytes.copy_from_slice(i.bytes);
                    }
                    Ok(())
                },
            ));
        }
        crate::with_float!(
            dtype,
            |T| Ok(float_kernel::<T>(spec, self.0)),
            crate::with_int!(
                dtype,
                |T| Ok(scalar_kernel::<T>(spec, self.0)),
                Err(spec.unsupported(dtype))
            )
        )
    }
}

impl KernelBuilder for Clip {
    fn host_kernel(&self, spec: &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> {
        check_io(spec, 1, 1)?;
        let (lo, hi) = spec.with_type_ctx(bounds)?;
        let dtype = spec.inputs[0].dtype;
        if dtype.is_custom() {
            return crate::custom::clip(spec, lo, hi);
        }
        crate::with_numeric!(
            dtype,
            |T| Ok(clip_kernel::<T>(spec, lo, hi)),
            Err(spec.unsupported(dtype))
        )
    }
}

impl KernelBuilder for Cast {
    fn host_kernel(&self, spec: &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> {
        check_io(spec, 1, 1)?;
        let (from, to) = (spec.inputs[0].dtype, spec.outputs[0].dtype);
        if from.is_custom() || to.is_custom() {
            return crate::custom::cast(spec);
        }
        crate::with_numeric_or_bool!(
            from,
            |S| cast_kernel::<S>(spec, to),
            Err(spec.unsupported(format_args!("casting from {from}")))
        )
    }
}

/// Registers the builders of this family.
pub(crate) fn register(builders: &mut Builders) {
    builders.add::<Unary>();
    builders.add::<Clip>();
    builders.add::<Cast>();
}
