//! Quantized ops onto byoc's integer form: `QuantizeLinear`, `DequantizeLinear`,
//! `QLinearConv`, `QLinearMatMul`, `ConvInteger`, `MatMulInteger`, and the
//! `DequantizeLinear` → `Conv`/`MatMul` → `QuantizeLinear` groups of a QDQ model (fused into one
//! node by [`crate::qdq`] before conversion).
//!
//! - **Quantize**: `cast(clip(add(round(divide(x, scale)), zp), qmin, qmax), dtype)`, rounding
//!   half to even as ONNX specifies.
//! - **Dequantize**: `multiply(subtract(cast(x, float32), zp), scale)`.
//! - **Integer conv / matmul**: `nn.conv2d` / `nn.dense` on the int8/uint8 operands with
//!   `out_dtype="int32"`. A constant weight has its zero point subtracted at import (narrowed
//!   back to int8 or uint8 when it fits). A data zero point `zx` is handled outside the product:
//!   the data is padded with `zx` (`nn.pad`, so padding means a real zero) and `zx * sum(w)`
//!   per output channel is subtracted with the bias. Operands that fit neither way (a weight
//!   computed at run time, or `w - zw` outside 8 bits) are widened to int32 with their zero
//!   points subtracted, and multiplied in int32.
//! - **Requantization** to the output's scale: the real factor `x_scale * w_scale / y_scale`
//!   (computed in float32, as onnxruntime does) is held exactly as a Q31 multiplier and a shift
//!   (a float32 has 24 significant bits) and applied with `fixed_point_multiply` (or
//!   `fixed_point_multiply_per_axis` for per-channel weight scales), then the output zero point
//!   is added and the result saturated. onnxruntime multiplies in float32 and rounds half to
//!   even; the integer path rounds the exact product half up, so the two differ by at most one
//!   quantization step, and only where the product lies within float32 rounding of a half.
//!
//! Scales and zero points must be constants. Every parameter is checked and refused with the
//! node and input named: a missing or non-float32 scale, a scale that is zero, negative or not
//! finite, a per-axis length that is not the axis' extent, a zero point of another type than its
//! operand or outside int8/uint8/int32.

use super::matmul::matmul_values;
use super::nn::{kernel_shape, spatial_2d, window};
use super::one;
use crate::ctx::NodeCtx;
use crate::tensor_proto::dtype_of;
use crate::OnnxError;
use byoc_ir::tensor::Tensor;
use byoc_ir::{AttrValue, Attrs, DType, ExprId, TensorType};

type Out = Result<Vec<ExprId>, OnnxError>;

/// The checked quantization parameters of one operand.
struct QParams {
    /// One scale, or one per index of the quantized axis.
    scale: Vec<f32>,
    /// The zero points, as many as scales (zeros when the input is omitted).
    zero: Vec<i64>,
    /// The dtype the zero point declares (`None` when it is omitted).
    dtype: Option<DType>,
}

/// The inclusive value range of a quantized dtype.
fn range(dtype: DType) -> Option<(i64, i64)> {
    match dtype {
        DType::Int8 => Some((-128, 127)),
        DType::UInt8 => Some((0, 255)),
        DType::Int32 => Some((i32::MIN.into(), i32::MAX.into())),
        _ => None,
    }
}

/// `input i ('name')`, for messages.
fn input_name(ctx: &NodeCtx<'_>, i: usize) -> String {
    match ctx.node.input.get(i).map(String::as_str) {
        None | Some("") => format!("input {i}"),
        Some(name) => format!("input {i} ('{name}')"),
    }
}

/// Checks the number of per-axis values `n` of input `i`: one, or `len` when per-axis values
/// are allowed (`len` is the quantized axis' extent).
fn check_len(ctx: &NodeCtx<'_>, i: usize, n: usize, len: Option<usize>) -> Result<(), OnnxError> {
    match len {
        _ if n == 0 => Err(ctx.err(format!("{} holds no values", input_name(ctx, i)))),
        _ if n == 1 => Ok(()),
        Some(len) if n == len => Ok(()),
        Some(len) => Err(ctx.err(format!(
            "{} has {n} values, but the quantized axis has {len} (one value, or one per index)",
            input_name(ctx, i)
        ))),
        None => Err(ctx.err(format!(
            "{} has {n} values; only one (per-tensor) is supported here",
            input_name(ctx, i)
        ))),
    }
}

