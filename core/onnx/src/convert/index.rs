//! Ops defined by index arithmetic: `Range` (folded to a constant at import), `Tile` (one
//! `take` per repeated axis), `Trilu` (a `where` with a constant triangular mask), and
//! `GatherElements` / `GatherND` (a `take` of rows from the flattened data, at offsets
//! computed from the indices with integer ops), `ScatterND` / `ScatterElements` with constant
//! indices (a `where` between the data and the updates moved into place), and `NonZero` of a
//! constant (folded: its result's shape is its count).
//!
//! Constant indices are checked at import: one out of range is refused naming it. Computed
//! indices are taken from the end when negative, as ONNX defines; one out of range is clamped
//! (onnxruntime reports an error at run time), as `Gather` clamps or wraps them.

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

/// The row-major strides of `shape`.
fn strides(shape: &[usize]) -> Vec<usize> {
    let mut out = vec![1; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        out[i] = out[i + 1] * shape[i + 1];
    }
    out
}

/// A constant int64 tensor of `shape` whose element at each position is `f(coords)`.
fn iota(
    ctx: &mut NodeCtx<'_>,
    shape: &[usize],
    f: impl Fn(&[usize]) -> i64,
) -> Result<ExprId, OnnxError> {
    let ty = TensorType::new(shape.to_vec(), DType::Int64);
    check_size(ctx, &ty)?;
    let mut t = Tensor::try_zeros(ty).map_err(|e| ctx.err(e.to_string()))?;
    let out = t
        .as_slice_mut::<i64>()
        .map_err(|e| ctx.err(e.to_string()))?;
    let mut coords = vec![0usize; shape.len()];
    for o in out.iter_mut() {
        *o = f(&coords);
        for d in (0..shape.len()).rev() {
            coords[d] += 1;
            if coords[d] < shape[d] {
                break;
            }
            coords[d] = 0;
        }
    }
    Ok(ctx.constant(t))
}

/// Indices as int64 with negative ones counted from the end of an axis of length `dim`
/// (`dim` broadcasts: one length per last-axis position for `GatherND`). Constant indices are
/// checked at import; computed ones out of range are clamped by the `take` that uses them.
fn normalized_indices(
    ctx: &mut NodeCtx<'_>,
    idx: ExprId,
    dims: &[usize],
) -> Result<ExprId, OnnxError> {
    let shape = ctx.shape(idx)?;
    if let Some(t) = ctx.constant_of(idx) {
        let values = crate::ctx::tensor_ints(&t)
            .ok_or_else(|| ctx.err(format!("indices must be integers, got {}", t.dtype())))?;
        let mut fixed = Vec::with_capacity(values.len());
        for (k, &v) in values.iter().enumerate() {
            let dim = dims[k % dims.len()] as i64;
            let n = if v < 0 { v + dim } else { v };
            if !(0..dim).contains(&n) {
                return Err(ctx.err(format!(
                    "index {v} is out of range for an axis of size {dim}"
                )));
            }
            fixed.push(n);
        }
        let t = Tensor::from_vec(shape, fixed).map_err(|e| ctx.err(e.to_string()))?;
        return Ok(ctx.constant(t));
    }
    let dtype = ctx.tensor_ty(idx)?.dtype;
    if !dtype.is_int() {
        return Err(ctx.err(format!("indices must be integers, got {dtype}")));
    }
    let idx = if dtype == DType::Int64 {
        idx
    } else {
        ctx.call("cast", &[idx], Attrs::new().with("dtype", DType::Int64))?
    };
    let lens: Vec<i64> = dims.iter().map(|&d| d as i64).collect();
    let lens = Tensor::from_vec([lens.len()], lens).map_err(|e| ctx.err(e.to_string()))?;
    let lens = ctx.constant(lens);
    let zero = ctx.scalar(DType::Int64, 0.0)?;
    let negative = ctx.call("less", &[idx, zero], Attrs::new())?;
    let wrapped = ctx.call("add", &[idx, lens], Attrs::new())?;
    ctx.call("where", &[negative, wrapped, idx], Attrs::new())
}

