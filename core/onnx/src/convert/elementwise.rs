//! Elementwise and broadcasting ops: arithmetic, comparisons, activations, `Clip`, `Cast`.

use super::one;
use crate::ctx::NodeCtx;
use crate::tensor_proto::dtype_of;
use crate::OnnxError;
use byoc_ir::{Attrs, ExprId};

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
    equal => "equal", less => "less", greater => "greater");
converters!(variadic: sum => "add", max => "maximum", min => "minimum");
converters!(unary: relu => "nn.relu", sigmoid => "sigmoid", tanh => "tanh", erf => "erf",
    exp => "exp", log => "log", abs => "abs", neg => "negative", sqrt => "sqrt");

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
fn hard_sigmoid_of(
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
