//! Recurrent ops: `RNN`, `GRU` and `LSTM`, unrolled over their static sequence length (as TVM's
//! ONNX frontend unrolls them), forward, reverse or bidirectional, in both layouts.
//!
//! The input projection of every step is one `nn.dense` over the whole sequence; each step adds
//! the recurrent projection (`nn.dense` of the previous hidden state), splits the gates and
//! applies the gate activations. Supported activations: `Sigmoid`, `Tanh`, `Relu`,
//! `LeakyRelu`, `HardSigmoid`, `Affine`, `ScaledTanh`, `Softsign` and `Softplus`, with
//! `activation_alpha`/`activation_beta` consumed in order by those that take them; `clip`
//! bounds every gate's input. Refused, naming the node: other activations, `sequence_lens`
//! shorter than the sequence, LSTM's `input_forget`, and an unknown direction.

use super::concat_values;
use super::elementwise::{hard_sigmoid_of, softplus_of};
use crate::ctx::NodeCtx;
use crate::OnnxError;
use byoc_ir::{Attrs, DType, ExprId};

type Out = Result<Vec<ExprId>, OnnxError>;

/// Which recurrent cell a node computes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Cell {
    Rnn,
    Gru { linear_before_reset: bool },
    Lstm,
}

impl Cell {
    /// Gates per step (the row blocks of `W` and `R`).
    fn gates(self) -> usize {
        match self {
            Cell::Rnn => 1,
            Cell::Gru { .. } => 3,
            Cell::Lstm => 4,
        }
    }

    /// The default activations of one direction.
    fn default_activations(self) -> &'static [&'static str] {
        match self {
            Cell::Rnn => &["Tanh"],
            Cell::Gru { .. } => &["Sigmoid", "Tanh"],
            Cell::Lstm => &["Sigmoid", "Tanh", "Tanh"],
        }
    }
}

/// One activation function with its parameters.
#[derive(Clone, Debug)]
struct Activation {
    name: String,
    alpha: f64,
    beta: f64,
}

/// `RNN`.
pub(super) fn rnn(ctx: &mut NodeCtx<'_>) -> Out {
    recurrent(ctx, Cell::Rnn)
}

/// `GRU`.
pub(super) fn gru(ctx: &mut NodeCtx<'_>) -> Out {
    let linear_before_reset = ctx.int_or("linear_before_reset", 0)? != 0;
    recurrent(
        ctx,
        Cell::Gru {
            linear_before_reset,
        },
    )
}

/// `LSTM`.
pub(super) fn lstm(ctx: &mut NodeCtx<'_>) -> Out {
    if ctx.flag_or("input_forget", false)? {
        return Err(ctx.err("input_forget=1 (coupled input and forget gates) is not supported"));
    }
    recurrent(ctx, Cell::Lstm)
}

/// The activations of every direction, with their parameters.
fn activations(
    ctx: &NodeCtx<'_>,
    cell: Cell,
    directions: usize,
) -> Result<Vec<Activation>, OnnxError> {
    let per = cell.default_activations();
    let names = match ctx.attr_strings("activations")? {
        Some(names) => {
            if names.len() != per.len() * directions {
                return Err(ctx.err(format!(
                    "attribute 'activations' has {} names, expected {} ({} per direction)",
                    names.len(),
                    per.len() * directions,
                    per.len()
                )));
            }
            names
        }
        None => (0..directions)
            .flat_map(|_| per.iter().map(|s| s.to_string()))
            .collect(),
    };
    let alphas = ctx.attr_floats("activation_alpha")?.unwrap_or_default();
    let betas = ctx.attr_floats("activation_beta")?.unwrap_or_default();
    let (mut ia, mut ib) = (0, 0);
    let mut out = Vec::with_capacity(names.len());
    for name in names {
        let (da, db, takes_alpha, takes_beta) = match name.to_ascii_lowercase().as_str() {
            "sigmoid" | "tanh" | "relu" | "softsign" | "softplus" => (0.0, 0.0, false, false),
            "leakyrelu" => (0.01, 0.0, true, false),
            "hardsigmoid" => (0.2, 0.5, true, true),
            "affine" => (1.0, 0.0, true, true),
            "scaledtanh" => (1.0, 1.0, true, true),
            _ => {
                return Err(ctx.err(format!(
                    "activation '{name}' is not supported (supported: Sigmoid, Tanh, Relu, LeakyRelu, HardSigmoid, Affine, ScaledTanh, Softsign, Softplus)"
                )))
            }
        };
        let take = |values: &[f64], i: &mut usize, takes: bool, default: f64| {
            if takes && *i < values.len() {
                *i += 1;
                values[*i - 1]
            } else {
                default
            }
        };
        let alpha = take(&alphas, &mut ia, takes_alpha, da);
        let beta = take(&betas, &mut ib, takes_beta, db);
        out.push(Activation { name, alpha, beta });
    }
    Ok(out)
}

