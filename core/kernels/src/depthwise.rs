//! Direct depthwise 2-D convolution over NCHW data: every group reads one input channel
//! (`groups == in_channels`, any channel multiplier `out_channels / groups`).
//!
//! Each output channel is one plane computed from one input plane and its own `KH × KW`
//! taps, so there is nothing for a GEMM to share: instead of an im2col matrix of one row per
//! tap and a GEMM with a single output row per group, each tap is added straight into the
//! output rows it touches. The valid output columns of a tap are computed once per tap (no
//! bounds test per element), and the inner loop runs over contiguous slices (with a column
//! stride above 1, over the input row's stride phases, split once per row).
//! When input and output rows also have the same width (stride 1, "same" padding, as in
//! ShuffleNet and MobileNet), a tap's contributions to a whole plane are one flat run over
//! the plane instead of one short run per row, the out-of-row columns masked off, so rows of
//! 7 to 28 pixels no longer end in scalar remainder loops. Either way every output element
//! takes its in-bounds taps in row-major order, so the two walks give the same results bit
//! for bit. Output channels run in parallel when the executor grants threads. Weights are OIHW
//! (`[out_c, 1, KH, KW]`), as [`super::conv::conv2d`] receives them.

use super::conv::{for_chunks, Tail};
use super::numeric::{Acc, Widen};
use super::scratch;
use super::simd::Simd;
use super::window::{deinterleave, phase_index, Columns};
use byoc_ir::ops::conv::Conv2dGeom;

/// True when `g` is a depthwise convolution this kernel computes: NCHW data, one input
/// channel per group.
pub(crate) fn applies(g: &Conv2dGeom) -> bool {
    !g.channels_last && g.groups > 1 && g.groups == g.in_c
}

/// `y = conv2d(x, w)` for one batch element of a depthwise convolution (see [`applies`]):
/// `x` is `in_c × H × W`, `w` OIHW, `y` `out_c × OH × OW`. Each finished output plane goes
/// through `tail`'s epilogue. The plane loop runs with AVX-512 where
/// [`Simd::selected`] allows (the same operations, so the same results).
pub(crate) fn depthwise_nchw<A: Widen<T>, B: Widen<T>, T: Acc>(
    g: &Conv2dGeom,
    x: &[A],
    w: &[B],
    y: &mut [T],
    threads: usize,
    tail: Tail<'_>,
) {
    let [kh, kw] = g.kernel;
    let multiplier = g.out_c / g.in_c;
    let (hw_in, hw_out) = (g.in_h * g.in_w, g.out_h * g.out_w);
    let columns = Columns::all(kw, g.dilation[1], g.pad[1], g.strides[1], g.in_w, g.out_w);
    let masks = flat_masks(g, &columns);
    let simd = Simd::selected();
    let phases_len = if g.strides[1] > 1 { g.in_w } else { 0 };
    for_chunks(y, hw_out, threads, |o, plane| {
        let c = o / multiplier;
        let x_c = &x[c * hw_in..(c + 1) * hw_in];
        let w_o = &w[o * kh * kw..(o + 1) * kh * kw];
        let taps = Taps {
            g,
            columns: &columns,
            masks: masks.as_deref(),
        };
        scratch::with_one(phases_len, |phases: &mut [A]| match simd {
            // SAFETY: `Simd::selected` returns AVX-512 only when the CPU has it.
            #[cfg(target_arch = "x86_64")]
            Simd::Avx512 => unsafe { plane_avx512(&taps, x_c, w_o, plane, phases) },
            _ => taps.plane(x_c, w_o, plane, phases),
        });
        tail.at(o * hw_out).apply(plane);
    });
}

/// For a convolution whose planes [`plane_flat`] walks (stride 1, input rows as wide as
/// output rows): every kernel column's mask over an output plane, `kw` planes one after the
/// other, true where the column's input pixel lies inside its row. `None` otherwise.
fn flat_masks(g: &Conv2dGeom, columns: &[Columns]) -> Option<Vec<bool>> {
    if g.strides != [1, 1] || g.in_w != g.out_w {
        return None;
    }
    let w = g.out_w;
    let masks = columns
        .iter()
        .flat_map(|col| (0..g.out_h * w).map(move |i| (col.lo..col.hi).contains(&(i % w))))
        .collect();
    Some(masks)
}

