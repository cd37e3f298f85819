//! `nn.dense` and `nn.batch_matmul`: type relations (Relay's DenseRel and BatchMatmulRel on
//! static shapes) and GEMM host kernels.
//!
//! dense: `data [..., k] × weight [units, k]ᵀ → [..., units]`. batch_matmul:
//! `a [b, m, k] × b [b, n, k]ᵀ → [b, m, n]` with Relay's defaults `transpose_a=False`,
//! `transpose_b=True`; a batch of 1 broadcasts. int8/uint8 operands with `out_dtype="int32"`
//! accumulate exactly in int32.

use super::nn_common::{check_operand_dtypes, out_dtype};
use crate::ir::{DType, TensorType, Type};
use crate::op::{Arity, AttrDef, AttrKind, OpDef, OpImpl, OpPattern, TypeCtx, TypeError};
#[cfg(feature = "executor")]
use {
    super::nn_common::{gemm_kernel, input, output, with_kernel_ctx, GemmBody},
    crate::kernels::custom,
    crate::kernels::gemm::{Gemm, MatMut, MatRef},
    crate::kernels::numeric::Widen,
    crate::op::{apply_to_output, HostKernel, KernelError, KernelSpec, OutputEpilogue},
    crate::tensor::{TensorMut, TensorRef},
};

/// A batched product `out[b] = op_a(a[b]) × op_b(b[b])`: `m × k` times `k × n`.
#[derive(Clone, Debug)]
#[cfg_attr(
    not(feature = "executor"),
    allow(dead_code, reason = "only the host kernel reads it")
)]
struct MatmulSetup {
    /// Batch of the result and of each operand (1 broadcasts).
    batch: usize,
    batch_a: usize,
    batch_b: usize,
    m: usize,
    n: usize,
    k: usize,
    /// `a[b]` is stored `k × m` rather than `m × k`.
    transpose_a: bool,
    /// `b[b]` is stored `n × k` rather than `k × n`.
    transpose_b: bool,
    dtypes: (DType, DType),
    out: TensorType,
}

fn dense_setup(ctx: &TypeCtx<'_>) -> Result<MatmulSetup, TypeError> {
    let (data, weight) = (ctx.tensor(0)?, ctx.tensor(1)?);
    if data.rank() == 0 {
        return Err(ctx.err(format!("data must have rank at least 1, got {data}")));
    }
    if weight.rank() != 2 {
        return Err(ctx.err(format!("weight must be 2-D [units, in], got {weight}")));
    }
    let k = data.shape[data.rank() - 1];
    let (units, wk) = (weight.shape[0], weight.shape[1]);
    if wk != k {
        return Err(ctx.err(format!(
            "data has {k} input features but weight {:?} expects {wk}",
            weight.shape
        )));
    }
    if let Some(u) = ctx.opt_int("units")? {
        if usize::try_from(u) != Ok(units) {
            return Err(ctx.err(format!("units={u} but weight has {units} rows")));
        }
    }
    check_operand_dtypes(ctx, ("data", "weight"), data.dtype, weight.dtype)?;
    let mut shape = data.shape.clone();
    shape[data.rank() - 1] = units;
    Ok(MatmulSetup {
        batch: 1,
        batch_a: 1,
        batch_b: 1,
        m: data.shape[..data.rank() - 1].iter().product(),
        n: units,
        k,
        transpose_a: false,
        transpose_b: true,
        dtypes: (data.dtype, weight.dtype),
        out: TensorType::new(shape, out_dtype(ctx, data.dtype)?),
    })
}

fn batch_matmul_setup(ctx: &TypeCtx<'_>) -> Result<MatmulSetup, TypeError> {
    let (a, b) = (ctx.tensor(0)?, ctx.tensor(1)?);
    for (name, t) in [("x", a), ("y", b)] {
        if t.rank() != 3 {
            return Err(ctx.err(format!("{name} must be 3-D, got {t}")));
        }
    }
    let (ta, tb) = (ctx.bool("transpose_a")?, ctx.bool("transpose_b")?);
    let (m, ka) = if ta {
        (a.shape[2], a.shape[1])
    } else {
        (a.shape[1], a.shape[2])
    };
    let (kb, n) = if tb {
        (b.shape[2], b.shape[1])
    } else {
        (b.shape[1], b.shape[2])
    };
    if ka != kb {
        return Err(ctx.err(format!(
            "x {:?} (transpose_a={ta}) and y {:?} (transpose_b={tb}) disagree on the reduction dimension: {ka} vs {kb}",
            a.shape, b.shape
        )));
    }
    let (ba, bb) = (a.shape[0], b.shape[0]);
    if ba != bb && ba != 1 && bb != 1 {
        return Err(ctx.err(format!("batch sizes {ba} and {bb} do not broadcast")));
    }
    let batch = if ba == 1 { bb } else { ba };
    check_operand_dtypes(ctx, ("x", "y"), a.dtype, b.dtype)?;
    Ok(MatmulSetup {
        batch,
        batch_a: ba,
        batch_b: bb,
        m,
        n,
        k: ka,
        transpose_a: ta,
        transpose_b: tb,
        dtypes: (a.dtype, b.dtype),
        out: TensorType::new([batch, m, n], out_dtype(ctx, a.dtype)?),
    })
}

struct MatmulOp(fn(&TypeCtx<'_>) -> Result<MatmulSetup, TypeError>);

impl OpImpl for MatmulOp {
    fn infer_type(&self, ctx: &TypeCtx<'_>) -> Result<Type, TypeError> {
        Ok(Type::Tensor((self.0)(ctx)?.out))
    }

    #[cfg(feature = "executor")]
    fn host_kernel(&self, spec: &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> {
        let setup = with_kernel_ctx(spec, |ctx| (self.0)(ctx))?;
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

#[cfg(feature = "executor")]
struct MatmulKernel {
    op: String,
    setup: MatmulSetup,
}

#[cfg(feature = "executor")]
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

pub(super) fn register(ops: &mut Vec<OpDef>) {
    ops.push(
        OpDef::new(
            "nn.dense",
            "data × weightᵀ over the last axis (a fully connected layer)",
            Arity::Exact(2),
            OpPattern::OutEWiseFusable,
            MatmulOp(dense_setup),
        )
        .with_attrs(vec![
            AttrDef::optional("units", AttrKind::OptInt),
            AttrDef::new("out_dtype", AttrKind::Str, ""),
        ]),
    );
    ops.push(
        OpDef::new(
            "nn.batch_matmul",
            "batched matrix product x × yᵀ (transposes per transpose_a / transpose_b)",
            Arity::Exact(2),
            OpPattern::OutEWiseFusable,
            MatmulOp(batch_matmul_setup),
        )
        .with_attrs(vec![
            AttrDef::new("out_dtype", AttrKind::Str, ""),
            AttrDef::new("transpose_a", AttrKind::Bool, false),
            AttrDef::new("transpose_b", AttrKind::Bool, true),
        ]),
    );
}
