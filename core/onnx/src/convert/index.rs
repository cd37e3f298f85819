//! Ops defined by index arithmetic: `Range` (folded to a constant at import), `Tile` (one
//! `take` per repeated axis) and `Trilu` (a `where` with a constant triangular mask).

use super::one;
use super::shape::check_size;
use crate::ctx::NodeCtx;
use crate::OnnxError;
use byoc_ir::tensor::Tensor;
use byoc_ir::{Attrs, DType, ExprId, TensorType};

type Out = Result<Vec<ExprId>, OnnxError>;

/// `Range(start, limit, delta)`: `start + i * delta` for `i` in
/// `0..max(ceil((limit - start) / delta), 0)`. Its inputs must fold to constants at import
/// (they do once input shapes are known, as in the anchor grids of detection heads).
pub(super) fn range(ctx: &mut NodeCtx<'_>) -> Out {
    let mut scalars = Vec::with_capacity(3);
    let mut dtype = None;
    for (i, name) in ["start", "limit", "delta"].into_iter().enumerate() {
        let t = ctx
            .const_input(i)?
            .ok_or_else(|| ctx.err(format!("required input {i} ({name}) is missing")))?;
        if !t.shape().is_empty() {
            return Err(ctx.err(format!(
                "input {i} ({name}) must be a scalar, got shape {:?}",
                t.shape()
            )));
        }
        match dtype {
            None => dtype = Some(t.dtype()),
            Some(d) if d != t.dtype() => {
                return Err(ctx.err(format!(
                    "input {i} ({name}) is {}, but start is {d}",
                    t.dtype()
                )))
            }
            Some(_) => {}
        }
        scalars.push(t);
    }
    let dtype = dtype.unwrap_or(DType::Float32);
    let ty = |len| TensorType::new(vec![len], dtype);
    let out = match dtype {
        DType::Int16 | DType::Int32 | DType::Int64 => {
            let v: Vec<i128> = scalars
                .iter()
                .map(|t| crate::ctx::tensor_ints(t).map_or(0, |v| i128::from(v[0])))
                .collect();
            let (start, limit, delta) = (v[0], v[1], v[2]);
            if delta == 0 {
                return Err(ctx.err("delta is 0"));
            }
            let span = limit - start;
            let len =
                (span / delta + i128::from(span % delta != 0 && (span < 0) == (delta < 0))).max(0);
            let len = range_len(ctx, len)?;
            let ty = ty(len);
            check_size(ctx, &ty)?;
            let mut t = Tensor::try_zeros(ty).map_err(|e| ctx.err(e.to_string()))?;
            let values = (0..len as i128).map(|i| start + i * delta);
            if dtype == DType::Int64 {
                let slice = t
                    .as_slice_mut::<i64>()
                    .map_err(|e| ctx.err(e.to_string()))?;
                for (o, v) in slice.iter_mut().zip(values) {
                    // Within [start, limit), which are i64.
                    *o = v as i64;
                }
            } else {
                t.view_mut()
                    .fill_from_iter(values.map(|v| v as f64))
                    .map_err(|e| ctx.err(e.to_string()))?;
            }
            t
        }
        DType::Float32 | DType::Float64 => {
            let v: Vec<f64> = scalars.iter().map(|t| t.to_f64_vec()[0]).collect();
            let (start, limit, delta) = (v[0], v[1], v[2]);
            if !v.iter().all(|x| x.is_finite()) || delta == 0.0 {
                return Err(ctx.err(format!(
                    "start {start}, limit {limit} and delta {delta} must be finite, and delta not 0"
                )));
            }
            let count = ((limit - start) / delta).ceil().max(0.0);
            if count >= usize::MAX as f64 {
                return Err(ctx.err(format!("{count} elements are too many")));
            }
            let len = range_len(ctx, count as i128)?;
            let ty = ty(len);
            check_size(ctx, &ty)?;
            let mut t = Tensor::try_zeros(ty).map_err(|e| ctx.err(e.to_string()))?;
            t.view_mut()
                .fill_from_iter((0..len).map(|i| start + i as f64 * delta))
                .map_err(|e| ctx.err(e.to_string()))?;
            t
        }
        other => {
            return Err(ctx.err(format!(
                "unsupported element type {other} (ONNX allows float, double, int16, int32, int64)"
            )))
        }
    };
    one(ctx.constant(out))
}

