//! Reductions: `ReduceMean/Sum/Max/Min/Prod` onto `mean`/`sum`/`max`/`min`/`prod`; `ReduceL1`,
//! `ReduceL2`, `ReduceSumSquare`, `ReduceLogSum` and `ReduceLogSumExp` as elementwise ops
//! around `sum` (`ReduceLogSumExp` subtracts the maximum first, as onnxruntime does, so it does
//! not overflow); `ArgMax/ArgMin` onto `argmax`/`argmin` (cast to ONNX's int64 result), `TopK`
//! onto `topk`; and the scan `CumSum`.

use super::{concat_values, one};
use crate::ctx::NodeCtx;
use crate::OnnxError;
use byoc_ir::tensor::Tensor;
use byoc_ir::{AttrValue, Attrs, DType, ExprId};

type Out = Result<Vec<ExprId>, OnnxError>;

/// What a reduction node asks for: its input, and the axes and `keepdims` attributes of the
/// Relay reduction, or `None` when `noop_with_empty_axes` makes it the identity.
struct Reduction {
    x: ExprId,
    attrs: Option<Attrs>,
}

/// Reads a reduction node whose `axes` moved from an attribute to an input at `input_opset`.
fn reduction(ctx: &NodeCtx<'_>, input_opset: i64) -> Result<Reduction, OnnxError> {
    let x = ctx.input(0)?;
    let rank = ctx.rank(x)?;
    let axes = if ctx.opset() < input_opset {
        ctx.attr_ints("axes")?
    } else {
        ctx.const_ints(1)?
    };
    let keepdims = ctx.flag_or("keepdims", true)?;
    let axes = match axes {
        Some(a) if !a.is_empty() => {
            let mut out = Vec::with_capacity(a.len());
            for v in a {
                out.push(ctx.axis(v, rank)? as i64);
            }
            AttrValue::ints(out)
        }
        _ if ctx.flag_or("noop_with_empty_axes", false)? => {
            return Ok(Reduction { x, attrs: None })
        }
        _ => AttrValue::None,
    };
    let attrs = Attrs::new().with("axis", axes).with("keepdims", keepdims);
    Ok(Reduction {
        x,
        attrs: Some(attrs),
    })
}

impl Reduction {
    /// `op` over the node's axes, or `x` itself for a no-op reduction.
    fn reduce(&self, ctx: &mut NodeCtx<'_>, op: &str, x: ExprId) -> Result<ExprId, OnnxError> {
        match &self.attrs {
            Some(attrs) => ctx.call(op, &[x], attrs.clone()),
            None => Ok(x),
        }
    }
}

/// A reduction that is one Relay op.
fn reduce(ctx: &mut NodeCtx<'_>, op: &str, input_opset: i64) -> Out {
    let r = reduction(ctx, input_opset)?;
    one(r.reduce(ctx, op, r.x)?)
}

/// `ReduceMean` (axes an input from opset 18).
pub(super) fn reduce_mean(ctx: &mut NodeCtx<'_>) -> Out {
    reduce(ctx, "mean", 18)
}

/// `ReduceSum` (axes an input from opset 13).
pub(super) fn reduce_sum(ctx: &mut NodeCtx<'_>) -> Out {
    reduce(ctx, "sum", 13)
}

/// `ReduceMax` (axes an input from opset 18).
pub(super) fn reduce_max(ctx: &mut NodeCtx<'_>) -> Out {
    reduce(ctx, "max", 18)
}

/// `ReduceMin` (axes an input from opset 18).
pub(super) fn reduce_min(ctx: &mut NodeCtx<'_>) -> Out {
    reduce(ctx, "min", 18)
}

/// `ReduceProd` (axes an input from opset 18).
pub(super) fn reduce_prod(ctx: &mut NodeCtx<'_>) -> Out {
    reduce(ctx, "prod", 18)
}

/// `ReduceL1`: `sum(|x|)` (axes an input from opset 18).
pub(super) fn reduce_l1(ctx: &mut NodeCtx<'_>) -> Out {
    let r = reduction(ctx, 18)?;
    let a = ctx.call("abs", &[r.x], Attrs::new())?;
    one(r.reduce(ctx, "sum", a)?)
}

