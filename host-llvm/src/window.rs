//! Windowed poolings (`nn.max_pool2d`, `nn.avg_pool2d` over NCHW data) as reductions over
//! their window (HostFuse's `reduction` groups of a windowed pooling and its producers): the
//! window geometry from the op's attributes, and which output positions each tap reaches.
//!
//! The reference kernel folds, per output element, the taps of its window that lie inside the
//! input, rows outer and columns inner, skipping the padded ones: the maximum with `f32::max`
//! (`llvm.maxnum`) from `f32::MIN`, or the sum from 0. An average then divides by the count of
//! taps inside the input, or with `count_include_pad` inside the input plus its explicit
//! padding (the extra bottom and right rows of `ceil_mode` never count); a divisor of 0 leaves
//! the sum, 0. The compiled loop folds tap by tap: for each tap (rows outer, columns inner)
//! one loop over the outputs whose tap lies inside the input, a box of every output plane, so
//! that each output still sees its taps in the reference order. The output shape (where
//! `ceil_mode` counts) comes from type inference.

use std::ops::Range;

use byoc_ir::Attrs;

use crate::kernel::{unsupported, Unsupported};

/// The window of a pooling over NCHW data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolWindow {
    /// Taps along H and W.
    pub kernel: [usize; 2],
    /// Steps between neighbouring outputs along H and W.
    pub strides: [usize; 2],
    /// Steps between neighbouring taps along H and W.
    pub dilation: [usize; 2],
    /// Padding top, left, bottom, right.
    pub pad: [usize; 4],
    /// For an average: whether the divisor counts the padding taps.
    pub count_include_pad: Option<bool>,
}

impl PoolWindow {
    /// The window of pooling `name` with `attrs` (Relay's: 1 or 2 values per pair, 1, 2 or 4
    /// padding values), or why the host loops do not compile it.
    pub fn of(name: &str, attrs: &Attrs) -> Result<PoolWindow, Unsupported> {
        for (key, want) in [("layout", "NCHW"), ("out_layout", "")] {
            let got = attrs.get_str(key).unwrap_or(want);
            if got != want && got != "NCHW" {
                return Err(unsupported(
                    name,
                    format!("{key} {got} (the host loops compile NCHW pooling)"),
                ));
            }
        }
        let ints = |key: &str, default: &[usize]| -> Result<Vec<usize>, Unsupported> {
            match attrs.get(key) {
                None => Ok(default.to_vec()),
                Some(v) => v
                    .as_int_list()
                    .and_then(|l| l.into_iter().map(|x| usize::try_from(x).ok()).collect())
                    .ok_or_else(|| unsupported(name, format!("{key} is not a list of sizes"))),
            }
        };
        let pair = |key: &str| -> Result<[usize; 2], Unsupported> {
            match ints(key, &[1, 1])?[..] {
                [a] if a > 0 => Ok([a, a]),
                [a, b] if a > 0 && b > 0 => Ok([a, b]),
                _ => Err(unsupported(
                    name,
                    format!("{key} is not 1 or 2 positive values"),
                )),
            }
        };
        let pad = match ints("padding", &[0, 0])?[..] {
            [p] => [p; 4],
            [h, w] => [h, w, h, w],
            [t, l, b, r] => [t, l, b, r],
            _ => return Err(unsupported(name, "padding is not 1, 2 or 4 values")),
        };
        let count_include_pad = match name {
            "nn.avg_pool2d" => Some(
                attrs
                    .get("count_include_pad")
                    .map(|v| v.as_bool())
                    .unwrap_or(Some(false))
                    .ok_or_else(|| unsupported(name, "count_include_pad is not a boolean"))?,
            ),
            "nn.max_pool2d" => None,
            _ => return Err(unsupported(name, "not a windowed pooling")),
        };
        Ok(PoolWindow {
            kernel: pair("pool_size")?,
            strides: pair("strides")?,
            dilation: pair("dilation")?,
            pad,
            count_include_pad,
        })
    }

    /// The input coordinate of output 0's tap `t` along axis `a` (0 = H, 1 = W).
    fn start(&self, a: usize, t: usize) -> i64 {
        (t * self.dilation[a]) as i64 - self.pad[a] as i64
    }

