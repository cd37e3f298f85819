//! Shape and data-movement ops: `Reshape`, `Flatten`, `Transpose`, `(Un)Squeeze`, `Concat`,
//! `Split`, `Slice`, `Gather`, `Pad`, `Expand`, and the constant producers `Shape`, `Constant`,
//! `ConstantOfShape`.
//!
//! Shape-like inputs (`Reshape`'s shape, `Slice`'s starts, ...) must be constants at import;
//! since input shapes are static and constant subgraphs fold as they are built, that holds for
//! the usual `Shape -> Gather -> Concat -> Reshape` chains.

use super::{concat_values, one};
use crate::ctx::NodeCtx;
use crate::OnnxError;
use byoc_ir::tensor::Tensor;
use byoc_ir::{AttrValue, Attrs, DType, ExprId, TensorType};

type Out = Result<Vec<ExprId>, OnnxError>;

/// The largest constant the importer materializes (`ConstantOfShape`, `Constant`).
const MAX_CONSTANT_BYTES: usize = 1 << 32;

fn reshape_to(ctx: &mut NodeCtx<'_>, x: ExprId, shape: &[usize]) -> Result<ExprId, OnnxError> {
    let newshape = ctx.dims_i64(shape)?;
    ctx.call("reshape", &[x], Attrs::new().with("newshape", newshape))
}

/// Integers from an INTS attribute (before `input_opset`) or from constant input `i` (from it).
fn ints_attr_or_input(
    ctx: &NodeCtx<'_>,
    attr: &str,
    i: usize,
    input_opset: i64,
) -> Result<Option<Vec<i64>>, OnnxError> {
    if ctx.opset() < input_opset {
        ctx.attr_ints(attr)
    } else if ctx.has_attr(attr) {
        Err(ctx.err(format!(
            "attribute '{attr}' is not part of the op from opset {input_opset} (it is input {i})"
        )))
    } else {
        ctx.const_ints(i)
    }
}

/// Normalizes every axis in `axes` against `rank`, rejecting duplicates.
fn axes_in(ctx: &NodeCtx<'_>, axes: &[i64], rank: usize) -> Result<Vec<usize>, OnnxError> {
    let mut out = Vec::with_capacity(axes.len());
    for &a in axes {
        let n = ctx.axis(a, rank)?;
        if out.contains(&n) {
            return Err(ctx.err(format!("axis {a} is repeated in {axes:?}")));
        }
        out.push(n);
    }
    Ok(out)
}

/// `Flatten(axis=1)`: 2-D `(prod(dims[..axis]), prod(dims[axis..]))`, for `axis` in
/// `-rank..=rank`.
pub(super) fn flatten(ctx: &mut NodeCtx<'_>) -> Out {
    let x = ctx.input(0)?;
    let shape = ctx.shape(x)?;
    let axis = ctx.int_or("axis", 1)?;
    // ONNX allows `-rank..=rank`; a negative axis counts from the end (`-1` keeps the last dim).
    let rank = shape.len();
    let axis = match axis {
        a if a >= 0 => byoc_ir::dims::dim(a).filter(|&a| a <= rank),
        a => byoc_ir::dims::axis(a, rank),
    }
    .ok_or_else(|| {
        ctx.err(format!(
            "axis {axis} is out of range for rank {rank} (allowed: -{rank}..={rank})"
        ))
    })?;
    if axis == 1 && shape.len() >= 2 {
        return one(ctx.call("nn.batch_flatten", &[x], Attrs::new())?);
    }
    let outer: usize = shape[..axis].iter().product();
    let inner: usize = shape[axis..].iter().product();
    one(reshape_to(ctx, x, &[outer, inner])?)
}