/// `f(x)` for one activation.
fn activate(ctx: &mut NodeCtx<'_>, f: &Activation, x: ExprId) -> Result<ExprId, OnnxError> {
    let dtype = ctx.tensor_ty(x)?.dtype;
    let unary = |ctx: &mut NodeCtx<'_>, op: &str, x| ctx.call(op, &[x], Attrs::new());
    match f.name.to_ascii_lowercase().as_str() {
        "sigmoid" => unary(ctx, "sigmoid", x),
        "tanh" => unary(ctx, "tanh", x),
        "relu" => unary(ctx, "nn.relu", x),
        "leakyrelu" => ctx.call("nn.leaky_relu", &[x], Attrs::new().with("alpha", f.alpha)),
        "hardsigmoid" => hard_sigmoid_of(ctx, x, f.alpha, f.beta),
        "affine" => affine(ctx, x, f.alpha, f.beta),
        "scaledtanh" => {
            let bx = affine(ctx, x, f.beta, 0.0)?;
            let t = unary(ctx, "tanh", bx)?;
            affine(ctx, t, f.alpha, 0.0)
        }
        "softsign" => {
            let a = unary(ctx, "abs", x)?;
            let one_ = ctx.scalar(dtype, 1.0)?;
            let d = ctx.call("add", &[a, one_], Attrs::new())?;
            ctx.call("divide", &[x, d], Attrs::new())
        }
        "softplus" => softplus_of(ctx, x),
        other => Err(ctx.err(format!("activation '{other}' is not supported"))),
    }
}

/// `alpha * x + beta`.
fn affine(ctx: &mut NodeCtx<'_>, x: ExprId, alpha: f64, beta: f64) -> Result<ExprId, OnnxError> {
    let dtype = ctx.tensor_ty(x)?.dtype;
    let mut y = x;
    if alpha != 1.0 {
        let a = ctx.scalar(dtype, alpha)?;
        y = ctx.call("multiply", &[y, a], Attrs::new())?;
    }
    if beta != 0.0 {
        let b = ctx.scalar(dtype, beta)?;
        y = ctx.call("add", &[y, b], Attrs::new())?;
    }
    Ok(y)
}

/// Index `i` of axis `axis` of `x`, the axis removed.
fn at(ctx: &mut NodeCtx<'_>, x: ExprId, i: usize, axis: i64) -> Result<ExprId, OnnxError> {
    let idx = ctx.scalar(DType::Int64, i as f64)?;
    ctx.call(
        "take",
        &[x, idx],
        Attrs::new().with("axis", axis).with("mode", "clip"),
    )
}

/// The `n` equal blocks of `x` along `axis` (1: the gates of a projection; 0: the row blocks
/// of a weight matrix).
fn blocks(ctx: &mut NodeCtx<'_>, x: ExprId, n: usize, axis: i64) -> Result<Vec<ExprId>, OnnxError> {
    if n == 1 {
        return Ok(vec![x]);
    }
    let parts = ctx.call(
        "split",
        &[x],
        Attrs::new()
            .with("indices_or_sections", n as i64)
            .with("axis", axis),
    )?;
    (0..n).map(|i| ctx.tuple_get_item(parts, i)).collect()
}

