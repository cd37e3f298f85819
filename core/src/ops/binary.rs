//! Binary arithmetic with numpy broadcasting: `add`, `subtract`, `multiply`, `divide`,
//! `power`, `maximum`, `minimum`, `left_shift`, `right_shift`.
//!
//! Integer semantics are C's on two's complement, which the quantized path relies on:
//! `add`/`subtract`/`multiply` wrap, `divide` truncates toward zero (TVM's `truncdiv`) and gives
//! 0 for a zero divisor instead of trapping, `right_shift` is arithmetic on signed types.
//! Shift amounts at least the bit width give 0 (`left_shift`) or the sign fill
//! (`right_shift`); negative amounts leave the value unchanged. `maximum`/`minimum` propagate
//! NaN as numpy does.

use crate::ir::{TensorType, Type};
use crate::op::{Arity, OpDef, OpImpl, OpPattern, TypeCtx, TypeError};

use super::elementwise::broadcast_shapes;
#[cfg(feature = "executor")]
use {
    super::support::check_io,
    crate::kernels::{self, broadcast::BroadcastPlan, Int, Scalar},
    crate::op::{HostKernel, KernelError, KernelSpec},
    crate::tensor::Element,
};

/// The broadcast result shape of two same-dtype operands; returns the shared dtype's type.
pub(super) fn broadcast_operands(ctx: &TypeCtx<'_>) -> Result<TensorType, TypeError> {
    let a = ctx.tensor(0)?;
    let b = ctx.tensor(1)?;
    if a.dtype != b.dtype {
        return Err(ctx.err(format!("operand dtypes differ: {} vs {}", a.dtype, b.dtype)));
    }
    Ok(TensorType::new(
        broadcast_shapes(ctx, &a.shape, &b.shape)?,
        a.dtype,
    ))
}

/// A host kernel computing `out = f(a, b)` with broadcasting.
#[cfg(feature = "executor")]
pub(super) fn broadcast_kernel<A: Element, B: Element, O: Element>(
    spec: &KernelSpec<'_>,
    f: impl Fn(A, B) -> O + Copy + Send + Sync + 'static,
) -> Result<Box<dyn HostKernel>, KernelError> {
    check_io(spec, 2, 1)?;
    let plan = BroadcastPlan::new(
        &spec.outputs[0].shape,
        &[&spec.inputs[0].shape, &spec.inputs[1].shape],
    );
    Ok(kernels::kernel(
        spec.op,
        spec.inputs,
        spec.outputs,
        move |ins, outs, threads| {
            let a = kernels::input::<A>(ins, 0)?;
            let b = kernels::input::<B>(ins, 1)?;
            let o = kernels::output::<O>(outs, 0)?;
            kernels::broadcast::binary(&plan, a, b, o, threads, f);
            Ok(())
        },
    ))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BinaryOp {
    Add,
    Subtract,
    Multiply,
    Divide,
    Power,
    Maximum,
    Minimum,
    LeftShift,
    RightShift,
}

impl BinaryOp {
    /// TVM's lowering name of the op on custom datatypes (`Add`), if it has one.
    #[cfg(feature = "executor")]
    fn tvm_name(self) -> Option<&'static str> {
        use BinaryOp::*;
        Some(match self {
            Add => "Add",
            Subtract => "Sub",
            Multiply => "Mul",
            Divide => "Div",
            Maximum => "Max",
            Minimum => "Min",
            Power | LeftShift | RightShift => return None,
        })
    }
}

struct Binary(BinaryOp);

#[cfg(feature = "executor")]
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

#[cfg(feature = "executor")]
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

impl OpImpl for Binary {
    fn infer_type(&self, ctx: &TypeCtx<'_>) -> Result<Type, TypeError> {
        let t = broadcast_operands(ctx)?;
        if matches!(self.0, BinaryOp::LeftShift | BinaryOp::RightShift) && !t.dtype.is_int() {
            return Err(ctx.err(format!("requires integer operands, got {}", t.dtype)));
        }
        Ok(Type::Tensor(t))
    }

    #[cfg(feature = "executor")]
    fn host_kernel(&self, spec: &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> {
        check_io(spec, 2, 1)?;
        let dtype = spec.inputs[0].dtype;
        if dtype.is_custom() {
            return match self.0.tvm_name() {
                Some(name) => kernels::custom::binary(spec, name),
                None => Err(spec.unsupported(dtype)),
            };
        }
        kernels::with_int!(
            dtype,
            |T| shift_kernel::<T>(spec, self.0),
            kernels::with_float!(
                dtype,
                |T| arith_kernel::<T>(spec, self.0),
                Err(spec.unsupported(dtype))
            )
        )
    }
}

pub(super) fn register(ops: &mut Vec<OpDef>) {
    use BinaryOp::*;
    let binary: [(&str, &'static str, BinaryOp); 9] = [
        ("add", "a + b with broadcasting", Add),
        ("subtract", "a - b with broadcasting", Subtract),
        ("multiply", "a * b with broadcasting", Multiply),
        (
            "divide",
            "a / b with broadcasting (integers truncate)",
            Divide,
        ),
        ("power", "a ** b with broadcasting", Power),
        ("maximum", "elementwise max with broadcasting", Maximum),
        ("minimum", "elementwise min with broadcasting", Minimum),
        ("left_shift", "a << b with broadcasting", LeftShift),
        ("right_shift", "a >> b with broadcasting", RightShift),
    ];
    for (name, summary, op) in binary {
        ops.push(OpDef::new(
            name,
            summary,
            Arity::Exact(2),
            OpPattern::Broadcast,
            Binary(op),
        ));
    }
}
