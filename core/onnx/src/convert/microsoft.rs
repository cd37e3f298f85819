//! onnxruntime's fused transformer ops (domain `com.microsoft`), as its transformer optimizer
//! writes them into deployed BERT-family models: `Attention`, `EmbedLayerNormalization`,
//! `SkipLayerNormalization`, `SkipSimplifiedLayerNormalization`, `BiasGelu`, `FastGelu`,
//! `Gelu` and `QuickGelu`, each written with standard ops (semantics: onnxruntime's contrib-op
//! documentation and CPU kernels).
//!
//! `Attention` takes its mask as key lengths (`mask_index` `[batch]`) or as a raw `[batch,
//! total_seq]` 0/1 mask, masked scores getting `mask_filter_value` added as onnxruntime does;
//! `unidirectional`, `qkv_hidden_sizes`, `scale` and `attention_bias` are supported. Refused,
//! naming the node: `past` state, rotary embedding inside the op, and other mask layouts.

use super::elementwise::gelu_of;
use super::matmul::{matmul_values, reshape};
use super::nn::layer_norm_last;
use super::one;
use super::transformer::{additive_mask, attend, merge_heads, split_heads};
use crate::ctx::NodeCtx;
use crate::OnnxError;
use byoc_ir::tensor::Tensor;
use byoc_ir::{AttrValue, Attrs, DType, ExprId};

type Out = Result<Vec<ExprId>, OnnxError>;

fn add(ctx: &mut NodeCtx<'_>, a: ExprId, b: ExprId) -> Result<ExprId, OnnxError> {
    ctx.call("add", &[a, b], Attrs::new())
}

/// `x + bias` when the optional input `i` is given.
fn plus_input(ctx: &mut NodeCtx<'_>, x: ExprId, i: usize) -> Result<ExprId, OnnxError> {
    match ctx.opt_input(i) {
        Some(b) => add(ctx, x, b),
        None => Ok(x),
    }
}

/// `Gelu(X)`: the erf form.
pub(super) fn gelu(ctx: &mut NodeCtx<'_>) -> Out {
    let x = ctx.input(0)?;
    one(gelu_of(ctx, x, false)?)
}

/// `BiasGelu(A, B)`: the erf GELU of `A + B`.
pub(super) fn bias_gelu(ctx: &mut NodeCtx<'_>) -> Out {
    let x = ctx.input(0)?;
    let x = plus_input(ctx, x, 1)?;
    one(gelu_of(ctx, x, false)?)
}

/// `FastGelu(X, bias?)`: the tanh approximation of GELU of `X + bias`.
pub(super) fn fast_gelu(ctx: &mut NodeCtx<'_>) -> Out {
    let x = ctx.input(0)?;
    let x = plus_input(ctx, x, 1)?;
    one(gelu_of(ctx, x, true)?)
}

/// `QuickGelu(X; alpha=1.702)`: `x * sigmoid(alpha * x)`.
pub(super) fn quick_gelu(ctx: &mut NodeCtx<'_>) -> Out {
    let x = ctx.input(0)?;
    let dtype = ctx.tensor_ty(x)?.dtype;
    let alpha = ctx.scalar(dtype, ctx.float_or("alpha", 1.702)?)?;
    let ax = ctx.call("multiply", &[x, alpha], Attrs::new())?;
    let s = ctx.call("sigmoid", &[ax], Attrs::new())?;
    one(ctx.call("multiply", &[x, s], Attrs::new())?)
}

/// The mean and `1 / sqrt(var + epsilon)` of `x` over its last axis (kept as an axis of 1):
/// the optional statistics outputs of the skip layer norms.
fn statistics(
    ctx: &mut NodeCtx<'_>,
    x: ExprId,
    epsilon: f64,
    centered: bool,
) -> Result<(ExprId, ExprId), OnnxError> {
    let dtype = ctx.tensor_ty(x)?.dtype;
    let last = Attrs::new()
        .with("axis", AttrValue::ints([-1]))
        .with("keepdims", true);
    let mean = ctx.call("mean", &[x], last.clone())?;
    let d = if centered {
        ctx.call("subtract", &[x, mean], Attrs::new())?
    } else {
        x
    };
    let sq = ctx.call("multiply", &[d, d], Attrs::new())?;
    let var = ctx.call("mean", &[sq], last)?;
    let eps = ctx.scalar(dtype, epsilon)?;
    let var = add(ctx, var, eps)?;
    Ok((mean, ctx.call("rsqrt", &[var], Attrs::new())?))
}

/// `input + skip (+ bias)` of the skip layer norms (inputs 0, 1 and `bias`).
fn skip_sum(ctx: &mut NodeCtx<'_>, bias: usize) -> Result<ExprId, OnnxError> {
    let (x, skip) = (ctx.input(0)?, ctx.input(1)?);
    let s = add(ctx, x, skip)?;
    plus_input(ctx, s, bias)
}