/// What every output plane of one depthwise convolution shares: the geometry, every kernel
/// column's [`Columns`] and, for the flat walk, their masks (see [`flat_masks`]).
struct Taps<'a> {
    g: &'a Conv2dGeom,
    columns: &'a [Columns],
    masks: Option<&'a [bool]>,
}

/// [`Taps::plane`] compiled with AVX-512.
///
/// # Safety
/// The CPU has AVX-512 F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn plane_avx512<A: Widen<T>, B: Widen<T>, T: Acc>(
    taps: &Taps<'_>,
    x_c: &[A],
    w_o: &[B],
    plane: &mut [T],
    phases: &mut [A],
) {
    taps.plane(x_c, w_o, plane, phases);
}

impl Taps<'_> {
    /// One output plane: [`plane_flat`] where the masks allow it, else [`plane_taps`]
    /// (`phases`: `in_w` elements of scratch when the column stride is above 1).
    #[inline(always)]
    fn plane<A: Widen<T>, B: Widen<T>, T: Acc>(
        &self,
        x_c: &[A],
        w_o: &[B],
        plane: &mut [T],
        phases: &mut [A],
    ) {
        match self.masks {
            Some(masks) => plane_flat(self.g, self.columns, masks, x_c, w_o, plane),
            None => plane_taps(self.g, self.columns, x_c, w_o, plane, phases),
        }
    }
}

/// One output plane of a stride-1 convolution whose input rows are as wide as its output
/// rows, tap by tap in row-major order: output pixel `i` (flat) reads input pixel `i + d`
/// for one offset `d` per tap, so each tap is one run over the output rows whose input row
/// is inside, with `masks` (see [`flat_masks`]) keeping the columns whose input pixel lies
/// in the neighbouring row unchanged.
#[inline(always)]
fn plane_flat<A: Widen<T>, B: Widen<T>, T: Acc>(
    g: &Conv2dGeom,
    columns: &[Columns],
    masks: &[bool],
    x_c: &[A],
    w_o: &[B],
    plane: &mut [T],
) {
    let [kh, kw] = g.kernel;
    let (w, hw) = (g.out_w, plane.len());
    plane.fill(T::default());
    for ky in 0..kh {
        // Input row of output row `oy` under this kernel row: `oy + dy`.
        let dy = (ky * g.dilation[0]) as isize - g.pad[0] as isize;
        let oy_lo = (-dy).max(0) as usize;
        let oy_hi = ((g.in_h as isize - dy).max(0) as usize).min(g.out_h);
        if oy_lo >= oy_hi {
            continue;
        }
        for (kx, col) in columns.iter().enumerate() {
            if col.lo == col.hi {
                continue;
            }
            let tap = w_o[ky * kw + kx].widen();
            // From output pixel (oy_lo, lo) to (oy_hi − 1, hi − 1); the input pixels of the
            // run lie between those of its ends, so inside the plane.
            let (start, end) = (oy_lo * w + col.lo, (oy_hi - 1) * w + col.hi);
            let src0 = (oy_lo as isize + dy) as usize * w + col.first;
            let out = &mut plane[start..end];
            let src = &x_c[src0..src0 + out.len()];
            if col.lo == 0 && col.hi == w {
                for (o, &v) in out.iter_mut().zip(src) {
                    *o = o.mul_add(tap, v.widen());
                }
            } else {
                let mask = &masks[kx * hw + start..kx * hw + end];
                for ((o, &v), &inside) in out.iter_mut().zip(src).zip(mask) {
                    let sum = o.mul_add(tap, v.widen());
                    *o = if inside { sum } else { *o };
                }
            }
        }
    }
}