/// `x` clipped to `[-clip, clip]` when the node sets `clip`.
fn clipped(ctx: &mut NodeCtx<'_>, x: ExprId, clip: Option<f64>) -> Result<ExprId, OnnxError> {
    match clip {
        None => Ok(x),
        Some(c) => ctx.call(
            "clip",
            &[x],
            Attrs::new().with("a_min", -c).with("a_max", c),
        ),
    }
}

/// The node's shapes and options.
struct Setup {
    cell: Cell,
    directions: usize,
    seq: usize,
    batch: usize,
    hidden: usize,
    clip: Option<f64>,
    layout: bool,
}

fn add(ctx: &mut NodeCtx<'_>, a: ExprId, b: ExprId) -> Result<ExprId, OnnxError> {
    ctx.call("add", &[a, b], Attrs::new())
}

fn mul(ctx: &mut NodeCtx<'_>, a: ExprId, b: ExprId) -> Result<ExprId, OnnxError> {
    ctx.call("multiply", &[a, b], Attrs::new())
}

fn dense(ctx: &mut NodeCtx<'_>, x: ExprId, w: ExprId) -> Result<ExprId, OnnxError> {
    let units = ctx.shape(w)?[0];
    let units = ctx.dim_i64(units)?;
    ctx.call("nn.dense", &[x, w], Attrs::new().with("units", units))
}

/// One direction's weights: `W`, `R` (rows per gate), the two biases, the peepholes.
struct Weights {
    w: ExprId,
    r: ExprId,
    wb: Option<ExprId>,
    rb: Option<ExprId>,
    p: Option<ExprId>,
}