/// `sum(x * x)` over the node's axes.
fn sum_square(ctx: &mut NodeCtx<'_>, r: &Reduction) -> Result<ExprId, OnnxError> {
    let sq = ctx.call("multiply", &[r.x, r.x], Attrs::new())?;
    r.reduce(ctx, "sum", sq)
}

/// `ReduceSumSquare`: `sum(x * x)` (axes an input from opset 18).
pub(super) fn reduce_sum_square(ctx: &mut NodeCtx<'_>) -> Out {
    let r = reduction(ctx, 18)?;
    one(sum_square(ctx, &r)?)
}

/// `ReduceL2`: `sqrt(sum(x * x))` (axes an input from opset 18).
pub(super) fn reduce_l2(ctx: &mut NodeCtx<'_>) -> Out {
    let r = reduction(ctx, 18)?;
    let s = sum_square(ctx, &r)?;
    one(ctx.call("sqrt", &[s], Attrs::new())?)
}

/// `ReduceLogSum`: `log(sum(x))` (axes an input from opset 18).
pub(super) fn reduce_log_sum(ctx: &mut NodeCtx<'_>) -> Out {
    let r = reduction(ctx, 18)?;
    let s = r.reduce(ctx, "sum", r.x)?;
    one(ctx.call("log", &[s], Attrs::new())?)
}

/// `ReduceLogSumExp`: `log(sum(exp(x - m))) + m` with `m` the maximum over the axes (axes an
/// input from opset 18).
pub(super) fn reduce_log_sum_exp(ctx: &mut NodeCtx<'_>) -> Out {
    let r = reduction(ctx, 18)?;
    let Some(attrs) = r.attrs.clone() else {
        // Over no axes: log(exp(x)) is x.
        return one(r.x);
    };
    let kept = attrs.clone().with("keepdims", true);
    let m = ctx.call("max", &[r.x], kept)?;
    let shifted = ctx.call("subtract", &[r.x, m], Attrs::new())?;
    let e = ctx.call("exp", &[shifted], Attrs::new())?;
    let s = ctx.call("sum", &[e], attrs.clone())?;
    let l = ctx.call("log", &[s], Attrs::new())?;
    let m = ctx.call("max", &[r.x], attrs)?;
    one(ctx.call("add", &[l, m], Attrs::new())?)
}

fn arg_reduce(ctx: &mut NodeCtx<'_>, op: &str) -> Out {
    let x = ctx.input(0)?;
    let rank = ctx.rank(x)?;
    let axis = ctx.axis(ctx.int_or("axis", 0)?, rank)? as i64;
    let attrs = Attrs::new()
        .with("axis", vec![axis])
        .with("keepdims", ctx.flag_or("keepdims", true)?)
        .with(
            "select_last_index",
            ctx.flag_or("select_last_index", false)?,
        );
    let y = ctx.call(op, &[x], attrs)?;
    if ctx.tensor_ty(y)?.dtype == DType::Int64 {
        return one(y);
    }
    one(ctx.call("cast", &[y], Attrs::new().with("dtype", DType::Int64))?)
}

/// `ArgMax(axis=0, keepdims=1, select_last_index=0)`.
pub(super) fn argmax(ctx: &mut NodeCtx<'_>) -> Out {
    arg_reduce(ctx, "argmax")
}

/// `ArgMin(axis=0, keepdims=1, select_last_index=0)`.
pub(super) fn argmin(ctx: &mut NodeCtx<'_>) -> Out {
    arg_reduce(ctx, "argmin")
}

/// `x` with the elements along `axis` in reverse order.
fn reversed(ctx: &mut NodeCtx<'_>, x: ExprId, axis: usize) -> Result<ExprId, OnnxError> {
    let len = ctx.shape(x)?[axis];
    let idx: Vec<i64> = (0..len as i64).rev().collect();
    take_along(ctx, x, axis, idx)
}

