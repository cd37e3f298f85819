//! The transformer ops of opset 23: `Attention`, `RMSNormalization` and `RotaryEmbedding`,
//! written with matmuls, softmax and elementwise ops; and the scaled dot-product attention they
//! share with onnxruntime's fused `com.microsoft.Attention` ([`attend`]).
//!
//! `Attention` takes 4-D `[batch, heads, seq, head_size]` or 3-D `[batch, seq, heads *
//! head_size]` inputs (then `q_num_heads`/`kv_num_heads` are required), grouped-query heads
//! (K and V heads repeated), a bool mask (true attends) or a float one (added), `is_causal`
//! (the upper-left-aligned lower triangle, as the spec defines it), `scale` and `softcap`, and
//! `past_key`/`past_value` (concatenated before K and V: the `present_*` outputs). Its fourth
//! output (the QK product) is not computed.

use super::matmul::{matmul_values, reshape, transpose};
use super::nn::norm_axis_epsilon;
use super::{concat_values, one};
use crate::ctx::NodeCtx;
use crate::OnnxError;
use byoc_ir::tensor::Tensor;
use byoc_ir::{AttrValue, Attrs, DType, ExprId, TensorType};

type Out = Result<Vec<ExprId>, OnnxError>;

/// `softmax(q kᵀ * scale + bias) v` over `[batch, heads, seq, head]` operands (the batch and
/// head dims of `q`, `k` and `v` equal); `bias` broadcasts to `[batch, heads, seq, kv_seq]`.
pub(super) fn attend(
    ctx: &mut NodeCtx<'_>,
    q: ExprId,
    k: ExprId,
    v: ExprId,
    scale: f64,
    bias: Option<ExprId>,
) -> Result<ExprId, OnnxError> {
    let kt = transpose(ctx, k, &[0, 1, 3, 2])?;
    let mut scores = matmul_values(ctx, q, kt, Attrs::new())?;
    let dtype = ctx.tensor_ty(q)?.dtype;
    if scale != 1.0 {
        let s = ctx.scalar(dtype, scale)?;
        scores = ctx.call("multiply", &[scores, s], Attrs::new())?;
    }
    if let Some(b) = bias {
        scores = ctx.call("add", &[scores, b], Attrs::new())?;
    }
    let probs = ctx.call("nn.softmax", &[scores], Attrs::new().with("axis", -1i64))?;
    matmul_values(ctx, probs, v, Attrs::new())
}

/// `[batch, seq, heads * head]` as `[batch, heads, seq, head]`.
pub(super) fn split_heads(
    ctx: &mut NodeCtx<'_>,
    x: ExprId,
    heads: usize,
) -> Result<ExprId, OnnxError> {
    let s = ctx.shape(x)?;
    let &[b, n, h] = s.as_slice() else {
        return Err(ctx.err(format!(
            "expected a 3-D [batch, seq, hidden] value, got {s:?}"
        )));
    };
    if heads == 0 || h % heads != 0 {
        return Err(ctx.err(format!("hidden size {h} does not split into {heads} heads")));
    }
    let x = reshape(ctx, x, &[b, n, heads, h / heads])?;
    transpose(ctx, x, &[0, 2, 1, 3])
}

/// `[batch, heads, seq, head]` as `[batch, seq, heads * head]`.
pub(super) fn merge_heads(ctx: &mut NodeCtx<'_>, x: ExprId) -> Result<ExprId, OnnxError> {
    let s = ctx.shape(x)?;
    let x = transpose(ctx, x, &[0, 2, 1, 3])?;
    reshape(ctx, x, &[s[0], s[2], s[1] * s[3]])
}

