//! 2-D max and average pooling (global pooling is pooling with a full-size window).
//!
//! Window positions follow TVM: output `o` covers input rows `o·stride − pad_top +
//! k·dilation`. Average pooling divides by the number of taps inside the input
//! (`count_include_pad = false`) or inside the input plus its explicit padding (`true`); the
//! extra bottom/right rows that `ceil_mode` adds are never counted. A window with no tap to
//! count gives 0 (average) or the dtype's lowest value (max), as TVM does.

use byoc_ir::ops::pool::{Pool2dGeom, PoolKind};
use {
    super::numeric::Real,
    super::scratch,
    super::simd::Simd,
    super::window::{deinterleave, phase_index, Columns},
    rayon::prelude::*,
};

/// The taps of one window along one axis: those inside the input are the contiguous run
/// `first, first + dilation, …` of `inside` coordinates; `padded` counts the taps inside the
/// input plus its explicit padding.
#[derive(Clone, Copy)]
struct Span {
    first: usize,
    inside: usize,
    padded: usize,
}

/// The [`Span`] of every output coordinate along axis `a` (0 = H, 1 = W) of an input extent
/// `size`: computed once per call, not per output element.
fn spans(g: &Pool2dGeom, a: usize, out: usize, size: usize) -> Vec<Span> {
    let (dil, k) = (g.dilation[a] as isize, g.kernel[a]);
    let hi = (size + g.pad[a + 2]) as isize;
    (0..out)
        .map(|o| {
            let start = (o * g.strides[a]) as isize - g.pad[a] as isize;
            let at = |t: usize| start + t as isize * dil;
            let padded = (0..k).filter(|&t| at(t) < hi).count();
            let mut inside = (0..k).filter(|&t| at(t) >= 0 && at(t) < size as isize);
            match inside.next() {
                Some(t) => Span {
                    first: at(t) as usize,
                    inside: 1 + inside.count(),
                    padded,
                },
                None => Span {
                    first: 0,
                    inside: 0,
                    padded,
                },
            }
        })
        .collect()
}

/// The average of `sum` over a window of `taps` taps inside the input, `padded` with its
/// padding: 0 when the divisor is 0.
#[inline]
fn average<T: Real>(sum: T, count_include_pad: bool, taps: usize, padded: usize) -> T {
    let divisor = if count_include_pad { padded } else { taps };
    if divisor == 0 {
        T::ZERO
    } else {
        sum / T::from_f64(divisor as f64)
    }
}

/// `y = pool2d(x)` in the data's layout.
pub(crate) fn pool2d<T: Real>(
    g: &Pool2dGeom,
    kind: PoolKind,
    x: &[T],
    y: &mut [T],
    threads: usize,
) {
    let (hw_in, c) = (g.in_h * g.in_w, g.channels);
    let (ys, xs) = (spans(g, 0, g.out_h, g.in_h), spans(g, 1, g.out_w, g.in_w));
    let [dy, dx] = g.dilation;
    if g.channels_last {
        // One task per output row of one image: `out_w × C` contiguous outputs, each pixel's
        // channels reduced together tap by tap (the same tap order per channel).
        let row_len = g.out_w * c;
        let row = |(r, out): (usize, &mut [T])| {
            let (n, oy) = (r / g.out_h, r % g.out_h);
            let img = &x[n * hw_in * c..(n + 1) * hw_in * c];
            let sy = ys[oy];
            for (sx, px) in xs.iter().zip(out.chunks_mut(c)) {
                px.fill(match kind {
                    PoolKind::Max => T::MIN,
                    PoolKind::Avg { .. } => T::ZERO,
                });
                for ty in 0..sy.inside {
                    for tx in 0..sx.inside {
                        let at = ((sy.first + ty * dy) * g.in_w + sx.first + tx * dx) * c;
                        let src = &img[at..at + c];
                        match kind {
                            PoolKind::Max => {
                                for (v, &s) in px.iter_mut().zip(src) {
                                    *v = v.max(s);
                                }
                            }
                            PoolKind::Avg { .. } => {
                                for (v, &s) in px.iter_mut().zip(src) {
                                    *v = *v + s;
                                }
                            }
                        }
                    }
                }
                if let PoolKind::Avg { count_include_pad } = kind {
                    let (taps, padded) = (sy.inside * sx.inside, sy.padded * sx.padded);
                    for v in px.iter_mut() {
                        *v = average(*v, count_include_pad, taps, padded);
                    }
                }
            }
        };
        if row_len == 0 {
            return;
        }
        if threads > 1 {
            y.par_chunks_mut(row_len).enumerate().for_each(row);
        } else {
            y.chunks_mut(row_len).enumerate().for_each(row);
        }
    } else {
        let plane_len = g.out_h * g.out_w;
        let columns = Columns::all(g.kernel[1], dx, g.pad[1], g.strides[1], g.in_w, g.out_w);
        let simd = Simd::selected();
        let phases_len = if g.strides[1] > 1 { g.in_w } else { 0 };
        let plane = |(p, out): (usize, &mut [T])| {
            let src = &x[p * hw_in..(p + 1) * hw_in];
            let rows = Rows {
                g,
                kind,
                ys: &ys,
                xs: &xs,
                columns: &columns,
            };
            scratch::with_one(phases_len, |phases: &mut [T]| match simd {
                // SAFETY: `Simd::selected` returns AVX-512 only when the CPU has it.
                #[cfg(target_arch = "x86_64")]
                Simd::Avx512 => unsafe { plane_avx512(&rows, src, out, phases) },
                _ => rows.plane(src, out, phases),
            });
        };
        if plane_len == 0 {
            return;
        }
        if threads > 1 {
            y.par_chunks_mut(plane_len).enumerate().for_each(plane);
        } else {
            y.chunks_mut(plane_len).enumerate().for_each(plane);
        }
    }
}