/// `Reshape(data, shape; allowzero)`: `0` copies the input dim (unless `allowzero`), `-1` is
/// inferred; the result is an explicit static shape.
pub(super) fn reshape(ctx: &mut NodeCtx<'_>) -> Out {
    let x = ctx.input(0)?;
    let input = ctx.shape(x)?;
    let target = ctx
        .const_ints(1)?
        .ok_or_else(|| ctx.err("the shape input is required"))?;
    let allow_zero = ctx.flag_or("allowzero", false)?;
    let mut out = Vec::with_capacity(target.len());
    let mut infer = None;
    for (i, &d) in target.iter().enumerate() {
        out.push(match d {
            -1 if infer.is_none() => {
                infer = Some(i);
                1
            }
            0 if !allow_zero => *input.get(i).ok_or_else(|| {
                ctx.err(format!(
                    "shape {target:?} copies dim {i}, which the input {input:?} lacks"
                ))
            })?,
            d => byoc_ir::dims::dim(d)
                .ok_or_else(|| ctx.err(format!("invalid target shape {target:?}")))?,
        });
    }
    let total: usize = input.iter().product();
    let product = |dims: &[usize]| {
        byoc_ir::dims::product(dims).ok_or_else(|| {
            ctx.err(format!(
                "target shape {target:?}: the element count overflows 64 bits"
            ))
        })
    };
    if let Some(i) = infer {
        let known = product(&out)?;
        if known == 0 || !total.is_multiple_of(known) {
            return Err(ctx.err(format!("cannot reshape {input:?} into {target:?}")));
        }
        out[i] = total / known;
    }
    if product(&out)? != total {
        return Err(ctx.err(format!(
            "cannot reshape {input:?} ({total} elements) into {out:?}"
        )));
    }
    one(reshape_to(ctx, x, &out)?)
}

/// `Transpose(perm)`, reversing the dims by default.
pub(super) fn transpose(ctx: &mut NodeCtx<'_>) -> Out {
    let x = ctx.input(0)?;
    let rank = ctx.rank(x)?;
    let perm = match ctx.attr_ints("perm")? {
        Some(p) => p,
        None => (0..rank as i64).rev().collect(),
    };
    one(ctx.call("transpose", &[x], Attrs::new().with("axes", perm))?)
}

/// `Squeeze(axes)`: attribute before opset 13, input from it; no axes removes every 1.
pub(super) fn squeeze(ctx: &mut NodeCtx<'_>) -> Out {
    let x = ctx.input(0)?;
    let shape = ctx.shape(x)?;
    let axes = match ints_attr_or_input(ctx, "axes", 1, 13)? {
        Some(axes) => axes_in(ctx, &axes, shape.len())?,
        None => (0..shape.len()).filter(|&i| shape[i] == 1).collect(),
    };
    if let Some(&bad) = axes.iter().find(|&&a| shape[a] != 1) {
        return Err(ctx.err(format!(
            "cannot squeeze axis {bad} of shape {shape:?}: its size is not 1"
        )));
    }
    let axes: Vec<i64> = axes.iter().map(|&a| a as i64).collect();
    one(ctx.call("squeeze", &[x], Attrs::new().with("axis", axes))?)
}

/// `Unsqueeze(axes)`: attribute before opset 13, input from it; axes index the output.
pub(super) fn unsqueeze(ctx: &mut NodeCtx<'_>) -> Out {
    let mut x = ctx.input(0)?;
    let rank = ctx.rank(x)?;
    let axes =
        ints_attr_or_input(ctx, "axes", 1, 13)?.ok_or_else(|| ctx.err("'axes' is required"))?;
    let mut axes = axes_in(ctx, &axes, rank + axes.len())?;
    axes.sort_unstable();
    for a in axes {
        x = ctx.call(
            "expand_dims",
            &[x],
            Attrs::new()
                .with("axis", a as i64)
                .with("num_newaxis", 1i64),
        )?;
    }
    one(x)
}

/// `Concat(axis)`: `concatenate` of a tuple.
pub(super) fn concat(ctx: &mut NodeCtx<'_>) -> Out {
    let inputs = ctx.present_inputs();
    let first = *inputs
        .first()
        .ok_or_else(|| ctx.err("needs at least one input"))?;
    let rank = ctx.rank(first)?;
    let axis = ctx
        .attr_int("axis")?
        .ok_or_else(|| ctx.err("attribute 'axis' is required"))?;
    let axis = ctx.axis(axis, rank)? as i64;
    one(concat_values(ctx, &inputs, axis)?)
}

