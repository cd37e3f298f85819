//! Neural-network ops: convolutions, pooling, normalization, softmax.
//!
//! Convolutions and pooling take 2-D (NCHW) inputs and 1-D ones (NCL: audio, sequences). A 1-D
//! op runs as the 2-D op over a height of 1 (the input gets an axis 2 of length 1, the weight a
//! kernel height of 1, and the axis is squeezed out of the result), as onnxruntime's own 1-D
//! convolution does, so every backend that takes `nn.conv2d` takes it. ONNX `pads`
//! `[x1_begin, x2_begin, x1_end, x2_end]` is Relay's `padding` `[top, left, bottom, right]` as
//! is. `auto_pad` is resolved here from the static input shape, as ONNX defines it.

use super::one;
use crate::ctx::NodeCtx;
use crate::OnnxError;
use byoc_ir::tensor::Tensor;
use byoc_ir::{Attrs, ExprId, TensorType};

type Out = Result<Vec<ExprId>, OnnxError>;

/// The spatial window attributes shared by convolutions and pooling, one value per spatial
/// dimension (`pads`: every begin, then every end).
pub(super) struct Window {
    pub kernel: Vec<i64>,
    pub strides: Vec<i64>,
    pub dilations: Vec<i64>,
    /// `[top, left, bottom, right]` in 2-D, `[begin, end]` in 1-D.
    pub pads: Vec<i64>,
}

impl Window {
    pub(super) fn attrs(&self, kernel_name: &str, dilation_name: &str) -> Attrs {
        Attrs::new()
            .with(kernel_name, self.kernel.clone())
            .with("strides", self.strides.clone())
            .with(dilation_name, self.dilations.clone())
            .with("padding", self.pads.clone())
    }

    /// The 2-D window of a 1-D one (a height of 1, no padding on it); a 2-D window as it is.
    fn lifted(self) -> Window {
        if self.kernel.len() != 1 {
            return self;
        }
        Window {
            kernel: vec![1, self.kernel[0]],
            strides: vec![1, self.strides[0]],
            dilations: vec![1, self.dilations[0]],
            pads: vec![0, self.pads[0], 0, self.pads[1]],
        }
    }
}

/// The spatial dims of `x`: `[L]` of an NCL tensor or `[H, W]` of an NCHW one.
fn spatial(ctx: &NodeCtx<'_>, x: ExprId) -> Result<Vec<usize>, OnnxError> {
    let shape = ctx.shape(x)?;
    match shape.as_slice() {
        [_, _, rest @ ..] if matches!(rest.len(), 1 | 2) => Ok(rest.to_vec()),
        _ => Err(ctx.err(format!(
            "only 1-D (NCL) and 2-D (NCHW) inputs are supported, got shape {shape:?}"
        ))),
    }
}

/// Checks that `x` is a rank-4 NCHW tensor and returns its spatial dims.
pub(super) fn spatial_2d(ctx: &NodeCtx<'_>, x: ExprId) -> Result<[usize; 2], OnnxError> {
    match spatial(ctx, x)?.as_slice() {
        &[h, w] => Ok([h, w]),
        _ => Err(ctx.err(format!(
            "only 2-D (NCHW) inputs are supported here, got shape {:?}",
            ctx.shape(x)?
        ))),
    }
}

/// An INTS attribute of length `len`, or `default` repeated.
fn ints_attr(
    ctx: &NodeCtx<'_>,
    name: &str,
    len: usize,
    default: i64,
) -> Result<Vec<i64>, OnnxError> {
    match ctx.attr_ints(name)? {
        None => Ok(vec![default; len]),
        Some(v) if v.len() == len => Ok(v),
        Some(v) => Err(ctx.err(format!(
            "attribute '{name}' has {} values, expected {len}",
            v.len()
        ))),
    }
}

