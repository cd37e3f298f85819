//! The loop nests the generator emits, one [`Kernel`] per step of a lowered partition.
//!
//! Every kernel works on dense row-major `float` buffers named by C expressions. All sizes
//! are known at generation time, so loop bounds, strides and window tables are literals and
//! the C compiler sees fixed trip counts. Semantics follow the host kernels of byoc-core
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
    /// Emits the statements transforming `v`; `channel` is the C expression of the output
    /// channel, `args` the C names of the step's operands.
    fn emit(&self, w: &mut CWriter, v: &str, channel: &str, args: &[String]) {
        for op in &self.0 {
            match *op {
                EpilogueOp::Bias(i) => w.line(format!("{v} += {}[{channel}];", args[i])),
                EpilogueOp::Act(a) => w.line(a.apply(v)),
            }
        }
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
    /// Floats of per-call scratch the kernel needs (a row accumulator for convolution).
    pub fn scratch_floats(&self) -> usize {
        match self {
            Kernel::Conv2d(g, _) => g.out[2],
            _ => 0,
        }
    }

    /// Emits the loop nest reading `args` and writing `out` (C pointer expressions);
    /// `scratch` names the step's scratch buffer when it asked for one.
    pub fn emit(&self, w: &mut CWriter, args: &[String], out: &str, scratch: &str) {
        match self {
            Kernel::Conv2d(g, epi) => emit_conv2d(w, g, epi, args, out, scratch),
            Kernel::Dense { m, k, n, epilogue } => {
                let (x, wt) = (&args[0], &args[1]);
                w.open_for("m", *m);
                w.open_for("n", *n);
                w.line(format!("const float *xr = {x} + m * {k};"));
                w.line(format!("const float *wr = {wt} + n * {k};"));
                w.line("float v = 0.0f;");
                w.line(format!(
                    "for (long k = 0; k < {k}; ++k) v += xr[k] * wr[k];"
                ));
                epilogue.emit(w, "v", "n", args);
                w.line(format!("{out}[m * {n} + n] = v;"));
                w.close();
                w.close();
            }
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

/// The output columns `[lo, hi)` whose input column `ox * stride + off` lies in `[0, size)`.
fn valid_range(off: isize, stride: usize, size: usize, out: usize) -> (usize, usize) {
    let s = stride as isize;
    let ceil_div = |a: isize| if a >= 0 { (a + s - 1) / s } else { -((-a) / s) };
    let lo = ceil_div(-off).clamp(0, out as isize);
    let hi = ceil_div(size as isize - off).clamp(lo, out as isize);
    (lo as usize, hi as usize)
}

fn list(values: impl IntoIterator<Item = usize>) -> String {
    values
        .into_iter()
        .map(|v| v.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Convolution: for each output row, accumulate every (input channel, ky, kx) tap into a row
/// of `scratch` over the valid output columns (an inner loop the C compiler can vectorize
/// when the stride is 1), then run the epilogue and store each output element once.
fn emit_conv2d(
    w: &mut CWriter,
    g: &Conv2dGeom,
    epi: &Epilogue,
    args: &[String],
    out: &str,
    acc: &str,
) {
    let [n, c, h, wd] = g.input;
    let [oc, oh, ow] = g.out;
    let [kh, kw] = g.kernel;
    let (icg, ocg) = (c / g.groups, oc / g.groups);
    let (x, wt) = (&args[0], &args[1]);
    let (lo, hi): (Vec<usize>, Vec<usize>) = (0..kw)
        .map(|kx| {
            let off = (kx * g.dilation[1]) as isize - g.pad[1] as isize;
            valid_range(off, g.strides[1], wd, ow)
        })
        .unzip();
    w.line(format!("static const long ox_lo[{kw}] = {{{}}};", list(lo)));
    w.line(format!("static const long ox_hi[{kw}] = {{{}}};", list(hi)));
    w.open_for("n", n);
    w.open_for("oc", oc);
    w.line(format!(
        "const float *xg = {x} + (n * {c} + (oc / {ocg}) * {icg}) * {};",
        h * wd
    ));
    w.line(format!("const float *wo = {wt} + oc * {};", icg * kh * kw));
    w.line(format!(
        "float *yo = {out} + (n * {oc} + oc) * {};",
        oh * ow
    ));
    w.open_for("oy", oh);
    w.line(format!(
        "for (long ox = 0; ox < {ow}; ++ox) {acc}[ox] = 0.0f;"
    ));
    w.open_for("ic", icg);
    w.open_for("ky", kh);
    w.line(format!(
        "const long iy = oy * {} - {} + ky * {};",
        g.strides[0], g.pad[0], g.dilation[0]
    ));
    w.line(format!("if (iy < 0 || iy >= {h}) continue;"));
    w.line(format!("const float *xr = xg + (ic * {h} + iy) * {wd};"));
    w.open_for("kx", kw);
    w.line(format!(
        "const float wv = wo[(ic * {kh} + ky) * {kw} + kx];"
    ));
    w.line(format!(
        "const float *xs = xr + kx * {} - {};",
        g.dilation[1], g.pad[1]
    ));
    w.line(format!(
        "for (long ox = ox_lo[kx]; ox < ox_hi[kx]; ++ox) {acc}[ox] += wv * xs[ox * {}];",
        g.strides[1]
    ));
    w.close();
    w.close();
    w.close();
    w.open_for("ox", ow);
    w.line(format!("float v = {acc}[ox];"));
    epi.emit(w, "v", "oc", args);
    w.line(format!("yo[oy * {ow} + ox] = v;"));
    w.close();
    w.close();
    w.close();
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
    fn valid_columns_match_brute_force() {
        for (off, stride, size, out) in [(-1, 1, 5, 5), (2, 2, 7, 3), (-3, 2, 8, 6), (0, 3, 4, 2)] {
            let (lo, hi) = valid_range(off, stride, size, out);
            let want: Vec<usize> = (0..out)
                .filter(|&o| {
                    let i = (o * stride) as isize + off;
                    i >= 0 && i < size as isize
                })
                .collect();
            let got: Vec<usize> = (lo..hi).collect();
            assert_eq!(got, want, "off {off} stride {stride} size {size} out {out}");
        }
    }

    #[test]
    fn strides_are_row_major() {
        assert_eq!(contiguous_strides(&[2, 3, 4]), vec![12, 4, 1]);
        assert_eq!(contiguous_strides(&[]), Vec::<usize>::new());
    }
}
