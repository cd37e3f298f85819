//! 2-D image resize (TVM's `image.resize2d`): nearest-neighbour, bilinear and bicubic
//! interpolation under the ONNX/TVM coordinate transformation modes.
//!
//! Every output row and column is mapped to source taps and weights once; the per-pixel loop
//! then only gathers. Coordinates are computed in f64 (divisions by an ONNX scale in float32,
//! see [`CoordMode`]).

#[cfg(feature = "executor")]
use super::numeric::Real;

/// How an output coordinate maps to an input coordinate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CoordMode {
    HalfPixel,
    AlignCorners,
    Asymmetric,
    PytorchHalfPixel,
    TfHalfPixelForNn,
}

impl CoordMode {
    /// Parses Relay's `coordinate_transformation_mode`.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "half_pixel" => CoordMode::HalfPixel,
            "align_corners" => CoordMode::AlignCorners,
            "asymmetric" => CoordMode::Asymmetric,
            "pytorch_half_pixel" => CoordMode::PytorchHalfPixel,
            "tf_half_pixel_for_nn" => CoordMode::TfHalfPixelForNn,
            _ => return None,
        })
    }

    /// The input coordinate of output coordinate `o`. Without `scale` the length ratio is
    /// `in_size / out_size` in f64 (TVM's rule). With `scale` (ONNX's `scales`, output over
    /// input, which need not equal `out_size / in_size`) the division by it is float32, as in
    /// onnxruntime: a coordinate on a rounding boundary in float32 (`1.5 / 0.6 = 2.5`) would
    /// fall just below it in f64 and pick another nearest neighbour.
    #[cfg(feature = "executor")]
    fn map(self, o: usize, in_size: usize, out_size: usize, scale: Option<f32>) -> f64 {
        let unscale = |v: f64| match scale {
            None => v * (in_size as f64 / out_size as f64),
            Some(s) => f64::from(v as f32 / s),
        };
        let o = o as f64;
        match self {
            CoordMode::HalfPixel => unscale(o + 0.5) - 0.5,
            CoordMode::AlignCorners if out_size > 1 => {
                o * (in_size as f64 - 1.0) / (out_size as f64 - 1.0)
            }
            CoordMode::AlignCorners => 0.0,
            CoordMode::Asymmetric => unscale(o),
            CoordMode::PytorchHalfPixel if out_size > 1 => unscale(o + 0.5) - 0.5,
            CoordMode::PytorchHalfPixel => 0.0,
            CoordMode::TfHalfPixelForNn => unscale(o + 0.5),
        }
    }
}

/// How nearest-neighbour resize rounds a source coordinate (TVM's `rounding_method`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Rounding {
    /// Round half to even (TVM's `round`, lowered to `nearbyint`).
    Round,
    RoundPreferFloor,
    RoundPreferCeil,
    Floor,
    Ceil,
}

impl Rounding {
    /// Parses Relay's `rounding_method`; the empty string takes TVM's default for the mode.
    pub fn parse(s: &str, mode: CoordMode) -> Option<Self> {
        Some(match s {
            "" if mode == CoordMode::AlignCorners => Rounding::Round,
            "" => Rounding::Floor,
            "round" => Rounding::Round,
            "round_prefer_floor" => Rounding::RoundPreferFloor,
            "round_prefer_ceil" => Rounding::RoundPreferCeil,
            "floor" => Rounding::Floor,
            "ceil" => Rounding::Ceil,
            _ => return None,
        })
    }

    #[cfg(feature = "executor")]
    fn apply(self, v: f64) -> f64 {
        // TVM nudges floor and ceil by 1e-5 against rounding noise; so do we.
        match self {
            Rounding::Round => v.round_ties_even(),
            Rounding::RoundPreferFloor => (v - 0.5).ceil(),
            Rounding::RoundPreferCeil => (v + 0.5).floor(),
            Rounding::Floor => (v + 1e-5).floor(),
            Rounding::Ceil => (v - 1e-5).ceil(),
        }
    }
}

/// The interpolation method.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Method {
    Nearest(Rounding),
    Linear,
    Cubic {
        /// The cubic kernel's `a` (TVM's `cubic_alpha`, −0.5 by default).
        alpha: f64,
        /// Drop taps outside the image and renormalize (TVM's `cubic_exclude`).
        exclude: bool,
    },
}

/// Source taps and weights of one output coordinate.
#[cfg(feature = "executor")]
type Taps = Vec<(usize, f64)>;

#[cfg(feature = "executor")]
fn clamp(i: f64, size: usize) -> usize {
    i.max(0.0).min(size as f64 - 1.0) as usize
}

#[cfg(feature = "executor")]
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

#[cfg(feature = "executor")]
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

/// Geometry of a resize in logical N, C, H, W terms.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ResizeGeom {
    pub batch: usize,
    pub channels: usize,
    pub in_h: usize,
    pub in_w: usize,
    pub out_h: usize,
    pub out_w: usize,
    /// The ONNX `scales` (output over input length, height and width) the size was computed
    /// from, if any; otherwise the ratio is `out / in`.
    pub scale: Option<[f32; 2]>,
    /// NHWC data (otherwise NCHW).
    pub channels_last: bool,
}

/// `y = resize2d(x)`.
#[cfg(feature = "executor")]
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
