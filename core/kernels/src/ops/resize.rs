//! Host kernels of the resize ops: the kernel half of [`byoc_ir::ops::resize`].

use crate::registry::Builders;
use crate::KernelBuilder;
pub(crate) use byoc_ir::ops::resize::*;

use {
    super::nn_common::{input, output, real_kernel, RealBody},
    crate::numeric::Real,
    crate::resize::resize2d,
    crate::{HostKernel, KernelError, KernelSpec},
    byoc_ir::tensor::{TensorMut, TensorRef},
};

struct ResizeKernel(ResizeSetup);

impl RealBody for ResizeKernel {
    fn run<T: Real>(
        &self,
        inputs: &[TensorRef<'_>],
        outputs: &mut [TensorMut<'_>],
        _threads: usize,
    ) -> Result<(), KernelError> {
        let x = input::<T>("image.resize2d", inputs, 0)?;
        let y = output::<T>("image.resize2d", outputs, 0)?;
        let s = &self.0;
        resize2d(&s.geom, s.method, s.mode, x, y);
        Ok(())
    }
}

impl KernelBuilder for Resize2d {
    fn host_kernel(&self, spec: &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> {
        let s = spec.with_type_ctx(setup)?;
        real_kernel(spec, s.out.dtype, ResizeKernel(s))
    }
}

/// Registers the builders of this family.
pub(crate) fn register(builders: &mut Builders) {
    builders.add::<Resize2d>();
}
