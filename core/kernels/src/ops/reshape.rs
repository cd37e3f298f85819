//! Host kernels of the reshape ops: the kernel half of [`byoc_ir::ops::reshape`].

use crate::registry::Builders;
use crate::KernelBuilder;
pub(crate) use byoc_ir::ops::reshape::*;

use {
    super::support::check_io,
    crate::{HostKernel, KernelError, KernelSpec},
};

/// A kernel copying the input's bytes to the output.
fn copy_kernel(spec: &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> {
    check_io(spec, 1, 1)?;
    Ok(crate::kernel(
        spec.op,
        spec.inputs,
        spec.outputs,
        |ins, outs, _| {
            outs[0].bytes.copy_from_slice(ins[0].bytes);
            Ok(())
        },
    ))
}

impl KernelBuilder for View {
    fn host_kernel(&self, spec: &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> {
        copy_kernel(spec)
    }
}

/// Registers the builders of this family.
pub(crate) fn register(builders: &mut Builders) {
    builders.add::<View>();
}