/// What every NCHW output plane of one pooling shares: the geometry, the window spans of
/// every output row and column, and every kernel column's [`Columns`].
struct Rows<'a> {
    g: &'a Pool2dGeom,
    kind: PoolKind,
    ys: &'a [Span],
    xs: &'a [Span],
    columns: &'a [Columns],
}

impl Rows<'_> {
    /// One NCHW output plane, row by row: each window tap inside the input is folded into
    /// the output columns it reaches (a contiguous run, so the loop runs across the row), taps
    /// in row-major order as the definition visits them; averages then divide. With a column
    /// stride above 1, each input row is first split into its stride phases (`phases`, `in_w`
    /// elements), where every tap's run is contiguous too.
    #[inline(always)]
    fn plane<T: Real>(&self, src: &[T], out: &mut [T], phases: &mut [T]) {
        let (g, kind) = (self.g, self.kind);
        let (dy, stride) = (g.dilation[0], g.strides[1]);
        for (sy, row) in self.ys.iter().zip(out.chunks_mut(g.out_w)) {
            row.fill(match kind {
                PoolKind::Max => T::MIN,
                PoolKind::Avg { .. } => T::ZERO,
            });
            for ty in 0..sy.inside {
                let in_row = &src[(sy.first + ty * dy) * g.in_w..][..g.in_w];
                let taps: &[T] = if stride == 1 {
                    in_row
                } else {
                    deinterleave(in_row, stride, phases);
                    phases
                };
                for col in self.columns {
                    let acc = &mut row[col.lo..col.hi];
                    let at = phase_index(col.first, stride, g.in_w);
                    fold(kind, acc, &taps[at..at + acc.len()]);
                }
            }
            if let PoolKind::Avg { count_include_pad } = kind {
                for (sx, v) in self.xs.iter().zip(row.iter_mut()) {
                    *v = average(
                        *v,
                        count_include_pad,
                        sy.inside * sx.inside,
                        sy.padded * sx.padded,
                    );
                }
            }
        }
    }
}

/// Folds one tap per output column into `acc`: the maximum, or the sum for averages.
#[inline(always)]
fn fold<T: Real>(kind: PoolKind, acc: &mut [T], taps: &[T]) {
    match kind {
        PoolKind::Max => {
            for (a, &t) in acc.iter_mut().zip(taps) {
                *a = a.max(t);
            }
        }
        PoolKind::Avg { .. } => {
            for (a, &t) in acc.iter_mut().zip(taps) {
                *a = *a + t;
            }
        }
    }
}