/// Zero-point input `i` of an operand of dtype `operand` (`[0]` when omitted).
fn zero_points(
    ctx: &NodeCtx<'_>,
    i: usize,
    operand: DType,
    len: Option<usize>,
) -> Result<(Vec<i64>, Option<DType>), OnnxError> {
    let Some(t) = ctx.const_input(i)? else {
        return Ok((vec![0], None));
    };
    let dtype = t.dtype();
    if range(dtype).is_none() {
        return Err(ctx.err(format!(
            "{}: unsupported zero-point type {dtype} (int8, uint8 or int32)",
            input_name(ctx, i)
        )));
    }
    if dtype != operand && operand != DType::Float32 {
        return Err(ctx.err(format!(
            "{}: the zero point is {dtype} but its operand is {operand}",
            input_name(ctx, i)
        )));
    }
    if t.shape().len() > 1 {
        return Err(ctx.err(format!(
            "{}: a zero point must be a scalar or a vector, got shape {:?}",
            input_name(ctx, i),
            t.shape()
        )));
    }
    let values = crate::ctx::tensor_ints(&t).unwrap_or_default();
    check_len(ctx, i, values.len(), len)?;
    Ok((values, Some(dtype)))
}

/// Scale input `si` and zero-point input `zi` of an operand of dtype `operand` (float32 for
/// `QuantizeLinear`'s output, whose dtype the zero point decides).
fn qparams(
    ctx: &NodeCtx<'_>,
    (si, zi): (usize, usize),
    operand: DType,
    len: Option<usize>,
) -> Result<QParams, OnnxError> {
    let t = ctx
        .const_input(si)?
        .ok_or_else(|| ctx.err(format!("{} (a scale) is missing", input_name(ctx, si))))?;
    let scale = match t.as_slice::<f32>() {
        Ok(s) if t.dtype() == DType::Float32 && t.shape().len() <= 1 => s.to_vec(),
        _ => {
            return Err(ctx.err(format!(
                "{}: a scale must be a float32 scalar or vector, got {}",
                input_name(ctx, si),
                t.ty()
            )))
        }
    };
    if let Some(s) = scale.iter().find(|s| !(s.is_finite() && **s > 0.0)) {
        return Err(ctx.err(format!(
            "{}: scale {s} must be positive and finite",
            input_name(ctx, si)
        )));
    }
    check_len(ctx, si, scale.len(), len)?;
    let (mut zero, dtype) = zero_points(ctx, zi, operand, len)?;
    if zero.len() == 1 && scale.len() > 1 {
        zero = vec![zero[0]; scale.len()];
    } else if zero.len() != scale.len() {
        return Err(ctx.err(format!(
            "{} has {} values but its scale {} has {}",
            input_name(ctx, zi),
            zero.len(),
            input_name(ctx, si),
            scale.len()
        )));
    }
    Ok(QParams { scale, zero, dtype })
}

/// The dtype of value `id`, required to be int8 or uint8 (input `i` of the node).
fn quantized_dtype(ctx: &NodeCtx<'_>, id: ExprId, i: usize) -> Result<DType, OnnxError> {
    match ctx.tensor_ty(id)?.dtype {
        d @ (DType::Int8 | DType::UInt8) => Ok(d),
        d => Err(ctx.err(format!(
            "{}: expected int8 or uint8, got {d}",
            input_name(ctx, i)
        ))),
    }
}

/// A constant holding `values` (one: a scalar) laid out along an axis followed by `trailing`
/// unit dims, so it broadcasts along that axis.
fn axis_const(
    ctx: &mut NodeCtx<'_>,
    values: &[f64],
    dtype: DType,
    trailing: usize,
) -> Result<ExprId, OnnxError> {
    let shape = if values.len() == 1 {
        vec![]
    } else {
        let mut s = vec![values.len()];
        s.extend(std::iter::repeat_n(1, trailing));
        s
    };
    let t = Tensor::from_f64(TensorType::new(shape, dtype), values)
        .map_err(|e| ctx.err(e.to_string()))?;
    Ok(ctx.constant(t))
}

/// `clip` to `dtype`'s range, then `cast` to it.
fn saturate(ctx: &mut NodeCtx<'_>, y: ExprId, dtype: DType) -> Result<ExprId, OnnxError> {
    let (lo, hi) = range(dtype).ok_or_else(|| ctx.err(format!("cannot saturate to {dtype}")))?;
    let attrs = Attrs::new()
        .with("a_min", lo as f64)
        .with("a_max", hi as f64);
    let y = ctx.call("clip", &[y], attrs)?;
    ctx.call("cast", &[y], Attrs::new().with("dtype", dtype))
}