/// Reads `strides`, `dilations`, `pads`/`auto_pad` for a window of `kernel` over `input` (one
/// size per spatial dimension).
pub(super) fn window(
    ctx: &NodeCtx<'_>,
    input: &[usize],
    kernel: Vec<i64>,
) -> Result<Window, OnnxError> {
    let r = input.len();
    let strides = ints_attr(ctx, "strides", r, 1)?;
    let dilations = ints_attr(ctx, "dilations", r, 1)?;
    if strides.iter().chain(&dilations).any(|&v| v < 1) {
        return Err(ctx.err(format!(
            "strides {strides:?} and dilations {dilations:?} must be positive"
        )));
    }
    let auto_pad = ctx.str_or("auto_pad", "NOTSET")?;
    let pads = match auto_pad.as_str() {
        "NOTSET" => ints_attr(ctx, "pads", 2 * r, 0)?,
        "VALID" => vec![0; 2 * r],
        "SAME_UPPER" | "SAME_LOWER" => {
            let mut pads = vec![0; 2 * r];
            for i in 0..r {
                // In i128: no product or sum of these i64 values overflows it.
                let size = input[i] as i128;
                let (stride, k, dilation) = (
                    i128::from(strides[i]),
                    i128::from(kernel[i]),
                    i128::from(dilations[i]),
                );
                let out = (size + stride - 1) / stride;
                let extent = (k - 1) * dilation + 1;
                let total = ((out - 1) * stride + extent - size).max(0);
                let (begin, end) = split_padding(&auto_pad, total);
                pads[i] = pad_i64(ctx, begin)?;
                pads[i + r] = pad_i64(ctx, end)?;
            }
            pads
        }
        other => return Err(ctx.err(format!("unknown auto_pad '{other}'"))),
    };
    if pads.iter().any(|&p| p < 0) {
        return Err(ctx.err(format!("negative pads {pads:?} are not supported")));
    }
    Ok(Window {
        kernel,
        strides,
        dilations,
        pads,
    })
}

/// A total padding split between begin and end: the odd pixel goes to the end for
/// `SAME_UPPER`, to the beginning otherwise.
fn split_padding(auto_pad: &str, total: i128) -> (i128, i128) {
    let half = total / 2;
    if auto_pad == "SAME_UPPER" {
        (half, total - half)
    } else {
        (total - half, half)
    }
}

/// A padding computed in `i128` as an attribute integer; an error naming it when it does
/// not fit an `i64`.
fn pad_i64(ctx: &NodeCtx<'_>, pad: i128) -> Result<i64, OnnxError> {
    i64::try_from(pad).map_err(|_| {
        ctx.err(format!(
            "the padding auto_pad asks for ({pad}) does not fit a 64-bit integer"
        ))
    })
}

/// The kernel's spatial size: the `kernel_shape` attribute or the weight's dims after the
/// first two, `rank` of them.
pub(super) fn kernel_shape(
    ctx: &NodeCtx<'_>,
    weight: &[usize],
    rank: usize,
) -> Result<Vec<i64>, OnnxError> {
    if weight.len() != rank + 2 {
        return Err(ctx.err(format!(
            "weight shape {weight:?} is not {}-D for {rank}-D data",
            rank + 2
        )));
    }
    match ctx.attr_ints("kernel_shape")? {
        Some(k) if k.len() == rank => Ok(k),
        Some(k) => Err(ctx.err(format!("kernel_shape {k:?} is not {rank}-D"))),
        None => ctx.dims_i64(&weight[2..]),
    }
}

/// Adds the optional bias input `i` along the channel axis.
fn bias(ctx: &mut NodeCtx<'_>, y: ExprId, i: usize) -> Result<ExprId, OnnxError> {
    match ctx.opt_input(i) {
        Some(b) => ctx.call("nn.bias_add", &[y, b], Attrs::new().with("axis", 1i64)),
        None => Ok(y),
    }
}

/// `x` with an axis 2 of length 1 when it is 1-D data (or a 1-D weight), so that a 2-D op
/// takes it.
fn lift(ctx: &mut NodeCtx<'_>, x: ExprId, rank: usize) -> Result<ExprId, OnnxError> {
    if rank != 1 {
        return Ok(x);
    }
    ctx.call(
        "expand_dims",
        &[x],
        Attrs::new().with("axis", 2i64).with("num_newaxis", 1i64),
    )
}