/// One output plane from its input plane `x_c` and taps `w_o`: each tap is added straight
/// into the output rows it touches, taps in row-major order. With a column stride above 1,
/// each input row is first split into its stride phases (`phases`, `in_w` elements), where
/// every tap's run is contiguous.
#[inline(always)]
fn plane_taps<A: Widen<T>, B: Widen<T>, T: Acc>(
    g: &Conv2dGeom,
    columns: &[Columns],
    x_c: &[A],
    w_o: &[B],
    plane: &mut [T],
    phases: &mut [A],
) {
    let [kh, kw] = g.kernel;
    let (in_w, stride_w) = (g.in_w, g.strides[1]);
    plane.fill(T::default());
    for (oy, row) in plane.chunks_mut(g.out_w).enumerate() {
        for ky in 0..kh {
            let iy = g.src(0, oy, ky);
            if iy < 0 || iy as usize >= g.in_h {
                continue;
            }
            let x_row = &x_c[iy as usize * in_w..(iy as usize + 1) * in_w];
            let src: &[A] = if stride_w == 1 {
                x_row
            } else {
                deinterleave(x_row, stride_w, phases);
                phases
            };
            for (kx, col) in columns.iter().enumerate() {
                if col.lo == col.hi {
                    continue;
                }
                let tap = w_o[ky * kw + kx].widen();
                let at = phase_index(col.first, stride_w, in_w);
                let run = &src[at..at + (col.hi - col.lo)];
                for (out, &v) in row[col.lo..col.hi].iter_mut().zip(run) {
                    *out = out.mul_add(tap, v.widen());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conv::{conv2d, conv_nchw_groups};

    /// Direct convolution by definition, one output element at a time.
    fn reference(g: &Conv2dGeom, x: &[f32], w: &[f32]) -> Vec<f32> {
        let [kh, kw] = g.kernel;
        let mult = g.out_c / g.in_c;
        let mut y = vec![0f32; g.out_c * g.out_h * g.out_w];
        for o in 0..g.out_c {
            for oy in 0..g.out_h {
                for ox in 0..g.out_w {
                    let mut acc = 0f32;
                    for ky in 0..kh {
                        for kx in 0..kw {
                            let (iy, ix) = (g.src(0, oy, ky), g.src(1, ox, kx));
                            if iy < 0 || ix < 0 || iy as usize >= g.in_h || ix as usize >= g.in_w {
                                continue;
                            }
                            let xv = x[((o / mult) * g.in_h + iy as usize) * g.in_w + ix as usize];
                            acc += w[(o * kh + ky) * kw + kx] * xv;
                        }
                    }
                    y[(o * g.out_h + oy) * g.out_w + ox] = acc;
                }
            }
        }
        y
    }

    fn geom(
        c: usize,
        mult: usize,
        hw: [usize; 2],
        k: [usize; 2],
        s: [usize; 2],
        d: [usize; 2],
        pad: [usize; 4],
    ) -> Conv2dGeom {
        let out = |a: usize| (hw[a] + pad[a] + pad[a + 2] - d[a] * (k[a] - 1) - 1) / s[a] + 1;
        Conv2dGeom {
            batch: 1,
            in_c: c,
            in_h: hw[0],
            in_w: hw[1],
            out_c: c * mult,
            out_h: out(0),
            out_w: out(1),
            kernel: k,
            strides: s,
            dilation: d,
            pad,
            groups: c,
            channels_last: false,
        }
    }

    fn values(n: usize, seed: u32) -> Vec<f32> {
        (0..n)
            .map(|i| {
                ((i as u32).wrapping_mul(2654435761).wrapping_add(seed) % 1000) as f32 / 500.0 - 1.0
            })
            .collect()
    }

    /// The flat walk gives the row walk's results bit for bit (the same taps in the same
    /// order per element), including zeros of either sign and a NaN input.
    #[test]
    fn flat_planes_equal_row_by_row_planes() {
        let cases = [
            geom(2, 1, [14, 14], [3, 3], [1, 1], [1, 1], [1, 1, 1, 1]),
            geom(2, 1, [29, 21], [5, 5], [1, 1], [1, 1], [2, 2, 2, 2]),
            geom(2, 1, [9, 10], [3, 5], [1, 1], [2, 1], [0, 1, 4, 3]),
            geom(1, 1, [3, 17], [5, 3], [1, 1], [1, 1], [3, 0, 1, 2]),
        ];
        for g in cases {
            let mut x = values(g.in_h * g.in_w, 5);
            x[3] = f32::NAN;
            x[7] = -0.0;
            x[8] = 0.0;
            let w = values(g.kernel[0] * g.kernel[1], 6);
            let columns = Columns::all(g.kernel[1], g.dilation[1], g.pad[1], 1, g.in_w, g.out_w);
            let masks = flat_masks(&g, &columns).expect("a flat geometry");
            let mut flat = vec![7f32; g.out_h * g.out_w];
            plane_flat(&g, &columns, &masks, &x, &w, &mut flat);
            let mut rows = vec![7f32; flat.len()];
            plane_taps(&g, &columns, &x, &w, &mut rows, &mut []);
            let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&flat), bits(&rows), "{g:?}");
        }
    }

    /// The direct kernel, the im2col path it replaces in `conv2d` (run here on the same
    /// geometry with the direct kernel bypassed) and the definition agree.
    #[test]
    fn matches_the_definition_and_the_im2col_path() {
        let cases = [
            geom(8, 1, [9, 11], [3, 3], [1, 1], [1, 1], [1, 1, 1, 1]),
            geom(6, 2, [10, 7], [3, 3], [2, 2], [1, 1], [1, 1, 1, 1]),
            geom(4, 1, [12, 12], [5, 3], [1, 2], [2, 1], [2, 0, 3, 1]),
            geom(3, 3, [5, 6], [3, 3], [1, 1], [1, 1], [0, 0, 0, 0]),
            geom(5, 1, [4, 4], [3, 3], [3, 3], [1, 1], [4, 4, 4, 4]),
            // Stride-2 rows long enough for vector loops, odd and even widths.
            geom(3, 1, [20, 57], [3, 3], [2, 2], [1, 1], [1, 1, 1, 1]),
            geom(2, 1, [9, 56], [3, 3], [2, 2], [1, 1], [1, 1, 1, 1]),
            // Flat planes: stride 1 with rows as wide in as out (ShuffleNet's 3×3 "same").
            geom(6, 1, [14, 14], [3, 3], [1, 1], [1, 1], [1, 1, 1, 1]),
            geom(4, 2, [7, 7], [3, 3], [1, 1], [1, 1], [1, 1, 1, 1]),
            geom(3, 1, [29, 21], [5, 5], [1, 1], [1, 1], [2, 2, 2, 2]),
            geom(3, 1, [9, 10], [3, 5], [1, 1], [2, 1], [0, 1, 4, 3]),
            geom(2, 1, [3, 17], [5, 3], [1, 1], [1, 1], [3, 0, 1, 2]),
        ];
        for g in cases {
            let x = values(g.in_c * g.in_h * g.in_w, 1);
            let w = values(g.out_c * g.kernel[0] * g.kernel[1], 2);
            let want = reference(&g, &x, &w);
            for threads in [1, 3] {
                let mut direct = vec![0f32; want.len()];
                depthwise_nchw(&g, &x, &w, &mut direct, threads, Tail::new(None));
                let mut im2col = vec![0f32; want.len()];
                conv_nchw_groups(&g, &x, &w, &mut im2col, threads, Tail::new(None));
                let mut through_conv2d = vec![0f32; want.len()];
                conv2d(&g, &x, &w, &mut through_conv2d, threads, Tail::new(None));
                for (i, ((d, m), r)) in direct.iter().zip(&im2col).zip(&want).enumerate() {
                    let tol = 1e-5 * (1.0 + r.abs());
                    assert!(
                        (d - r).abs() <= tol && (m - r).abs() <= tol,
                        "{g:?} [{i}]: direct {d}, im2col {m}, definition {r}"
                    );
                }
                assert_eq!(
                    through_conv2d, direct,
                    "{g:?}: conv2d takes the direct kernel"
                );
                for level in crate::simd::tests::levels() {
                    let _level = crate::simd::tests::Force::new(level);
                    let mut vector = vec![0f32; want.len()];
                    depthwise_nchw(&g, &x, &w, &mut vector, threads, Tail::new(None));
                    assert_eq!(
                        vector, direct,
                        "{g:?}: {level:?} equals the selected level bit for bit"
                    );
                }
            }
        }
    }
}
