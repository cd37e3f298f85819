//! 2-D max and average pooling (global pooling is pooling with a full-size window).
//!
//! Window positions follow TVM: output `o` covers input rows `o·stride − pad_top +
//! k·dilation`. Average pooling divides by the number of taps inside the input
//! (`count_include_pad = false`) or inside the input plus its explicit padding (`true`); the
//! extra bottom/right rows that `ceil_mode` adds are never counted. A window with no tap to
//! count gives 0 (average) or the dtype's lowest value (max), as TVM does.

#[cfg(feature = "executor")]
use {super::numeric::Real, rayon::prelude::*};

/// Geometry of a 2-D pooling in logical N, C, H, W terms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Pool2dGeom {
    pub batch: usize,
    pub channels: usize,
    pub in_h: usize,
    pub in_w: usize,
    pub out_h: usize,
    pub out_w: usize,
    pub kernel: [usize; 2],
    pub strides: [usize; 2],
    pub dilation: [usize; 2],
    /// Top, left, bottom, right.
    pub pad: [usize; 4],
    /// NHWC data (otherwise NCHW).
    pub channels_last: bool,
}

/// Which reduction a pooling computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PoolKind {
    /// Maximum over the window.
    Max,
    /// Mean over the window.
    Avg {
        /// Count padding taps in the divisor.
        count_include_pad: bool,
    },
}

/// The valid taps of one window axis: input coordinates inside `[0, size)` and the count of taps
/// inside `[-pad_before, size + pad_after)`.
#[cfg(feature = "executor")]
fn taps(
    o: usize,
    a: usize,
    g: &Pool2dGeom,
    size: usize,
) -> (impl Iterator<Item = usize> + Clone, usize) {
    let start = (o * g.strides[a]) as isize - g.pad[a] as isize;
    let (dil, k) = (g.dilation[a] as isize, g.kernel[a]);
    let hi = (size + g.pad[a + 2]) as isize;
    let padded = (0..k).filter(|&t| start + t as isize * dil < hi).count();
    let inside = (0..k).filter_map(move |t| {
        let i = start + t as isize * dil;
        (i >= 0 && i < size as isize).then_some(i as usize)
    });
    (inside, padded)
}

/// Pools one output element; `get(iy, ix)` reads the input plane.
#[cfg(feature = "executor")]
#[inline]
fn window<T: Real>(
    g: &Pool2dGeom,
    kind: PoolKind,
    oy: usize,
    ox: usize,
    get: impl Fn(usize, usize) -> T,
) -> T {
    let (ys, py) = taps(oy, 0, g, g.in_h);
    let (xs, px) = taps(ox, 1, g, g.in_w);
    match kind {
        PoolKind::Max => {
            let mut m = T::MIN;
            for iy in ys {
                for ix in xs.clone() {
                    m = m.max(get(iy, ix));
                }
            }
            m
        }
        PoolKind::Avg { count_include_pad } => {
            let mut sum = T::ZERO;
            let mut n = 0usize;
            for iy in ys {
                for ix in xs.clone() {
                    sum = sum + get(iy, ix);
                    n += 1;
                }
            }
            let divisor = if count_include_pad { py * px } else { n };
            if divisor == 0 {
                T::ZERO
            } else {
                sum / T::from_f64(divisor as f64)
            }
        }
    }
}

/// `y = pool2d(x)` in the data's layout.
#[cfg(feature = "executor")]
pub(crate) fn pool2d<T: Real>(
    g: &Pool2dGeom,
    kind: PoolKind,
    x: &[T],
    y: &mut [T],
    threads: usize,
) {
    let (hw_in, c) = (g.in_h * g.in_w, g.channels);
    if g.channels_last {
        // One task per output row of one image: `out_w × C` contiguous outputs.
        let row_len = g.out_w * c;
        let row = |(r, out): (usize, &mut [T])| {
            let (n, oy) = (r / g.out_h, r % g.out_h);
            let img = &x[n * hw_in * c..(n + 1) * hw_in * c];
            for (ox, px) in out.chunks_mut(c).enumerate() {
                for (ch, v) in px.iter_mut().enumerate() {
                    *v = window(g, kind, oy, ox, |iy, ix| img[(iy * g.in_w + ix) * c + ch]);
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
        let plane = |(p, out): (usize, &mut [T])| {
            let src = &x[p * hw_in..(p + 1) * hw_in];
            for (i, v) in out.iter_mut().enumerate() {
                *v = window(g, kind, i / g.out_w, i % g.out_w, |iy, ix| {
                    src[iy * g.in_w + ix]
                });
            }
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
