//! Reductions: `ReduceMean/Sum/Max/Min` onto `mean`/`sum`/`max`/`min`, `ArgMax/ArgMin` onto
//! `argmax`/`argmin` (cast to ONNX's int64 result).

use super::one;
use crate::ctx::NodeCtx;
use crate::OnnxError;
use byoc_ir::{AttrValue, Attrs, DType, ExprId};

type Out = Result<Vec<ExprId>, OnnxError>;

/// A reduction whose `axes` moved from an attribute to an input at `input_opset`.
fn reduce(ctx: &mut NodeCtx<'_>, op: &str, input_opset: i64) -> Out {
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
        _ if ctx.flag_or("noop_with_empty_axes", false)? => return one(x),
        _ => AttrValue::None,
    };
    let attrs = Attrs::new().with("axis", axes).with("keepdims", keepdims);
    one(ctx.call(op, &[x], attrs)?)
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
