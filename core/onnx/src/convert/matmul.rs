//! Matrix products: `Gemm` onto `nn.dense` (+ `nn.bias_add` / `add`), `MatMul` onto `nn.dense`
//! or `nn.batch_matmul` with reshapes for the numpy-style ranks.

use super::one;
use crate::ctx::NodeCtx;
use crate::OnnxError;
use byoc_ir::{Attrs, ExprId};

type Out = Result<Vec<ExprId>, OnnxError>;

pub(super) fn transpose(
    ctx: &mut NodeCtx<'_>,
    x: ExprId,
    axes: &[i64],
) -> Result<ExprId, OnnxError> {
    ctx.call("transpose", &[x], Attrs::new().with("axes", axes.to_vec()))
}

pub(super) fn reshape(
    ctx: &mut NodeCtx<'_>,
    x: ExprId,
    shape: &[usize],
) -> Result<ExprId, OnnxError> {
    let newshape = ctx.dims_i64(shape)?;
    ctx.call("reshape", &[x], Attrs::new().with("newshape", newshape))
}

fn scale(ctx: &mut NodeCtx<'_>, x: ExprId, by: f64) -> Result<ExprId, OnnxError> {
    if by == 1.0 {
        return Ok(x);
    }
    let dtype = ctx.tensor_ty(x)?.dtype;
    let s = ctx.scalar(dtype, by)?;
    ctx.call("multiply", &[x, s], Attrs::new())
}

/// `Gemm(A, B, C; alpha, beta, transA, transB)`: `alpha * A' B' + beta * C`.
pub(super) fn gemm(ctx: &mut NodeCtx<'_>) -> Out {
    let (mut a, mut b) = (ctx.input(0)?, ctx.input(1)?);
    let alpha = ctx.float_or("alpha", 1.0)?;
    let beta = ctx.float_or("beta", 1.0)?;
    if ctx.rank(a)? != 2 || ctx.rank(b)? != 2 {
        return Err(ctx.err(format!(
            "A and B must be matrices, got shapes {:?} and {:?}",
            ctx.shape(a)?,
            ctx.shape(b)?
        )));
    }
    if ctx.flag_or("transA", false)? {
        a = transpose(ctx, a, &[1, 0])?;
    }
    // nn.dense takes the weight as (units, in).
    if !ctx.flag_or("transB", false)? {
        b = transpose(ctx, b, &[1, 0])?;
    }
    // Scale the constant operand so the product folds into the weight.
    if ctx.constant_of(b).is_some() {
        b = scale(ctx, b, alpha)?;
    } else {
        a = scale(ctx, a, alpha)?;
    }
    let units = ctx.shape(b)?[0];
    let mut y = ctx.call(
        "nn.dense",
        &[a, b],
        Attrs::new().with("units", ctx.dim_i64(units)?),
    )?;
    if let Some(c) = ctx.opt_input(2) {
        if beta != 0.0 {
            let c = scale(ctx, c, beta)?;
            y = if ctx.shape(c)? == [units] {
                ctx.call("nn.bias_add", &[y, c], Attrs::new().with("axis", 1i64))?
            } else {
                ctx.call("add", &[y, c], Attrs::new())?
            };
        }
    }
    one(y)
}

/// The numpy broadcast of two shapes, or `None` when they do not broadcast.
fn broadcast_dims(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let rank = a.len().max(b.len());
    (0..rank)
        .map(|i| {
            let da = (i + a.len()).checked_sub(rank).map_or(1, |j| a[j]);
            let db = (i + b.len()).checked_sub(rank).map_or(1, |j| b[j]);
            match (da, db) {
                (x, y) if x == y => Some(x),
                (1, y) => Some(y),
                (x, 1) => Some(x),
                _ => None,
            }
        })
        .collect()
}

/// `x` (a matrix stack of shape `shape`) with its batch dims broadcast to `batch`: unit dims
/// repeated by a `take` of index 0.
fn broadcast_batch(
    ctx: &mut NodeCtx<'_>,
    x: ExprId,
    shape: &[usize],
    batch: &[usize],
) -> Result<ExprId, OnnxError> {
    let mut full = vec![1; batch.len() + 2 - shape.len()];
    full.extend_from_slice(shape);
    let mut x = reshape(ctx, x, &full)?;
    for (axis, &d) in batch.iter().enumerate() {
        if full[axis] == d {
            continue;
        }
        let idx = byoc_ir::tensor::Tensor::from_vec([d], vec![0i64; d])
            .map_err(|e| ctx.err(e.to_string()))?;
        let idx = ctx.constant(idx);
        let attrs = Attrs::new().with("axis", axis as i64).with("mode", "clip");
        x = ctx.call("take", &[x, idx], attrs)?;
    }
    Ok(x)
}

