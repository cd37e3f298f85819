//! Kernels over one axis of a tensor viewed as `[outer, len, inner]`: per-channel maps
//! (bias_add, batch_norm, prelu), softmax / log_softmax, layer_norm and LRN.
//!
//! Blocks of `len × inner` elements are independent; with more than one thread they run in
//! parallel.

use byoc_ir::ops::norm::AxisView;
use {super::numeric::Real, rayon::prelude::*};

/// Runs `f(x_block, y_block)` over the `[len, inner]` blocks, in parallel when `threads > 1`.
fn blocks<X: Sync, Y: Send>(
    v: AxisView,
    x: &[X],
    y: &mut [Y],
    threads: usize,
    f: impl Fn(&[X], &mut [Y]) + Send + Sync,
) {
    let b = v.block();
    if b == 0 {
        return;
    }
    if threads > 1 {
        y.par_chunks_mut(b)
            .zip(x.par_chunks(b))
            .for_each(|(yb, xb)| f(xb, yb));
    } else {
        y.chunks_mut(b)
            .zip(x.chunks(b))
            .for_each(|(yb, xb)| f(xb, yb));
    }
}

/// `y[o, c, i] = f(c, x[o, c, i])`.
pub(crate) fn per_channel<X: Copy + Sync, Y: Send>(
    v: AxisView,
    x: &[X],
    y: &mut [Y],
    threads: usize,
    f: impl Fn(usize, X) -> Y + Send + Sync,
) {
    blocks(v, x, y, threads, |xb, yb| {
        for (c, (yc, xc)) in yb.chunks_mut(v.inner).zip(xb.chunks(v.inner)).enumerate() {
            for (d, &s) in yc.iter_mut().zip(xc) {
                *d = f(c, s);
            }
        }
    });
}

/// Softmax (or log-softmax when `log`) along the axis.
pub(crate) fn softmax<T: Real>(v: AxisView, x: &[T], y: &mut [T], log: bool, threads: usize) {
    blocks(v, x, y, threads, |xb, yb| {
        for i in 0..v.inner {
            let at = |j: usize| j * v.inner + i;
            let max = (0..v.len).fold(T::NEG_INFINITY, |m, j| m.max(xb[at(j)]));
            let mut sum = T::ZERO;
            for j in 0..v.len {
                let e = (xb[at(j)] - max).exp();
                yb[at(j)] = e;
                sum = sum + e;
            }
            if log {
                let lse = sum.ln();
                for j in 0..v.len {
                    yb[at(j)] = xb[at(j)] - max - lse;
                }
            } else {
                for j in 0..v.len {
                    yb[at(j)] = yb[at(j)] / sum;
                }
            }
        }
    });
}

/// Layer normalization along the axis: `(x − mean) / sqrt(var + ε) · γ[j] + β[j]`, with `γ`
/// and `β` left out when `None`.
pub(crate) fn layer_norm<T: Real>(
    v: AxisView,
    x: &[T],
    gamma: Option<&[T]>,
    beta: Option<&[T]>,
    epsilon: f64,
    y: &mut [T],
    threads: usize,
) {
    let n = T::from_f64(v.len as f64);
    let eps = T::from_f64(epsilon);
    blocks(v, x, y, threads, |xb, yb| {
        for i in 0..v.inner {
            let at = |j: usize| j * v.inner + i;
            let mean = (0..v.len).fold(T::ZERO, |s, j| s + xb[at(j)]) / n;
            let var = (0..v.len).fold(T::ZERO, |s, j| {
                let d = xb[at(j)] - mean;
                s + d * d
            }) / n;
            let inv = T::ONE / (var + eps).sqrt();
            for j in 0..v.len {
                let mut r = (xb[at(j)] - mean) * inv;
                if let Some(g) = gamma {
                    r = r * g[j];
                }
                if let Some(b) = beta {
                    r = r + b[j];
                }
                yb[at(j)] = r;
            }
        }
    });
}

/// Local response normalization across the axis, TVM's formula:
/// `x / (bias + alpha / size · Σ x²)^beta`, the sum over channels
/// `c − size/2 ..= c − size/2 + size − 1` that exist.
pub(crate) struct Lrn {
    pub size: usize,
    pub bias: f64,
    pub alpha: f64,
    pub beta: f64,
}

impl Lrn {
    /// Applies the normalization.
    pub fn run<T: Real>(&self, v: AxisView, x: &[T], y: &mut [T], threads: usize) {
        let (bias, beta) = (T::from_f64(self.bias), T::from_f64(self.beta));
        let scale = T::from_f64(self.alpha / self.size as f64);
        let half = self.size / 2;
        blocks(v, x, y, threads, |xb, yb| {
            for c in 0..v.len {
                let lo = c.saturating_sub(half);
                let hi = (c + self.size - half).min(v.len);
                for i in 0..v.inner {
                    let sq = (lo..hi).fold(T::ZERO, |s, j| {
                        let e = xb[j * v.inner + i];
                        s + e * e
                    });
                    yb[c * v.inner + i] = xb[c * v.inner + i] / (bias + scale * sq).powf(beta);
                }
            }
        });
    }
}