/// `Split(axis=0, split | num_outputs)`: `split` at explicit indices, one output per field.
pub(super) fn split(ctx: &mut NodeCtx<'_>) -> Out {
    let x = ctx.input(0)?;
    let shape = ctx.shape(x)?;
    let axis = ctx.axis(ctx.int_or("axis", 0)?, shape.len())?;
    let dim = shape[axis];
    let outputs = ctx.node.output.len();
    let source = if ctx.opset() < 13 {
        "attribute 'split'"
    } else {
        "input 1 (split)"
    };
    let sizes: Vec<usize> = match ints_attr_or_input(ctx, "split", 1, 13)? {
        Some(s) => {
            let sizes = s
                .iter()
                .map(|&v| usize::try_from(v).ok())
                .collect::<Option<Vec<usize>>>()
                .ok_or_else(|| ctx.err(format!("{source} {s:?} has a negative size")))?;
            if sizes.len() != outputs {
                return Err(ctx.err(format!(
                    "{source} {s:?} has {} sizes for {outputs} outputs",
                    sizes.len()
                )));
            }
            let total = sizes.iter().try_fold(0usize, |acc, &v| acc.checked_add(v));
            if total != Some(dim) {
                return Err(ctx.err(format!(
                    "{source} {s:?} does not add up to dim {axis} of {shape:?}"
                )));
            }
            sizes
        }
        None => {
            let parts = match ctx.attr_int("num_outputs")? {
                Some(n) if usize::try_from(n).ok() == Some(outputs) => outputs,
                Some(n) => {
                    return Err(ctx.err(format!(
                        "attribute 'num_outputs' is {n} but the node has {outputs} outputs"
                    )))
                }
                // Before num_outputs (opset 18) the parts must be equal.
                None if outputs > 0 && dim % outputs != 0 => {
                    return Err(ctx.err(format!(
                        "dim {axis} of {shape:?} does not split into {outputs} equal parts"
                    )))
                }
                None => outputs,
            };
            if parts == 0 {
                return Err(ctx.err("split into zero parts"));
            }
            let chunk = dim.div_ceil(parts);
            (0..parts)
                .map(|i| chunk.min(dim.saturating_sub(i * chunk)))
                .collect()
        }
    };
    if sizes.len() == 1 {
        return one(x);
    }
    let indices: Vec<i64> = sizes
        .iter()
        .scan(0usize, |acc, &s| {
            *acc += s;
            Some(*acc as i64)
        })
        .take(sizes.len() - 1)
        .collect();
    let parts = ctx.call(
        "split",
        &[x],
        Attrs::new()
            .with("indices_or_sections", indices)
            .with("axis", axis as i64),
    )?;
    (0..sizes.len())
        .map(|i| ctx.tuple_get_item(parts, i))
        .collect()
}

/// `Slice`: attributes before opset 10, constant inputs from it; positive steps only. The
/// result is a full-rank `strided_slice` with clamped bounds.
pub(super) fn slice(ctx: &mut NodeCtx<'_>) -> Out {
    let x = ctx.input(0)?;
    let shape = ctx.shape(x)?;
    let (starts, ends, axes, steps) = if ctx.opset() < 10 {
        (
            ctx.attr_ints("starts")?,
            ctx.attr_ints("ends")?,
            ctx.attr_ints("axes")?,
            None,
        )
    } else {
        (
            ctx.const_ints(1)?,
            ctx.const_ints(2)?,
            ctx.const_ints(3)?,
            ctx.const_ints(4)?,
        )
    };
    let (starts, ends) = starts
        .zip(ends)
        .ok_or_else(|| ctx.err("'starts' and 'ends' are required"))?;
    let n = starts.len();
    let axes = axes.unwrap_or_else(|| (0..n as i64).collect());
    let steps = steps.unwrap_or_else(|| vec![1; n]);
    if ends.len() != n || axes.len() != n || steps.len() != n {
        return Err(ctx.err(format!(
            "starts {starts:?}, ends {ends:?}, axes {axes:?} and steps {steps:?} differ in length"
        )));
    }
    let axes = axes_in(ctx, &axes, shape.len())?;
    let mut begin: Vec<i64> = vec![0; shape.len()];
    let mut end: Vec<i64> = ctx.dims_i64(&shape)?;
    let mut strides: Vec<i64> = vec![1; shape.len()];
    for (k, &a) in axes.iter().enumerate() {
        if steps[k] <= 0 {
            return Err(ctx.err(format!(
                "step {} on axis {a}: only positive steps are supported",
                steps[k]
            )));
        }
        let d = end[a];
        let clamp = |v: i64| (if v < 0 { v.saturating_add(d) } else { v }).clamp(0, d);
        begin[a] = clamp(starts[k]);
        end[a] = clamp(ends[k]).max(begin[a]);
        strides[a] = steps[k];
    }
    let attrs = Attrs::new()
        .with("begin", begin)
        .with("end", end)
        .with("strides", strides);
    one(ctx.call("strided_slice", &[x], attrs)?)
}