/// A `[rows, cols]` additive mask: 0 where `keep(row, col)`, `fill` elsewhere.
pub(super) fn additive_mask(
    ctx: &mut NodeCtx<'_>,
    rows: usize,
    cols: usize,
    dtype: DType,
    fill: f64,
    keep: impl Fn(usize, usize) -> bool,
) -> Result<ExprId, OnnxError> {
    let ty = TensorType::new(vec![rows, cols], dtype);
    let mut t = Tensor::try_zeros(ty).map_err(|e| ctx.err(e.to_string()))?;
    let width = cols.max(1);
    t.view_mut()
        .fill_from_iter((0..rows * cols).map(|e| {
            if keep(e / width, e % width) {
                0.0
            } else {
                fill
            }
        }))
        .map_err(|e| ctx.err(e.to_string()))?;
    Ok(ctx.constant(t))
}

/// `x`'s heads (axis 1) each repeated `times` times in place (grouped-query attention).
fn repeat_heads(ctx: &mut NodeCtx<'_>, x: ExprId, times: usize) -> Result<ExprId, OnnxError> {
    if times == 1 {
        return Ok(x);
    }
    let heads = ctx.shape(x)?[1];
    let idx: Vec<i64> = (0..heads * times).map(|i| (i / times) as i64).collect();
    let idx = Tensor::from_vec([idx.len()], idx).map_err(|e| ctx.err(e.to_string()))?;
    let idx = ctx.constant(idx);
    ctx.call(
        "take",
        &[x, idx],
        Attrs::new().with("axis", 1i64).with("mode", "clip"),
    )
}

/// A 3-D Attention input as 4-D with `heads` heads; a 4-D one as it is.
fn heads_of(ctx: &mut NodeCtx<'_>, x: ExprId, attr: &str) -> Result<ExprId, OnnxError> {
    match ctx.rank(x)? {
        4 => Ok(x),
        3 => {
            let heads = ctx
                .attr_int(attr)?
                .and_then(|h| usize::try_from(h).ok())
                .ok_or_else(|| ctx.err(format!("3-D inputs need attribute '{attr}'")))?;
            split_heads(ctx, x, heads)
        }
        r => Err(ctx.err(format!("Q, K and V must be 3-D or 4-D, got rank {r}"))),
    }
}

/// `Attention(Q, K, V, attn_mask?, past_key?, past_value?)` (opset 23).
pub(super) fn attention(ctx: &mut NodeCtx<'_>) -> Out {
    let three_d = ctx.rank(ctx.input(0)?)? == 3;
    let q = heads_of(ctx, ctx.input(0)?, "q_num_heads")?;
    let mut k = heads_of(ctx, ctx.input(1)?, "kv_num_heads")?;
    let mut v = heads_of(ctx, ctx.input(2)?, "kv_num_heads")?;
    if ctx.opt_input(6).is_some() {
        return Err(ctx.err("input 6 (nonpad_kv_seqlen) is not supported"));
    }
    for (i, kv) in [(4, &mut k), (5, &mut v)] {
        if let Some(past) = ctx.opt_input(i) {
            *kv = concat_values(ctx, &[past, *kv], 2)?;
        }
    }
    let (qs, ks, vs) = (ctx.shape(q)?, ctx.shape(k)?, ctx.shape(v)?);
    let (heads, kv_heads) = (qs[1], ks[1]);
    if kv_heads == 0 || heads % kv_heads != 0 || vs[1] != kv_heads || ks[2] != vs[2] {
        return Err(ctx.err(format!(
            "Q {qs:?}, K {ks:?} and V {vs:?} do not fit together (query heads must be a multiple of key heads)"
        )));
    }
    let dtype = ctx.tensor_ty(q)?.dtype;
    let (seq, kv_seq, head) = (qs[2], ks[2], qs[3]);
    let scale = match ctx.float_or("scale", 0.0)? {
        0.0 => 1.0 / (head as f64).sqrt(),
        s => s,
    };
    let softcap = ctx.float_or("softcap", 0.0)?;
    let kr = repeat_heads(ctx, k, heads / kv_heads)?;
    let vr = repeat_heads(ctx, v, heads / kv_heads)?;
    let mut bias = None;
    if ctx.flag_or("is_causal", false)? {
        bias = Some(additive_mask(
            ctx,
            seq,
            kv_seq,
            dtype,
            f64::NEG_INFINITY,
            |i, j| j <= i,
        )?);
    }
    if let Some(mask) = ctx.opt_input(3) {
        let m = if ctx.tensor_ty(mask)?.dtype == DType::Bool {
            let zero = ctx.scalar(dtype, 0.0)?;
            let ninf = ctx.scalar(dtype, f64::NEG_INFINITY)?;
            ctx.call("where", &[mask, zero, ninf], Attrs::new())?
        } else {
            mask
        };
        bias = Some(match bias {
            Some(b) => ctx.call("add", &[b, m], Attrs::new())?,
            None => m,
        });
    }
    let y = if softcap > 0.0 {
        // softcap * tanh(scores / softcap) before the mask: scores computed here.
        let kt = transpose(ctx, kr, &[0, 1, 3, 2])?;
        let scores = matmul_values(ctx, q, kt, Attrs::new())?;
        let s = ctx.scalar(dtype, scale / softcap)?;
        let scaled = ctx.call("multiply", &[scores, s], Attrs::new())?;
        let t = ctx.call("tanh", &[scaled], Attrs::new())?;
        let c = ctx.scalar(dtype, softcap)?;
        let mut capped = ctx.call("multiply", &[t, c], Attrs::new())?;
        if let Some(b) = bias {
            capped = ctx.call("add", &[capped, b], Attrs::new())?;
        }
        let probs = ctx.call("nn.softmax", &[capped], Attrs::new().with("axis", -1i64))?;
        matmul_values(ctx, probs, vr, Attrs::new())?
    } else {
        attend(ctx, q, kr, vr, scale, bias)?
    };
    let y = if three_d { merge_heads(ctx, y)? } else { y };
    Ok(vec![y, k, v])
}

