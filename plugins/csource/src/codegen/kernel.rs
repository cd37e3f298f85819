//! The loop nests the generator emits, one [`Kernel`] per step of a lowered partition.
//!
//! Every kernel works on dense row-major `float` buffers named by C expressions. All sizes
//! are known at generation time, so loop bounds, strides and window tables are literals and
//! the C compiler sees fixed trip counts. Semantics follow the host kernels of byoc-kernels
//! (Relay v0.16): pooling windows, padding counts, the lowest finite value for an empty max
//! window, max-subtracted softmax, `fmaxf`-style NaN handling in `relu`.

use super::writer::{float_literal, index_expr, CWriter};

/// An element-wise activation, standalone or in a fused epilogue.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Activation {
    /// `max(v, 0)`.
    Relu,
    /// `min(max(v, lo), hi)`.
    Clip {
        /// Lower bound.
        lo: f32,
        /// Upper bound.
        hi: f32,
    },
    /// `1 / (1 + e^-v)`.
    Sigmoid,
    /// `tanh(v)`.
    Tanh,
}

impl Activation {
    /// The C statement that applies the activation to the variable `v` in place.
    fn apply(self, v: &str) -> String {
        match self {
            Activation::Relu => format!("{v} = fmaxf({v}, 0.0f);"),
            Activation::Clip { lo, hi } => format!(
                "{v} = fminf(fmaxf({v}, {}), {});",
                float_literal(lo),
                float_literal(hi)
            ),
            Activation::Sigmoid => format!("{v} = 1.0f / (1.0f + expf(-{v}));"),
            Activation::Tanh => format!("{v} = tanhf({v});"),
        }
    }
}

/// One operation applied to each output element of a fused producer before it is stored.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum EpilogueOp {
    /// Adds `args[index][channel]` (a `nn.bias_add` on the channel axis).
    Bias(usize),
    /// An activation.
    Act(Activation),
}

/// What runs after the accumulation of a convolution or dense output element.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Epilogue(pub Vec<EpilogueOp>);

impl Epilogue {
    /// Emits the statements transforming `v`; `bias(i)` is the C expression of the bias
    /// value of operand `i` for the element's channel.
    fn emit(&self, w: &mut CWriter, v: &str, bias: &dyn Fn(usize) -> String) {
        for op in &self.0 {
            match *op {
                EpilogueOp::Bias(i) => w.line(format!("{v} += {};", bias(i))),
                EpilogueOp::Act(a) => w.line(a.apply(v)),
            }
        }
    }

    /// The operands whose bias values the epilogue reads.
    fn bias_operands(&self) -> impl Iterator<Item = usize> + '_ {
        self.0.iter().filter_map(|op| match op {
            EpilogueOp::Bias(i) => Some(*i),
            EpilogueOp::Act(_) => None,
        })
    }
}

/// Geometry of an NCHW / OIHW convolution.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Conv2dGeom {
    /// Input N, C, H, W.
    pub input: [usize; 4],
    /// Output channels, height, width.
    pub out: [usize; 3],
    /// Kernel height and width.
    pub kernel: [usize; 2],
    /// Strides (h, w).
    pub strides: [usize; 2],
    /// Dilation (h, w).
    pub dilation: [usize; 2],
    /// Padding top, left, bottom, right.
    pub pad: [usize; 4],
    /// Groups.
    pub groups: usize,
}

/// Geometry of an NCHW pooling (global pooling is a full-size window).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct PoolGeom {
    /// N * C planes.
    pub planes: usize,
    /// Input height and width.
    pub in_hw: [usize; 2],
    /// Output height and width.
    pub out_hw: [usize; 2],
    /// Window height and width.
    pub kernel: [usize; 2],
    /// Strides (h, w).
    pub strides: [usize; 2],
    /// Dilation (h, w).
    pub dilation: [usize; 2],
    /// Padding top, left, bottom, right.
    pub pad: [usize; 4],
}

impl Conv2dGeom {
    /// The output row length the accumulation loops run over: the output width rounded up to
    /// [`VECTOR_FLOATS`], so their trip counts are multiples of the vector length (what gcc's
    /// `-O2` cost model asks before it vectorizes) and need no scalar remainder.
    fn row_len(&self) -> usize {
        self.out[2].div_ceil(VECTOR_FLOATS) * VECTOR_FLOATS
    }

