//! Host kernels of the dense ops: the kernel half of [`byoc_ir::ops::dense`].

use crate::registry::Builders;
use crate::KernelBuilder;
pub(crate) use byoc_ir::ops::dense::*;

use {
    super::nn_common::{gemm_kernel, input, output, GemmBody},
    crate::custom,
    crate::gemm::{Gemm, MatMut, MatRef},
    crate::numeric::Widen,
    crate::{apply_to_output, HostKernel, KernelError, KernelSpec, OutputEpilogue},
    byoc_ir::tensor::{TensorMut, TensorRef},
};

struct MatmulKernel {
    op: String,
    setup: MatmulSetup,
}

impl GemmBody for MatmulKernel {
    fn run<A: Widen<T>, B: Widen<T>, T: Gemm>(
        &self,
        inputs: &[TensorRef<'_>],
        outputs: &mut [TensorMut<'_>],
        threads: usize,
        epilogue: Option<&dyn OutputEpilogue>,
    ) -> Result<(), KernelError> {
        let s = &self.setup;
        let a = input::<A>(&self.op, inputs, 0)?;
        let b = input::<B>(&self.op, inputs, 1)?;
        let y = output::<T>(&self.op, outputs, 0)?;
        let (sa, sb, sy) = (s.m * s.k, s.k * s.n, s.m * s.n);
        for i in 0..s.batch {
            let a_i = &a[if s.batch_a == 1 { 0 } else { i * sa }..][..sa];
            let b_i = &b[if s.batch_b == 1 { 0 } else { i * sb }..][..sb];
            let lhs = if s.transpose_a {
                MatRef::transposed(a_i, s.m)
            } else {
                MatRef::row_major(a_i, s.k)
            };
            let rhs = if s.transpose_b {
                MatRef::transposed(b_i, s.k)
            } else {
                MatRef::row_major(b_i, s.n)
            };
            let dst = MatMut {
                data: &mut y[i * sy..(i + 1) * sy],
                rs: s.n,
            };
            T::gemm(s.m, s.n, s.k, lhs, rhs, dst, threads);
        }
        if let Some(e) = epilogue {
            apply_to_output(outputs, e);
        }
        Ok(())
    }
}

impl KernelBuilder for MatmulOp {
    fn host_kernel(&self, spec: &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> {
        let setup = spec.with_type_ctx(|ctx| (self.0)(ctx))?;
        let ((a, b), out) = (setup.dtypes, setup.out.dtype);
        if a.is_custom() {
            let shape = custom::Matmul {
                batch: [setup.batch, setup.batch_a, setup.batch_b],
                mnk: [setup.m, setup.n, setup.k],
                transpose: [setup.transpose_a, setup.transpose_b],
            };
            return custom::matmul(spec, shape);
        }
        gemm_kernel(
            spec,
            a,
            b,
            out,
            MatmulKernel {
                op: spec.op.to_string(),
                setup,
            },
        )
    }
}

/// Registers the builders of this family.
pub(crate) fn register(builders: &mut Builders) {
    builders.add::<MatmulOp>();
}