/// `SkipLayerNormalization(input, skip, gamma, beta?, bias?; epsilon=1e-12)`:
/// `(output, mean, inv_std_var, input_skip_bias_sum)`, the norm over the last axis.
pub(super) fn skip_layer_norm(ctx: &mut NodeCtx<'_>) -> Out {
    let epsilon = ctx.float_or("epsilon", 1e-12)?;
    let s = skip_sum(ctx, 4)?;
    let gamma = ctx.input(2)?;
    let beta = ctx.opt_input(3);
    let y = layer_norm_last(ctx, s, gamma, beta, epsilon)?;
    let (mean, inv_std) = statistics(ctx, s, epsilon, true)?;
    Ok(vec![y, mean, inv_std, s])
}

/// `SkipSimplifiedLayerNormalization(input, skip, gamma, bias?; epsilon=1e-12)`: the RMS norm
/// of the sum, `(output, mean, inv_std_var, input_skip_bias_sum)`.
pub(super) fn skip_simplified_layer_norm(ctx: &mut NodeCtx<'_>) -> Out {
    let epsilon = ctx.float_or("epsilon", 1e-12)?;
    let s = skip_sum(ctx, 3)?;
    let gamma = ctx.input(2)?;
    let (mean, inv_rms) = statistics(ctx, s, epsilon, false)?;
    let y = ctx.call("multiply", &[s, inv_rms], Attrs::new())?;
    let y = ctx.call("multiply", &[y, gamma], Attrs::new())?;
    Ok(vec![y, mean, inv_rms, s])
}

/// `take(table, ids)` along axis 0.
fn lookup(ctx: &mut NodeCtx<'_>, table: ExprId, ids: ExprId) -> Result<ExprId, OnnxError> {
    ctx.call(
        "take",
        &[table, ids],
        Attrs::new().with("axis", 0i64).with("mode", "clip"),
    )
}

/// `EmbedLayerNormalization(input_ids, segment_ids?, word_embedding, position_embedding,
/// segment_embedding?, gamma, beta, mask?, position_ids?; epsilon=1e-12)`: the layer norm of
/// the summed word, position and segment embeddings; `(output, mask_index, embedding_sum)`,
/// `mask_index` the count of ones in each row of `mask` (zeros without one).
pub(super) fn embed_layer_norm(ctx: &mut NodeCtx<'_>) -> Out {
    let ids = ctx.input(0)?;
    let is = ctx.shape(ids)?;
    let &[batch, seq] = is.as_slice() else {
        return Err(ctx.err(format!("input_ids must be [batch, seq], got {is:?}")));
    };
    let epsilon = ctx.float_or("epsilon", 1e-12)?;
    let word = ctx.input(2)?;
    let mut sum = lookup(ctx, word, ids)?;
    let positions = match ctx.opt_input(8) {
        Some(p) => p,
        None => {
            let t = Tensor::from_vec([1, seq], (0..seq as i64).collect::<Vec<_>>())
                .map_err(|e| ctx.err(e.to_string()))?;
            ctx.constant(t)
        }
    };
    let pos_table = ctx.input(3)?;
    let pos = lookup(ctx, pos_table, positions)?;
    sum = add(ctx, sum, pos)?;
    if let (Some(seg), Some(table)) = (ctx.opt_input(1), ctx.opt_input(4)) {
        let e = lookup(ctx, table, seg)?;
        sum = add(ctx, sum, e)?;
    }
    let (gamma, beta) = (ctx.input(5)?, ctx.input(6)?);
    let y = layer_norm_last(ctx, sum, gamma, Some(beta), epsilon)?;
    let mask_index = match ctx.opt_input(7) {
        Some(m) => {
            let m = ctx.call("cast", &[m], Attrs::new().with("dtype", DType::Int32))?;
            ctx.call(
                "sum",
                &[m],
                Attrs::new()
                    .with("axis", AttrValue::ints([1]))
                    .with("keepdims", false),
            )?
        }
        None => ctx.call(
            "zeros",
            &[],
            Attrs::new()
                .with("shape", vec![ctx.dim_i64(batch)?])
                .with("dtype", DType::Int32),
        )?,
    };
    Ok(vec![y, mask_index, sum])
}