/// `data` flattened to `[rows, row_len]` (`row_len` the product of the dims from `split`), and
/// `take` of `rows` from it along axis 0.
fn take_rows(
    ctx: &mut NodeCtx<'_>,
    data: ExprId,
    split: usize,
    rows: ExprId,
    out_shape: &[usize],
) -> Result<ExprId, OnnxError> {
    let shape = ctx.shape(data)?;
    let row_len: usize = shape[split..].iter().product();
    let count: usize = shape[..split].iter().product();
    let flat = ctx.call(
        "reshape",
        &[data],
        Attrs::new().with("newshape", ctx.dims_i64(&[count, row_len])?),
    )?;
    let attrs = Attrs::new().with("axis", 0i64).with("mode", "clip");
    let taken = ctx.call("take", &[flat, rows], attrs)?;
    ctx.call(
        "reshape",
        &[taken],
        Attrs::new().with("newshape", ctx.dims_i64(out_shape)?),
    )
}

/// Whether `indices` of the elementwise gathers and scatters fit `data`: the same rank, and no
/// longer than it on any axis but `axis`.
fn fits_off_axis(indices: &[usize], data: &[usize], axis: usize) -> bool {
    indices.len() == data.len()
        && indices
            .iter()
            .zip(data)
            .enumerate()
            .all(|(d, (&i, &s))| d == axis || i <= s)
}

/// `GatherElements(data, indices; axis=0)`: `out[.., i, ..] = data[.., indices[.., i, ..], ..]`
/// on `axis`, as a `take` from the flattened data at `base + index * stride`.
pub(super) fn gather_elements(ctx: &mut NodeCtx<'_>) -> Out {
    let (data, idx) = (ctx.input(0)?, ctx.input(1)?);
    let shape = ctx.shape(data)?;
    let ishape = ctx.shape(idx)?;
    let rank = shape.len();
    let axis = ctx.axis(ctx.int_or("axis", 0)?, rank)?;
    if !fits_off_axis(&ishape, &shape, axis) {
        return Err(ctx.err(format!(
            "indices of shape {ishape:?} do not fit data of shape {shape:?} off axis {axis}"
        )));
    }
    let st = strides(&shape);
    let idx = normalized_indices(ctx, idx, &[shape[axis]])?;
    let base = iota(ctx, &ishape, |c| {
        c.iter()
            .enumerate()
            .filter(|&(d, _)| d != axis)
            .map(|(d, &v)| (v * st[d]) as i64)
            .sum()
    })?;
    let stride = ctx.scalar(DType::Int64, st[axis] as f64)?;
    let scaled = ctx.call("multiply", &[idx, stride], Attrs::new())?;
    let rows = ctx.call("add", &[base, scaled], Attrs::new())?;
    one(take_rows(ctx, data, rank, rows, &ishape)?)
}

/// `GatherND(data, indices; batch_dims=0)`: each index tuple (the last axis of `indices`)
/// picks a slice of `data` after the batch dims; a `take` of rows from the data flattened at
/// the end of the indexed dims.
pub(super) fn gather_nd(ctx: &mut NodeCtx<'_>) -> Out {
    let (data, idx) = (ctx.input(0)?, ctx.input(1)?);
    let shape = ctx.shape(data)?;
    let ishape = ctx.shape(idx)?;
    let b = usize::try_from(ctx.int_or("batch_dims", 0)?)
        .map_err(|_| ctx.err("attribute 'batch_dims' is negative"))?;
    let Some(&k) = ishape.last() else {
        return Err(ctx.err("indices must have rank 1 or more"));
    };
    if b >= ishape.len() || b + k > shape.len() || shape[..b] != ishape[..b] {
        return Err(ctx.err(format!(
            "indices of shape {ishape:?} with batch_dims {b} do not index data of shape {shape:?}"
        )));
    }
    let split = b + k;
    let st = strides(&shape[..split]);
    let idx = normalized_indices(ctx, idx, &shape[b..split])?;
    // The row of each index tuple: its batch offset plus the sum of index * stride.
    let tuple_strides: Vec<i64> = st[b..split].iter().map(|&s| s as i64).collect();
    let tuple_strides = Tensor::from_vec([k], tuple_strides).map_err(|e| ctx.err(e.to_string()))?;
    let tuple_strides = ctx.constant(tuple_strides);
    let scaled = ctx.call("multiply", &[idx, tuple_strides], Attrs::new())?;
    let offsets = ctx.call(
        "sum",
        &[scaled],
        Attrs::new()
            .with("axis", vec![ishape.len() as i64 - 1])
            .with("keepdims", false),
    )?;
    let rows_shape = &ishape[..ishape.len() - 1];
    let base = iota(ctx, rows_shape, |c| {
        c[..b].iter().zip(&st).map(|(&v, &s)| (v * s) as i64).sum()
    })?;
    let rows = ctx.call("add", &[base, offsets], Attrs::new())?;
    let mut out_shape = rows_shape.to_vec();
    out_shape.extend_from_slice(&shape[split..]);
    one(take_rows(ctx, data, split, rows, &out_shape)?)
}