/// A range length as a `usize`.
fn range_len(ctx: &NodeCtx<'_>, len: i128) -> Result<usize, OnnxError> {
    usize::try_from(len).map_err(|_| ctx.err(format!("{len} elements are too many")))
}

/// `Tile(input, repeats)`: along each axis whose repeat is above 1, a `take` of the indices
/// `0, 1, .., d-1` repeated; `repeats` must be a constant.
pub(super) fn tile(ctx: &mut NodeCtx<'_>) -> Out {
    let mut x = ctx.input(0)?;
    let ty = ctx.tensor_ty(x)?;
    let repeats = ctx
        .const_ints(1)?
        .ok_or_else(|| ctx.err("required input 1 (repeats) is missing"))?;
    if repeats.len() != ty.rank() {
        return Err(ctx.err(format!(
            "repeats {repeats:?} has {} values, but the input has rank {}",
            repeats.len(),
            ty.rank()
        )));
    }
    let mut out = ty.clone();
    for (axis, (&r, &d)) in repeats.iter().zip(&ty.shape).enumerate() {
        let r = usize::try_from(r)
            .map_err(|_| ctx.err(format!("repeats {repeats:?} holds a negative value")))?;
        out.shape[axis] = d
            .checked_mul(r)
            .ok_or_else(|| ctx.err(format!("repeat {r} of axis {axis} is too large")))?;
    }
    check_size(ctx, &out)?;
    for (axis, &len) in out.shape.iter().enumerate() {
        let d = ty.shape[axis];
        if len == d {
            continue;
        }
        let idx: Vec<i64> = (0..len)
            .map(|i| if d == 0 { 0 } else { (i % d) as i64 })
            .collect();
        let idx = Tensor::from_vec([len], idx).map_err(|e| ctx.err(e.to_string()))?;
        let idx = ctx.constant(idx);
        let attrs = Attrs::new().with("axis", axis as i64).with("mode", "clip");
        x = ctx.call("take", &[x, idx], attrs)?;
    }
    one(x)
}

/// `Trilu(input, k=0; upper=1)`: the elements on and above (`upper`) or below the `k`-th
/// diagonal of the last two axes, zero elsewhere; `k` must be a constant.
pub(super) fn trilu(ctx: &mut NodeCtx<'_>) -> Out {
    let x = ctx.input(0)?;
    let ty = ctx.tensor_ty(x)?;
    let &[.., n, m] = ty.shape.as_slice() else {
        return Err(ctx.err(format!(
            "requires an input of rank 2 or more, got shape {:?}",
            ty.shape
        )));
    };
    let k = match ctx.const_ints(1)? {
        None => 0,
        Some(v) if v.len() == 1 => v[0],
        Some(v) => return Err(ctx.err(format!("k must be one integer, got {v:?}"))),
    };
    let upper = ctx.flag_or("upper", true)?;
    let keep = |i: usize, j: usize| {
        let diag = j as i128 - i as i128;
        if upper {
            diag >= i128::from(k)
        } else {
            diag <= i128::from(k)
        }
    };
    let width = m.max(1);
    let mut mask = Tensor::try_zeros(TensorType::new(vec![n, m], DType::Bool))
        .map_err(|e| ctx.err(e.to_string()))?;
    mask.view_mut()
        .fill_from_iter((0..n * m).map(|e| f64::from(u8::from(keep(e / width, e % width)))))
        .map_err(|e| ctx.err(e.to_string()))?;
    let mask = ctx.constant(mask);
    let zero = ctx.scalar(ty.dtype, 0.0)?;
    one(ctx.call("where", &[mask, x, zero], Attrs::new())?)
}