/// The quantized axis of a `QuantizeLinear`/`DequantizeLinear` input of `shape`: the unit
/// dims after it and its extent; `(0, None)` when the scale is one value (per tensor: `axis`
/// is then ignored, as ONNX specifies) or the input a scalar.
fn quant_axis(ctx: &NodeCtx<'_>, shape: &[usize]) -> Result<(usize, Option<usize>), OnnxError> {
    if ctx.int_or("block_size", 0)? != 0 {
        return Err(ctx.err("blocked quantization (attribute 'block_size') is not supported"));
    }
    let per_axis = ctx
        .const_input(1)?
        .is_some_and(|t| t.shape().iter().product::<usize>() > 1);
    if !per_axis || shape.is_empty() {
        return Ok((0, None));
    }
    let axis = ctx.axis(ctx.int_or("axis", 1)?, shape.len())?;
    Ok((shape.len() - 1 - axis, Some(shape[axis])))
}

/// Refuses an element-type attribute (opset 23's `precision` of `QuantizeLinear`,
/// `output_dtype` of `DequantizeLinear`) other than float32, the type these ops compute in.
fn float32_only(ctx: &NodeCtx<'_>, attr: &str) -> Result<(), OnnxError> {
    match ctx.attr_int(attr)? {
        None | Some(0) | Some(1) => Ok(()),
        Some(code) => Err(ctx.err(format!(
            "attribute '{attr}' is element type {code}; only float32 (1) is supported"
        ))),
    }
}

/// `QuantizeLinear(x, scale, zero_point)`: `saturate(round(x / scale) + zero_point)`.
pub(super) fn quantize_linear(ctx: &mut NodeCtx<'_>) -> Out {
    let x = ctx.input(0)?;
    let ty = ctx.tensor_ty(x)?;
    if ty.dtype != DType::Float32 {
        return Err(ctx.err(format!(
            "{}: quantizing {} is not supported (float32)",
            input_name(ctx, 0),
            ty.dtype
        )));
    }
    float32_only(ctx, "precision")?;
    let (trailing, len) = quant_axis(ctx, &ty.shape)?;
    let q = qparams(ctx, (1, 2), DType::Float32, len)?;
    let dtype = match (q.dtype, ctx.attr_int("output_dtype")?) {
        (Some(d), _) => d,
        (None, Some(code)) => i32::try_from(code)
            .map_err(|_| format!("unknown element type {code}"))
            .and_then(dtype_of)
            .map_err(|e| ctx.err(format!("attribute 'output_dtype': {e}")))?,
        (None, None) => DType::UInt8,
    };
    if !matches!(dtype, DType::Int8 | DType::UInt8) {
        return Err(ctx.err(format!(
            "{}: unsupported zero-point type {dtype}: QuantizeLinear produces int8 or uint8",
            input_name(ctx, 2)
        )));
    }
    let scale: Vec<f64> = q.scale.iter().map(|&s| f64::from(s)).collect();
    let scale = axis_const(ctx, &scale, DType::Float32, trailing)?;
    let mut y = ctx.call("divide", &[x, scale], Attrs::new())?;
    y = ctx.call("round", &[y], Attrs::new())?;
    if q.zero.iter().any(|&z| z != 0) {
        let zero: Vec<f64> = q.zero.iter().map(|&z| z as f64).collect();
        let zero = axis_const(ctx, &zero, DType::Float32, trailing)?;
        y = ctx.call("add", &[y, zero], Attrs::new())?;
    }
    one(saturate(ctx, y, dtype)?)
}

