//! Elementwise and broadcasting ops: arithmetic, comparisons, logic, rounding, activations
//! (`Gelu`, `Softplus`, `Mish`, ...), the float predicates `IsNaN`/`IsInf`, `Clip`, `Cast`.
//!
//! Ops Relay has no single op for are written with the ops it has, in the forms exporters
//! and TVM's frontend use (`Gelu` as `x * (erf(x / sqrt 2) + 1) * 0.5`, which the dnnl patterns
//! match as a fused tail).

use super::one;
use crate::ctx::NodeCtx;
use crate::tensor_proto::dtype_of;
use crate::OnnxError;
use byoc_ir::{Attrs, DType, ExprId};

type Out = Result<Vec<ExprId>, OnnxError>;

fn binary(ctx: &mut NodeCtx<'_>, op: &str) -> Out {
    let (a, b) = (ctx.input(0)?, ctx.input(1)?);
    one(ctx.call(op, &[a, b], Attrs::new())?)
}

fn unary(ctx: &mut NodeCtx<'_>, op: &str) -> Out {
    let x = ctx.input(0)?;
    one(ctx.call(op, &[x], Attrs::new())?)
}

/// Folds a variadic op (`Sum`, `Max`, `Min`) into a chain of binary calls.
fn variadic(ctx: &mut NodeCtx<'_>, op: &str) -> Out {
    let inputs = ctx.present_inputs();
    let (&first, rest) = inputs
        .split_first()
        .ok_or_else(|| ctx.err("needs at least one input"))?;
    let mut acc = first;
    for &x in rest {
        acc = ctx.call(op, &[acc, x], Attrs::new())?;
    }
    one(acc)
}

macro_rules! converters {
    ($kind:ident: $($name:ident => $op:literal),* $(,)?) => {
        $(
            #[doc = concat!("ONNX op mapped onto Relay `", $op, "`.")]
            pub(super) fn $name(ctx: &mut NodeCtx<'_>) -> Out {
                $kind(ctx, $op)
            }
        )*
    };
}

converters!(binary: add => "add", sub => "subtract", mul => "multiply", div => "divide",
    equal => "equal", less => "less", greater => "greater",
    greater_or_equal => "greater_equal", less_or_equal => "less_equal");
converters!(logical: and => "logical_and", or => "logical_or", xor => "not_equal",
    not => "logical_not");
converters!(variadic: sum => "add", max => "maximum", min => "minimum");
converters!(unary: relu => "nn.relu", sigmoid => "sigmoid", tanh => "tanh", erf => "erf",
    exp => "exp", log => "log", abs => "abs", neg => "negative", sqrt => "sqrt",
    floor => "floor", ceil => "ceil", round => "round");

/// A logical op (`And`, `Or`, `Xor`, `Not`): ONNX defines them on bool tensors only, and
/// `Xor` is `a != b` there.
fn logical(ctx: &mut NodeCtx<'_>, op: &str) -> Out {
    let args = ctx.present_inputs();
    for &a in &args {
        let dtype = ctx.tensor_ty(a)?.dtype;
        if dtype != DType::Bool {
            return Err(ctx.err(format!("requires bool inputs, got {dtype}")));
        }
    }
    let expected = if op == "logical_not" { 1 } else { 2 };
    if args.len() != expected {
        return Err(ctx.err(format!("takes {expected} inputs, got {}", args.len())));
    }
    one(ctx.call(op, &args, Attrs::new())?)
}

/// The dtype of `x`, which must be a floating-point type.
fn float_dtype(ctx: &NodeCtx<'_>, x: ExprId) -> Result<DType, OnnxError> {
    let dtype = ctx.tensor_ty(x)?.dtype;
    if !dtype.is_float() {
        return Err(ctx.err(format!("requires a floating-point input, got {dtype}")));
    }
    Ok(dtype)
}