    /// Height and row length of the zero-padded input copy, or `None` when the kernel reads
    /// the input directly (no padding, stride 1 across, and the rounded rows end inside the
    /// input rows). With a column stride `s > 1` each copied row is split into `s` phases
    /// (columns `p, p + s, p + 2s, ...` for phase `p`, [`Conv2dGeom::phase_len`] each), so
    /// every tap reads a contiguous run of its phase.
    fn padded(&self) -> Option<[usize; 2]> {
        let [_, _, h, _] = self.input;
        let [pt, _, pb, _] = self.pad;
        let direct = self.pad == [0; 4] && self.strides[1] == 1 && self.row_len() == self.out[2];
        (!direct).then(|| [h + pt + pb, self.strides[1] * self.phase_len()])
    }

    /// Columns of one stride phase of a padded row: the padded row's, and enough for the
    /// rounded output row of the last tap.
    fn phase_len(&self) -> usize {
        let [_, _, _, w] = self.input;
        let [_, pl, _, pr] = self.pad;
        let s = self.strides[1];
        (w + pl + pr)
            .div_ceil(s)
            .max(self.row_len() + (self.kernel[1] - 1) * self.dilation[1] / s)
    }
}

/// Floats in the vectors the conv2d row loops are laid out for: 8 (AVX; a multiple of SSE's 4).
pub(crate) const VECTOR_FLOATS: usize = 8;

/// Output channels a conv2d block computes together: each input row segment is loaded once for
/// all of them; their weights, the input vector and the accumulator vectors of one step fit
/// SSE's 16 registers. The accumulator rows are local arrays: 16 bytes of stack per column of
/// the rounded output row.
pub(crate) const OC_BLOCK: usize = 4;

/// Floats of the partial sums of a dense dot product (one SSE or AVX vector's worth of lanes).
const DOT_LANES: usize = 8;

/// Max or average pooling.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PoolKind {
    /// Maximum over the taps inside the input.
    Max,
    /// Mean over the taps inside the input, or inside the input and its padding.
    Avg {
        /// Divide by the taps inside input plus explicit padding.
        count_include_pad: bool,
    },
}

/// An element-wise binary op.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BinaryOp {
    /// `+`.
    Add,
    /// `-`.
    Subtract,
    /// `*`.
    Multiply,
}

impl BinaryOp {
    fn symbol(self) -> &'static str {
        match self {
            BinaryOp::Add => "+",
            BinaryOp::Subtract => "-",
            BinaryOp::Multiply => "*",
        }
    }
}

/// A loop nest over dense float buffers.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Kernel {
    /// `args = [data, weight, epilogue operands...]`.
    Conv2d(Conv2dGeom, Epilogue),
    /// `y[m, n] = sum_k x[m, k] * w[n, k]`; `args = [data, weight, epilogue operands...]`.
    Dense {
        /// Rows of the data.
        m: usize,
        /// Reduction length.
        k: usize,
        /// Output units.
        n: usize,
        /// What follows the dot product.
        epilogue: Epilogue,
    },
    /// `y[o, c, i] = x[o, c, i] + b[c]`; `args = [data, bias]`.
    BiasAdd {
        /// Product of the dimensions before the axis.
        outer: usize,
        /// The axis length.
        channels: usize,
        /// Product of the dimensions after the axis.
        inner: usize,
    },
    /// Broadcasting binary op; `args = [lhs, rhs]`.
    Binary {
        /// The op.
        op: BinaryOp,
        /// Output shape.
        shape: Vec<usize>,
        /// Element strides of each operand over the output dimensions (0 where broadcast).
        strides: [Vec<usize>; 2],
    },
    /// Element-wise activation over `len` elements; `args = [data]`.
    Activation(Activation, usize),
    /// Pooling; `args = [data]`.
    Pool(PoolGeom, PoolKind),
    /// Softmax along an axis; `args = [data]`.
    Softmax {
        /// Product of the dimensions before the axis.
        outer: usize,
        /// The axis length.
        len: usize,
        /// Product of the dimensions after the axis.
        inner: usize,
    },
}

impl Kernel {
    /// Floats of per-call scratch the kernel needs (the zero-padded input image of a
    /// convolution that reads one).
    pub fn scratch_floats(&self) -> usize {
        match self {
            Kernel::Conv2d(g, _) => g.padded().map_or(0, |[hp, wp]| g.input[1] * hp * wp),
            _ => 0,
        }
    }