/// `NonZero(x)`: the coordinates of the nonzero elements, `[rank, count]` int64. The count is
/// the result's shape, so `x` must fold to a constant at import.
pub(super) fn non_zero(ctx: &mut NodeCtx<'_>) -> Out {
    let t = ctx
        .const_input(0)?
        .ok_or_else(|| ctx.err("required input 0 is missing"))?;
    let shape = t.shape().to_vec();
    let st = strides(&shape);
    let nonzero: Vec<usize> = t
        .to_f64_vec()
        .iter()
        .enumerate()
        .filter(|(_, &v)| v != 0.0)
        .map(|(i, _)| i)
        .collect();
    let rank = shape.len().max(1);
    let mut coords = vec![0i64; rank * nonzero.len()];
    for (j, &flat) in nonzero.iter().enumerate() {
        for (d, &s) in st.iter().enumerate() {
            coords[d * nonzero.len() + j] = ((flat / s) % shape[d]) as i64;
        }
    }
    let rows = if shape.is_empty() { 1 } else { shape.len() };
    let coords = &coords[..rows * nonzero.len()];
    let out = Tensor::from_vec([rows, nonzero.len()], coords.to_vec())
        .map_err(|e| ctx.err(e.to_string()))?;
    one(ctx.constant(out))
}

/// The scatter of `updates` into `data`, both seen as rows (the dims of `data` from `split`
/// on): update row `j` replaces data row `rows[j]` (each within range; a later update of a row
/// replaces an earlier one), as `where(written, take(updates, source), data)`; the result has
/// `data`'s shape.
fn scatter_rows(
    ctx: &mut NodeCtx<'_>,
    data: ExprId,
    updates: ExprId,
    rows: &[usize],
    split: usize,
) -> Result<ExprId, OnnxError> {
    let shape = ctx.shape(data)?;
    let count: usize = shape[..split].iter().product();
    let row_len: usize = shape[split..].iter().product();
    let data2 = as_rows(ctx, data, count, row_len)?;
    let updates2 = as_rows(ctx, updates, rows.len(), row_len)?;
    let mut source = vec![0i64; count];
    let mut written = vec![0.0f64; count];
    for (j, &r) in rows.iter().enumerate() {
        source[r] = j as i64;
        written[r] = 1.0;
    }
    let source = Tensor::from_vec([count], source).map_err(|e| ctx.err(e.to_string()))?;
    let source = ctx.constant(source);
    let mask = Tensor::from_f64(TensorType::new(vec![count, 1], DType::Bool), &written)
        .map_err(|e| ctx.err(e.to_string()))?;
    let mask = ctx.constant(mask);
    let attrs = Attrs::new().with("axis", 0i64).with("mode", "clip");
    let moved = ctx.call("take", &[updates2, source], attrs)?;
    let y = ctx.call("where", &[mask, moved, data2], Attrs::new())?;
    ctx.call(
        "reshape",
        &[y],
        Attrs::new().with("newshape", ctx.dims_i64(&shape)?),
    )
}

/// The `reduction` attribute of a scatter: only `none` (a later update replaces an earlier one).
fn plain_scatter(ctx: &NodeCtx<'_>) -> Result<(), OnnxError> {
    match ctx.str_or("reduction", "none")?.as_str() {
        "none" => Ok(()),
        other => Err(ctx.err(format!(
            "reduction '{other}' is not supported (only 'none')"
        ))),
    }
}

