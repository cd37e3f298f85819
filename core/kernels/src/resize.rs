//! 2-D image resize (TVM's `image.resize2d`): nearest-neighbour, bilinear and bicubic
//! interpolation under the ONNX/TVM coordinate transformation modes.
//!
//! Every output row and column is mapped to source taps and weights once; the per-pixel loop
//! then only gathers. Coordinates are computed in f64 (divisions by an ONNX scale in float32,
//! see [`CoordMode`]).

use super::numeric::Real;
use byoc_ir::ops::resize::{CoordMode, Method, ResizeGeom};

/// Source taps and weights of one output coordinate.
type Taps = Vec<(usize, f64)>;

fn clamp(i: f64, size: usize) -> usize {
    i.max(0.0).min(size as f64 - 1.0) as usize
}

fn cubic_weights(t: f64, a: f64) -> [f64; 4] {
    let w = |d: f64| {
        let d = d.abs();
        if d <= 1.0 {
            ((a + 2.0) * d - (a + 3.0)) * d * d + 1.0
        } else if d < 2.0 {
            ((a * d - 5.0 * a) * d + 8.0 * a) * d - 4.0 * a
        } else {
            0.0
        }
    };
    [w(1.0 + t), w(t), w(1.0 - t), w(2.0 - t)]
}

fn axis_taps(
    method: Method,
    mode: CoordMode,
    in_size: usize,
    out_size: usize,
    scale: Option<f32>,
) -> Vec<Taps> {
    (0..out_size)
        .map(|o| {
            let c = mode.map(o, in_size, out_size, scale);
            match method {
                Method::Nearest(r) => vec![(clamp(r.apply(c), in_size), 1.0)],
                Method::Linear => {
                    let f = c.floor();
                    let t = c - f;
                    vec![(clamp(f, in_size), 1.0 - t), (clamp(f + 1.0, in_size), t)]
                }
                Method::Cubic { alpha, exclude } => {
                    let f = c.floor();
                    let ws = cubic_weights(c - f, alpha);
                    let mut taps: Taps = Vec::with_capacity(4);
                    for (k, &w) in ws.iter().enumerate() {
                        let i = f + k as f64 - 1.0;
                        if exclude && (i < 0.0 || i >= in_size as f64) {
                            continue;
                        }
                        taps.push((clamp(i, in_size), w));
                    }
                    if exclude {
                        let total: f64 = taps.iter().map(|t| t.1).sum();
                        if total != 0.0 {
                            taps.iter_mut().for_each(|t| t.1 /= total);
                        }
                    }
                    taps
                }
            }
        })
        .collect()
}

/// `y = resize2d(x)`.
pub(crate) fn resize2d<T: Real>(
    g: &ResizeGeom,
    method: Method,
    mode: CoordMode,
    x: &[T],
    y: &mut [T],
) {
    let ys = axis_taps(method, mode, g.in_h, g.out_h, g.scale.map(|s| s[0]));
    let xs = axis_taps(method, mode, g.in_w, g.out_w, g.scale.map(|s| s[1]));
    let c = g.channels;
    // Element strides of (n, c, h, w) in the input and output.
    let (si, so) = if g.channels_last {
        (
            [g.in_h * g.in_w * c, 1, g.in_w * c, c],
            [g.out_h * g.out_w * c, 1, g.out_w * c, c],
        )
    } else {
        (
            [c * g.in_h * g.in_w, g.in_h * g.in_w, g.in_w, 1],
            [c * g.out_h * g.out_w, g.out_h * g.out_w, g.out_w, 1],
        )
    };
    for n in 0..g.batch {
        for ch in 0..c {
            let base_i = n * si[0] + ch * si[1];
            let base_o = n * so[0] + ch * so[1];
            for (oy, ty) in ys.iter().enumerate() {
                for (ox, tx) in xs.iter().enumerate() {
                    let mut acc = 0.0;
                    for &(iy, wy) in ty {
                        for &(ix, wx) in tx {
                            acc += wy * wx * x[base_i + iy * si[2] + ix * si[3]].to_f64();
                        }
                    }
                    y[base_o + oy * so[2] + ox * so[3]] = T::from_f64(acc);
                }
            }
        }
    }
}