    /// Emits the loop nest reading `args` and writing `out` (C pointer expressions);
    /// `scratch` names the step's scratch buffer when it asked for one.
    pub fn emit(&self, w: &mut CWriter, args: &[String], out: &str, scratch: &str) {
        match self {
            Kernel::Conv2d(g, epi) => emit_conv2d(w, g, epi, args, out, scratch),
            Kernel::Dense { m, k, n, epilogue } => emit_dense(w, [*m, *k, *n], epilogue, args, out),
            Kernel::BiasAdd {
                outer,
                channels,
                inner,
            } => {
                let (x, b) = (&args[0], &args[1]);
                w.open_for("o", *outer);
                w.open_for("c", *channels);
                w.line(format!("const long base = (o * {channels} + c) * {inner};"));
                w.line(format!(
                    "for (long i = 0; i < {inner}; ++i) {out}[base + i] = {x}[base + i] + {b}[c];"
                ));
                w.close();
                w.close();
            }
            Kernel::Binary { op, shape, strides } => emit_binary(w, *op, shape, strides, args, out),
            Kernel::Activation(act, len) => {
                w.open_for("i", *len);
                w.line(format!("float v = {}[i];", args[0]));
                w.line(act.apply("v"));
                w.line(format!("{out}[i] = v;"));
                w.close();
            }
            Kernel::Pool(g, kind) => emit_pool(w, g, *kind, &args[0], out),
            Kernel::Softmax { outer, len, inner } => {
                let x = &args[0];
                w.open_for("o", *outer);
                w.open_for("i", *inner);
                w.line(format!("const float *xb = {x} + o * {} + i;", len * inner));
                w.line(format!("float *yb = {out} + o * {} + i;", len * inner));
                w.line("float mx = -INFINITY;");
                w.line(format!(
                    "for (long j = 0; j < {len}; ++j) mx = fmaxf(mx, xb[j * {inner}]);"
                ));
                w.line("float sum = 0.0f;");
                w.open_for("j", *len);
                w.line(format!("const float e = expf(xb[j * {inner}] - mx);"));
                w.line(format!("yb[j * {inner}] = e;"));
                w.line("sum += e;");
                w.close();
                w.line(format!(
                    "for (long j = 0; j < {len}; ++j) yb[j * {inner}] /= sum;"
                ));
                w.close();
                w.close();
            }
        }
    }
}

/// Dense: one dot product per output element, summed in [`DOT_LANES`] interleaved partial
/// sums (a fixed order the C compiler can vectorize without `-ffast-math`), then the
/// remainder, then the epilogue.
fn emit_dense(w: &mut CWriter, [m, k, n]: [usize; 3], epi: &Epilogue, args: &[String], out: &str) {
    let (x, wt) = (&args[0], &args[1]);
    let body = k - k % DOT_LANES;
    w.open_for("m", m);
    w.open_for("n", n);
    w.line(format!("const float *xr = {x} + m * {k};"));
    w.line(format!("const float *wr = {wt} + n * {k};"));
    w.line(format!("float s[{DOT_LANES}] = {{0.0f}};"));
    w.open(format!("for (long k = 0; k < {body}; k += {DOT_LANES})"));
    w.line(format!(
        "for (long j = 0; j < {DOT_LANES}; ++j) s[j] += xr[k + j] * wr[k + j];"
    ));
    w.close();
    let lanes: Vec<String> = (0..DOT_LANES).map(|j| format!("s[{j}]")).collect();
    w.line(format!("float v = {};", pairwise_sum(&lanes)));
    if body < k {
        w.line(format!(
            "for (long k = {body}; k < {k}; ++k) v += xr[k] * wr[k];"
        ));
    }
    epi.emit(w, "v", &|i| format!("{}[n]", args[i]));
    w.line(format!("{out}[m * {n} + n] = v;"));
    w.close();
    w.close();
}

/// `terms` added as a balanced tree: `(a + b) + (c + d)`.
fn pairwise_sum(terms: &[String]) -> String {
    match terms {
        [] => "0.0f".to_string(),
        [t] => t.clone(),
        _ => {
            let (l, r) = terms.split_at(terms.len() / 2);
            let wrap = |t: &[String]| {
                let s = pairwise_sum(t);
                if t.len() > 1 {
                    format!("({s})")
                } else {
                    s
                }
            };
            format!("{} + {}", wrap(l), wrap(r))
        }
    }
}