/// The 2-D result `y` of a lifted 1-D op with its height axis squeezed out.
fn lower(ctx: &mut NodeCtx<'_>, y: ExprId, rank: usize) -> Result<ExprId, OnnxError> {
    if rank != 1 {
        return Ok(y);
    }
    ctx.call("squeeze", &[y], Attrs::new().with("axis", vec![2i64]))
}

/// `Conv` (1-D and 2-D): `nn.conv2d` plus `nn.bias_add` when a bias is given.
pub(super) fn conv(ctx: &mut NodeCtx<'_>) -> Out {
    let (x, w) = (ctx.input(0)?, ctx.input(1)?);
    let input = spatial(ctx, x)?;
    let r = input.len();
    let wshape = ctx.shape(w)?;
    let kernel = kernel_shape(ctx, &wshape, r)?;
    let win = window(ctx, &input, kernel)?.lifted();
    let groups = ctx.int_or("group", 1)?;
    let attrs = win
        .attrs("kernel_size", "dilation")
        .with("groups", groups)
        .with("channels", ctx.dim_i64(wshape[0])?);
    let (x, w) = (lift(ctx, x, r)?, lift(ctx, w, r)?);
    let y = ctx.call("nn.conv2d", &[x, w], attrs)?;
    let y = bias(ctx, y, 2)?;
    one(lower(ctx, y, r)?)
}

/// `ConvTranspose` (1-D and 2-D): `nn.conv2d_transpose` with the ONNX weight layout (`IOHW`),
/// padding resolved from `output_shape` / `auto_pad` as ONNX specifies.
pub(super) fn conv_transpose(ctx: &mut NodeCtx<'_>) -> Out {
    let (x, w) = (ctx.input(0)?, ctx.input(1)?);
    let input = spatial(ctx, x)?;
    let r = input.len();
    let wshape = ctx.shape(w)?;
    let kernel = kernel_shape(ctx, &wshape, r)?;
    let groups = ctx.int_or("group", 1)?;
    let strides = ints_attr(ctx, "strides", r, 1)?;
    let dilations = ints_attr(ctx, "dilations", r, 1)?;
    let output_padding = ints_attr(ctx, "output_padding", r, 0)?;
    let auto_pad = ctx.str_or("auto_pad", "NOTSET")?;
    let output_shape: Option<Vec<i128>> = match ctx.attr_ints("output_shape")? {
        Some(s) => Some(
            s[s.len().saturating_sub(r)..]
                .iter()
                .map(|&d| i128::from(d))
                .collect(),
        ),
        None if auto_pad.starts_with("SAME") => Some(
            (0..r)
                .map(|i| input[i] as i128 * i128::from(strides[i]))
                .collect(),
        ),
        None => None,
    };
    let pads = match (output_shape, auto_pad.as_str()) {
        (_, "VALID") => vec![0; 2 * r],
        (Some(out), _) if out.len() == r => {
            let mut pads = vec![0; 2 * r];
            for i in 0..r {
                // In i128: no product or sum of these i64 values overflows it.
                let total = i128::from(strides[i]) * (input[i] as i128 - 1)
                    + i128::from(output_padding[i])
                    + (i128::from(kernel[i]) - 1) * i128::from(dilations[i])
                    + 1
                    - out[i];
                let (begin, end) = split_padding(&auto_pad, total);
                pads[i] = pad_i64(ctx, begin)?;
                pads[i + r] = pad_i64(ctx, end)?;
            }
            pads
        }
        (Some(out), _) => return Err(ctx.err(format!("output_shape {out:?} is not {r}-D"))),
        (None, _) => ints_attr(ctx, "pads", 2 * r, 0)?,
    };
    if pads.iter().any(|&p| p < 0) {
        return Err(ctx.err(format!(
            "the requested output shape needs negative padding {pads:?}"
        )));
    }
    let channels = ctx
        .dim_i64(wshape.get(1).copied().unwrap_or(0))?
        .checked_mul(groups)
        .ok_or_else(|| ctx.err(format!("group {groups} is too large")))?;
    let win = Window {
        kernel,
        strides,
        dilations,
        pads,
    }
    .lifted();
    let output_padding = if r == 1 {
        vec![0, output_padding[0]]
    } else {
        output_padding
    };
    let attrs = win
        .attrs("kernel_size", "dilation")
        .with("output_padding", output_padding)
        .with("groups", groups)
        .with("channels", channels)
        .with("kernel_layout", "IOHW");
    let (x, w) = (lift(ctx, x, r)?, lift(ctx, w, r)?);
    let y = ctx.call("nn.conv2d_transpose", &[x, w], attrs)?;
    let y = bias(ctx, y, 2)?;
    one(lower(ctx, y, r)?)
}

