//! `Resize` (opsets 10 to 23) and `Upsample` (7 to 9) onto `image.resize2d` over NCHW; 1-D
//! (NCL) data as NCHW with a height of 1 that stays 1, squeezed out of the result.
//!
//! The output size comes from `sizes` or `floor(input * scales)`; only the spatial dims may
//! change. Given `scales` also travel as the call's `scale` attribute, because the
//! coordinate transformation divides by the scale, not by `output / input`. ONNX's `mode` and `nearest_mode` map onto Relay's `method` and
//! `rounding_method`; before opset 11 the coordinate mode is `asymmetric` with `floor`
//! rounding for nearest, as ONNX's reference defines `Upsample`.

use super::one;
use crate::ctx::NodeCtx;
use crate::OnnxError;
use byoc_ir::{AttrValue, Attrs, ExprId};

type Out = Result<Vec<ExprId>, OnnxError>;

/// How to resize: Relay's attribute values.
struct Mode {
    method: &'static str,
    coordinates: String,
    rounding: String,
    cubic_alpha: f64,
    exclude: bool,
    extrapolation: f64,
}

fn method(ctx: &NodeCtx<'_>, mode: &str) -> Result<&'static str, OnnxError> {
    Ok(match mode {
        "nearest" => "nearest_neighbor",
        "linear" | "bilinear" => "linear",
        "cubic" => "cubic",
        other => return Err(ctx.err(format!("resize mode '{other}' is not supported"))),
    })
}

/// Computes the output size from `scales` or `sizes` and emits the call.
fn emit(
    ctx: &mut NodeCtx<'_>,
    x: ExprId,
    scales: Option<Vec<f64>>,
    sizes: Option<Vec<i64>>,
    mode: Mode,
) -> Out {
    let mut shape = ctx.shape(x)?;
    let one_d = shape.len() == 3;
    let (mut x, mut scales, mut sizes) = (x, scales, sizes);
    if one_d {
        // A height of 1, kept: scale 1, size 1.
        shape.insert(2, 1);
        x = ctx.call(
            "expand_dims",
            &[x],
            Attrs::new().with("axis", 2i64).with("num_newaxis", 1i64),
        )?;
        scales = scales.map(|mut s| {
            if s.len() == 3 {
                s.insert(2, 1.0);
            }
            s
        });
        sizes = sizes.map(|mut s| {
            if s.len() == 3 {
                s.insert(2, 1);
            }
            s
        });
    }
    if shape.len() != 4 {
        return Err(ctx.err(format!(
            "only 3-D (NCL) and 4-D (NCHW) inputs are supported, got {:?}",
            ctx.shape(x)?
        )));
    }
    let (out, scale) = match (sizes, scales) {
        (Some(s), _) if s.len() == 4 => (s, Vec::new()),
        (_, Some(s)) if s.len() == 4 => (scaled_size(ctx, &shape, &s)?, vec![s[2], s[3]]),
        _ => {
            return Err(ctx.err(format!(
                "needs {n} scales or {n} sizes",
                n = if one_d { 3 } else { 4 }
            )))
        }
    };
    if usize::try_from(out[0]).ok() != Some(shape[0])
        || usize::try_from(out[1]).ok() != Some(shape[1])
    {
        return Err(ctx.err(format!(
            "only the spatial dims may be resized: {shape:?} -> {out:?}"
        )));
    }
    if out[2] < 1 || out[3] < 1 {
        return Err(ctx.err(format!("output size {out:?} is empty")));
    }
    let attrs = Attrs::new()
        .with("size", vec![out[2], out[3]])
        .with(
            "scale",
            AttrValue::List(scale.into_iter().map(AttrValue::from).collect()),
        )
        .with("layout", "NCHW")
        .with("method", mode.method)
        .with("coordinate_transformation_mode", mode.coordinates)
        .with("rounding_method", mode.rounding)
        .with("cubic_alpha", mode.cubic_alpha)
        .with("cubic_exclude", i64::from(mode.exclude))
        .with("extrapolation_value", mode.extrapolation);
    let y = ctx.call("image.resize2d", &[x], attrs)?;
    if one_d {
        return one(ctx.call("squeeze", &[y], Attrs::new().with("axis", vec![2i64]))?);
    }
    one(y)
}

/// `floor(input * scales)`, refusing scales that are not finite and positive or that give a
/// dim beyond what a tensor can hold.
fn scaled_size(ctx: &NodeCtx<'_>, shape: &[usize], scales: &[f64]) -> Result<Vec<i64>, OnnxError> {
    // Dims stay below 2^53 so the f64 product is exact enough and fits i64.
    const LIMIT: f64 = (1u64 << 53) as f64;
    shape
        .iter()
        .zip(scales)
        .map(|(&d, &f)| {
            let v = (d as f64 * f).floor();
            if !f.is_finite() || f <= 0.0 {
                Err(ctx.err(format!(
                    "scales {scales:?}: every scale must be finite and positive"
                )))
            } else if v >= LIMIT {
                Err(ctx.err(format!(
                    "scales {scales:?} give an output dim of {v:e} for input shape {shape:?}"
                )))
            } else {
                Ok(v as i64)
            }
        })
        .collect()
}

/// The `Upsample`-era mode: asymmetric coordinates, floor rounding.
fn legacy_mode(ctx: &NodeCtx<'_>) -> Result<Mode, OnnxError> {
    let method = method(ctx, &ctx.str_or("mode", "nearest")?)?;
    Ok(Mode {
        method,
        coordinates: "asymmetric".into(),
        rounding: if method == "nearest_neighbor" {
            "floor"
        } else {
            ""
        }
        .into(),
        cubic_alpha: -0.75,
        exclude: false,
        extrapolation: 0.0,
    })
}

/// `Resize`.
pub(super) fn resize(ctx: &mut NodeCtx<'_>) -> Out {
    let x = ctx.input(0)?;
    if ctx.opset() < 11 {
        let mode = legacy_mode(ctx)?;
        let scales = ctx.const_floats(1)?;
        return emit(ctx, x, scales, None, mode);
    }
    if ctx.flag_or("antialias", false)? {
        return Err(ctx.err("antialias=1 is not supported"));
    }
    if let Some(axes) = ctx.attr_ints("axes")? {
        let all: Vec<i64> = (0..ctx.rank(x)? as i64).collect();
        if axes != all {
            return Err(ctx.err(format!(
                "axes {axes:?} are not supported (only all of them)"
            )));
        }
    }
    let policy = ctx.str_or("keep_aspect_ratio_policy", "stretch")?;
    if policy != "stretch" {
        return Err(ctx.err(format!(
            "keep_aspect_ratio_policy '{policy}' is not supported"
        )));
    }
    let method = method(ctx, &ctx.str_or("mode", "nearest")?)?;
    let coordinates = ctx.str_or("coordinate_transformation_mode", "half_pixel")?;
    if coordinates == "tf_crop_and_resize" {
        return Err(ctx.err("coordinate_transformation_mode 'tf_crop_and_resize' is not supported"));
    }
    let rounding = if method == "nearest_neighbor" {
        ctx.str_or("nearest_mode", "round_prefer_floor")?
    } else {
        String::new()
    };
    let mode = Mode {
        method,
        coordinates,
        rounding,
        cubic_alpha: ctx.float_or("cubic_coeff_a", -0.75)?,
        exclude: ctx.flag_or("exclude_outside", false)?,
        extrapolation: ctx.float_or("extrapolation_value", 0.0)?,
    };
    // An empty scales tensor stands for "not given" (opsets 11 and 12 require the input).
    let scales = ctx.const_floats(2)?.filter(|s| !s.is_empty());
    let sizes = ctx.const_ints(3)?.filter(|s| !s.is_empty());
    emit(ctx, x, scales, sizes, mode)
}

/// `Upsample` (scales an attribute in opset 7, an input from opset 9).
pub(super) fn upsample(ctx: &mut NodeCtx<'_>) -> Out {
    let x = ctx.input(0)?;
    let mode = legacy_mode(ctx)?;
    let scales = if ctx.opset() < 9 {
        ctx.attr_floats("scales")?
    } else {
        ctx.const_floats(1)?
    };
    emit(ctx, x, scales, None, mode)
}
