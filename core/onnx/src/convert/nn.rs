//! Neural-network ops: convolutions, pooling, normalization, softmax.
//!
//! Only 2-D spatial ops (NCHW inputs) are mapped; ONNX `pads` `[x1_begin, x2_begin, x1_end,
//! x2_end]` is Relay's `padding` `[top, left, bottom, right]` as is. `auto_pad` is resolved here
//! from the static input shape, as ONNX defines it.

use super::one;
use crate::ctx::NodeCtx;
use crate::OnnxError;
use byoc_ir::{Attrs, ExprId};

type Out = Result<Vec<ExprId>, OnnxError>;

/// The spatial window attributes shared by convolutions and pooling.
pub(super) struct Window {
    pub kernel: Vec<i64>,
    pub strides: Vec<i64>,
    pub dilations: Vec<i64>,
    /// `[top, left, bottom, right]`.
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
}

/// Checks that `x` is a rank-4 NCHW tensor and returns its spatial dims.
pub(super) fn spatial_2d(ctx: &NodeCtx<'_>, x: ExprId) -> Result<[usize; 2], OnnxError> {
    let shape = ctx.shape(x)?;
    match shape.as_slice() {
        [_, _, h, w] => Ok([*h, *w]),
        _ => Err(ctx.err(format!(
            "only 2-D (NCHW) inputs are supported, got shape {shape:?}"
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

/// Reads `strides`, `dilations`, `pads`/`auto_pad` for a window of `kernel` over `input`.
pub(super) fn window(
    ctx: &NodeCtx<'_>,
    input: [usize; 2],
    kernel: Vec<i64>,
) -> Result<Window, OnnxError> {
    let strides = ints_attr(ctx, "strides", 2, 1)?;
    let dilations = ints_attr(ctx, "dilations", 2, 1)?;
    if strides.iter().chain(&dilations).any(|&v| v < 1) {
        return Err(ctx.err(format!(
            "strides {strides:?} and dilations {dilations:?} must be positive"
        )));
    }
    let auto_pad = ctx.str_or("auto_pad", "NOTSET")?;
    let pads = match auto_pad.as_str() {
        "NOTSET" => ints_attr(ctx, "pads", 4, 0)?,
        "VALID" => vec![0; 4],
        "SAME_UPPER" | "SAME_LOWER" => {
            let mut pads = vec![0; 4];
            for i in 0..2 {
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
                pads[i + 2] = pad_i64(ctx, end)?;
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

/// The kernel's spatial size: the `kernel_shape` attribute or the weight's last two dims.
pub(super) fn kernel_shape(ctx: &NodeCtx<'_>, weight: &[usize]) -> Result<Vec<i64>, OnnxError> {
    match ctx.attr_ints("kernel_shape")? {
        Some(k) if k.len() == 2 => Ok(k),
        Some(k) => Err(ctx.err(format!("kernel_shape {k:?} is not 2-D"))),
        None => match weight {
            [_, _, h, w] => Ok(vec![ctx.dim_i64(*h)?, ctx.dim_i64(*w)?]),
            _ => Err(ctx.err(format!("weight shape {weight:?} is not 4-D"))),
        },
    }
}

/// Adds the optional bias input `i` along the channel axis.
fn bias(ctx: &mut NodeCtx<'_>, y: ExprId, i: usize) -> Result<ExprId, OnnxError> {
    match ctx.opt_input(i) {
        Some(b) => ctx.call("nn.bias_add", &[y, b], Attrs::new().with("axis", 1i64)),
        None => Ok(y),
    }
}

/// `Conv` (2-D): `nn.conv2d` plus `nn.bias_add` when a bias is given.
pub(super) fn conv(ctx: &mut NodeCtx<'_>) -> Out {
    let (x, w) = (ctx.input(0)?, ctx.input(1)?);
    let input = spatial_2d(ctx, x)?;
    let wshape = ctx.shape(w)?;
    let kernel = kernel_shape(ctx, &wshape)?;
    let win = window(ctx, input, kernel)?;
    let groups = ctx.int_or("group", 1)?;
    let attrs = win
        .attrs("kernel_size", "dilation")
        .with("groups", groups)
        .with("channels", ctx.dim_i64(wshape[0])?);
    let y = ctx.call("nn.conv2d", &[x, w], attrs)?;
    one(bias(ctx, y, 2)?)
}

/// `ConvTranspose` (2-D): `nn.conv2d_transpose` with the ONNX weight layout (`IOHW`), padding
/// resolved from `output_shape` / `auto_pad` as ONNX specifies.
pub(super) fn conv_transpose(ctx: &mut NodeCtx<'_>) -> Out {
    let (x, w) = (ctx.input(0)?, ctx.input(1)?);
    let input = spatial_2d(ctx, x)?;
    let wshape = ctx.shape(w)?;
    let kernel = kernel_shape(ctx, &wshape)?;
    let groups = ctx.int_or("group", 1)?;
    let strides = ints_attr(ctx, "strides", 2, 1)?;
    let dilations = ints_attr(ctx, "dilations", 2, 1)?;
    let output_padding = ints_attr(ctx, "output_padding", 2, 0)?;
    let auto_pad = ctx.str_or("auto_pad", "NOTSET")?;
    let output_shape: Option<Vec<i128>> = match ctx.attr_ints("output_shape")? {
        Some(s) => Some(
            s[s.len().saturating_sub(2)..]
                .iter()
                .map(|&d| i128::from(d))
                .collect(),
        ),
        None if auto_pad.starts_with("SAME") => Some(
            (0..2)
                .map(|i| input[i] as i128 * i128::from(strides[i]))
                .collect(),
        ),
        None => None,
    };
    let pads = match (output_shape, auto_pad.as_str()) {
        (_, "VALID") => vec![0; 4],
        (Some(out), _) if out.len() == 2 => {
            let mut pads = vec![0; 4];
            for i in 0..2 {
                // In i128: no product or sum of these i64 values overflows it.
                let total = i128::from(strides[i]) * (input[i] as i128 - 1)
                    + i128::from(output_padding[i])
                    + (i128::from(kernel[i]) - 1) * i128::from(dilations[i])
                    + 1
                    - out[i];
                let (begin, end) = split_padding(&auto_pad, total);
                pads[i] = pad_i64(ctx, begin)?;
                pads[i + 2] = pad_i64(ctx, end)?;
            }
            pads
        }
        (Some(out), _) => return Err(ctx.err(format!("output_shape {out:?} is not 2-D"))),
        (None, _) => ints_attr(ctx, "pads", 4, 0)?,
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
    let attrs = Attrs::new()
        .with("kernel_size", kernel)
        .with("strides", strides)
        .with("dilation", dilations)
        .with("padding", pads)
        .with("output_padding", output_padding)
        .with("groups", groups)
        .with("channels", channels)
        .with("kernel_layout", "IOHW");
    let y = ctx.call("nn.conv2d_transpose", &[x, w], attrs)?;
    one(bias(ctx, y, 2)?)
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

/// The pooling window of a `MaxPool` / `AveragePool` node.
fn pool_window(ctx: &NodeCtx<'_>, x: ExprId) -> Result<Window, OnnxError> {
    let input = spatial_2d(ctx, x)?;
    let kernel = match ctx.attr_ints("kernel_shape")? {
        Some(k) if k.len() == 2 && k.iter().all(|&v| v > 0) => k,
        Some(k) => return Err(ctx.err(format!("kernel_shape {k:?} is not a 2-D window"))),
        None => return Err(ctx.err("attribute 'kernel_shape' is required")),
    };
    window(ctx, input, kernel)
}

/// `MaxPool` (2-D, without the `Indices` output).
pub(super) fn max_pool(ctx: &mut NodeCtx<'_>) -> Out {
    let x = ctx.input(0)?;
    let win = pool_window(ctx, x)?;
    let attrs = win
        .attrs("pool_size", "dilation")
        .with("ceil_mode", ctx.flag_or("ceil_mode", false)?);
    one(ctx.call("nn.max_pool2d", &[x], attrs)?)
}

/// `AveragePool` (2-D), `count_include_pad` passed through.
pub(super) fn avg_pool(ctx: &mut NodeCtx<'_>) -> Out {
    let x = ctx.input(0)?;
    let win = pool_window(ctx, x)?;
    let attrs = win
        .attrs("pool_size", "dilation")
        .with("ceil_mode", ctx.flag_or("ceil_mode", false)?)
        .with(
            "count_include_pad",
            ctx.flag_or("count_include_pad", false)?,
        );
    one(ctx.call("nn.avg_pool2d", &[x], attrs)?)
}

fn global_pool(ctx: &mut NodeCtx<'_>, op: &str) -> Out {
    let x = ctx.input(0)?;
    spatial_2d(ctx, x)?;
    one(ctx.call(op, &[x], Attrs::new())?)
}

/// `GlobalAveragePool` (2-D).
pub(super) fn global_avg_pool(ctx: &mut NodeCtx<'_>) -> Out {
    global_pool(ctx, "nn.global_avg_pool2d")
}

/// `GlobalMaxPool` (2-D).
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
