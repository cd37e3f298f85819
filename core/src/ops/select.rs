//! `where(condition, x, y)`: elements of `x` where the condition holds, else of `y`, with
//! numpy broadcasting over all three operands. The condition may be bool or numeric (nonzero
//! counts as true); `x` and `y` may have any dtype, custom ones included, as long as it is the
//! same.

use crate::ir::{TensorType, Type};
use crate::op::{Arity, OpDef, OpImpl, OpPattern, TypeCtx, TypeError};

use super::elementwise::broadcast_shapes;
#[cfg(feature = "executor")]
use {
    super::support::check_io,
    crate::ir::DType,
    crate::kernels::{self, broadcast::BroadcastPlan, Scalar},
    crate::op::{HostKernel, KernelError, KernelSpec},
    crate::tensor::TensorRef,
};

struct Where;

/// The condition as 0/1 bytes.
#[cfg(feature = "executor")]
fn truth<T: Scalar>(cond: &TensorRef<'_>) -> Result<Vec<u8>, KernelError> {
    let c = kernels::input::<T>(std::slice::from_ref(cond), 0)?;
    Ok(c.iter().map(|&v| u8::from(v != T::ZERO)).collect())
}

impl OpImpl for Where {
    fn infer_type(&self, ctx: &TypeCtx<'_>) -> Result<Type, TypeError> {
        let (c, x, y) = (ctx.tensor(0)?, ctx.tensor(1)?, ctx.tensor(2)?);
        if x.dtype != y.dtype {
            return Err(ctx.err(format!("x and y dtypes differ: {} vs {}", x.dtype, y.dtype)));
        }
        let xy = broadcast_shapes(ctx, &x.shape, &y.shape)?;
        Ok(Type::Tensor(TensorType::new(
            broadcast_shapes(ctx, &c.shape, &xy)?,
            x.dtype,
        )))
    }

    #[cfg(feature = "executor")]
    fn host_kernel(&self, spec: &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> {
        check_io(spec, 3, 1)?;
        let cond_dtype = spec.inputs[0].dtype;
        if !(cond_dtype == DType::Bool
            || cond_dtype.is_int()
            || matches!(cond_dtype, DType::Float32 | DType::Float64))
        {
            return Err(spec.unsupported(format_args!("a {cond_dtype} condition")));
        }
        let width = spec.outputs[0].dtype.size_bytes();
        let plan = BroadcastPlan::new(
            &spec.outputs[0].shape,
            &[
                &spec.inputs[0].shape,
                &spec.inputs[1].shape,
                &spec.inputs[2].shape,
            ],
        );
        let op = spec.op.to_string();
        kernels::with_width!(
            width,
            |W| Ok(kernels::kernel(
                spec.op,
                spec.inputs,
                spec.outputs,
                move |ins, outs, threads| {
                    let cond = kernels::with_numeric_or_bool!(
                        ins[0].ty.dtype,
                        |T| truth::<T>(&ins[0])?,
                        return Err(KernelError::new(&op, "unsupported condition dtype"))
                    );
                    let x = kernels::words::<W>(ins[1].bytes)?;
                    let y = kernels::words::<W>(ins[2].bytes)?;
                    let o = kernels::words_mut::<W>(outs[0].bytes)?;
                    kernels::broadcast::select(&plan, &cond, x, y, o, threads);
                    Ok(())
                }
            )),
            Err(spec.unsupported(format_args!("{}-byte elements", width)))
        )
    }
}

pub(super) fn register(ops: &mut Vec<OpDef>) {
    ops.push(OpDef::new(
        "where",
        "condition ? x : y with broadcasting",
        Arity::Exact(3),
        OpPattern::Broadcast,
        Where,
    ));
}