/// Constant, in-range indices of a scatter, as `usize`s counted from the start of each axis.
fn scatter_indices(ctx: &NodeCtx<'_>, dims: &[usize]) -> Result<Vec<usize>, OnnxError> {
    let t = ctx
        .const_input(1)?
        .ok_or_else(|| ctx.err("required input 1 (indices) is missing"))?;
    let values = crate::ctx::tensor_ints(&t)
        .ok_or_else(|| ctx.err(format!("indices must be integers, got {}", t.dtype())))?;
    values
        .iter()
        .enumerate()
        .map(|(k, &v)| {
            let dim = dims[k % dims.len()] as i64;
            let n = if v < 0 { v + dim } else { v };
            usize::try_from(n)
                .ok()
                .filter(|&n| (n as i64) < dim)
                .ok_or_else(|| {
                    ctx.err(format!(
                        "index {v} is out of range for an axis of size {dim}"
                    ))
                })
        })
        .collect()
}

/// `x` reshaped to `[rows, row_len]`.
fn as_rows(
    ctx: &mut NodeCtx<'_>,
    x: ExprId,
    rows: usize,
    row_len: usize,
) -> Result<ExprId, OnnxError> {
    ctx.call(
        "reshape",
        &[x],
        Attrs::new().with("newshape", ctx.dims_i64(&[rows, row_len])?),
    )
}

/// `ScatterND(data, indices, updates; reduction="none")`: each index tuple names a slice of
/// `data` that the matching slice of `updates` replaces. The indices must be constants.
pub(super) fn scatter_nd(ctx: &mut NodeCtx<'_>) -> Out {
    plain_scatter(ctx)?;
    let (data, updates) = (ctx.input(0)?, ctx.input(2)?);
    let shape = ctx.shape(data)?;
    let ishape = ctx.shape(ctx.input(1)?)?;
    let ushape = ctx.shape(updates)?;
    let Some(&k) = ishape.last() else {
        return Err(ctx.err("indices must have rank 1 or more"));
    };
    let mut want = ishape[..ishape.len() - 1].to_vec();
    want.extend_from_slice(shape.get(k..).unwrap_or_default());
    if k > shape.len() || ushape != want {
        return Err(ctx.err(format!(
            "updates of shape {ushape:?} and indices of shape {ishape:?} do not fit data of shape {shape:?} (updates must be {want:?})"
        )));
    }
    let idx = scatter_indices(ctx, &shape[..k])?;
    let st = strides(&shape[..k]);
    let rows: Vec<usize> = idx
        .chunks(k.max(1))
        .map(|tuple| tuple.iter().zip(&st).map(|(&i, &s)| i * s).sum())
        .collect();
    one(scatter_rows(ctx, data, updates, &rows, k)?)
}

/// `ScatterElements(data, indices, updates; axis=0, reduction="none")`: `updates[.., i, ..]`
/// replaces `data[.., indices[.., i, ..], ..]` on `axis`. The indices must be constants.
pub(super) fn scatter_elements(ctx: &mut NodeCtx<'_>) -> Out {
    plain_scatter(ctx)?;
    let (data, updates) = (ctx.input(0)?, ctx.input(2)?);
    let shape = ctx.shape(data)?;
    let ishape = ctx.shape(ctx.input(1)?)?;
    let axis = ctx.axis(ctx.int_or("axis", 0)?, shape.len())?;
    if ctx.shape(updates)? != ishape || !fits_off_axis(&ishape, &shape, axis) {
        return Err(ctx.err(format!(
            "indices and updates of shape {ishape:?} do not fit data of shape {shape:?} off axis {axis}"
        )));
    }
    let idx = scatter_indices(ctx, &[shape[axis]])?;
    let st = strides(&shape);
    let ist = strides(&ishape);
    let rows: Vec<usize> = idx
        .iter()
        .enumerate()
        .map(|(j, &i)| {
            (0..shape.len())
                .map(|d| {
                    (if d == axis {
                        i
                    } else {
                        (j / ist[d]) % ishape[d]
                    }) * st[d]
                })
                .sum()
        })
        .collect();
    one(scatter_rows(ctx, data, updates, &rows, shape.len())?)
}