/// `DynamicQuantizeLinear(x)`: uint8 `y`, with the scale and zero point computed from `x`'s
/// range at run time: `scale = (max(x, 0) - min(x, 0)) / 255` (1 when that range is empty,
/// as onnxruntime takes it), `zero_point = saturate(round(-min / scale))`,
/// `y = saturate(round(x / scale) + zero_point)`.
pub(super) fn dynamic_quantize_linear(ctx: &mut NodeCtx<'_>) -> Out {
    let x = ctx.input(0)?;
    let ty = ctx.tensor_ty(x)?;
    if ty.dtype != DType::Float32 {
        return Err(ctx.err(format!("quantizes float32, got {}", ty.dtype)));
    }
    let all = Attrs::new()
        .with("axis", AttrValue::None)
        .with("keepdims", false);
    let zero = ctx.scalar(DType::Float32, 0.0)?;
    let lo = ctx.call("min", &[x], all.clone())?;
    let lo = ctx.call("minimum", &[lo, zero], Attrs::new())?;
    let hi = ctx.call("max", &[x], all)?;
    let hi = ctx.call("maximum", &[hi, zero], Attrs::new())?;
    let span = ctx.call("subtract", &[hi, lo], Attrs::new())?;
    let levels = ctx.scalar(DType::Float32, 255.0)?;
    let scale = ctx.call("divide", &[span, levels], Attrs::new())?;
    let empty = ctx.call("equal", &[span, zero], Attrs::new())?;
    let one_ = ctx.scalar(DType::Float32, 1.0)?;
    let scale = ctx.call("where", &[empty, one_, scale], Attrs::new())?;
    let shift = ctx.call("divide", &[lo, scale], Attrs::new())?;
    let shift = ctx.call("negative", &[shift], Attrs::new())?;
    let shift = ctx.call("round", &[shift], Attrs::new())?;
    let shift = ctx.call(
        "clip",
        &[shift],
        Attrs::new().with("a_min", 0.0).with("a_max", 255.0),
    )?;
    let zero_point = ctx.call("cast", &[shift], Attrs::new().with("dtype", DType::UInt8))?;
    let y = ctx.call("divide", &[x, scale], Attrs::new())?;
    let y = ctx.call("round", &[y], Attrs::new())?;
    let y = ctx.call("add", &[y, shift], Attrs::new())?;
    Ok(vec![saturate(ctx, y, DType::UInt8)?, scale, zero_point])
}

/// `DequantizeLinear(x, scale, zero_point)`: `(x - zero_point) * scale` in float32.
pub(super) fn dequantize_linear(ctx: &mut NodeCtx<'_>) -> Out {
    let x = ctx.input(0)?;
    let ty = ctx.tensor_ty(x)?;
    if range(ty.dtype).is_none() {
        return Err(ctx.err(format!(
            "{}: dequantizing {} is not supported (int8, uint8 or int32)",
            input_name(ctx, 0),
            ty.dtype
        )));
    }
    float32_only(ctx, "output_dtype")?;
    let (trailing, len) = quant_axis(ctx, &ty.shape)?;
    let q = qparams(ctx, (1, 2), ty.dtype, len)?;
    let mut y = ctx.call("cast", &[x], Attrs::new().with("dtype", DType::Float32))?;
    if q.zero.iter().any(|&z| z != 0) {
        let zero: Vec<f64> = q.zero.iter().map(|&z| z as f64).collect();
        let zero = axis_const(ctx, &zero, DType::Float32, trailing)?;
        y = ctx.call("subtract", &[y, zero], Attrs::new())?;
    }
    let scale: Vec<f64> = q.scale.iter().map(|&s| f64::from(s)).collect();
    let scale = axis_const(ctx, &scale, DType::Float32, trailing)?;
    one(ctx.call("multiply", &[y, scale], Attrs::new())?)
}

/// The constant `w` with its zero points (`zero[channel(i)]` for element `i`) subtracted,
/// narrowed to int8 or uint8 when every value fits; `None` when one does not.
fn shifted_weight(
    w: &Tensor,
    zero: &[i64],
    channel: impl Fn(usize) -> usize,
) -> Option<(Tensor, Vec<i64>)> {
    let values = crate::ctx::tensor_ints(w)?;
    let shifted: Vec<i64> = values
        .iter()
        .enumerate()
        .map(|(i, &v)| v - zero[channel(i) % zero.len()])
        .collect();
    let fits = |d| {
        let (lo, hi) = range(d).unwrap_or((0, -1));
        shifted.iter().all(|v| (lo..=hi).contains(v))
    };
    let dtype = [DType::Int8, DType::UInt8].into_iter().find(|&d| fits(d))?;
    let as_f64: Vec<f64> = shifted.iter().map(|&v| v as f64).collect();
    let t = Tensor::from_f64(TensorType::new(w.shape().to_vec(), dtype), &as_f64).ok()?;
    Some((t, shifted))
}

/// `cast(x, int32) - zero` (`zero` laid out along an axis with `trailing` unit dims after it).
fn widen(
    ctx: &mut NodeCtx<'_>,
    x: ExprId,
    zero: &[i64],
    trailing: usize,
) -> Result<ExprId, OnnxError> {
    let y = ctx.call("cast", &[x], Attrs::new().with("dtype", DType::Int32))?;
    if zero.iter().all(|&z| z == 0) {
        return Ok(y);
    }
    let zero: Vec<f64> = zero.iter().map(|&z| z as f64).collect();
    let zero = axis_const(ctx, &zero, DType::Int32, trailing)?;
    ctx.call("subtract", &[y, zero], Attrs::new())
}

