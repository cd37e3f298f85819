//! `nn.softmax` and `nn.log_softmax` along `axis` (default −1). Host kernels for float32 and
//! float64, max-subtracted for stability.

use super::nn_common::norm_axis;
use crate::ir::Type;
use crate::kernels::norm::AxisView;
use crate::op::{Arity, AttrDef, AttrKind, OpDef, OpImpl, OpPattern, TypeCtx, TypeError};
#[cfg(feature = "executor")]
use {
    super::nn_common::{input, output, real_kernel, with_kernel_ctx, RealBody},
    crate::kernels::norm::softmax,
    crate::kernels::numeric::Real,
    crate::op::{HostKernel, KernelError, KernelSpec},
    crate::tensor::{TensorMut, TensorRef},
};

/// Softmax, or log-softmax when the flag is set.
#[cfg_attr(
    not(feature = "executor"),
    allow(dead_code, reason = "only the host kernel reads it")
)]
struct Softmax(bool);

fn view(ctx: &TypeCtx<'_>) -> Result<AxisView, TypeError> {
    let data = ctx.tensor(0)?;
    let axis = norm_axis(ctx, ctx.int("axis")?, data.rank())?;
    Ok(AxisView::new(&data.shape, axis))
}

impl OpImpl for Softmax {
    fn infer_type(&self, ctx: &TypeCtx<'_>) -> Result<Type, TypeError> {
        view(ctx)?;
        Ok(Type::Tensor(ctx.tensor(0)?.clone()))
    }

    #[cfg(feature = "executor")]
    fn host_kernel(&self, spec: &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> {
        let view = with_kernel_ctx(spec, view)?;
        if spec.inputs[0].dtype.is_custom() && !self.0 {
            return crate::kernels::custom::softmax(spec, view);
        }
        let body = SoftmaxKernel {
            op: spec.op.to_string(),
            view,
            log: self.0,
        };
        real_kernel(spec, spec.inputs[0].dtype, body)
    }
}

#[cfg(feature = "executor")]
struct SoftmaxKernel {
    op: String,
    view: AxisView,
    log: bool,
}

#[cfg(feature = "executor")]
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

pub(super) fn register(ops: &mut Vec<OpDef>) {
    ops.push(
        OpDef::new(
            "nn.softmax",
            "exp(x) / sum(exp(x)) along axis",
            Arity::Exact(1),
            OpPattern::OutEWiseFusable,
            Softmax(false),
        )
        .with_attrs(vec![AttrDef::new("axis", AttrKind::Int, -1i64)]),
    );
    ops.push(
        OpDef::new(
            "nn.log_softmax",
            "x - log(sum(exp(x))) along axis",
            Arity::Exact(1),
            OpPattern::Opaque,
            Softmax(true),
        )
        .with_attrs(vec![AttrDef::new("axis", AttrKind::Int, -1i64)]),
    );
}
