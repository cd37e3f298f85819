//! Object-detection box filtering with Relay's names, arguments and attributes:
//!
//! - `vision.get_valid_counts(data, score_threshold, id_index=0, score_index=1)`: the boxes of
//!   `data` (`[batch, anchors, elems]`) whose score exceeds the scalar threshold, moved to the
//!   front; a 3-tuple `(valid_count [batch] int32, boxes [batch, anchors, elems],
//!   indices [batch, anchors] int32)`.
//! - `vision.non_max_suppression(data, valid_count, indices, max_output_size, iou_threshold,
//!   force_suppress=False, top_k=-1, coord_start=2, score_index=1, id_index=0,
//!   return_indices=True, invalid_to_bottom=False)`: greedy NMS of get_valid_counts' output.
//!   `max_output_size` (int32) and `iou_threshold` (float32) are scalar arguments, as in
//!   Relay. With `return_indices` the result is `(indices [batch, anchors] int32,
//!   valid_box_count [batch, 1] int32)` (original indices of the kept boxes first, then -1);
//!   otherwise the box tensor with suppressed rows set to -1.
//!
//! `id_index` may be -1 (no class id). Host kernels for float32 boxes; the loops are in
//! [`crate::kernels::nms`]. Both ops are opaque to fusion and rarely offered by accelerators,
//! which is why a detector keeps them on the host.

use crate::ir::{DType, TensorType, Type};
use crate::kernels::nms::{Boxes, NmsAttrs};
use crate::op::{Arity, AttrDef, AttrKind, OpDef, OpImpl, OpPattern, TypeCtx, TypeError};
#[cfg(feature = "executor")]
use {
    super::support::{check_io, with_type_ctx},
    crate::kernels::{self, nms},
    crate::op::{HostKernel, KernelError, KernelSpec},
};

/// Argument `i` must be a scalar of `dtype`.
fn check_scalar(ctx: &TypeCtx<'_>, i: usize, name: &str, dtype: DType) -> Result<(), TypeError> {
    let t = ctx.tensor(i)?;
    if t.rank() != 0 || t.dtype != dtype {
        return Err(ctx.err(format!("{name} must be a {dtype} scalar, got {t}")));
    }
    Ok(())
}

/// The box tensor (argument 0): `[batch, anchors, elems]` float32.
fn boxes(ctx: &TypeCtx<'_>) -> Result<(Boxes, TensorType), TypeError> {
    let t = ctx.tensor(0)?;
    if t.rank() != 3 {
        return Err(ctx.err(format!(
            "data must be [batch, anchors, elems], got rank {} ({t})",
            t.rank()
        )));
    }
    if t.dtype != DType::Float32 {
        return Err(ctx.err(format!("data must be float32, got {}", t.dtype)));
    }
    let geo = Boxes {
        batch: t.shape[0],
        anchors: t.shape[1],
        elems: t.shape[2],
    };
    Ok((geo, t.clone()))
}

/// An index attribute within a box of `elems` values; `-1` (no such field) when `optional`.
fn box_field(
    ctx: &TypeCtx<'_>,
    name: &str,
    elems: usize,
    optional: bool,
) -> Result<Option<usize>, TypeError> {
    let v = ctx.int(name)?;
    if optional && v == -1 {
        return Ok(None);
    }
    match usize::try_from(v) {
        Ok(i) if i < elems => Ok(Some(i)),
        _ => Err(ctx.err(format!(
            "{name}={v} is outside a box of {elems} values (expected 0 to {}{})",
            elems.saturating_sub(1),
            if optional { ", or -1 for none" } else { "" }
        ))),
    }
}

/// `int32 [shape]`.
fn int32(shape: Vec<usize>) -> Type {
    Type::tensor(shape, DType::Int32)
}

struct GetValidCounts;

/// get_valid_counts' geometry and fields: (boxes, id_index, score_index).
fn valid_counts_setup(ctx: &TypeCtx<'_>) -> Result<(Boxes, Option<usize>, usize), TypeError> {
    let (geo, _) = boxes(ctx)?;
    check_scalar(ctx, 1, "score_threshold", DType::Float32)?;
    let id = box_field(ctx, "id_index", geo.elems, true)?;
    let score = box_field(ctx, "score_index", geo.elems, false)?
        .ok_or_else(|| ctx.err("score_index is required"))?;
    Ok((geo, id, score))
}

impl OpImpl for GetValidCounts {
    fn infer_type(&self, ctx: &TypeCtx<'_>) -> Result<Type, TypeError> {
        let (geo, _, _) = valid_counts_setup(ctx)?;
        let data = ctx.tensor(0)?.clone();
        Ok(Type::Tuple(vec![
            int32(vec![geo.batch]),
            Type::Tensor(data),
            int32(vec![geo.batch, geo.anchors]),
        ]))
    }