/// `a * b` as C text, leaving out factors of 1.
fn times(var: &str, factor: usize) -> String {
    if factor == 1 {
        var.to_string()
    } else {
        format!("{var} * {factor}")
    }
}

/// Convolution, direct: per image, the input is copied into a zero-padded buffer when it has
/// padding (so no tap needs a bounds check; with a column stride above 1 the copy splits each
/// row into stride phases, see [`Conv2dGeom::padded`]), then output channels are computed in
/// blocks of
/// [`OC_BLOCK`]: for each output row, every (input channel, ky, kx) tap multiplies one input
/// row segment into the block's row accumulators (local arrays, contiguous over the output
/// width with a trip count rounded up to the vector length, so gcc vectorizes it at `-O2`);
/// then the epilogue runs and each output element is stored once.
fn emit_conv2d(
    w: &mut CWriter,
    g: &Conv2dGeom,
    epi: &Epilogue,
    args: &[String],
    out: &str,
    scratch: &str,
) {
    let [_, c, h, wd] = g.input;
    let x = &args[0];
    let [hp, wp] = g.padded().unwrap_or([h, wd]);
    w.open_for("n", g.input[0]);
    match g.padded() {
        Some(_) => {
            let [pt, pl, ..] = g.pad;
            w.line(format!("float *xp = {scratch};"));
            w.line(format!("memset(xp, 0, sizeof(float) * {});", c * hp * wp));
            w.open_for("c", c);
            let (src, dst) = (
                format!("{x} + ((n * {c} + c) * {h} + iy) * {wd}"),
                format!("xp + (c * {hp} + iy + {pt}) * {wp}"),
            );
            match g.strides[1] {
                1 => w.line(format!(
                    "for (long iy = 0; iy < {h}; ++iy) memcpy({dst} + {pl}, {src}, sizeof(float) * {wd});"
                )),
                s => {
                    let len = g.phase_len();
                    w.open_for("iy", h);
                    w.line(format!("const float *src = {src};"));
                    w.line(format!("float *dst = {dst};"));
                    w.open_for("ix", wd);
                    w.line(format!("const long col = ix + {pl};"));
                    w.line(format!("dst[(col % {s}) * {len} + col / {s}] = src[ix];"));
                    w.close();
                    w.close();
                }
            }
            w.close();
        }
        None => w.line(format!("const float *xp = {x} + n * {};", c * h * wd)),
    }
    let ocg = g.out[0] / g.groups;
    let (full, rest) = (ocg / OC_BLOCK, ocg % OC_BLOCK);
    let group = if g.groups > 1 {
        w.open_for("g", g.groups);
        "g"
    } else {
        "0"
    };
    let first = |block: &str| match (g.groups > 1, block) {
        (true, "0") => format!("g * {ocg}"),
        (true, b) => format!("g * {ocg} + {b}"),
        (false, b) => b.to_string(),
    };
    if full > 0 {
        w.open_for("ob", full);
        let oc0 = first(&format!("ob * {OC_BLOCK}"));
        emit_conv2d_block(w, g, epi, args, out, [hp, wp], (group, &oc0), OC_BLOCK);
        w.close();
    }
    if rest > 0 {
        w.open("");
        let oc0 = first(&(full * OC_BLOCK).to_string());
        emit_conv2d_block(w, g, epi, args, out, [hp, wp], (group, &oc0), rest);
        w.close();
    }
    if g.groups > 1 {
        w.close();
    }
    w.close();
}