fn recurrent(ctx: &mut NodeCtx<'_>, cell: Cell) -> Out {
    let x = ctx.input(0)?;
    let layout = ctx.flag_or("layout", false)?;
    let xs = ctx.shape(x)?;
    let &[d0, d1, input] = xs.as_slice() else {
        return Err(ctx.err(format!("X must be 3-D, got shape {xs:?}")));
    };
    let (seq, batch) = if layout { (d1, d0) } else { (d0, d1) };
    if seq == 0 {
        return Err(ctx.err("the sequence is empty"));
    }
    let directions: Vec<bool> = match ctx.str_or("direction", "forward")?.as_str() {
        "forward" => vec![false],
        "reverse" => vec![true],
        "bidirectional" => vec![false, true],
        other => {
            return Err(ctx.err(format!(
                "direction '{other}' is not one of forward, reverse, bidirectional"
            )))
        }
    };
    let w = ctx.input(1)?;
    let ws = ctx.shape(w)?;
    let g = cell.gates();
    let hidden = match ctx.attr_int("hidden_size")? {
        Some(h) => {
            usize::try_from(h).map_err(|_| ctx.err(format!("hidden_size {h} is negative")))?
        }
        None => ws.get(1).map_or(0, |&r| r / g),
    };
    if ws != [directions.len(), g * hidden, input] {
        return Err(ctx.err(format!(
            "W has shape {ws:?}, expected {:?}",
            [directions.len(), g * hidden, input]
        )));
    }
    let r = ctx.input(2)?;
    let rs = ctx.shape(r)?;
    if rs != [directions.len(), g * hidden, hidden] {
        return Err(ctx.err(format!(
            "R has shape {rs:?}, expected {:?}",
            [directions.len(), g * hidden, hidden]
        )));
    }
    if let Some(lens) = ctx.opt_input(4) {
        let full = ctx
            .constant_of(lens)
            .and_then(|t| crate::ctx::tensor_ints(&t))
            .is_some_and(|v| v.iter().all(|&l| l == seq as i64));
        if !full {
            return Err(ctx.err(
                "sequence_lens must be a constant holding the full sequence length for every batch entry (shorter sequences are not supported)",
            ));
        }
    }
    let clip = if ctx.has_attr("clip") {
        let c = ctx.float_or("clip", 0.0)?;
        if c <= 0.0 {
            return Err(ctx.err(format!("attribute 'clip' is {c}; it must be positive")));
        }
        Some(c)
    } else {
        None
    };
    let acts = activations(ctx, cell, directions.len())?;
    let setup = Setup {
        cell,
        directions: directions.len(),
        seq,
        batch,
        hidden,
        clip,
        layout,
    };
    // X as [seq, batch, input].
    let x = if layout {
        ctx.call(
            "transpose",
            &[x],
            Attrs::new().with("axes", vec![1i64, 0, 2]),
        )?
    } else {
        x
    };
    let per = cell.default_activations().len();
    let mut ys = Vec::with_capacity(directions.len());
    let mut hs = Vec::with_capacity(directions.len());
    let mut cs = Vec::with_capacity(directions.len());
    for (d, &reverse) in directions.iter().enumerate() {
        let weights = direction_weights(ctx, &setup, d)?;
        let h0 = initial(ctx, 5, d, &setup)?;
        let c0 = if cell == Cell::Lstm {
            Some(initial(ctx, 6, d, &setup)?)
        } else {
            None
        };
        let (y, h, c) = run_direction(
            ctx,
            &setup,
            x,
            &weights,
            &acts[d * per..(d + 1) * per],
            reverse,
            (h0, c0),
        )?;
        ys.push(y);
        hs.push(h);
        cs.extend(c);
    }
    // Y: [seq, dirs, batch, hidden]; Y_h, Y_c: [dirs, batch, hidden].
    let y = concat_values(ctx, &ys, 1)?;
    let stack = |ctx: &mut NodeCtx<'_>, parts: &[ExprId]| -> Result<ExprId, OnnxError> {
        let lifted = parts
            .iter()
            .map(|&p| {
                ctx.call(
                    "expand_dims",
                    &[p],
                    Attrs::new().with("axis", 0i64).with("num_newaxis", 1i64),
                )
            })
            .collect::<Result<Vec<_>, _>>()?;
        concat_values(ctx, &lifted, 0)
    };
    let mut outs = vec![y, stack(ctx, &hs)?];
    if cell == Cell::Lstm {
        outs.push(stack(ctx, &cs)?);
    }
    if setup.layout {
        outs[0] = ctx.call(
            "transpose",
            &[outs[0]],
            Attrs::new().with("axes", vec![2i64, 0, 1, 3]),
        )?;
        for o in &mut outs[1..] {
            *o = ctx.call(
                "transpose",
                &[*o],
                Attrs::new().with("axes", vec![1i64, 0, 2]),
            )?;
        }
    }
    Ok(outs)
}

/// The weights of direction `d`.
fn direction_weights(ctx: &mut NodeCtx<'_>, s: &Setup, d: usize) -> Result<Weights, OnnxError> {
    let (w, r) = (ctx.input(1)?, ctx.input(2)?);
    let w = at(ctx, w, d, 0)?;
    let r = at(ctx, r, d, 0)?;
    let gh = s.cell.gates() * s.hidden;
    let (wb, rb) = match ctx.opt_input(3) {
        Some(b) => {
            let bs = ctx.shape(b)?;
            if bs != [ctx.shape(ctx.input(1)?)?[0], 2 * gh] {
                return Err(ctx.err(format!(
                    "B has shape {bs:?}, expected [directions, {}]",
                    2 * gh
                )));
            }
            let b = at(ctx, b, d, 0)?;
            let b = ctx.call(
                "expand_dims",
                &[b],
                Attrs::new().with("axis", 0i64).with("num_newaxis", 1i64),
            )?;
            let halves = blocks(ctx, b, 2, 1)?;
            (Some(halves[0]), Some(halves[1]))
        }
        None => (None, None),
    };
    let p = match (s.cell, ctx.opt_input(7)) {
        (Cell::Lstm, Some(p)) => {
            let ps = ctx.shape(p)?;
            if ps.get(1) != Some(&(3 * s.hidden)) {
                return Err(ctx.err(format!(
                    "P has shape {ps:?}, expected [directions, {}]",
                    3 * s.hidden
                )));
            }
            let p = at(ctx, p, d, 0)?;
            Some(ctx.call(
                "expand_dims",
                &[p],
                Attrs::new().with("axis", 0i64).with("num_newaxis", 1i64),
            )?)
        }
        _ => None,
    };
    Ok(Weights { w, r, wb, rb, p })
}