/// An integer product and the per-output-channel constant still to be added to it (the data
/// zero point's share; empty when there is none).
struct Accumulator {
    acc: ExprId,
    correction: Vec<i64>,
}

/// `sum((x - x_zero) * (w - w_zero))` over each window of the node's 2-D convolution, int32.
fn integer_conv(
    ctx: &mut NodeCtx<'_>,
    (x, x_zero): (ExprId, i64),
    (w, w_zero): (ExprId, &[i64]),
) -> Result<Accumulator, OnnxError> {
    let x_dtype = quantized_dtype(ctx, x, 0)?;
    let input = spatial_2d(ctx, x)?;
    let wshape = ctx.shape(w)?;
    let kernel = kernel_shape(ctx, &wshape, 2)?;
    let win = window(ctx, &input, kernel)?;
    let channels = wshape[0];
    let attrs = win
        .attrs("kernel_size", "dilation")
        .with("groups", ctx.int_or("group", 1)?)
        .with("channels", ctx.dim_i64(channels)?)
        .with("out_dtype", "int32");
    let per_channel = wshape.iter().skip(1).product::<usize>().max(1);
    let narrow = ctx
        .constant_of(w)
        .and_then(|t| shifted_weight(&t, w_zero, |i| i / per_channel));
    let Some((weight, values)) = narrow else {
        let x = widen(ctx, x, &[x_zero], 0)?;
        let w = widen(ctx, w, w_zero, 3)?;
        let acc = ctx.call("nn.conv2d", &[x, w], attrs)?;
        return Ok(Accumulator {
            acc,
            correction: vec![],
        });
    };
    let weight = ctx.constant(weight);
    if x_zero == 0 {
        let acc = ctx.call("nn.conv2d", &[x, weight], attrs)?;
        return Ok(Accumulator {
            acc,
            correction: vec![],
        });
    }
    let p = &win.pads;
    let data = if p.iter().all(|&v| v == 0) {
        x
    } else {
        let width = AttrValue::List(
            [[0, 0], [0, 0], [p[0], p[2]], [p[1], p[3]]]
                .into_iter()
                .map(|w| AttrValue::ints(w.to_vec()))
                .collect(),
        );
        let value = ctx.scalar(x_dtype, x_zero as f64)?;
        let attrs = Attrs::new()
            .with("pad_width", width)
            .with("pad_mode", "constant");
        ctx.call("nn.pad", &[x, value], attrs)?
    };
    let acc = ctx.call(
        "nn.conv2d",
        &[data, weight],
        attrs.with("padding", vec![0i64; 4]),
    )?;
    let correction = values
        .chunks(per_channel)
        .map(|c| -x_zero * c.iter().sum::<i64>())
        .collect();
    Ok(Accumulator { acc, correction })
}

/// `sum_k (a - a_zero) * (b - b_zero)` with `MatMul`'s shapes, int32 (`b_zero` per column).
fn integer_matmul(
    ctx: &mut NodeCtx<'_>,
    (a, a_zero): (ExprId, i64),
    (b, b_zero): (ExprId, &[i64]),
    b_index: usize,
) -> Result<Accumulator, OnnxError> {
    quantized_dtype(ctx, a, 0)?;
    quantized_dtype(ctx, b, b_index)?;
    let bshape = ctx.shape(b)?;
    let int32 = || Attrs::new().with("out_dtype", "int32");
    let narrow = match (ctx.constant_of(b), bshape.as_slice()) {
        (Some(t), &[_, n]) => shifted_weight(&t, b_zero, |i| i % n).map(|w| (w, n)),
        _ => None,
    };
    let Some(((weight, values), n)) = narrow else {
        let a = widen(ctx, a, &[a_zero], 0)?;
        let b = widen(ctx, b, b_zero, 0)?;
        let acc = matmul_values(ctx, a, b, int32())?;
        return Ok(Accumulator {
            acc,
            correction: vec![],
        });
    };
    let weight = ctx.constant(weight);
    let acc = matmul_values(ctx, a, weight, int32())?;
    let correction = if a_zero == 0 {
        vec![]
    } else {
        (0..n)
            .map(|j| -a_zero * values.iter().skip(j).step_by(n).sum::<i64>())
            .collect()
    };
    Ok(Accumulator { acc, correction })
}