/// `MatMul` with numpy semantics: 1-D operands are promoted and the added dim removed; a
/// matrix right operand gives `nn.dense` over the flattened batch; batched right operands give
/// `nn.batch_matmul`, batch dims broadcast as numpy does (unit dims repeated).
pub(super) fn matmul(ctx: &mut NodeCtx<'_>) -> Out {
    let (a, b) = (ctx.input(0)?, ctx.input(1)?);
    one(matmul_values(ctx, a, b, Attrs::new())?)
}

/// `MatMul`'s lowering of `a x b`, with `attrs` (such as `out_dtype`) on the product op.
pub(super) fn matmul_values(
    ctx: &mut NodeCtx<'_>,
    mut a: ExprId,
    mut b: ExprId,
    attrs: Attrs,
) -> Result<ExprId, OnnxError> {
    let (mut sa, mut sb) = (ctx.shape(a)?, ctx.shape(b)?);
    if sa.is_empty() || sb.is_empty() {
        return Err(ctx.err("MatMul operands must have rank at least 1"));
    }
    let a_vector = sa.len() == 1;
    let b_vector = sb.len() == 1;
    if a_vector {
        sa.insert(0, 1);
        a = reshape(ctx, a, &sa)?;
    }
    if b_vector {
        sb.push(1);
        b = reshape(ctx, b, &sb)?;
    }
    let (m, k) = (sa[sa.len() - 2], sa[sa.len() - 1]);
    let (kb, n) = (sb[sb.len() - 2], sb[sb.len() - 1]);
    if k != kb {
        return Err(ctx.err(format!("inner dimensions differ: {sa:?} x {sb:?}")));
    }
    let batch_a = &sa[..sa.len() - 2];
    let batch_b = &sb[..sb.len() - 2];
    let (batch, y) = if batch_b.iter().product::<usize>() == 1 {
        // A matrix on the right: one dense over every row of A.
        let rows: usize = batch_a.iter().product::<usize>() * m;
        let a2 = reshape(ctx, a, &[rows, k])?;
        let b2 = if sb.len() == 2 {
            b
        } else {
            reshape(ctx, b, &[k, n])?
        };
        let bt = transpose(ctx, b2, &[1, 0])?;
        let units = ctx.dim_i64(n)?;
        let y = ctx.call("nn.dense", &[a2, bt], attrs.with("units", units))?;
        let mut batch = batch_a.to_vec();
        if batch_b.len() > batch.len() {
            batch = batch_b.to_vec();
        }
        (batch, y)
    } else {
        let pa: usize = batch_a.iter().product();
        let pb: usize = batch_b.iter().product();
        if pa == 1 || pb == 1 || batch_a == batch_b {
            let batch = if pa == 1 || batch_a == batch_b {
                batch_b.to_vec()
            } else {
                batch_a.to_vec()
            };
            let a3 = reshape(ctx, a, &[pa, m, k])?;
            let b3 = reshape(ctx, b, &[pb, k, n])?;
            let bt = transpose(ctx, b3, &[0, 2, 1])?;
            (batch, ctx.call("nn.batch_matmul", &[a3, bt], attrs)?)
        } else {
            // numpy broadcasting of the batch dims: each operand's unit dims repeated.
            let batch = broadcast_dims(batch_a, batch_b).ok_or_else(|| {
                ctx.err(format!(
                    "batch dimensions {batch_a:?} and {batch_b:?} do not broadcast"
                ))
            })?;
            let p: usize = batch.iter().product();
            let a = broadcast_batch(ctx, a, &sa, &batch)?;
            let b = broadcast_batch(ctx, b, &sb, &batch)?;
            let a3 = reshape(ctx, a, &[p, m, k])?;
            let b3 = reshape(ctx, b, &[p, k, n])?;
            let bt = transpose(ctx, b3, &[0, 2, 1])?;
            (batch, ctx.call("nn.batch_matmul", &[a3, bt], attrs)?)
        }
    };
    let mut out = batch;
    if !a_vector {
        out.push(m);
    }
    if !b_vector {
        out.push(n);
    }
    reshape(ctx, y, &out)
}