/// `Gather(axis=0)`: `take`. Constant indices are normalized (negative ones count from the
/// end) and range-checked here; computed ones use `mode="wrap"`, which agrees with ONNX on
/// every index ONNX allows.
pub(super) fn gather(ctx: &mut NodeCtx<'_>) -> Out {
    let (x, mut idx) = (ctx.input(0)?, ctx.input(1)?);
    let shape = ctx.shape(x)?;
    let axis = ctx.axis(ctx.int_or("axis", 0)?, shape.len())?;
    let dim = ctx.dim_i64(shape[axis])?;
    let mode = if let Some(t) = ctx.constant_of(idx) {
        let values = crate::ctx::tensor_ints(&t)
            .ok_or_else(|| ctx.err(format!("indices must be integers, got {}", t.dtype())))?;
        let fixed = values
            .iter()
            .map(|&v| {
                let n = if v < 0 { v + dim } else { v };
                (0..dim).contains(&n).then_some(n).ok_or_else(|| {
                    ctx.err(format!(
                        "index {v} is out of range for axis {axis} of size {dim}"
                    ))
                })
            })
            .collect::<Result<Vec<i64>, _>>()?;
        let fixed =
            Tensor::from_vec(t.shape().to_vec(), fixed).map_err(|e| ctx.err(e.to_string()))?;
        idx = ctx.constant(fixed);
        "clip"
    } else {
        "wrap"
    };
    let attrs = Attrs::new().with("axis", axis as i64).with("mode", mode);
    one(ctx.call("take", &[x, idx], attrs)?)
}

/// `Pad(mode=constant|reflect|edge)`: pads and value from attributes before opset 11, from
/// inputs from it (with optional `axes` from opset 18); `nn.pad` with a scalar pad value.
pub(super) fn pad(ctx: &mut NodeCtx<'_>) -> Out {
    let x = ctx.input(0)?;
    let ty = ctx.tensor_ty(x)?;
    let rank = ty.rank();
    let (pads, value) = if ctx.opset() < 11 {
        (ctx.attr_ints("pads")?, ctx.float_or("value", 0.0)?)
    } else {
        let value = ctx
            .const_floats(2)?
            .and_then(|v| v.first().copied())
            .unwrap_or(0.0);
        (ctx.const_ints(1)?, value)
    };
    let pads = pads.ok_or_else(|| ctx.err("'pads' is required"))?;
    let axes = match ctx.const_ints(3)? {
        Some(a) if ctx.opset() >= 18 => axes_in(ctx, &a, rank)?,
        _ => (0..rank).collect(),
    };
    if pads.len() != 2 * axes.len() {
        return Err(ctx.err(format!(
            "pads {pads:?} must hold 2 values per padded axis ({} axes)",
            axes.len()
        )));
    }
    if pads.iter().any(|&p| p < 0) {
        return Err(ctx.err(format!(
            "negative pads {pads:?} (cropping) are not supported"
        )));
    }
    let mut width = vec![vec![0i64, 0]; rank];
    for (k, &a) in axes.iter().enumerate() {
        width[a] = vec![pads[k], pads[k + axes.len()]];
    }
    let mode = ctx.str_or("mode", "constant")?;
    if !matches!(mode.as_str(), "constant" | "reflect" | "edge") {
        return Err(ctx.err(format!("pad mode '{mode}' is not supported")));
    }
    let pad_value = ctx.scalar(ty.dtype, value)?;
    let width = AttrValue::List(width.into_iter().map(AttrValue::ints).collect());
    let attrs = Attrs::new().with("pad_width", width).with("pad_mode", mode);
    one(ctx.call("nn.pad", &[x, pad_value], attrs)?)
}

