//! `image.resize2d`: resizes the H and W axes of NCHW or NHWC data to `size` by
//! nearest-neighbour, bilinear or bicubic interpolation, under TVM's coordinate transformation
//! and rounding modes. An optional `scale` (ONNX's `scales`) replaces `size / input` in the
//! coordinate transformation, as onnxruntime does when a model gives scales. Host kernels for float32 and float64.

use super::nn_common::{data_nchw, out_dtype, Layout2d};
use crate::ir::{AttrValue, TensorType, Type};
use crate::kernels::resize::{CoordMode, Method, ResizeGeom, Rounding};
use crate::op::{Arity, AttrDef, AttrKind, OpDef, OpImpl, OpPattern, TypeCtx, TypeError};
#[cfg(feature = "executor")]
use {
    super::nn_common::{input, output, real_kernel, with_kernel_ctx, RealBody},
    crate::kernels::numeric::Real,
    crate::kernels::resize::resize2d,
    crate::op::{HostKernel, KernelError, KernelSpec},
    crate::tensor::{TensorMut, TensorRef},
};

struct Resize2d;

#[cfg_attr(
    not(feature = "executor"),
    allow(dead_code, reason = "only the host kernel reads it")
)]
struct ResizeSetup {
    geom: ResizeGeom,
    method: Method,
    mode: CoordMode,
    out: TensorType,
}

fn setup(ctx: &TypeCtx<'_>) -> Result<ResizeSetup, TypeError> {
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

    #[cfg(feature = "executor")]
    fn host_kernel(&self, spec: &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> {
        let s = with_kernel_ctx(spec, setup)?;
        real_kernel(spec, s.out.dtype, ResizeKernel(s))
    }
}

#[cfg(feature = "executor")]
struct ResizeKernel(ResizeSetup);

#[cfg(feature = "executor")]
impl RealBody for ResizeKernel {
    fn run<T: Real>(
        &self,
        inputs: &[TensorRef<'_>],
        outputs: &mut [TensorMut<'_>],
        _threads: usize,
    ) -> Result<(), KernelError> {
        let x = input::<T>("image.resize2d", inputs, 0)?;
        let y = output::<T>("image.resize2d", outputs, 0)?;
        let s = &self.0;
        resize2d(&s.geom, s.method, s.mode, x, y);
        Ok(())
    }
}

pub(super) fn register(ops: &mut Vec<OpDef>) {
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
