//! Host kernels of the select ops: the kernel half of [`byoc_ir::ops::select`].

use crate::registry::Builders;
use crate::KernelBuilder;
pub(crate) use byoc_ir::ops::select::*;

use {
    super::support::check_io,
    crate::{broadcast::BroadcastPlan, Scalar},
    crate::{HostKernel, KernelError, KernelSpec},
    byoc_ir::tensor::TensorRef,
    byoc_ir::DType,
};

/// The condition as 0/1 bytes.
fn truth<T: Scalar>(cond: &TensorRef<'_>) -> Result<Vec<u8>, KernelError> {
    let c = crate::input::<T>(std::slice::from_ref(cond), 0)?;
    Ok(c.iter().map(|&v| u8::from(v != T::ZERO)).collect())
}

impl KernelBuilder for Where {
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
        crate::with_width!(
            width,
            |W| Ok(crate::kernel(
                spec.op,
                spec.inputs,
                spec.outputs,
                move |ins, outs, threads| {
                    let cond = crate::with_numeric_or_bool!(
                        ins[0].ty.dtype,
                        |T| truth::<T>(&ins[0])?,
                        return Err(KernelError::new(&op, "unsupported condition dtype"))
                    );
                    let x = crate::words::<W>(ins[1].bytes)?;
                    let y = crate::words::<W>(ins[2].bytes)?;
                    let o = crate::words_mut::<W>(outs[0].bytes)?;
                    crate::broadcast::select(&plan, &cond, x, y, o, threads);
                    Ok(())
                }
            )),
            Err(spec.unsupported(format_args!("{}-byte elements", width)))
        )
    }
}

/// Registers the builders of this family.
pub(crate) fn register(builders: &mut Builders) {
    builders.add::<Where>();
}