/// `Reciprocal`: `1 / x`.
pub(super) fn reciprocal(ctx: &mut NodeCtx<'_>) -> Out {
    let x = ctx.input(0)?;
    let one_ = ctx.scalar(float_dtype(ctx, x)?, 1.0)?;
    one(ctx.call("divide", &[one_, x], Attrs::new())?)
}

/// `Sign`: -1, 0 or 1 in the input's dtype (NaN stays NaN, as in numpy and onnxruntime).
pub(super) fn sign(ctx: &mut NodeCtx<'_>) -> Out {
    let x = ctx.input(0)?;
    let dtype = ctx.tensor_ty(x)?.dtype;
    if dtype == DType::Bool {
        return Err(ctx.err("requires a numeric input, got bool"));
    }
    let zero = ctx.scalar(dtype, 0.0)?;
    let mut parts = Vec::with_capacity(2);
    for op in ["greater", "less"] {
        let test = ctx.call(op, &[x, zero], Attrs::new())?;
        parts.push(ctx.call("cast", &[test], Attrs::new().with("dtype", dtype))?);
    }
    let s = ctx.call("subtract", &parts, Attrs::new())?;
    if dtype.is_int() {
        return one(s);
    }
    // NaN compares false both ways; keep it.
    let nan = ctx.call("not_equal", &[x, x], Attrs::new())?;
    one(ctx.call("where", &[nan, x, s], Attrs::new())?)
}

/// `Mod(a, b; fmod=0)`: the remainder with the divisor's sign (integers), or with the
/// dividend's (`fmod=1`, C's `fmod`), as `a - b * trunc(a / b)` plus `b` where the signs
/// differ. Integer division by zero gives 0 on the host, so `a mod 0` is `a`; float `fmod`
/// is exact while the quotient fits the float's precision.
pub(super) fn modulo(ctx: &mut NodeCtx<'_>) -> Out {
    let (a, b) = (ctx.input(0)?, ctx.input(1)?);
    let dtype = ctx.tensor_ty(a)?.dtype;
    let fmod = ctx.flag_or("fmod", false)?;
    if dtype == DType::Bool || (dtype.is_float() && !fmod) {
        return Err(ctx.err(format!(
            "fmod=0 is defined for integers only, got {dtype} (floats need fmod=1)"
        )));
    }
    let q = ctx.call("divide", &[a, b], Attrs::new())?;
    let q = if dtype.is_float() {
        // Truncate toward zero: floor above zero, ceil below.
        let zero = ctx.scalar(dtype, 0.0)?;
        let below = ctx.call("less", &[q, zero], Attrs::new())?;
        let up = ctx.call("ceil", &[q], Attrs::new())?;
        let down = ctx.call("floor", &[q], Attrs::new())?;
        ctx.call("where", &[below, up, down], Attrs::new())?
    } else {
        q
    };
    let bq = ctx.call("multiply", &[b, q], Attrs::new())?;
    let r = ctx.call("subtract", &[a, bq], Attrs::new())?;
    if fmod {
        return one(r);
    }
    // Python's remainder: add the divisor where the remainder's sign differs from it.
    let zero = ctx.scalar(dtype, 0.0)?;
    let r_neg = ctx.call("less", &[r, zero], Attrs::new())?;
    let b_neg = ctx.call("less", &[b, zero], Attrs::new())?;
    let differ = ctx.call("not_equal", &[r_neg, b_neg], Attrs::new())?;
    let nonzero = ctx.call("not_equal", &[r, zero], Attrs::new())?;
    let fix = ctx.call("logical_and", &[differ, nonzero], Attrs::new())?;
    let rb = ctx.call("add", &[r, b], Attrs::new())?;
    one(ctx.call("where", &[fix, rb, r], Attrs::new())?)
}

/// `IsNaN`: `x != x`.
pub(super) fn is_nan(ctx: &mut NodeCtx<'_>) -> Out {
    let x = ctx.input(0)?;
    float_dtype(ctx, x)?;
    one(ctx.call("not_equal", &[x, x], Attrs::new())?)
}