/// The additive mask of `com.microsoft.Attention`'s `mask_index`, `[batch, 1, 1, total]`.
fn key_mask(
    ctx: &mut NodeCtx<'_>,
    mask: ExprId,
    batch: usize,
    total: usize,
    fill: f64,
) -> Result<ExprId, OnnxError> {
    let ms = ctx.shape(mask)?;
    let keep = if ms == [batch] {
        // Key lengths: position t attends when t < length.
        let t = Tensor::from_vec([1, total], (0..total as i32).collect::<Vec<_>>())
            .map_err(|e| ctx.err(e.to_string()))?;
        let t = ctx.constant(t);
        let len = ctx.call("cast", &[mask], Attrs::new().with("dtype", DType::Int32))?;
        let len = reshape(ctx, len, &[batch, 1])?;
        ctx.call("less", &[t, len], Attrs::new())?
    } else if ms == [batch, total] {
        let zero = ctx.scalar(ctx.tensor_ty(mask)?.dtype, 0.0)?;
        ctx.call("greater", &[mask, zero], Attrs::new())?
    } else {
        return Err(ctx.err(format!(
            "mask_index of shape {ms:?} is not supported (only [batch] key lengths or a [batch, total_sequence] mask)"
        )));
    };
    let zero = ctx.scalar(DType::Float32, 0.0)?;
    let filler = ctx.scalar(DType::Float32, fill)?;
    let m = ctx.call("where", &[keep, zero, filler], Attrs::new())?;
    reshape(ctx, m, &[batch, 1, 1, total])
}

/// `Attention(input, weights, bias?, mask_index?, past?, attention_bias?; num_heads,
/// unidirectional=0, qkv_hidden_sizes, mask_filter_value=-10000, scale)`.
pub(super) fn attention(ctx: &mut NodeCtx<'_>) -> Out {
    if ctx.opt_input(4).is_some() || ctx.opt_input(6).is_some() {
        return Err(ctx.err("past state (inputs 4 and 6) is not supported"));
    }
    if ctx.int_or("do_rotary", 0)? != 0 {
        return Err(ctx.err("do_rotary=1 is not supported"));
    }
    let (x, w) = (ctx.input(0)?, ctx.input(1)?);
    let xs = ctx.shape(x)?;
    let &[batch, seq, _] = xs.as_slice() else {
        return Err(ctx.err(format!("input must be [batch, seq, hidden], got {xs:?}")));
    };
    let heads = ctx
        .attr_int("num_heads")?
        .and_then(|n| usize::try_from(n).ok())
        .filter(|&n| n > 0)
        .ok_or_else(|| ctx.err("attribute 'num_heads' must be a positive integer"))?;
    let total = ctx.shape(w)?.get(1).copied().unwrap_or(0);
    let sizes = match ctx.attr_ints("qkv_hidden_sizes")? {
        Some(v) if v.len() == 3 => v
            .iter()
            .map(|&d| usize::try_from(d).map_err(|_| ctx.err(format!("qkv_hidden_sizes {v:?}"))))
            .collect::<Result<Vec<_>, _>>()?,
        Some(v) => return Err(ctx.err(format!("qkv_hidden_sizes {v:?} must hold 3 sizes"))),
        None => vec![total / 3; 3],
    };
    if sizes.iter().sum::<usize>() != total || sizes[0] != sizes[1] {
        return Err(ctx.err(format!(
            "qkv_hidden_sizes {sizes:?} do not match the weights' {total} columns (Q and K sizes must be equal)"
        )));
    }
    let mut qkv = matmul_values(ctx, x, w, Attrs::new())?;
    qkv = plus_input(ctx, qkv, 2)?;
    let parts = ctx.call(
        "split",
        &[qkv],
        Attrs::new()
            .with(
                "indices_or_sections",
                AttrValue::ints([sizes[0] as i64, (sizes[0] + sizes[1]) as i64]),
            )
            .with("axis", 2i64),
    )?;
    let mut qkv = Vec::with_capacity(3);
    for i in 0..3 {
        let p = ctx.tuple_get_item(parts, i)?;
        qkv.push(split_heads(ctx, p, heads)?);
    }
    let head = sizes[0] / heads;
    let scale = match ctx.float_or("scale", 0.0)? {
        0.0 => 1.0 / (head as f64).sqrt(),
        s => s,
    };
    let fill = ctx.float_or("mask_filter_value", -10000.0)?;
    let mut bias = match ctx.opt_input(3) {
        Some(m) => Some(key_mask(ctx, m, batch, seq, fill)?),
        None => None,
    };
    if ctx.flag_or("unidirectional", false)? {
        let causal = additive_mask(ctx, seq, seq, DType::Float32, fill, |i, j| j <= i)?;
        bias = Some(match bias {
            Some(b) => add(ctx, b, causal)?,
            None => causal,
        });
    }
    if let Some(extra) = ctx.opt_input(5) {
        bias = Some(match bias {
            Some(b) => add(ctx, b, extra)?,
            None => extra,
        });
    }
    let y = attend(ctx, qkv[0], qkv[1], qkv[2], scale, bias)?;
    one(merge_heads(ctx, y)?)
}