/// `acc + bias` with `bias` (one value per channel; empty or all zero: nothing) laid out along
/// the channel axis with `trailing` unit dims after it.
fn add_bias(
    ctx: &mut NodeCtx<'_>,
    acc: ExprId,
    bias: &[i64],
    trailing: usize,
) -> Result<ExprId, OnnxError> {
    if bias.iter().all(|&b| b == 0) {
        return Ok(acc);
    }
    if let Some(b) = bias.iter().find(|&&b| i32::try_from(b).is_err()) {
        return Err(ctx.err(format!(
            "the bias with the data zero point's share ({b}) does not fit in int32"
        )));
    }
    let values: Vec<f64> = bias.iter().map(|&b| b as f64).collect();
    let shape = if values.len() == 1 {
        vec![]
    } else {
        let mut s = vec![values.len()];
        s.extend(std::iter::repeat_n(1, trailing));
        s
    };
    let t = Tensor::from_f64(TensorType::new(shape, DType::Int32), &values)
        .map_err(|e| ctx.err(e.to_string()))?;
    let b = ctx.constant(t);
    ctx.call("add", &[acc, b], Attrs::new())
}

/// Element-wise sum of two per-channel vectors, either of which may be empty.
fn sum_channels(a: &[i64], b: &[i64]) -> Vec<i64> {
    let n = a.len().max(b.len());
    (0..n)
        .map(|i| a.get(i).copied().unwrap_or(0) + b.get(i).copied().unwrap_or(0))
        .collect()
}

/// A positive real factor as TVM's `(multiplier, shift)` with
/// `factor = multiplier / 2^31 * 2^shift` and `multiplier` in `[2^30, 2^31)`: exact for a
/// float32 factor (24 significant bits). A factor below `2^-33` gives `(0, 0)`: its product
/// with any int32 rounds to zero.
pub(crate) fn q31(factor: f32) -> Result<(i32, i32), String> {
    let f = f64::from(factor);
    if !(f.is_finite() && f > 0.0) {
        return Err(format!(
            "requantization factor {factor} must be positive and finite"
        ));
    }
    let mut shift = f.log2().floor() as i32 + 1;
    let mut m = f / 2f64.powi(shift);
    if m >= 1.0 {
        m /= 2.0;
        shift += 1;
    } else if m < 0.5 {
        m *= 2.0;
        shift -= 1;
    }
    let mut q = (m * 2f64.powi(31)).round() as i64;
    if q == 1 << 31 {
        q >>= 1;
        shift += 1;
    }
    if shift > 31 {
        return Err(format!(
            "requantization factor {factor} is too large (at most 2^31)"
        ));
    }
    if shift < -32 {
        return Ok((0, 0));
    }
    Ok((q as i32, shift))
}

/// Rescales the int32 `acc` by `factors` (one, or one per index of the channel axis, which has
/// `trailing` dims after it), adds `zero` and saturates to `dtype`.
fn requantize(
    ctx: &mut NodeCtx<'_>,
    acc: ExprId,
    factors: &[f32],
    trailing: usize,
    (zero, dtype): (i64, DType),
) -> Result<ExprId, OnnxError> {
    let pairs = factors
        .iter()
        .map(|&f| q31(f))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| ctx.err(e))?;
    let mut y = if pairs.windows(2).all(|w| w[0] == w[1]) {
        let (m, s) = pairs[0];
        let attrs = Attrs::new()
            .with("multiplier", i64::from(m))
            .with("shift", i64::from(s));
        ctx.call("fixed_point_multiply", &[acc], attrs)?
    } else {
        let n = pairs.len();
        let vector = |v: Vec<i32>| Tensor::from_vec(vec![n], v);
        let m = vector(pairs.iter().map(|p| p.0).collect()).map_err(|e| ctx.err(e.to_string()))?;
        let s = vector(pairs.iter().map(|p| p.1).collect()).map_err(|e| ctx.err(e.to_string()))?;
        let (m, s) = (ctx.constant(m), ctx.constant(s));
        let axis = ctx
            .rank(acc)?
            .checked_sub(1 + trailing)
            .ok_or_else(|| ctx.err("per-channel scales need a channel axis"))?;
        ctx.call(
            "fixed_point_multiply_per_axis",
            &[acc, m, s],
            Attrs::new().with("axis", axis as i64),
        )?
    };
    if zero != 0 {
        let z = ctx.scalar(DType::Int32, zero as f64)?;
        y = ctx.call("add", &[y, z], Attrs::new())?;
    }
    saturate(ctx, y, dtype)
}