/// `LayerNormalization(axis=-1, epsilon=1e-5)` (opset 17): normalizes over the axes from
/// `axis` to the last, then scales and shifts by `Scale` and the optional `B`, which broadcast
/// to the normalized shape. `nn.layer_norm` normalizes over one axis, so the normalized axes
/// are seen as one; a scale or shift that holds one value per normalized element is its
/// `gamma`/`beta`, one that broadcasts within them is applied after it. The optional `Mean`
/// and `InvStdDev` outputs are not computed.
pub(super) fn layer_norm(ctx: &mut NodeCtx<'_>) -> Out {
    let x = ctx.input(0)?;
    let t = ctx.tensor_ty(x)?;
    let rank = t.rank();
    let (axis, epsilon) = norm_axis_epsilon(ctx, rank)?;
    let normalized = &t.shape[axis..];
    let inner: usize = normalized.iter().product();
    let mut flat = t.shape[..axis].to_vec();
    flat.push(inner);
    // gamma / beta as nn.layer_norm takes them, or the parameter to apply after it.
    let mut params = Vec::with_capacity(2);
    let mut after = Vec::with_capacity(2);
    for (i, (name, fill)) in [("Scale", 1.0), ("B", 0.0)].into_iter().enumerate() {
        let Some(p) = ctx.opt_input(i + 1) else {
            if i == 0 {
                return Err(ctx.err("required input 1 (Scale) is missing"));
            }
            params.push(filled(ctx, t.dtype, inner, fill)?);
            continue;
        };
        let ps = ctx.shape(p)?;
        if param_is_full(ctx, name, &ps, normalized)? {
            let newshape = ctx.dims_i64(&[inner])?;
            params.push(ctx.call("reshape", &[p], Attrs::new().with("newshape", newshape))?);
        } else {
            params.push(filled(ctx, t.dtype, inner, fill)?);
            after.push((if i == 0 { "multiply" } else { "add" }, p));
        }
    }
    let xf = if axis + 1 == rank {
        x
    } else {
        let newshape = ctx.dims_i64(&flat)?;
        ctx.call("reshape", &[x], Attrs::new().with("newshape", newshape))?
    };
    let attrs = Attrs::new().with("axis", -1i64).with("epsilon", epsilon);
    let mut y = ctx.call("nn.layer_norm", &[xf, params[0], params[1]], attrs)?;
    if axis + 1 != rank {
        let back = ctx.dims_i64(&t.shape)?;
        y = ctx.call("reshape", &[y], Attrs::new().with("newshape", back))?;
    }
    for (op, p) in after {
        y = ctx.call(op, &[y, p], Attrs::new())?;
    }
    one(y)
}

/// The `axis` (default -1) and `epsilon` (default 1e-5) of a normalization over the axes from
/// `axis` to the last of a rank-`rank` input; errors for a scalar input and a negative epsilon.
pub(super) fn norm_axis_epsilon(ctx: &NodeCtx<'_>, rank: usize) -> Result<(usize, f64), OnnxError> {
    if rank == 0 {
        return Err(ctx.err("requires an input of rank 1 or more, got a scalar"));
    }
    let axis = ctx.axis(ctx.int_or("axis", -1)?, rank)?;
    let epsilon = ctx.float_or("epsilon", 1e-5)?;
    if epsilon < 0.0 {
        return Err(ctx.err(format!(
            "attribute 'epsilon' is {epsilon}; it must not be negative"
        )));
    }
    Ok((axis, epsilon))
}