    /// Per tap along axis `a` of an input extent `size` and an output extent `out`: the
    /// outputs whose tap lies inside the input, and the input coordinate of the first.
    pub fn taps(&self, a: usize, size: usize, out: usize) -> Vec<(Range<usize>, usize)> {
        let s = self.strides[a] as i64;
        // The first output o >= 0 with o * s + start >= bound.
        let from = |start: i64, bound: i64| -> usize {
            let need = bound - start;
            if need <= 0 {
                0
            } else {
                ((need + s - 1) / s) as usize
            }
        };
        (0..self.kernel[a])
            .map(|t| {
                let start = self.start(a, t);
                let hi = from(start, size as i64).min(out);
                let lo = from(start, 0).min(hi);
                (lo..hi, (start + lo as i64 * s).max(0) as usize)
            })
            .collect()
    }

    /// Per output along axis `a`: the taps an average's divisor counts (inside the input, or
    /// with `count_include_pad` inside the input plus its explicit padding).
    pub fn counts(&self, a: usize, size: usize, out: usize) -> Vec<usize> {
        let padded = self.count_include_pad == Some(true);
        let s = self.strides[a] as i64;
        let hi = if padded {
            (size + self.pad[a + 2]) as i64
        } else {
            size as i64
        };
        (0..out)
            .map(|o| {
                (0..self.kernel[a])
                    .map(|t| o as i64 * s + self.start(a, t))
                    .filter(|&at| (padded || at >= 0) && at < hi)
                    .count()
            })
            .collect()
    }
}

/// The maximal runs of equal values of `values`, each with its range of positions.
pub fn runs(values: &[usize]) -> Vec<(usize, Range<usize>)> {
    let mut runs: Vec<(usize, Range<usize>)> = Vec::new();
    for (i, &v) in values.iter().enumerate() {
        match runs.last_mut() {
            Some((last, r)) if *last == v => r.end = i + 1,
            _ => runs.push((v, i..i + 1)),
        }
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(kernel: usize, stride: usize, dilation: usize, pad: [usize; 2]) -> PoolWindow {
        PoolWindow {
            kernel: [kernel; 2],
            strides: [stride; 2],
            dilation: [dilation; 2],
            pad: [pad[0], pad[0], pad[1], pad[1]],
            count_include_pad: Some(true),
        }
    }

    /// Each tap's range holds exactly the outputs whose tap lies inside the input, by brute
    /// force over window geometries; the counts are the taps inside the padded input.
    #[test]
    fn taps_and_counts_match_brute_force() {
        for kernel in 1..4 {
            for stride in 1..4 {
                for dilation in 1..3 {
                    for pad in [[0, 0], [1, 0], [1, 2], [2, 1]] {
                        for size in 1..8 {
                            for out in 0..9 {
                                let w = window(kernel, stride, dilation, pad);
                                let at = |o: usize, t: usize| {
                                    (o * stride + t * dilation) as i64 - pad[0] as i64
                                };
                                for (t, (r, first)) in w.taps(0, size, out).into_iter().enumerate()
                                {
                                    let inside: Vec<usize> = (0..out)
                                        .filter(|&o| (0..size as i64).contains(&at(o, t)))
                                        .collect();
                                    assert_eq!(r.clone().collect::<Vec<_>>(), inside);
                                    if !r.is_empty() {
                                        assert_eq!(first as i64, at(r.start, t));
                                    }
                                }
                                let counts: Vec<usize> = (0..out)
                                    .map(|o| {
                                        (0..kernel)
                                            .filter(|&t| at(o, t) < (size + pad[1]) as i64)
                                            .count()
                                    })
                                    .collect();
                                assert_eq!(w.counts(0, size, out), counts);
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn runs_group_equal_neighbours() {
        assert_eq!(runs(&[]), vec![]);
        assert_eq!(
            runs(&[2, 3, 3, 3, 2]),
            vec![(2, 0..1), (3, 1..4), (2, 4..5)]
        );
    }

    #[test]
    fn attributes_are_read_as_relay_writes_them() {
        let attrs = Attrs::new();
        let w = PoolWindow::of("nn.avg_pool2d", &attrs).unwrap();
        assert_eq!(w.kernel, [1, 1]);
        assert_eq!(w.pad, [0; 4]);
        assert_eq!(w.count_include_pad, Some(false));
        assert!(PoolWindow::of("nn.max_pool2d", &attrs)
            .unwrap()
            .count_include_pad
            .is_none());
    }
}