/// `IsInf(detect_negative=1, detect_positive=1)`.
pub(super) fn is_inf(ctx: &mut NodeCtx<'_>) -> Out {
    let x = ctx.input(0)?;
    let dtype = float_dtype(ctx, x)?;
    let negative = ctx.flag_or("detect_negative", true)?;
    let positive = ctx.flag_or("detect_positive", true)?;
    let y = match (negative, positive) {
        (true, true) => {
            let inf = ctx.scalar(dtype, f64::INFINITY)?;
            let a = ctx.call("abs", &[x], Attrs::new())?;
            ctx.call("equal", &[a, inf], Attrs::new())?
        }
        (false, true) | (true, false) => {
            let v = if positive {
                f64::INFINITY
            } else {
                f64::NEG_INFINITY
            };
            let inf = ctx.scalar(dtype, v)?;
            ctx.call("equal", &[x, inf], Attrs::new())?
        }
        (false, false) => {
            // Nothing is detected: all false, in the input's shape.
            let t = ctx.tensor_ty(x)?;
            ctx.call(
                "zeros",
                &[],
                Attrs::new()
                    .with("shape", ctx.dims_i64(&t.shape)?)
                    .with("dtype", DType::Bool),
            )?
        }
    };
    one(y)
}

/// `log(1 + e^x)` written so it does not overflow: `max(x, 0) + log(1 + e^-|x|)`.
pub(super) fn softplus_of(ctx: &mut NodeCtx<'_>, x: ExprId) -> Result<ExprId, OnnxError> {
    let dtype = float_dtype(ctx, x)?;
    let (zero, one_) = (ctx.scalar(dtype, 0.0)?, ctx.scalar(dtype, 1.0)?);
    let pos = ctx.call("maximum", &[x, zero], Attrs::new())?;
    let a = ctx.call("abs", &[x], Attrs::new())?;
    let na = ctx.call("negative", &[a], Attrs::new())?;
    let e = ctx.call("exp", &[na], Attrs::new())?;
    let e1 = ctx.call("add", &[one_, e], Attrs::new())?;
    let l = ctx.call("log", &[e1], Attrs::new())?;
    ctx.call("add", &[pos, l], Attrs::new())
}

/// `Softplus`: `log(1 + e^x)`.
pub(super) fn softplus(ctx: &mut NodeCtx<'_>) -> Out {
    let x = ctx.input(0)?;
    one(softplus_of(ctx, x)?)
}

/// `Mish`: `x * tanh(softplus(x))`.
pub(super) fn mish(ctx: &mut NodeCtx<'_>) -> Out {
    let x = ctx.input(0)?;
    let sp = softplus_of(ctx, x)?;
    let t = ctx.call("tanh", &[sp], Attrs::new())?;
    one(ctx.call("multiply", &[x, t], Attrs::new())?)
}

/// `Gelu(approximate="none")` (opset 20): `x * (erf(x / sqrt 2) + 1) * 0.5`, as PyTorch's
/// exporters write it before opset 20; `approximate="tanh"`:
/// `x * (tanh(sqrt(2 / pi) * (x + 0.044715 x^3)) + 1) * 0.5`.
pub(super) fn gelu(ctx: &mut NodeCtx<'_>) -> Out {
    let x = ctx.input(0)?;
    let tanh = match ctx.str_or("approximate", "none")?.as_str() {
        "none" => false,
        "tanh" => true,
        other => {
            return Err(ctx.err(format!(
                "attribute 'approximate' is '{other}'; ONNX defines 'none' and 'tanh'"
            )))
        }
    };
    one(gelu_of(ctx, x, tanh)?)
}