/// `nn.layer_norm` of `x` over its last axis with `gamma`, and `beta` or no shift.
pub(super) fn layer_norm_last(
    ctx: &mut NodeCtx<'_>,
    x: ExprId,
    gamma: ExprId,
    beta: Option<ExprId>,
    epsilon: f64,
) -> Result<ExprId, OnnxError> {
    let t = ctx.tensor_ty(x)?;
    let beta = match beta {
        Some(b) => b,
        None => filled(ctx, t.dtype, t.shape.last().copied().unwrap_or(0), 0.0)?,
    };
    let attrs = Attrs::new().with("axis", -1i64).with("epsilon", epsilon);
    ctx.call("nn.layer_norm", &[x, gamma, beta], attrs)
}

/// A 1-D constant of `len` copies of `value`.
fn filled(
    ctx: &mut NodeCtx<'_>,
    dtype: byoc_ir::DType,
    len: usize,
    value: f64,
) -> Result<ExprId, OnnxError> {
    let t = Tensor::full(TensorType::new(vec![len], dtype), value)
        .map_err(|e| ctx.err(e.to_string()))?;
    Ok(ctx.constant(t))
}

/// Whether a `LayerNormalization` parameter of shape `p` holds one value per element of the
/// `normalized` shape (true) or broadcasts within it (false); an error when it does not
/// broadcast to it.
fn param_is_full(
    ctx: &NodeCtx<'_>,
    name: &str,
    p: &[usize],
    normalized: &[usize],
) -> Result<bool, OnnxError> {
    let extra = p.len().saturating_sub(normalized.len());
    let fits = p[..extra].iter().all(|&d| d == 1);
    let p = &p[extra..];
    let dims = &normalized[normalized.len() - p.len()..];
    if !fits || p.iter().zip(dims).any(|(&a, &b)| a != b && a != 1) {
        return Err(ctx.err(format!(
            "{name} of shape {p:?} does not broadcast to the normalized shape {normalized:?}"
        )));
    }
    Ok(p.iter().product::<usize>() == normalized.iter().product::<usize>())
}

/// `BatchNormalization` (inference): field 0 of `nn.batch_norm`.
pub(super) fn batch_norm(ctx: &mut NodeCtx<'_>) -> Out {
    if ctx.flag_or("training_mode", false)? {
        return Err(ctx.err("training_mode=1 is not supported (inference only)"));
    }
    let args = (0..5)
        .map(|i| ctx.input(i))
        .collect::<Result<Vec<_>, _>>()?;
    let epsilon = ctx.float_or("epsilon", 1e-5)?;
    let bn = ctx.call(
        "nn.batch_norm",
        &args,
        Attrs::new().with("axis", 1i64).with("epsilon", epsilon),
    )?;
    one(ctx.tuple_get_item(bn, 0)?)
}

/// `LRN(size, alpha=1e-4, beta=0.75, bias=1)` across channels.
pub(super) fn lrn(ctx: &mut NodeCtx<'_>) -> Out {
    let x = ctx.input(0)?;
    let size = ctx
        .attr_int("size")?
        .ok_or_else(|| ctx.err("attribute 'size' is required"))?;
    let attrs = Attrs::new()
        .with("size", size)
        .with("axis", 1i64)
        .with("alpha", ctx.float_or("alpha", 1e-4)?)
        .with("beta", ctx.float_or("beta", 0.75)?)
        .with("bias", ctx.float_or("bias", 1.0)?);
    one(ctx.call("nn.lrn", &[x], attrs)?)
}

/// The pooling window of a `MaxPool` / `AveragePool` node over 1-D or 2-D data, lifted to
/// 2-D, and the data's spatial rank.
fn pool_window(ctx: &NodeCtx<'_>, x: ExprId) -> Result<(Window, usize), OnnxError> {
    let input = spatial(ctx, x)?;
    let r = input.len();
    let kernel = match ctx.attr_ints("kernel_shape")? {
        Some(k) if k.len() == r && k.iter().all(|&v| v > 0) => k,
        Some(k) => return Err(ctx.err(format!("kernel_shape {k:?} is not a {r}-D window"))),
        None => return Err(ctx.err("attribute 'kernel_shape' is required")),
    };
    Ok((window(ctx, &input, kernel)?.lifted(), r))
}