/// The requantization factors `x_scale * w_scale / y_scale`, in float32 as onnxruntime
/// computes them.
fn factors(x: &QParams, w: &QParams, y: &QParams) -> Vec<f32> {
    w.scale
        .iter()
        .map(|&ws| x.scale[0] * ws / y.scale[0])
        .collect()
}

/// A quantized conv's data and weight, checked.
struct ConvOperands {
    x: ExprId,
    w: ExprId,
    x_dtype: DType,
    w_dtype: DType,
    /// The weight's shape, `[O, I, H, W]`.
    wshape: Vec<usize>,
}

/// The data (input `xi`) and the 4-D weight (input `wi`) of a quantized conv, both int8 or
/// uint8.
fn conv_operands(ctx: &NodeCtx<'_>, xi: usize, wi: usize) -> Result<ConvOperands, OnnxError> {
    let (x, w) = (ctx.input(xi)?, ctx.input(wi)?);
    let x_dtype = quantized_dtype(ctx, x, xi)?;
    let w_dtype = quantized_dtype(ctx, w, wi)?;
    let wshape = ctx.shape(w)?;
    if wshape.len() != 4 {
        return Err(ctx.err(format!(
            "{}: the weight must be 4-D (OIHW), got shape {wshape:?}",
            input_name(ctx, wi)
        )));
    }
    Ok(ConvOperands {
        x,
        w,
        x_dtype,
        w_dtype,
        wshape,
    })
}

/// How a quantized conv's bias arrives.
enum Bias {
    /// `QLinearConv`'s int32 bias, already at the accumulator's scale.
    Int32,
    /// A float bias (a dequantized one in a QDQ group), divided by the accumulator's scale.
    Float,
}

/// `QLinearConv` (and the QDQ conv group): `x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp,
/// [B]`.
fn qconv(ctx: &mut NodeCtx<'_>, bias_kind: Bias) -> Out {
    let ConvOperands {
        x,
        w,
        x_dtype,
        w_dtype,
        wshape,
    } = conv_operands(ctx, 0, 3)?;
    let xq = qparams(ctx, (1, 2), x_dtype, None)?;
    let wq = qparams(ctx, (4, 5), w_dtype, Some(wshape[0]))?;
    let yq = qparams(ctx, (6, 7), DType::Float32, None)?;
    let y_dtype = yq.dtype.unwrap_or(match bias_kind {
        Bias::Int32 => x_dtype,
        Bias::Float => DType::UInt8,
    });
    let scales = factors(&xq, &wq, &yq);
    let bias = match ctx.const_input(8)? {
        None => vec![],
        Some(b) => {
            if b.shape() != [wshape[0]] {
                return Err(ctx.err(format!(
                    "{}: the bias must hold one value per output channel ({}), got shape {:?}",
                    input_name(ctx, 8),
                    wshape[0],
                    b.shape()
                )));
            }
            match (bias_kind, b.dtype()) {
                (Bias::Int32, DType::Int32) => crate::ctx::tensor_ints(&b).unwrap_or_default(),
                (Bias::Float, DType::Float32) => {
                    let b = b.as_slice::<f32>().map_err(|e| ctx.err(e.to_string()))?;
                    b.iter()
                        .enumerate()
                        .map(|(o, &v)| {
                            let unit = xq.scale[0] * wq.scale[o % wq.scale.len()];
                            let q = (v / unit).round_ties_even();
                            byoc_ir::dims::f64_to_i64(f64::from(q))
                                .filter(|&q| i32::try_from(q).is_ok())
                                .ok_or_else(|| {
                                    ctx.err(format!(
                                        "{}: bias {v} of channel {o} is {q} in units of the input and weight scales ({unit}), outside int32",
                                        input_name(ctx, 8)
                                    ))
                                })
                        })
                        .collect::<Result<_, _>>()?
                }
                (_, d) => {
                    return Err(
                        ctx.err(format!("{}: unsupported bias type {d}", input_name(ctx, 8)))
                    )
                }
            }
        }
    };
    let acc = integer_conv(ctx, (x, xq.zero[0]), (w, &wq.zero))?;
    let acc_b = add_bias(ctx, acc.acc, &sum_channels(&bias, &acc.correction), 2)?;
    one(requantize(ctx, acc_b, &scales, 2, (yq.zero[0], y_dtype))?)
}

/// `QLinearConv(x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, [B])`.
pub(super) fn qlinear_conv(ctx: &mut NodeCtx<'_>) -> Out {
    qconv(ctx, Bias::Int32)
}

