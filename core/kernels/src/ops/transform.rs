//! Host kernels of the transform ops: the kernel half of [`byoc_ir::ops::transform`].

use crate::registry::Builders;
use crate::KernelBuilder;
use byoc_ir::op::TypeCtx;
pub(crate) use byoc_ir::ops::transform::*;
use byoc_ir::TensorType;

use {
    super::support::check_io,
    crate::transform,
    crate::{HostKernel, KernelError, KernelSpec},
};

impl KernelBuilder for Transpose {
    fn host_kernel(&self, spec: &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> {
        check_io(spec, 1, 1)?;
        let input = spec.inputs[0].clone();
        let axes = spec.with_type_ctx(|ctx| transpose_axes(ctx, input.rank()))?;
        let width = input.dtype.size_bytes();
        crate::with_width!(
            width,
            |W| Ok(crate::kernel(
                spec.op,
                spec.inputs,
                spec.outputs,
                move |ins, outs, _| {
                    let x = crate::words::<W>(ins[0].bytes)?;
                    let y = crate::words_mut::<W>(outs[0].bytes)?;
                    transform::permute(x, y, &input.shape, &axes);
                    Ok(())
                }
            )),
            Err(spec.unsupported(format_args!("{width}-byte elements")))
        )
    }
}

impl KernelBuilder for Concatenate {
    fn host_kernel(&self, spec: &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> {
        check_io(spec, spec.inputs.len().max(1), 1)?;
        let fields: Vec<&TensorType> = spec.inputs.iter().collect();
        let ctx = TypeCtx {
            op: spec.op,
            attrs: spec.attrs,
            args: &[],
        };
        let (_, axis) = concat_type(&ctx, &fields)?;
        let width = spec.outputs[0].dtype.size_bytes();
        let outer: usize = spec.outputs[0].shape[..axis].iter().product();
        let blocks: Vec<usize> = spec
            .inputs
            .iter()
            .map(|t| t.shape[axis..].iter().product::<usize>() * width)
            .collect();
        Ok(crate::kernel(
            spec.op,
            spec.inputs,
            spec.outputs,
            move |ins, outs, _| {
                let parts: Vec<(&[u8], usize)> = ins
                    .iter()
                    .map(|t| t.bytes)
                    .zip(blocks.iter().copied())
                    .collect();
                transform::concat(&parts, outer, outs[0].bytes);
                Ok(())
            },
        ))
    }
}

impl KernelBuilder for Split {
    fn host_kernel(&self, spec: &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> {
        let input = spec
            .inputs
            .first()
            .ok_or_else(|| KernelError::new(spec.op, "missing input"))?;
        let (axis, sizes) = spec.with_type_ctx(|ctx| split_sizes(ctx, input))?;
        check_io(spec, 1, sizes.len())?;
        let width = input.dtype.size_bytes();
        let outer: usize = input.shape[..axis].iter().product();
        let inner: usize = input.shape[axis + 1..].iter().product::<usize>() * width;
        let blocks: Vec<usize> = sizes.iter().map(|s| s * inner).collect();
        Ok(crate::kernel(
            spec.op,
            spec.inputs,
            spec.outputs,
            move |ins, outs, _| {
                let mut parts: Vec<(&mut [u8], usize)> = outs
                    .iter_mut()
                    .map(|t| &mut *t.bytes)
                    .zip(blocks.iter().copied())
                    .collect();
                transform::split(ins[0].bytes, outer, &mut parts);
                Ok(())
            },
        ))
    }
}

/// Registers the builders of this family.
pub(crate) fn register(builders: &mut Builders) {
    builders.add::<Transpose>();
    builders.add::<Concatenate>();
    builders.add::<Split>();
}