/// The initial hidden (input 5) or cell (input 6) state of direction `d`: given, or zeros.
fn initial(ctx: &mut NodeCtx<'_>, input: usize, d: usize, s: &Setup) -> Result<ExprId, OnnxError> {
    let dtype = ctx.tensor_ty(ctx.input(0)?)?.dtype;
    match ctx.opt_input(input) {
        Some(v) => {
            let v = if s.layout {
                ctx.call(
                    "transpose",
                    &[v],
                    Attrs::new().with("axes", vec![1i64, 0, 2]),
                )?
            } else {
                v
            };
            let vs = ctx.shape(v)?;
            if vs != [s.directions, s.batch, s.hidden] {
                return Err(ctx.err(format!(
                    "input {input} has shape {vs:?}, expected [directions {}, batch {}, hidden {}] (layout 0)",
                    s.directions, s.batch, s.hidden
                )));
            }
            at(ctx, v, d, 0)
        }
        None => {
            let shape = ctx.dims_i64(&[s.batch, s.hidden])?;
            ctx.call(
                "zeros",
                &[],
                Attrs::new().with("shape", shape).with("dtype", dtype),
            )
        }
    }
}

/// One direction over the sequence: `Y` as `[seq, 1, batch, hidden]`, the last hidden state,
/// and (LSTM) the last cell state.
fn run_direction(
    ctx: &mut NodeCtx<'_>,
    s: &Setup,
    x: ExprId,
    wt: &Weights,
    acts: &[Activation],
    reverse: bool,
    (mut h, mut c): (ExprId, Option<ExprId>),
) -> Result<(ExprId, ExprId, Option<ExprId>), OnnxError> {
    let g = s.cell.gates();
    let input = ctx.shape(x)?[2];
    // The input projection of every step at once: [seq * batch, gates * hidden].
    let flat = ctx.call(
        "reshape",
        &[x],
        Attrs::new().with("newshape", ctx.dims_i64(&[s.seq * s.batch, input])?),
    )?;
    let mut xw = dense(ctx, flat, wt.w)?;
    if let Some(wb) = wt.wb {
        xw = add(ctx, xw, wb)?;
    }
    // The recurrent bias joins it, except GRU's hidden-gate part when applied after reset.
    let gru_late = matches!(
        s.cell,
        Cell::Gru {
            linear_before_reset: true
        }
    );
    let (rb_early, rb_h) = match (wt.rb, s.cell) {
        (Some(rb), Cell::Gru { .. }) => {
            let parts = blocks(ctx, rb, 3, 1)?;
            let zr = concat_values(ctx, &parts[..2], 1)?;
            (Some(zr), Some(parts[2]))
        }
        (rb, _) => (rb, None),
    };
    if let Some(rb) = rb_early {
        let rb = if matches!(s.cell, Cell::Gru { .. }) {
            // Zero for the hidden gate: it is added with the recurrent product below.
            let dtype = ctx.tensor_ty(rb)?.dtype;
            let zeros = ctx.call(
                "zeros",
                &[],
                Attrs::new()
                    .with("shape", ctx.dims_i64(&[1, s.hidden])?)
                    .with("dtype", dtype),
            )?;
            concat_values(ctx, &[rb, zeros], 1)?
        } else {
            rb
        };
        xw = add(ctx, xw, rb)?;
    }
    let xw = ctx.call(
        "reshape",
        &[xw],
        Attrs::new().with("newshape", ctx.dims_i64(&[s.seq, s.batch, g * s.hidden])?),
    )?;
    // GRU splits R into the z/r rows and the hidden rows.
    let (r_zr, r_h) = if matches!(s.cell, Cell::Gru { .. }) {
        let rows = blocks(ctx, wt.r, 3, 0)?;
        let zr = concat_values(ctx, &rows[..2], 0)?;
        (zr, Some(rows[2]))
    } else {
        (wt.r, None)
    };
    let peep = match wt.p {
        Some(p) => Some(blocks(ctx, p, 3, 1)?),
        None => None,
    };
    let mut outs = vec![h; s.seq];
    for step in 0..s.seq {
        let t = if reverse { s.seq - 1 - step } else { step };
        let xt = at(ctx, xw, t, 0)?;
        match s.cell {
            Cell::Rnn => {
                let hr = dense(ctx, h, r_zr)?;
                let pre = add(ctx, xt, hr)?;
                let pre = clipped(ctx, pre, s.clip)?;
                h = activate(ctx, &acts[0], pre)?;
            }
            Cell::Gru { .. } => {
                let xg = blocks(ctx, xt, 3, 1)?;
                let hr = dense(ctx, h, r_zr)?;
                let hg = blocks(ctx, hr, 2, 1)?;
                let gate = |ctx: &mut NodeCtx<'_>, i: usize| -> Result<ExprId, OnnxError> {
                    let pre = add(ctx, xg[i], hg[i])?;
                    let pre = clipped(ctx, pre, s.clip)?;
                    activate(ctx, &acts[0], pre)
                };
                let z = gate(ctx, 0)?;
                let rg = gate(ctx, 1)?;
                let rh = r_h.expect("GRU has hidden rows");
                let rec = if gru_late {
                    let mut hr = dense(ctx, h, rh)?;
                    if let Some(b) = rb_h {
                        hr = add(ctx, hr, b)?;
                    }
                    mul(ctx, rg, hr)?
                } else {
                    let reset = mul(ctx, rg, h)?;
                    let mut hr = dense(ctx, reset, rh)?;
                    if let Some(b) = rb_h {
                        hr = add(ctx, hr, b)?;
                    }
                    hr
                };
                let pre = add(ctx, xg[2], rec)?;
                let pre = clipped(ctx, pre, s.clip)?;
                let cand = activate(ctx, &acts[1], pre)?;
                // H = (1 - z) * cand + z * H = cand + z * (H - cand).
                let diff = ctx.call("subtract", &[h, cand], Attrs::new())?;
                let zd = mul(ctx, z, diff)?;
                h = add(ctx, cand, zd)?;
            }
            Cell::Lstm => {
                let hr = dense(ctx, h, r_zr)?;
                let pre_all = add(ctx, xt, hr)?;
                // Gate order i, o, f, c; peepholes i, o, f.
                let pre = blocks(ctx, pre_all, 4, 1)?;
                let prev = c.expect("LSTM has a cell state");
                let peeped = |ctx: &mut NodeCtx<'_>, x: ExprId, k: usize, state: ExprId| match &peep
                {
                    Some(p) => {
                        let ps = mul(ctx, p[k], state)?;
                        add(ctx, x, ps)
                    }
                    None => Ok(x),
                };
                let pi = peeped(ctx, pre[0], 0, prev)?;
                let pi = clipped(ctx, pi, s.clip)?;
                let i = activate(ctx, &acts[0], pi)?;
                let pf = peeped(ctx, pre[2], 2, prev)?;
                let pf = clipped(ctx, pf, s.clip)?;
                let f = activate(ctx, &acts[0], pf)?;
                let pc = clipped(ctx, pre[3], s.clip)?;
                let cand = activate(ctx, &acts[1], pc)?;
                let fc = mul(ctx, f, prev)?;
                let ic = mul(ctx, i, cand)?;
                let cell = add(ctx, fc, ic)?;
                let po = peeped(ctx, pre[1], 1, cell)?;
                let po = clipped(ctx, po, s.clip)?;
                let o = activate(ctx, &acts[0], po)?;
                let hc = activate(ctx, &acts[2], cell)?;
                h = mul(ctx, o, hc)?;
                c = Some(cell);
            }
        }
        outs[t] = ctx.call(
            "expand_dims",
            &[h],
            Attrs::new().with("axis", 0i64).with("num_newaxis", 2i64),
        )?;
    }
    let y = concat_values(ctx, &outs, 0)?;
    Ok((y, h, c))
}