/// GELU of `x`: the erf form, or the tanh approximation.
pub(super) fn gelu_of(ctx: &mut NodeCtx<'_>, x: ExprId, tanh: bool) -> Result<ExprId, OnnxError> {
    let dtype = float_dtype(ctx, x)?;
    let inner = if tanh {
        let c = ctx.scalar(dtype, (2.0 / std::f64::consts::PI).sqrt())?;
        let k = ctx.scalar(dtype, 0.044715)?;
        let x2 = ctx.call("multiply", &[x, x], Attrs::new())?;
        let x3 = ctx.call("multiply", &[x2, x], Attrs::new())?;
        let kx3 = ctx.call("multiply", &[k, x3], Attrs::new())?;
        let sum = ctx.call("add", &[x, kx3], Attrs::new())?;
        let arg = ctx.call("multiply", &[c, sum], Attrs::new())?;
        ctx.call("tanh", &[arg], Attrs::new())?
    } else {
        let root2 = ctx.scalar(dtype, std::f64::consts::SQRT_2)?;
        let scaled = ctx.call("divide", &[x, root2], Attrs::new())?;
        ctx.call("erf", &[scaled], Attrs::new())?
    };
    let (one_, half) = (ctx.scalar(dtype, 1.0)?, ctx.scalar(dtype, 0.5)?);
    let plus = ctx.call("add", &[inner, one_], Attrs::new())?;
    let xp = ctx.call("multiply", &[x, plus], Attrs::new())?;
    ctx.call("multiply", &[xp, half], Attrs::new())
}

/// `Pow`: the exponent is cast to the base's dtype (ONNX allows them to differ from opset 12).
pub(super) fn pow(ctx: &mut NodeCtx<'_>) -> Out {
    let (x, mut y) = (ctx.input(0)?, ctx.input(1)?);
    let xt = ctx.tensor_ty(x)?.dtype;
    if ctx.tensor_ty(y)?.dtype != xt {
        y = ctx.call("cast", &[y], Attrs::new().with("dtype", xt))?;
    }
    one(ctx.call("power", &[x, y], Attrs::new())?)
}

/// `Where(cond, x, y)`.
pub(super) fn where_(ctx: &mut NodeCtx<'_>) -> Out {
    let (c, x, y) = (ctx.input(0)?, ctx.input(1)?, ctx.input(2)?);
    one(ctx.call("where", &[c, x, y], Attrs::new())?)
}

/// `Identity`, and `Dropout` at inference: the input itself.
pub(super) fn identity(ctx: &mut NodeCtx<'_>) -> Out {
    one(ctx.input(0)?)
}

/// `LeakyRelu(alpha=0.01)`.
pub(super) fn leaky_relu(ctx: &mut NodeCtx<'_>) -> Out {
    let x = ctx.input(0)?;
    let alpha = ctx.float_or("alpha", 0.01)?;
    one(ctx.call("nn.leaky_relu", &[x], Attrs::new().with("alpha", alpha))?)
}

/// `PRelu`: `nn.prelu` on axis 1 when the slope is one value per channel, otherwise
/// `relu(x) + slope * min(x, 0)` with broadcasting.
pub(super) fn prelu(ctx: &mut NodeCtx<'_>) -> Out {
    let (x, slope) = (ctx.input(0)?, ctx.input(1)?);
    let xs = ctx.shape(x)?;
    let ss = ctx.shape(slope)?;
    let per_channel = xs.len() >= 2 && ss.len() <= xs.len() && {
        let offset = xs.len() - ss.len();
        ss.iter()
            .enumerate()
            .all(|(i, &d)| if i + offset == 1 { d == xs[1] } else { d == 1 })
            && offset <= 1
    };
    if per_channel {
        let alpha = ctx.call(
            "reshape",
            &[slope],
            Attrs::new().with("newshape", vec![ctx.dim_i64(xs[1])?]),
        )?;
        return one(ctx.call("nn.prelu", &[x, alpha], Attrs::new().with("axis", 1i64))?);
    }
    let dtype = ctx.tensor_ty(x)?.dtype;
    let zero = ctx.scalar(dtype, 0.0)?;
    let pos = ctx.call("nn.relu", &[x], Attrs::new())?;
    let neg = ctx.call("minimum", &[x, zero], Attrs::new())?;
    let scaled = ctx.call("multiply", &[slope, neg], Attrs::new())?;
    one(ctx.call("add", &[pos, scaled], Attrs::new())?)
}

