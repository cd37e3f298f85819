//! `nn.dense` and `nn.batch_matmul`: type relations (Relay's DenseRel and BatchMatmulRel on
//! static shapes) and GEMM host kernels.
//!
//! dense: `data [..., k] × weight [units, k]ᵀ → [..., units]`. batch_matmul:
//! `a [b, m, k] × b [b, n, k]ᵀ → [b, m, n]` with Relay's defaults `transpose_a=False`,
//! `transpose_b=True`; a batch of 1 broadcasts. int8/uint8 operands with `out_dtype="int32"`
//! accumulate exactly in int32.

use super::nn_common::{check_operand_dtypes, out_dtype};
use crate::op::{Arity, AttrDef, AttrKind, OpDef, OpImpl, OpPattern, TypeCtx, TypeError};
use crate::{DType, TensorType, Type};

/// A batched product `out[b] = op_a(a[b]) × op_b(b[b])`: `m × k` times `k × n`.
#[derive(Clone, Debug)]
pub struct MatmulSetup {
    /// Batch of the result.
    pub batch: usize,
    /// Batch of `a` (1 broadcasts).
    pub batch_a: usize,
    /// Batch of `b` (1 broadcasts).
    pub batch_b: usize,
    /// Rows of each result matrix (for `nn.dense`, the product of the data's leading dimensions).
    pub m: usize,
    /// Columns of each result matrix (for `nn.dense`, the weight's `units`).
    pub n: usize,
    /// The reduction length.
    pub k: usize,
    /// `a[b]` is stored `k × m` rather than `m × k`.
    pub transpose_a: bool,
    /// `b[b]` is stored `n × k` rather than `k × n`.
    pub transpose_b: bool,
    /// The dtypes of `a` and `b`.
    pub dtypes: (DType, DType),
    /// The result type.
    pub out: TensorType,
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

/// `nn.dense` or `nn.batch_matmul`, by the function deriving a call's [`MatmulSetup`].
pub struct MatmulOp(pub fn(&TypeCtx<'_>) -> Result<MatmulSetup, TypeError>);

impl OpImpl for MatmulOp {
    fn infer_type(&self, ctx: &TypeCtx<'_>) -> Result<Type, TypeError> {
        Ok(Type::Tensor((self.0)(ctx)?.out))
    }
}

pub(crate) fn register(ops: &mut Vec<OpDef>) {
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
