//! Host kernels of the annotation ops: the kernel half of [`byoc_ir::ops::annotation`].

use crate::registry::Builders;
use crate::KernelBuilder;
pub(crate) use byoc_ir::ops::annotation::*;

use {
    crate::{HostKernel, KernelError, KernelSpec},
    byoc_ir::tensor::{TensorMut, TensorRef},
};

/// Copies every input to the output of the same position.
struct Copy;

impl HostKernel for Copy {
    fn run(
        &self,
        inputs: &[TensorRef<'_>],
        outputs: &mut [TensorMut<'_>],
        _threads: usize,
    ) -> Result<(), KernelError> {
        for (i, o) in inputs.iter().zip(outputs.iter_mut()) {
            o.bytes.copy_from_slice(i.bytes);
        }
        Ok(())
    }
}

impl KernelBuilder for CompilerAnnotation {
    fn host_kernel(&self, _spec: &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> {
        Ok(Box::new(Copy))
    }
}

/// Registers the builders of this family.
pub(crate) fn register(builders: &mut Builders) {
    builders.add::<CompilerAnnotation>();
}