/// A QDQ conv group, inputs laid out as `QLinearConv`'s with a float bias.
pub(super) fn qdq_conv(ctx: &mut NodeCtx<'_>) -> Out {
    qconv(ctx, Bias::Float)
}

/// `QLinearMatMul` (and the QDQ matmul group): `a, a_scale, a_zp, b, b_scale, b_zp, y_scale,
/// y_zp`, `b`'s scale per tensor or per column.
fn qmatmul(ctx: &mut NodeCtx<'_>, default_y: Option<DType>) -> Out {
    let (a, b) = (ctx.input(0)?, ctx.input(3)?);
    let a_dtype = quantized_dtype(ctx, a, 0)?;
    let b_dtype = quantized_dtype(ctx, b, 3)?;
    let bshape = ctx.shape(b)?;
    let columns = (bshape.len() >= 2).then(|| bshape[bshape.len() - 1]);
    let aq = qparams(ctx, (1, 2), a_dtype, None)?;
    let bq = qparams(ctx, (4, 5), b_dtype, columns)?;
    let yq = qparams(ctx, (6, 7), DType::Float32, None)?;
    let y_dtype = yq.dtype.or(default_y).unwrap_or(a_dtype);
    let scales = factors(&aq, &bq, &yq);
    let acc = integer_matmul(ctx, (a, aq.zero[0]), (b, &bq.zero), 3)?;
    let acc_b = add_bias(ctx, acc.acc, &acc.correction, 0)?;
    one(requantize(ctx, acc_b, &scales, 0, (yq.zero[0], y_dtype))?)
}

/// `QLinearMatMul(a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp)`.
pub(super) fn qlinear_matmul(ctx: &mut NodeCtx<'_>) -> Out {
    qmatmul(ctx, None)
}

/// A QDQ matmul group, inputs laid out as `QLinearMatMul`'s.
pub(super) fn qdq_matmul(ctx: &mut NodeCtx<'_>) -> Out {
    qmatmul(ctx, Some(DType::UInt8))
}

/// `ConvInteger(x, w, [x_zp], [w_zp])`: the int32 accumulator.
pub(super) fn conv_integer(ctx: &mut NodeCtx<'_>) -> Out {
    let ConvOperands {
        x,
        w,
        x_dtype,
        w_dtype,
        wshape,
    } = conv_operands(ctx, 0, 1)?;
    let (x_zero, _) = zero_points(ctx, 2, x_dtype, None)?;
    let (w_zero, _) = zero_points(ctx, 3, w_dtype, Some(wshape[0]))?;
    let acc = integer_conv(ctx, (x, x_zero[0]), (w, &w_zero))?;
    one(add_bias(ctx, acc.acc, &acc.correction, 2)?)
}

/// `MatMulInteger(a, b, [a_zp], [b_zp])`: the int32 accumulator (`b_zp` per column).
pub(super) fn matmul_integer(ctx: &mut NodeCtx<'_>) -> Out {
    let (a, b) = (ctx.input(0)?, ctx.input(1)?);
    let a_dtype = quantized_dtype(ctx, a, 0)?;
    let b_dtype = quantized_dtype(ctx, b, 1)?;
    let bshape = ctx.shape(b)?;
    let columns = (bshape.len() >= 2).then(|| bshape[bshape.len() - 1]);
    let (a_zero, _) = zero_points(ctx, 2, a_dtype, None)?;
    let (b_zero, _) = zero_points(ctx, 3, b_dtype, columns)?;
    let acc = integer_matmul(ctx, (a, a_zero[0]), (b, &b_zero), 1)?;
    one(add_bias(ctx, acc.acc, &acc.correction, 0)?)
}

#[cfg(test)]
mod tests {
    use super::q31;

    /// `multiplier / 2^31 * 2^shift` equals the factor exactly (float32 factors).
    #[test]
    fn q31_holds_float32_factors_exactly() {
        for &f in &[
            1.0f32,
            0.5,
            0.75,
            3.0e-3,
            1.7e-7,
            123.456,
            0.999_999_94,
            2.0e9,
        ] {
            let (m, s) = q31(f).unwrap();
            assert!((1 << 30..=i32::MAX).contains(&m), "{f}: {m}");
            let back = f64::from(m) / 2f64.powi(31) * 2f64.powi(s);
            assert_eq!(back, f64::from(f), "{f}");
        }
        assert_eq!(q31(1.0e-12).unwrap(), (0, 0));
        assert!(q31(0.0).is_err());
        assert!(q31(f32::NAN).is_err());
        assert!(q31(3.0e9).is_err());
    }
}