/// The loop nest of `nb` output channels starting at `oc0` (a C expression) of group
/// `group`, reading the image `xp` of `[hp, wp]` planes.
#[allow(
    clippy::too_many_arguments,
    reason = "one loop nest's geometry and names"
)]
fn emit_conv2d_block(
    w: &mut CWriter,
    g: &Conv2dGeom,
    epi: &Epilogue,
    args: &[String],
    out: &str,
    [hp, wp]: [usize; 2],
    (group, oc0): (&str, &str),
    nb: usize,
) {
    let [oc, oh, ow] = g.out;
    let [kh, kw] = g.kernel;
    let icg = g.input[1] / g.groups;
    let row = g.row_len();
    let blocks: Vec<usize> = (0..nb).collect();
    let wt = &args[1];
    w.line(format!("const long oc0 = {oc0};"));
    match group {
        "0" => w.line("const float *xg = xp;"),
        g => w.line(format!("const float *xg = xp + {g} * {};", icg * hp * wp)),
    }
    for &b in &blocks {
        w.line(format!(
            "const float *w{b} = {wt} + (oc0 + {b}) * {};",
            icg * kh * kw
        ));
    }
    w.open_for("oy", oh);
    let accs: Vec<String> = blocks.iter().map(|b| format!("a{b}[{row}]")).collect();
    w.line(format!("float {};", accs.join(", ")));
    let zero: Vec<String> = blocks.iter().map(|b| format!("a{b}[ox] = 0.0f;")).collect();
    w.line(format!(
        "for (long ox = 0; ox < {row}; ++ox) {{ {} }}",
        zero.join(" ")
    ));
    w.open_for("ic", icg);
    w.open_for("ky", kh);
    w.line(format!(
        "const float *xr = xg + (ic * {hp} + {} + {}) * {wp};",
        times("oy", g.strides[0]),
        times("ky", g.dilation[0])
    ));
    w.open_for("kx", kw);
    match g.strides[1] {
        1 => w.line(format!(
            "const float *xs = xr + {};",
            times("kx", g.dilation[1])
        )),
        s => {
            w.line(format!("const long q = {};", times("kx", g.dilation[1])));
            w.line(format!(
                "const float *xs = xr + (q % {s}) * {} + q / {s};",
                g.phase_len()
            ));
        }
    }
    w.line(format!("const long k = (ic * {kh} + ky) * {kw} + kx;"));
    let weights: Vec<String> = blocks.iter().map(|b| format!("c{b} = w{b}[k]")).collect();
    w.line(format!("const float {};", weights.join(", ")));
    w.open(format!("for (long ox = 0; ox < {row}; ++ox)"));
    w.line("const float v = xs[ox];");
    let updates: Vec<String> = blocks
        .iter()
        .map(|b| format!("a{b}[ox] += c{b} * v;"))
        .collect();
    w.line(updates.join(" "));
    w.close();
    w.close();
    w.close();
    w.close();
    for &b in &blocks {
        w.open("");
        for i in epi.bias_operands() {
            w.line(format!("const float bias{i} = {}[oc0 + {b}];", args[i]));
        }
        w.line(format!(
            "float *yr = {out} + ((n * {oc} + oc0 + {b}) * {oh} + oy) * {ow};"
        ));
        w.open_for("ox", ow);
        w.line(format!("float v = a{b}[ox];"));
        epi.emit(w, "v", &|i| format!("bias{i}"));
        w.line("yr[ox] = v;");
        w.close();
        w.close();
    }
    w.close();
}

/// Broadcasting binary op: a flat loop when both operands have the output's shape, otherwise
/// one loop per output dimension with per-operand index arithmetic.
fn emit_binary(
    w: &mut CWriter,
    op: BinaryOp,
    shape: &[usize],
    strides: &[Vec<usize>; 2],
    args: &[String],
    out: &str,
) {
    let sym = op.symbol();
    let dense = contiguous_strides(shape);
    if strides.iter().all(|s| *s == dense) {
        let len: usize = shape.iter().product();
        w.line(format!(
            "for (long i = 0; i < {len}; ++i) {out}[i] = {}[i] {sym} {}[i];",
            args[0], args[1]
        ));
        return;
    }
    let vars: Vec<String> = (0..shape.len()).map(|d| format!("i{d}")).collect();
    for (v, &d) in vars.iter().zip(shape) {
        w.open_for(v, d);
    }
    w.line(format!(
        "{out}[{}] = {}[{}] {sym} {}[{}];",
        index_expr(&vars, &dense),
        args[0],
        index_expr(&vars, &strides[0]),
        args[1],
        index_expr(&vars, &strides[1])
    ));
    for _ in shape {
        w.close();
    }
}

/// Row-major element strides of `shape`.
pub(crate) fn contiguous_strides(shape: &[usize]) -> Vec<usize> {
    let mut strides = vec![1; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * shape[d + 1];
    }
    strides
}