/// [`Rows::plane`] compiled with AVX-512.
///
/// # Safety
/// The CPU has AVX-512 F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn plane_avx512<T: Real>(rows: &Rows<'_>, src: &[T], out: &mut [T], phases: &mut [T]) {
    rows.plane(src, out, phases);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One output element by definition: every tap of the window tested against the input
    /// bounds (and the padded bounds for the divisor), rows outer, columns inner.
    fn reference(
        g: &Pool2dGeom,
        kind: PoolKind,
        get: impl Fn(usize, usize) -> f32,
        oy: usize,
        ox: usize,
    ) -> f32 {
        let axis = |o: usize, a: usize, size: usize| {
            let start = (o * g.strides[a]) as isize - g.pad[a] as isize;
            let at = |t: usize| start + (t * g.dilation[a]) as isize;
            let padded = (0..g.kernel[a])
                .filter(|&t| at(t) < (size + g.pad[a + 2]) as isize)
                .count();
            let inside: Vec<usize> = (0..g.kernel[a])
                .map(at)
                .filter(|&i| i >= 0 && i < size as isize)
                .map(|i| i as usize)
                .collect();
            (inside, padded)
        };
        let (ys, py) = axis(oy, 0, g.in_h);
        let (xs, px) = axis(ox, 1, g.in_w);
        let (mut acc, mut n) = (if kind == PoolKind::Max { f32::MIN } else { 0.0 }, 0);
        for &iy in &ys {
            for &ix in &xs {
                let v = get(iy, ix);
                acc = if kind == PoolKind::Max {
                    acc.max(v)
                } else {
                    acc + v
                };
                n += 1;
            }
        }
        match kind {
            PoolKind::Max => acc,
            PoolKind::Avg { count_include_pad } => {
                let d = if count_include_pad { py * px } else { n };
                if d == 0 {
                    0.0
                } else {
                    acc / d as f32
                }
            }
        }
    }

    /// Max and average pooling (with and without padding in the divisor) equal the
    /// definition bit for bit in both layouts and on both SIMD levels: strides (the
    /// deinterleaved rows of strides 2 and 3, rows long enough for vector loops), dilations,
    /// asymmetric padding, windows hanging past the input (ceil-mode rows), a global window,
    /// NaN inputs, 1 and 2 threads.
    #[test]
    fn pooling_matches_the_definition() {
        let geoms = [
            // (channels, in, out, kernel, strides, dilation, pad)
            (3, [13, 13], [6, 6], [3, 3], [2, 2], [1, 1], [0, 0, 0, 0]),
            (2, [14, 15], [7, 8], [3, 3], [2, 2], [1, 1], [1, 1, 1, 2]),
            (4, [9, 10], [4, 3], [2, 3], [2, 3], [2, 1], [0, 1, 1, 0]),
            (5, [7, 7], [1, 1], [7, 7], [1, 1], [1, 1], [0, 0, 0, 0]),
            (3, [5, 6], [3, 3], [3, 3], [2, 2], [1, 1], [0, 0, 1, 1]),
            (3, [8, 9], [8, 9], [3, 3], [1, 1], [1, 1], [1, 1, 1, 1]),
            (2, [9, 8], [6, 7], [3, 3], [1, 1], [2, 1], [0, 0, 1, 1]),
            // Rows long enough for the vector loops, odd and even widths, stride 2 and 3.
            (3, [9, 71], [4, 35], [3, 3], [2, 2], [1, 1], [0, 0, 0, 0]),
            (2, [8, 56], [4, 28], [3, 3], [2, 2], [1, 1], [1, 1, 0, 0]),
            (2, [7, 50], [3, 17], [3, 3], [2, 3], [1, 1], [0, 1, 0, 1]),
        ];
        let kinds = [
            PoolKind::Max,
            PoolKind::Avg {
                count_include_pad: false,
            },
            PoolKind::Avg {
                count_include_pad: true,
            },
        ];
        for (s, &(c, [h, w], [oh, ow], kernel, strides, dilation, pad)) in geoms.iter().enumerate()
        {
            for channels_last in [false, true] {
                let g = Pool2dGeom {
                    batch: 2,
                    channels: c,
                    in_h: h,
                    in_w: w,
                    out_h: oh,
                    out_w: ow,
                    kernel,
                    strides,
                    dilation,
                    pad,
                    channels_last,
                };
                // A NaN every 97 elements: max skips it as `f32::max` does, in the same order.
                let x: Vec<f32> = (0..2 * c * h * w)
                    .map(|i| match (i * 7919 + s * 31) % 1009 {
                        v if v % 97 == 3 => f32::NAN,
                        v => v as f32 / 97.0 - 5.0,
                    })
                    .collect();
                for kind in kinds {
                    let mut want = Vec::new();
                    for n in 0..2 {
                        for ch in 0..c {
                            for oy in 0..oh {
                                for ox in 0..ow {
                                    let get = |iy: usize, ix: usize| {
                                        if channels_last {
                                            x[((n * h + iy) * w + ix) * c + ch]
                                        } else {
                                            x[((n * c + ch) * h + iy) * w + ix]
                                        }
                                    };
                                    want.push(reference(&g, kind, get, oy, ox));
                                }
                            }
                        }
                    }
                    if channels_last {
                        // NCHW order of the definition to NHWC.
                        let nchw = want.clone();
                        for n in 0..2 {
                            for ch in 0..c {
                                for p in 0..oh * ow {
                                    want[(n * oh * ow + p) * c + ch] =
                                        nchw[(n * c + ch) * oh * ow + p];
                                }
                            }
                        }
                    }
                    for level in crate::simd::tests::levels() {
                        let _level = crate::simd::tests::Force::new(level);
                        for threads in [1, 2] {
                            let mut y = vec![f32::NAN; want.len()];
                            pool2d(&g, kind, &x, &mut y, threads);
                            let same = y.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits());
                            assert!(
                                same,
                                "{level:?} {g:?} {kind:?} threads {threads}: {y:?} vs {want:?}"
                            );
                        }
                    }
                }
            }
        }
    }
}
