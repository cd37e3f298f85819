//! Host kernels of the softmax ops: the kernel half of [`byoc_ir::ops::softmax`].

use crate::registry::Builders;
use crate::KernelBuilder;
use byoc_ir::ops::norm::AxisView;
pub(crate) use byoc_ir::ops::softmax::*;

use {
    super::nn_common::{input, output, real_kernel, RealBody},
    crate::norm::softmax,
    crate::numeric::Real,
    crate::{HostKernel, KernelError, KernelSpec},
    byoc_ir::tensor::{TensorMut, TensorRef},
};

struct SoftmaxKernel {
    op: String,
    view: AxisView,
    log: bool,
}

impl RealBody for SoftmaxKernel {
    fn run<T: Real>(
        &self,
        inputs: &[TensorRef<'_>],
        outputs: &mut [TensorMut<'_>],
        threads: usize,
    ) -> Result<(), KernelError> {
        let x = input::<T>(&self.op, inputs, 0)?;
        let y = output::<T>(&self.op, outputs, 0)?;
        softmax(self.view, x, y, self.log, threads);
        Ok(())
    }
}

impl KernelBuilder for Softmax {
    fn host_kernel(&self, spec: &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> {
        let view = spec.with_type_ctx(view)?;
        if spec.inputs[0].dtype.is_custom() && !self.0 {
            return crate::custom::softmax(spec, view);
        }
        let body = SoftmaxKernel {
            op: spec.op.to_string(),
            view,
            log: self.0,
        };
        real_kernel(spec, spec.inputs[0].dtype, body)
    }
}

/// Registers the builders of this family.
pub(crate) fn register(builders: &mut Builders) {
    builders.add::<Softmax>();
}