/// Pooling, one window per output element. Window rows start at `oy * stride - pad_top`;
/// taps outside the input are skipped; the average divides by the taps inside the input, or,
/// with `count_include_pad`, by the taps inside input plus explicit padding (never the extra
/// rows `ceil_mode` adds); an empty window gives 0 (average) or `-FLT_MAX` (max).
fn emit_pool(w: &mut CWriter, g: &PoolGeom, kind: PoolKind, x: &str, out: &str) {
    let ([ih, iw], [oh, ow], [kh, kw]) = (g.in_hw, g.out_hw, g.kernel);
    let ([sh, sw], [dh, dw]) = (g.strides, g.dilation);
    let [pt, pl, pb, pr] = g.pad;
    w.open_for("p", g.planes);
    w.line(format!("const float *xp = {x} + p * {};", ih * iw));
    w.line(format!("float *yp = {out} + p * {};", oh * ow));
    w.open_for("oy", oh);
    w.line(format!("const long y0 = oy * {sh} - {pt};"));
    w.open_for("ox", ow);
    w.line(format!("const long x0 = ox * {sw} - {pl};"));
    match kind {
        PoolKind::Max => w.line("float acc = -FLT_MAX;"),
        PoolKind::Avg { .. } => {
            w.line("float acc = 0.0f;");
            w.line("long taps = 0;");
        }
    }
    w.open_for("ky", kh);
    w.line(format!("const long iy = y0 + ky * {dh};"));
    w.line(format!("if (iy < 0 || iy >= {ih}) continue;"));
    w.open_for("kx", kw);
    w.line(format!("const long ix = x0 + kx * {dw};"));
    w.line(format!("if (ix < 0 || ix >= {iw}) continue;"));
    match kind {
        PoolKind::Max => w.line(format!("acc = fmaxf(acc, xp[iy * {iw} + ix]);")),
        PoolKind::Avg { .. } => {
            w.line(format!("acc += xp[iy * {iw} + ix];"));
            w.line("++taps;");
        }
    }
    w.close();
    w.close();
    match kind {
        PoolKind::Max => {}
        PoolKind::Avg { count_include_pad } => {
            if count_include_pad {
                w.line("long py = 0, px = 0;");
                w.line(format!(
                    "for (long ky = 0; ky < {kh}; ++ky) py += y0 + ky * {dh} < {};",
                    ih + pb
                ));
                w.line(format!(
                    "for (long kx = 0; kx < {kw}; ++kx) px += x0 + kx * {dw} < {};",
                    iw + pr
                ));
                w.line("taps = py * px;");
            }
            w.line("acc = taps == 0 ? 0.0f : acc / (float)taps;");
        }
    }
    w.line(format!("yp[oy * {ow} + ox] = acc;"));
    w.close();
    w.close();
    w.close();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_are_balanced() {
        let t: Vec<String> = ["a", "b", "c", "d"].map(String::from).to_vec();
        assert_eq!(pairwise_sum(&t), "(a + b) + (c + d)");
        assert_eq!(pairwise_sum(&t[..3]), "a + (b + c)");
    }

    #[test]
    fn padded_copy_only_where_rows_overrun_or_pad() {
        let geom = |w: usize, pad: usize| Conv2dGeom {
            input: [1, 2, 5, w],
            out: [3, 5 + 2 * pad - 2, w + 2 * pad - 2],
            kernel: [3, 3],
            strides: [1, 1],
            dilation: [1, 1],
            pad: [pad; 4],
            groups: 1,
        };
        assert_eq!(geom(10, 0).padded(), None);
        assert_eq!(geom(10, 0).row_len(), 8);
        assert_eq!(geom(9, 0).padded(), Some([5, 10]));
        assert_eq!(geom(8, 1).padded(), Some([7, 10]));
        // Stride 2 across: phases of 5 columns (the 10 padded ones), or of 8 + 1 for the
        // rounded row of the last tap.
        let strided = Conv2dGeom {
            strides: [1, 2],
            out: [3, 5, 4],
            ..geom(8, 1)
        };
        assert_eq!(strided.phase_len(), 9);
        assert_eq!(strided.padded(), Some([7, 18]));
    }

    #[test]
    fn strides_are_row_major() {
        assert_eq!(contiguous_strides(&[2, 3, 4]), vec![12, 4, 1]);
        assert_eq!(contiguous_strides(&[]), Vec::<usize>::new());
    }
}
