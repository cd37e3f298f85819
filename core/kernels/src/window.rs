//! Sliding-window column geometry shared by the convolution, depthwise and pooling kernels:
//! which output columns a kernel column reaches inside the input, and the stride phases of an
//! input row, where a strided window's taps lie contiguous.

/// The output columns `[lo, hi)` whose input column for one kernel column lies inside a row of
/// the input, and the input column `first` of output column `lo` (later ones follow every
/// `stride`). It does not depend on the output row, so kernels compute it once per call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Columns {
    pub lo: usize,
    pub hi: usize,
    pub first: usize,
}

impl Columns {
    /// The columns of the kernel column at offset `off` (`kx·dilation − pad_left`) for a
    /// window moving by `stride` (at least 1) over `in_w` input and `out_w` output columns.
    pub(crate) fn new(off: isize, stride: usize, in_w: usize, out_w: usize) -> Columns {
        let s = stride.max(1) as isize;
        let ceil_div = |a: isize| if a <= 0 { 0 } else { (a + s - 1) / s };
        let hi = (ceil_div(in_w as isize - off) as usize).min(out_w);
        let lo = (ceil_div(-off) as usize).min(hi);
        let first = ((lo as isize * s) + off).max(0) as usize;
        Columns { lo, hi, first }
    }

    /// Every kernel column's [`Columns`]: `kw` columns `dilation` apart, `pad_left` padding.
    pub(crate) fn all(
        kw: usize,
        dilation: usize,
        pad_left: usize,
        stride: usize,
        in_w: usize,
        out_w: usize,
    ) -> Vec<Columns> {
        (0..kw)
            .map(|kx| {
                Columns::new(
                    (kx * dilation) as isize - pad_left as isize,
                    stride,
                    in_w,
                    out_w,
                )
            })
            .collect()
    }
}

/// Splits `row` into its `stride` phases, one after the other in `out` (`row.len()`
/// elements): phase `p` holds `row[p], row[p + stride], …`.
#[inline(always)]
pub(crate) fn deinterleave<T: Copy>(row: &[T], stride: usize, out: &mut [T]) {
    let out = &mut out[..row.len()];
    if stride == 2 {
        // Pairs, so the compiler turns the loop into vector loads and shuffles.
        let (even, odd) = out.split_at_mut(row.len().div_ceil(2));
        for (pair, (e, o)) in row.chunks_exact(2).zip(even.iter_mut().zip(odd)) {
            *e = pair[0];
            *o = pair[1];
        }
        if let (Some(&last), true) = (row.last(), row.len() % 2 == 1) {
            even[even.len() - 1] = last;
        }
    } else {
        let mut k = 0;
        for p in 0..stride.min(row.len()) {
            for &v in row[p..].iter().step_by(stride) {
                out[k] = v;
                k += 1;
            }
        }
    }
}

/// Where input column `c` of a row of `width` lands among the row's phases for `stride`
/// (see [`deinterleave`]; `c` itself for stride 1).
#[inline(always)]
pub(crate) fn phase_index(c: usize, stride: usize, width: usize) -> usize {
    let p = c % stride;
    // Phase q holds width / stride elements, plus one when q < width % stride.
    p * (width / stride) + p.min(width % stride) + c / stride
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every column's phase index finds it in the deinterleaved row.
    #[test]
    fn phases_hold_every_column() {
        for stride in 1..5 {
            for width in 0..12 {
                let row: Vec<usize> = (0..width).collect();
                let mut out = vec![usize::MAX; width];
                if stride == 1 {
                    out.copy_from_slice(&row);
                } else {
                    deinterleave(&row, stride, &mut out);
                }
                for c in 0..width {
                    assert_eq!(out[phase_index(c, stride, width)], c, "{stride} {width}");
                }
            }
        }
    }

    /// The range holds exactly the output columns whose input column is inside, by brute
    /// force over offsets, strides and sizes.
    #[test]
    fn columns_are_exactly_the_inside_ones() {
        for off in -7..7isize {
            for stride in 1..4 {
                for in_w in 1..9 {
                    for out_w in 0..12 {
                        let c = Columns::new(off, stride, in_w, out_w);
                        let inside: Vec<usize> = (0..out_w)
                            .filter(|&o| {
                                (0..in_w as isize).contains(&((o * stride) as isize + off))
                            })
                            .collect();
                        let got: Vec<usize> = (c.lo..c.hi).collect();
                        assert_eq!(
                            got, inside,
                            "off {off} stride {stride} in {in_w} out {out_w}"
                        );
                        if c.lo < c.hi {
                            assert_eq!(c.first as isize, (c.lo * stride) as isize + off);
                        }
                    }
                }
            }
        }
    }
}
