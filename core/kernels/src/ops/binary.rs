//! Host kernels of the binary ops: the kernel half of [`byoc_ir::ops::binary`].

use crate::registry::Builders;
use crate::KernelBuilder;
pub(crate) use byoc_ir::ops::binary::*;

use {
    super::support::check_io,
    crate::{broadcast::BroadcastPlan, Int, Scalar},
    crate::{HostKernel, KernelError, KernelSpec},
    byoc_ir::tensor::Element,
};

/// A host kernel computing `out = f(a, b)` with broadcasting.
pub(super) fn broadcast_kernel<A: Element, B: Element, O: Element>(
    spec: &KernelSpec<'_>,
    f: impl Fn(A, B) -> O + Copy + Send + Sync + 'static,
) -> Result<Box<dyn HostKernel>, KernelError> {
    check_io(spec, 2, 1)?;
    let plan = BroadcastPlan::new(
        &spec.outputs[0].shape,
        &[&spec.inputs[0].shape, &spec.inputs[1].shape],
    );
    Ok(crate::kernel(
        spec.op,
        spec.inputs,
        spec.outputs,
        move |ins, outs, threads| {
            let a = crate::input::<A>(ins, 0)?;
            let b = crate::input::<B>(ins, 1)?;
            let o = crate::output::<O>(outs, 0)?;
            crate::broadcast::binary(&plan, a, b, o, threads, f);
            Ok(())
        },
    ))
}

/// TVM's lowering name of the op on custom datatypes (`Add`), if it has one.
fn tvm_name(op: BinaryOp) -> Option<&'static str> {
    use BinaryOp::*;
    Some(match op {
        Add => "Add",
        Subtract => "Sub",
        Multiply => "Mul",
        Divide => "Div",
        Maximum => "Max",
        Minimum => "Min",
        Power | LeftShift | RightShift => return None,
    })
}

fn arith_kernel<T: Scalar>(
    spec: &KernelSpec<'_>,
    op: BinaryOp,
) -> Result<Box<dyn HostKernel>, KernelError> {
    use BinaryOp::*;
    match op {
        Add => broadcast_kernel(spec, |a: T, b: T| a.add(b)),
        Subtract => broadcast_kernel(spec, |a: T, b: T| a.sub(b)),
        Multiply => broadcast_kernel(spec, |a: T, b: T| a.mul(b)),
        Divide => broadcast_kernel(spec, |a: T, b: T| a.div(b)),
        Power => broadcast_kernel(spec, |a: T, b: T| a.pow(b)),
        // `a != a` is true only for NaN, which both propagate.
        #[allow(clippy::eq_op, reason = "NaN test that also compiles for integers")]
        Maximum => broadcast_kernel(spec, |a: T, b: T| if a != a || a >= b { a } else { b }),
        #[allow(clippy::eq_op, reason = "NaN test that also compiles for integers")]
        Minimum => broadcast_kernel(spec, |a: T, b: T| if a != a || a <= b { a } else { b }),
        LeftShift | RightShift => Err(spec.unsupported(spec.inputs[0].dtype)),
    }
}

fn shift_kernel<T: Int>(
    spec: &KernelSpec<'_>,
    op: BinaryOp,
) -> Result<Box<dyn HostKernel>, KernelError> {
    match op {
        BinaryOp::LeftShift => broadcast_kernel(spec, |a: T, b: T| a.shl(b)),
        BinaryOp::RightShift => broadcast_kernel(spec, |a: T, b: T| a.shr(b)),
        _ => arith_kernel::<T>(spec, op),
    }
}

impl KernelBuilder for Binary {
    fn host_kernel(&self, spec: &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> {
        check_io(spec, 2, 1)?;
        let dtype = spec.inputs[0].dtype;
        if dtype.is_custom() {
            return match tvm_name(self.0) {
                Some(name) => crate::custom::binary(spec, name),
                None => Err(KernelError::new(
                    spec.op,
                    format!("{dtype} has no lowering: a lowering table has no key for this op"),
                )),
            };
        }
        crate::with_int!(
            dtype,
            |T| shift_kernel::<T>(spec, self.0),
            crate::with_float!(
                dtype,
                |T| arith_kernel::<T>(spec, self.0),
                Err(spec.unsupported(dtype))
            )
        )
    }
}

/// Registers the builders of this family.
pub(crate) fn register(builders: &mut Builders) {
    builders.add::<Binary>();
}