/// `Expand(shape)`: broadcasts to the numpy broadcast of the input shape and `shape`.
pub(super) fn expand(ctx: &mut NodeCtx<'_>) -> Out {
    let x = ctx.input(0)?;
    let input = ctx.shape(x)?;
    let target = ctx
        .const_ints(1)?
        .ok_or_else(|| ctx.err("the shape input is required"))?;
    let rank = input.len().max(target.len());
    let mut out = vec![0usize; rank];
    for (i, o) in out.iter_mut().enumerate() {
        let a = (i + input.len()).checked_sub(rank).map_or(1, |j| input[j]);
        let b = (i + target.len())
            .checked_sub(rank)
            .map_or(Ok(1), |j| usize::try_from(target[j]))
            .map_err(|_| ctx.err(format!("invalid shape {target:?}")))?;
        *o = match (a, b) {
            (a, b) if a == b => a,
            (1, b) => b,
            (a, 1) => a,
            _ => return Err(ctx.err(format!("shape {input:?} does not broadcast to {target:?}"))),
        };
    }
    if out == input {
        return one(x);
    }
    // x * ones(out): broadcasting without changing any value (also -0.0 and NaN).
    let dtype = ctx.tensor_ty(x)?.dtype;
    let ones = ctx.call(
        "ones",
        &[],
        Attrs::new()
            .with("shape", ctx.dims_i64(&out)?)
            .with("dtype", dtype),
    )?;
    one(ctx.call("multiply", &[x, ones], Attrs::new())?)
}

/// `Shape(start, end)`: the static shape as an int64 constant.
pub(super) fn shape(ctx: &mut NodeCtx<'_>) -> Out {
    let x = ctx.input(0)?;
    let shape = ctx.dims_i64(&ctx.shape(x)?)?;
    let r = shape.len();
    // Python-style bounds, clamped to `0..=rank` (no overflow for any i64).
    let bound = |v: i64| match byoc_ir::dims::dim(v) {
        Some(v) => v.min(r),
        None => usize::try_from(v.unsigned_abs()).map_or(0, |back| r.saturating_sub(back)),
    };
    let start = bound(ctx.int_or("start", 0)?);
    let end = match ctx.attr_int("end")? {
        Some(e) => bound(e),
        None => r,
    }
    .max(start);
    let dims = shape[start..end].to_vec();
    let t = Tensor::from_vec([dims.len()], dims).map_err(|e| ctx.err(e.to_string()))?;
    one(ctx.constant(t))
}

pub(super) fn check_size(ctx: &NodeCtx<'_>, ty: &TensorType) -> Result<(), OnnxError> {
    let bytes = ty
        .shape
        .iter()
        .try_fold(ty.dtype.size_bytes(), |acc, &d| acc.checked_mul(d));
    match bytes {
        Some(b) if b <= MAX_CONSTANT_BYTES => Ok(()),
        _ => Err(ctx.err(format!(
            "constant of type {ty} is larger than {MAX_CONSTANT_BYTES} bytes"
        ))),
    }
}

/// `Constant(value | value_float(s) | value_int(s))`.
pub(super) fn constant(ctx: &mut NodeCtx<'_>) -> Out {
    let t = if let Some(t) = ctx.attr_tensor("value")? {
        t
    } else if ctx.has_attr("value_float") {
        Tensor::scalar(ctx.float_or("value_float", 0.0)? as f32)
    } else if let Some(v) = ctx.attr_floats("value_floats")? {
        let v: Vec<f32> = v.iter().map(|&f| f as f32).collect();
        Tensor::from_vec([v.len()], v).map_err(|e| ctx.err(e.to_string()))?
    } else if let Some(v) = ctx.attr_int("value_int")? {
        Tensor::scalar(v)
    } else if let Some(v) = ctx.attr_ints("value_ints")? {
        Tensor::from_vec([v.len()], v).map_err(|e| ctx.err(e.to_string()))?
    } else {
        return Err(ctx.err(
            "needs one of the attributes value, value_float(s), value_int(s) (string and sparse values are not supported)",
        ));
    };
    one(ctx.constant(t))
}

/// `ConstantOfShape(shape; value)`: a constant filled with `value` (float32 zero by default).
pub(super) fn constant_of_shape(ctx: &mut NodeCtx<'_>) -> Out {
    let dims = ctx
        .const_ints(0)?
        .ok_or_else(|| ctx.err("the shape input is required"))?;
    let shape = dims
        .iter()
        .map(|&d| {
            usize::try_from(d).map_err(|_| ctx.err(format!("negative dimension in {dims:?}")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let (dtype, value) = match ctx.attr_tensor("value")? {
        Some(v) => match v.to_f64_vec().as_slice() {
            [x] => (v.dtype(), *x),
            _ => return Err(ctx.err("attribute 'value' must hold exactly one element")),
        },
        None => (DType::Float32, 0.0),
    };
    let ty = TensorType::new(shape, dtype);
    check_size(ctx, &ty)?;
    let t = Tensor::full(ty, value).map_err(|e| ctx.err(e.to_string()))?;
    one(ctx.constant(t))
}