/// `clip(x * alpha + beta, 0, 1)`.
pub(super) fn hard_sigmoid_of(
    ctx: &mut NodeCtx<'_>,
    x: ExprId,
    alpha: f64,
    beta: f64,
) -> Result<ExprId, OnnxError> {
    let dtype = ctx.tensor_ty(x)?.dtype;
    let a = ctx.scalar(dtype, alpha)?;
    let b = ctx.scalar(dtype, beta)?;
    let ax = ctx.call("multiply", &[x, a], Attrs::new())?;
    let axb = ctx.call("add", &[ax, b], Attrs::new())?;
    ctx.call(
        "clip",
        &[axb],
        Attrs::new().with("a_min", 0.0).with("a_max", 1.0),
    )
}

/// `HardSigmoid(alpha=0.2, beta=0.5)`.
pub(super) fn hard_sigmoid(ctx: &mut NodeCtx<'_>) -> Out {
    let x = ctx.input(0)?;
    let alpha = ctx.float_or("alpha", 0.2)?;
    let beta = ctx.float_or("beta", 0.5)?;
    one(hard_sigmoid_of(ctx, x, alpha, beta)?)
}

/// `HardSwish`: `x * HardSigmoid(x, 1/6, 0.5)`.
pub(super) fn hard_swish(ctx: &mut NodeCtx<'_>) -> Out {
    let x = ctx.input(0)?;
    let hs = hard_sigmoid_of(ctx, x, 1.0 / 6.0, 0.5)?;
    one(ctx.call("multiply", &[x, hs], Attrs::new())?)
}

/// `Clip`: bounds from attributes (opset < 11) or optional inputs (opset >= 11). Constant
/// bounds give `clip`; bounds computed from graph inputs give `maximum`/`minimum`.
pub(super) fn clip(ctx: &mut NodeCtx<'_>) -> Out {
    let x = ctx.input(0)?;
    let (lo_default, hi_default) = (f64::from(f32::MIN), f64::from(f32::MAX));
    if ctx.opset() < 11 {
        let lo = ctx.float_or("min", lo_default)?;
        let hi = ctx.float_or("max", hi_default)?;
        return one(ctx.call(
            "clip",
            &[x],
            Attrs::new().with("a_min", lo).with("a_max", hi),
        )?);
    }
    let bound = |ctx: &NodeCtx<'_>, i: usize| -> Option<Result<f64, ExprId>> {
        let id = ctx.opt_input(i)?;
        Some(match ctx.constant_of(id) {
            Some(t) => t.to_f64_vec().first().copied().ok_or(id),
            None => Err(id),
        })
    };
    let (lo, hi) = (bound(ctx, 1), bound(ctx, 2));
    if matches!((&lo, &hi), (None | Some(Ok(_)), None | Some(Ok(_)))) {
        let lo = lo.and_then(Result::ok).unwrap_or(lo_default);
        let hi = hi.and_then(Result::ok).unwrap_or(hi_default);
        return one(ctx.call(
            "clip",
            &[x],
            Attrs::new().with("a_min", lo).with("a_max", hi),
        )?);
    }
    let mut y = x;
    for (bound, op) in [(1, "maximum"), (2, "minimum")] {
        if let Some(b) = ctx.opt_input(bound) {
            y = ctx.call(op, &[y, b], Attrs::new())?;
        }
    }
    one(y)
}

/// `Cast(to)`.
pub(super) fn cast(ctx: &mut NodeCtx<'_>) -> Out {
    let x = ctx.input(0)?;
    let to = ctx
        .attr_int("to")?
        .ok_or_else(|| ctx.err("attribute 'to' is required"))?;
    let dtype = i32::try_from(to)
        .map_err(|_| format!("unknown element type {to}"))
        .and_then(dtype_of)
        .map_err(|e| ctx.err(e))?;
    one(ctx.call("cast", &[x], Attrs::new().with("dtype", dtype))?)
}