/// `RMSNormalization(X, scale; axis=-1, epsilon=1e-5)` (opset 23):
/// `x / sqrt(mean(x²) + epsilon) * scale` over the axes from `axis` to the last.
pub(super) fn rms_norm(ctx: &mut NodeCtx<'_>) -> Out {
    let (x, scale) = (ctx.input(0)?, ctx.input(1)?);
    let t = ctx.tensor_ty(x)?;
    let rank = t.rank();
    let (axis, epsilon) = norm_axis_epsilon(ctx, rank)?;
    let axes: Vec<i64> = (axis as i64..rank as i64).collect();
    let sq = ctx.call("multiply", &[x, x], Attrs::new())?;
    let ms = ctx.call(
        "mean",
        &[sq],
        Attrs::new()
            .with("axis", AttrValue::ints(axes))
            .with("keepdims", true),
    )?;
    let eps = ctx.scalar(t.dtype, epsilon)?;
    let ms = ctx.call("add", &[ms, eps], Attrs::new())?;
    let inv = ctx.call("rsqrt", &[ms], Attrs::new())?;
    let y = ctx.call("multiply", &[x, inv], Attrs::new())?;
    one(ctx.call("multiply", &[y, scale], Attrs::new())?)
}

/// The elements `idx` of `x` along its last axis.
fn last_axis(ctx: &mut NodeCtx<'_>, x: ExprId, idx: Vec<i64>) -> Result<ExprId, OnnxError> {
    let axis = ctx.rank(x)? as i64 - 1;
    let idx = Tensor::from_vec([idx.len()], idx).map_err(|e| ctx.err(e.to_string()))?;
    let idx = ctx.constant(idx);
    ctx.call(
        "take",
        &[x, idx],
        Attrs::new().with("axis", axis).with("mode", "clip"),
    )
}

