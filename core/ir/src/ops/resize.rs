//! `image.resize2d`: resizes the H and W axes of NCHW or NHWC data to `size` by
//! nearest-neighbour, bilinear or bicubic interpolation, under TVM's coordinate transformation
//! and rounding modes. An optional `scale` (ONNX's `scales`) replaces `size / input` in the
//! coordinate transformation, as onnxruntime does when a model gives scales. Host kernels for float32 and float64.

use super::nn_common::{data_nchw, out_dtype, Layout2d};
use crate::op::{Arity, AttrDef, AttrKind, OpDef, OpImpl, OpPattern, TypeCtx, TypeError};
use crate::{AttrValue, TensorType, Type};

/// `image.resize2d`.
pub struct Resize2d;

/// The checked attributes and types of an `image.resize2d` call.
pub struct ResizeSetup {
    /// The resize's geometry.
    pub geom: ResizeGeom,
    /// The interpolation (`method`, with its rounding or cubic parameters).
    pub method: Method,
    /// The `coordinate_transformation_mode`.
    pub mode: CoordMode,
    /// The result type.
    pub out: TensorType,
}

/// Checks an `image.resize2d` call's argument type and attributes and derives its [`ResizeSetup`].
pub fn setup(ctx: &TypeCtx<'_>) -> Result<ResizeSetup, TypeError> {
    let layout = Layout2d::parse(ctx, "layout")?;
    let [n, c, h, w] = data_nchw(ctx, 0, "data", layout)?;
    if h == 0 || w == 0 {
        return Err(ctx.err(format!(
            "cannot resize an input with an empty spatial axis ({h} x {w})"
        )));
    }
    let size = match ctx.ints("size")?[..] {
        [oh, ow] if oh > 0 && ow > 0 => [oh, ow].map(|d| crate::dims::dim(d).unwrap_or(0)),
        ref s => {
            return Err(ctx.err(format!(
                "size must be [height, width] with positive values, got {s:?}"
            )))
        }
    };
    let scale = match ctx.floats("scale")?[..] {
        [] => None,
        [sh, sw] if [sh, sw].iter().all(|s| s.is_finite() && *s > 0.0) => {
            Some([sh as f32, sw as f32])
        }
        ref s => {
            return Err(ctx.err(format!(
                "scale must be [] or [height, width] with finite positive values, got {s:?}"
            )))
        }
    };
    let mode_name = ctx.str("coordinate_transformation_mode")?;
    let mode = CoordMode::parse(mode_name).ok_or_else(|| {
        ctx.err(format!(
            "coordinate_transformation_mode must be half_pixel, align_corners, asymmetric, pytorch_half_pixel or tf_half_pixel_for_nn, got '{mode_name}'"
        ))
    })?;
    let method = match ctx.str("method")? {
        "nearest_neighbor" => {
            let r = ctx.str("rounding_method")?;
            Method::Nearest(Rounding::parse(r, mode).ok_or_else(|| {
                ctx.err(format!(
                    "rounding_method must be '', round, round_prefer_floor, round_prefer_ceil, floor or ceil, got '{r}'"
                ))
            })?)
        }
        "linear" => Method::Linear,
        "cubic" => Method::Cubic {
            alpha: ctx.float("cubic_alpha")?,
            exclude: ctx.int("cubic_exclude")? != 0,
        },
        other => {
            return Err(ctx.err(format!(
                "method must be nearest_neighbor, linear or cubic, got '{other}'"
            )))
        }
    };
    let dtype = ctx.tensor(0)?.dtype;
    let out_dt = out_dtype(ctx, dtype)?;
    if out_dt != dtype {
        return Err(ctx.err(format!(
            "out_dtype {out_dt} differs from the data dtype {dtype}; cast the result instead"
        )));
    }
    Ok(ResizeSetup {
        geom: ResizeGeom {
            batch: n,
            channels: c,
            in_h: h,
            in_w: w,
            out_h: size[0],
            out_w: size[1],
            scale,
            channels_last: layout.channels_last(),
        },
        method,
        mode,
        out: TensorType::new(layout.shape([n, c, size[0], size[1]]), dtype),
    })
}