/// A pooling op `op` with the window attributes and `extra` ones, lifted for 1-D data.
fn pool(ctx: &mut NodeCtx<'_>, op: &str, extra: Attrs) -> Out {
    let x = ctx.input(0)?;
    let (win, r) = pool_window(ctx, x)?;
    let mut attrs = win
        .attrs("pool_size", "dilation")
        .with("ceil_mode", ctx.flag_or("ceil_mode", false)?);
    for (name, value) in extra.iter() {
        attrs = attrs.with(name, value.clone());
    }
    let x = lift(ctx, x, r)?;
    let y = ctx.call(op, &[x], attrs)?;
    one(lower(ctx, y, r)?)
}

/// `MaxPool` (1-D and 2-D, without the `Indices` output).
pub(super) fn max_pool(ctx: &mut NodeCtx<'_>) -> Out {
    pool(ctx, "nn.max_pool2d", Attrs::new())
}

/// `AveragePool` (1-D and 2-D), `count_include_pad` passed through.
pub(super) fn avg_pool(ctx: &mut NodeCtx<'_>) -> Out {
    let count = ctx.flag_or("count_include_pad", false)?;
    pool(
        ctx,
        "nn.avg_pool2d",
        Attrs::new().with("count_include_pad", count),
    )
}

fn global_pool(ctx: &mut NodeCtx<'_>, op: &str) -> Out {
    let x = ctx.input(0)?;
    let r = spatial(ctx, x)?.len();
    let x = lift(ctx, x, r)?;
    let y = ctx.call(op, &[x], Attrs::new())?;
    one(lower(ctx, y, r)?)
}

/// `GlobalAveragePool` (1-D and 2-D).
pub(super) fn global_avg_pool(ctx: &mut NodeCtx<'_>) -> Out {
    global_pool(ctx, "nn.global_avg_pool2d")
}

/// `GlobalMaxPool` (1-D and 2-D).
pub(super) fn global_max_pool(ctx: &mut NodeCtx<'_>) -> Out {
    global_pool(ctx, "nn.global_max_pool2d")
}

/// `Softmax`/`LogSoftmax`. From opset 13 the op normalizes along `axis` (default -1); before,
/// the input is coerced to 2-D at `axis` (default 1) and normalized along the second dim.
fn softmax_like(ctx: &mut NodeCtx<'_>, op: &str) -> Out {
    let x = ctx.input(0)?;
    let shape = ctx.shape(x)?;
    let rank = shape.len();
    if ctx.opset() >= 13 {
        let axis = ctx.int_or("axis", -1)?;
        let axis = ctx.axis(axis, rank)? as i64;
        return one(ctx.call(op, &[x], Attrs::new().with("axis", axis))?);
    }
    let axis = ctx.int_or("axis", 1)?;
    let axis = if rank == 0 { 0 } else { ctx.axis(axis, rank)? };
    if axis + 1 >= rank {
        return one(ctx.call(op, &[x], Attrs::new().with("axis", -1i64))?);
    }
    let outer: usize = shape[..axis].iter().product();
    let inner: usize = shape[axis..].iter().product();
    let flat = ctx.call(
        "reshape",
        &[x],
        Attrs::new().with("newshape", ctx.dims_i64(&[outer, inner])?),
    )?;
    let y = ctx.call(op, &[flat], Attrs::new().with("axis", 1i64))?;
    let back = ctx.dims_i64(&shape)?;
    one(ctx.call("reshape", &[y], Attrs::new().with("newshape", back))?)
}

/// `Softmax`.
pub(super) fn softmax(ctx: &mut NodeCtx<'_>) -> Out {
    softmax_like(ctx, "nn.softmax")
}

/// `LogSoftmax`.
pub(super) fn log_softmax(ctx: &mut NodeCtx<'_>) -> Out {
    softmax_like(ctx, "nn.log_softmax")
}
