//! Host kernels of the pool ops: the kernel half of [`byoc_ir::ops::pool`].

use crate::registry::Builders;
use crate::KernelBuilder;
pub(crate) use byoc_ir::ops::pool::*;

use {
    super::nn_common::{input, output, real_kernel, RealBody},
    crate::numeric::Real,
    crate::pool::pool2d,
    crate::{HostKernel, KernelError, KernelSpec},
    byoc_ir::tensor::{TensorMut, TensorRef},
};

struct PoolKernel {
    op: String,
    geom: Pool2dGeom,
    kind: PoolKind,
}

impl RealBody for PoolKernel {
    fn run<T: Real>(
        &self,
        inputs: &[TensorRef<'_>],
        outputs: &mut [TensorMut<'_>],
        threads: usize,
    ) -> Result<(), KernelError> {
        let x = input::<T>(&self.op, inputs, 0)?;
        let y = output::<T>(&self.op, outputs, 0)?;
        pool2d(&self.geom, self.kind, x, y, threads);
        Ok(())
    }
}

impl KernelBuilder for PoolOp {
    fn host_kernel(&self, spec: &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> {
        let (geom, kind, out) = spec.with_type_ctx(|ctx| self.setup(ctx))?;
        if out.dtype.is_custom() {
            return crate::custom::pool2d(spec, geom, kind);
        }
        real_kernel(
            spec,
            out.dtype,
            PoolKernel {
                op: spec.op.to_string(),
                geom,
                kind,
            },
        )
    }
}

/// Registers the builders of this family.
pub(crate) fn register(builders: &mut Builders) {
    builders.add::<PoolOp>();
}