impl OpImpl for Resize2d {
    fn infer_type(&self, ctx: &TypeCtx<'_>) -> Result<Type, TypeError> {
        Ok(Type::Tensor(setup(ctx)?.out))
    }
}

pub(crate) fn register(ops: &mut Vec<OpDef>) {
    ops.push(
        OpDef::new(
            "image.resize2d",
            "resizes the H and W axes to size by interpolation",
            Arity::Exact(1),
            OpPattern::Injective,
            Resize2d,
        )
        .with_attrs(vec![
            AttrDef::optional("size", AttrKind::OptInts),
            // Output over input length per spatial axis when it is not `size / input` (ONNX's
            // `scales`): the coordinate transformation divides by it. Empty: `size / input`.
            AttrDef::new("scale", AttrKind::Floats, AttrValue::List(Vec::new())),
            AttrDef::new(
                "roi",
                AttrKind::Floats,
                AttrValue::List(vec![0.0.into(); 4]),
            ),
            AttrDef::new("layout", AttrKind::Str, "NCHW"),
            AttrDef::new("method", AttrKind::Str, "linear"),
            AttrDef::new(
                "coordinate_transformation_mode",
                AttrKind::Str,
                "half_pixel",
            ),
            AttrDef::new("rounding_method", AttrKind::Str, ""),
            AttrDef::new("cubic_alpha", AttrKind::Float, -0.5),
            AttrDef::new("cubic_exclude", AttrKind::Int, 0i64),
            AttrDef::new("extrapolation_value", AttrKind::Float, 0.0),
            AttrDef::new("out_dtype", AttrKind::Str, ""),
        ]),
    );
}

/// How an output coordinate maps to an input coordinate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CoordMode {
    /// `half_pixel`: `(o + 0.5) * in / out - 0.5`.
    HalfPixel,
    /// `align_corners`: `o * (in - 1) / (out - 1)`, corners onto corners.
    AlignCorners,
    /// `asymmetric`: `o * in / out`.
    Asymmetric,
    /// `pytorch_half_pixel`: `half_pixel`, but 0 for an output length of 1.
    PytorchHalfPixel,
    /// `tf_half_pixel_for_nn`: `(o + 0.5) * in / out`.
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
    pub fn map(self, o: usize, in_size: usize, out_size: usize, scale: Option<f32>) -> f64 {
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
pub enum Rounding {
    /// Round half to even (TVM's `round`, lowered to `nearbyint`).
    Round,
    /// `round_prefer_floor`: to nearest, ties down.
    RoundPreferFloor,
    /// `round_prefer_ceil`: to nearest, ties up.
    RoundPreferCeil,
    /// `floor`.
    Floor,
    /// `ceil`.
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

    /// Rounds source coordinate `v` this way (`floor` and `ceil` nudged by 1e-5, as in TVM).
    pub fn apply(self, v: f64) -> f64 {
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
pub enum Method {
    /// `nearest_neighbor`, rounding the source coordinate this way.
    Nearest(Rounding),
    /// `linear`: bilinear interpolation.
    Linear,
    /// `cubic`: bicubic interpolation.
    Cubic {
        /// The cubic kernel's `a` (TVM's `cubic_alpha`, −0.5 by default).
        alpha: f64,
        /// Drop taps outside the image and renormalize (TVM's `cubic_exclude`).
        exclude: bool,
    },
}

/// Geometry of a resize in logical N, C, H, W terms.
#[derive(Clone, Debug, PartialEq)]
pub struct ResizeGeom {
    /// Batch size (N).
    pub batch: usize,
    /// Channels (C).
    pub channels: usize,
    /// Input height.
    pub in_h: usize,
    /// Input width.
    pub in_w: usize,
    /// Output height.
    pub out_h: usize,
    /// Output width.
    pub out_w: usize,
    /// The ONNX `scales` (output over input length, height and width) the size was computed
    /// from, if any; otherwise the ratio is `out / in`.
    pub scale: Option<[f32; 2]>,
    /// NHWC data (otherwise NCHW).
    pub channels_last: bool,
}