/// `RotaryEmbedding(X, cos_cache, sin_cache, position_ids?; interleaved=0,
/// rotary_embedding_dim=0, num_heads)` (opset 23): the first `rotary_embedding_dim` features of
/// each head rotated pairwise (halves, or neighbours when `interleaved`) by the cached angles.
pub(super) fn rotary_embedding(ctx: &mut NodeCtx<'_>) -> Out {
    let (x, mut cos, mut sin) = (ctx.input(0)?, ctx.input(1)?, ctx.input(2)?);
    let shape = ctx.shape(x)?;
    // As [batch, seq, heads, head].
    let xs = match *shape.as_slice() {
        [_, _, _, _] => transpose(ctx, x, &[0, 2, 1, 3])?,
        [b, s, h] => {
            let heads = ctx
                .attr_int("num_heads")?
                .and_then(|n| usize::try_from(n).ok())
                .filter(|&n| n > 0 && h % n == 0)
                .ok_or_else(|| {
                    ctx.err(format!(
                        "3-D input of hidden size {h} needs attribute 'num_heads' dividing it"
                    ))
                })?;
            reshape(ctx, x, &[b, s, heads, h / heads])?
        }
        _ => return Err(ctx.err(format!("X must be 3-D or 4-D, got shape {shape:?}"))),
    };
    let s4 = ctx.shape(xs)?;
    let head = s4[3];
    let rot = match ctx.int_or("rotary_embedding_dim", 0)? {
        0 => head,
        d => usize::try_from(d)
            .ok()
            .filter(|&d| d <= head && d % 2 == 0)
            .ok_or_else(|| {
                ctx.err(format!(
                    "rotary_embedding_dim {d} must be even and at most the head size {head}"
                ))
            })?,
    };
    if let Some(pos) = ctx.opt_input(3) {
        for c in [&mut cos, &mut sin] {
            *c = ctx.call(
                "take",
                &[*c, pos],
                Attrs::new().with("axis", 0i64).with("mode", "clip"),
            )?;
        }
    }
    let half = rot / 2;
    for c in [&mut cos, &mut sin] {
        let cs = ctx.shape(*c)?;
        if cs != [s4[0], s4[1], half] && cs != [1, s4[1], half] {
            return Err(ctx.err(format!(
                "the cos/sin cache gives shape {cs:?} per position, expected [{}, {}, {half}]",
                s4[0], s4[1]
            )));
        }
        *c = ctx.call(
            "expand_dims",
            &[*c],
            Attrs::new().with("axis", 2i64).with("num_newaxis", 1i64),
        )?;
    }
    let interleaved = ctx.flag_or("interleaved", false)?;
    let (i1, i2): (Vec<i64>, Vec<i64>) = if interleaved {
        (
            (0..half as i64).map(|i| 2 * i).collect(),
            (0..half as i64).map(|i| 2 * i + 1).collect(),
        )
    } else {
        (
            (0..half as i64).collect(),
            (half as i64..rot as i64).collect(),
        )
    };
    let x1 = last_axis(ctx, xs, i1)?;
    let x2 = last_axis(ctx, xs, i2)?;
    let mul = |ctx: &mut NodeCtx<'_>, a, b| ctx.call("multiply", &[a, b], Attrs::new());
    let (c1, s2) = (mul(ctx, cos, x1)?, mul(ctx, sin, x2)?);
    let real = ctx.call("subtract", &[c1, s2], Attrs::new())?;
    let (s1, c2) = (mul(ctx, sin, x1)?, mul(ctx, cos, x2)?);
    let imag = ctx.call("add", &[s1, c2], Attrs::new())?;
    let mut rotated = concat_values(ctx, &[real, imag], -1)?;
    if interleaved {
        // [r0..r(h-1), i0..i(h-1)] back to [r0, i0, r1, i1, ...].
        let order: Vec<i64> = (0..rot as i64)
            .map(|j| (j % 2) * half as i64 + j / 2)
            .collect();
        rotated = last_axis(ctx, rotated, order)?;
    }
    if rot < head {
        let rest = last_axis(ctx, xs, (rot as i64..head as i64).collect())?;
        rotated = concat_values(ctx, &[rotated, rest], -1)?;
    }
    let y = if shape.len() == 4 {
        transpose(ctx, rotated, &[0, 2, 1, 3])?
    } else {
        reshape(ctx, rotated, &shape)?
    };
    one(y)
}
