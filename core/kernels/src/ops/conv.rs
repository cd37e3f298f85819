//! Host kernels of the conv ops: the kernel half of [`byoc_ir::ops::conv`].

use crate::registry::Builders;
use crate::KernelBuilder;
pub(crate) use byoc_ir::ops::conv::*;
use byoc_ir::ops::nn_common::{strides, Layout2d};

use {
    super::nn_common::{gemm_kernel, input, output, GemmBody},
    crate::conv,
    crate::custom,
    crate::gemm::Gemm,
    crate::numeric::Widen,
    crate::{HostKernel, KernelError, KernelSpec, OutputEpilogue},
    byoc_ir::tensor::{TensorMut, TensorRef},
    std::borrow::Cow,
};

struct ConvKernel {
    kind: ConvKind,
    setup: ConvSetup,
}

impl GemmBody for ConvKernel {
    fn run<A: Widen<T>, B: Widen<T>, T: Gemm>(
        &self,
        inputs: &[TensorRef<'_>],
        outputs: &mut [TensorMut<'_>],
        threads: usize,
        epilogue: Option<&dyn OutputEpilogue>,
    ) -> Result<(), KernelError> {
        let op = match self.kind {
            ConvKind::Conv2d => "nn.conv2d",
            ConvKind::Transpose => "nn.conv2d_transpose",
        };
        let x = input::<A>(op, inputs, 0)?;
        let w = input::<B>(op, inputs, 1)?;
        let y = output::<T>(op, outputs, 0)?;
        let s = &self.setup;
        // Logical weight axes are [O, I, H, W] (conv2d) or [I, O, H, W] (transpose); pack to
        // the order the GEMM lowering reads.
        let order = match (self.kind, s.layout) {
            (ConvKind::Conv2d, Layout2d::Nchw) | (ConvKind::Transpose, _) => [0, 1, 2, 3],
            (ConvKind::Conv2d, Layout2d::Nhwc) => [2, 3, 1, 0],
        };
        let dims = order.map(|d| s.w_dims[d]);
        let packed: Cow<'_, [B]> = if order.map(|d| s.w_strides[d])[..] == strides(&dims)[..] {
            Cow::Borrowed(w)
        } else {
            Cow::Owned(conv::pack4(w, s.w_dims, s.w_strides, order))
        };
        let tail = conv::Tail::new(epilogue);
        match self.kind {
            ConvKind::Conv2d => conv::conv2d(&s.geom, x, &packed, y, threads, tail),
            ConvKind::Transpose => {
                conv::conv2d_transpose(&s.geom, x, &packed, y, threads);
                tail.apply(y);
            }
        }
        Ok(())
    }
}

impl KernelBuilder for ConvOp {
    fn host_kernel(&self, spec: &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> {
        let setup = spec.with_type_ctx(|ctx| self.setup(ctx))?;
        let (a, b, out) = (setup.data_dtype, setup.weight_dtype, setup.out.dtype);
        if a.is_custom() && self.0 == ConvKind::Conv2d {
            return custom::conv2d(spec, setup.geom, setup.w_strides);
        }
        gemm_kernel(
            spec,
            a,
            b,
            out,
            ConvKernel {
                kind: self.0,
                setup,
            },
        )
    }
}

/// Registers the builders of this family.
pub(crate) fn register(builders: &mut Builders) {
    builders.add::<ConvOp>();
}