    #[cfg(feature = "executor")]
    fn host_kernel(&self, spec: &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> {
        check_io(spec, 2, 3)?;
        let (geo, id, score) = with_type_ctx(spec, valid_counts_setup)?;
        Ok(kernels::kernel(
            spec.op,
            spec.inputs,
            spec.outputs,
            move |ins, outs, _| {
                let data = kernels::input::<f32>(ins, 0)?;
                let threshold = kernels::input::<f32>(ins, 1)?[0];
                let [count, boxes, indices] = outs else {
                    return Err(KernelError::new(
                        "vision.get_valid_counts",
                        "needs 3 outputs",
                    ));
                };
                nms::get_valid_counts(
                    geo,
                    data,
                    threshold,
                    id,
                    score,
                    count.as_slice_mut::<i32>().map_err(wiring)?,
                    boxes.as_slice_mut::<f32>().map_err(wiring)?,
                    indices.as_slice_mut::<i32>().map_err(wiring)?,
                );
                Ok(())
            },
        ))
    }
}

/// A tensor-access error inside a kernel whose types were checked: a wiring mistake.
#[cfg(feature = "executor")]
fn wiring(e: impl std::fmt::Display) -> KernelError {
    KernelError::new("kernel", e.to_string())
}

struct NonMaxSuppression;

/// NMS's geometry and attributes, with the argument types checked.
fn nms_setup(ctx: &TypeCtx<'_>) -> Result<(Boxes, NmsAttrs), TypeError> {
    let (geo, _) = boxes(ctx)?;
    let expect = |i: usize, name: &str, shape: Vec<usize>| -> Result<(), TypeError> {
        let t = ctx.tensor(i)?;
        if t.shape != shape || t.dtype != DType::Int32 {
            return Err(ctx.err(format!(
                "{name} must be {} for data {}, got {t}",
                int32(shape),
                ctx.tensor(0)?
            )));
        }
        Ok(())
    };
    expect(1, "valid_count", vec![geo.batch])?;
    expect(2, "indices", vec![geo.batch, geo.anchors])?;
    check_scalar(ctx, 3, "max_output_size", DType::Int32)?;
    check_scalar(ctx, 4, "iou_threshold", DType::Float32)?;
    let coord_start = box_field(ctx, "coord_start", geo.elems, false)?
        .filter(|c| c + 4 <= geo.elems)
        .ok_or_else(|| {
            ctx.err(format!(
                "coord_start={} leaves no room for 4 coordinates in a box of {} values",
                ctx.attr("coord_start"),
                geo.elems
            ))
        })?;
    let score_index = box_field(ctx, "score_index", geo.elems, false)?
        .ok_or_else(|| ctx.err("score_index is required"))?;
    let attrs = NmsAttrs {
        force_suppress: ctx.bool("force_suppress")?,
        top_k: ctx.int("top_k")?,
        coord_start,
        score_index,
        id_index: box_field(ctx, "id_index", geo.elems, true)?,
        return_indices: ctx.bool("return_indices")?,
        invalid_to_bottom: ctx.bool("invalid_to_bottom")?,
    };
    Ok((geo, attrs))
}

impl OpImpl for NonMaxSuppression {
    fn infer_type(&self, ctx: &TypeCtx<'_>) -> Result<Type, TypeError> {
        let (geo, attrs) = nms_setup(ctx)?;
        if attrs.return_indices {
            Ok(Type::Tuple(vec![
                int32(vec![geo.batch, geo.anchors]),
                int32(vec![geo.batch, 1]),
            ]))
        } else {
            Ok(Type::Tensor(ctx.tensor(0)?.clone()))
        }
    }

    #[cfg(feature = "executor")]
    fn host_kernel(&self, spec: &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> {
        let (geo, attrs) = with_type_ctx(spec, nms_setup)?;
        check_io(spec, 5, if attrs.return_indices { 2 } else { 1 })?;
        let size = geo.batch * geo.anchors;
        Ok(kernels::kernel(
            spec.op,
            spec.inputs,
            spec.outputs,
            move |ins, outs, _| {
                let data = kernels::input::<f32>(ins, 0)?;
                let valid_count = kernels::input::<i32>(ins, 1)?;
                let indices = kernels::input::<i32>(ins, 2)?;
                let max_output_size = kernels::input::<i32>(ins, 3)?[0];
                let iou_threshold = kernels::input::<f32>(ins, 4)?[0];
                let run = |out: &mut [f32], box_indices: &mut [i32]| {
                    nms::non_max_suppression(
                        geo,
                        &attrs,
                        data,
                        valid_count,
                        indices,
                        max_output_size,
                        iou_threshold,
                        out,
                        box_indices,
                    )
                };
                let mut box_indices = vec![0i32; size];
                if attrs.return_indices {
                    let mut boxes = vec![0f32; data.len()];
                    run(&mut boxes, &mut box_indices);
                    nms::compact_indices(geo, &mut box_indices, kernels::output::<i32>(outs, 1)?);
                    kernels::output::<i32>(outs, 0)?.copy_from_slice(&box_indices);
                } else {
                    let out = kernels::output::<f32>(outs, 0)?;
                    run(out, &mut box_indices);
                    if attrs.invalid_to_bottom {
                        nms::boxes_to_top(geo, out);
                    }
                }
                Ok(())
            },
        ))
    }
}

pub(super) fn register(ops: &mut Vec<OpDef>) {
    ops.push(
        OpDef::new(
            "vision.get_valid_counts",
            "boxes scoring above a threshold, moved to the front, with their count and indices",
            Arity::Exact(2),
            OpPattern::Opaque,
            GetValidCounts,
        )
        .with_attrs(vec![
            AttrDef::new("id_index", AttrKind::Int, 0i64),
            AttrDef::new("score_index", AttrKind::Int, 1i64),
        ]),
    );
    ops.push(
        OpDef::new(
            "vision.non_max_suppression",
            "greedy non-maximum suppression of scored boxes",
            Arity::Exact(5),
            OpPattern::Opaque,
            NonMaxSuppression,
        )
        .with_attrs(vec![
            AttrDef::new("force_suppress", AttrKind::Bool, false),
            AttrDef::new("top_k", AttrKind::Int, -1i64),
            AttrDef::new("coord_start", AttrKind::Int, 2i64),
            AttrDef::new("score_index", AttrKind::Int, 1i64),
            AttrDef::new("id_index", AttrKind::Int, 0i64),
            AttrDef::new("return_indices", AttrKind::Bool, true),
            AttrDef::new("invalid_to_bottom", AttrKind::Bool, false),
        ]),
    );
}