/// The elements `idx` of `x` along `axis`.
fn take_along(
    ctx: &mut NodeCtx<'_>,
    x: ExprId,
    axis: usize,
    idx: Vec<i64>,
) -> Result<ExprId, OnnxError> {
    let idx = Tensor::from_vec([idx.len()], idx).map_err(|e| ctx.err(e.to_string()))?;
    let idx = ctx.constant(idx);
    ctx.call(
        "take",
        &[x, idx],
        Attrs::new().with("axis", axis as i64).with("mode", "clip"),
    )
}

/// `x` moved `by` places along `axis`, zeros shifted in at the start.
fn shifted(ctx: &mut NodeCtx<'_>, x: ExprId, axis: usize, by: usize) -> Result<ExprId, OnnxError> {
    let t = ctx.tensor_ty(x)?;
    let len = t.shape[axis];
    let mut zeros = t.shape.clone();
    zeros[axis] = by.min(len);
    let zeros = ctx.call(
        "zeros",
        &[],
        Attrs::new()
            .with("shape", ctx.dims_i64(&zeros)?)
            .with("dtype", t.dtype),
    )?;
    if by >= len {
        return Ok(zeros);
    }
    let kept = take_along(ctx, x, axis, (0..(len - by) as i64).collect())?;
    concat_values(ctx, &[zeros, kept], axis as i64)
}

/// `CumSum(x, axis; exclusive=0, reverse=0)`: the running sum along `axis` (a constant), as
/// `ceil(log2 n)` shifted adds (Hillis and Steele's scan), exact for integers; `reverse`
/// scans from the end, `exclusive` leaves each element out of its own sum.
pub(super) fn cumsum(ctx: &mut NodeCtx<'_>) -> Out {
    let x = ctx.input(0)?;
    let t = ctx.tensor_ty(x)?;
    if t.dtype == DType::Bool {
        return Err(ctx.err("requires a numeric input, got bool"));
    }
    let axis = match ctx.const_ints(1)? {
        Some(v) if v.len() == 1 => ctx.axis(v[0], t.rank())?,
        Some(v) => return Err(ctx.err(format!("axis must be one integer, got {v:?}"))),
        None => return Err(ctx.err("required input 1 (axis) is missing")),
    };
    let reverse = ctx.flag_or("reverse", false)?;
    let exclusive = ctx.flag_or("exclusive", false)?;
    let len = t.shape[axis];
    let mut y = if reverse { reversed(ctx, x, axis)? } else { x };
    let mut step = 1;
    while step < len {
        let s = shifted(ctx, y, axis, step)?;
        y = ctx.call("add", &[y, s], Attrs::new())?;
        step *= 2;
    }
    if exclusive && len > 0 {
        y = shifted(ctx, y, axis, 1)?;
    }
    if reverse {
        y = reversed(ctx, y, axis)?;
    }
    one(y)
}

/// `TopK(X, K; axis=-1, largest=1, sorted=1)` onto `topk` (int64 indices): `K` is an
/// attribute before opset 10 and a constant input from it. The results are always sorted
/// (`sorted=0` leaves the order to the backend).
pub(super) fn topk(ctx: &mut NodeCtx<'_>) -> Out {
    let x = ctx.input(0)?;
    let rank = ctx.rank(x)?;
    let k = if ctx.opset() < 10 {
        ctx.attr_int("k")?
            .ok_or_else(|| ctx.err("attribute 'k' is required"))?
    } else {
        match ctx.const_ints(1)?.as_deref() {
            Some([k]) => *k,
            Some(v) => return Err(ctx.err(format!("K must hold one integer, got {v:?}"))),
            None => return Err(ctx.err("required input 1 (K) is missing")),
        }
    };
    let axis = ctx.axis(ctx.int_or("axis", -1)?, rank)? as i64;
    let largest = ctx.flag_or("largest", true)?;
    ctx.flag_or("sorted", true)?;
    let attrs = Attrs::new()
        .with("k", k)
        .with("axis", axis)
        .with("ret_type", "both")
        .with("is_ascend", !largest)
        .with("dtype", "int64");
    let both = ctx.call("topk", &[x], attrs)?;
    Ok(vec![
        ctx.tuple_get_item(both, 0)?,
        ctx.tuple_get_item(both, 1)?,
    ])
}
