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
//! [`byoc_kernels::nms`]. Both ops are opaque to fusion and rarely offered by accelerators,
//! which is why a detector keeps them on the host.

use crate::op::{Arity, AttrDef, AttrKind, OpDef, OpImpl, OpPattern, TypeCtx, TypeError};
use crate::{DType, TensorType, Type};

/// Argument `i` must be a scalar of `dtype`.
pub fn check_scalar(
    ctx: &TypeCtx<'_>,
    i: usize,
    name: &str,
    dtype: DType,
) -> Result<(), TypeError> {
    let t = ctx.tensor(i)?;
    if t.rank() != 0 || t.dtype != dtype {
        return Err(ctx.err(format!("{name} must be a {dtype} scalar, got {t}")));
    }
    Ok(())
}

/// The box tensor (argument 0): `[batch, anchors, elems]` float32.
pub fn boxes(ctx: &TypeCtx<'_>) -> Result<(Boxes, TensorType), TypeError> {
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
pub fn box_field(
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
pub fn int32(shape: Vec<usize>) -> Type {
    Type::tensor(shape, DType::Int32)
}

/// `vision.get_valid_counts`: boxes above a score threshold first, with their count and indices.
pub struct GetValidCounts;

/// get_valid_counts' geometry and fields: (boxes, id_index, score_index).
pub fn valid_counts_setup(ctx: &TypeCtx<'_>) -> Result<(Boxes, Option<usize>, usize), TypeError> {
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
}

/// `vision.non_max_suppression`: greedy non-maximum suppression of `get_valid_counts`' output.
pub struct NonMaxSuppression;

/// NMS's geometry and attributes, with the argument types checked.
pub fn nms_setup(ctx: &TypeCtx<'_>) -> Result<(Boxes, NmsAttrs), TypeError> {
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
}

pub(crate) fn register(ops: &mut Vec<OpDef>) {
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

/// The geometry of a box tensor `[batch, anchors, elems]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Boxes {
    /// Batch size.
    pub batch: usize,
    /// Boxes per batch element.
    pub anchors: usize,
    /// Values per box.
    pub elems: usize,
}

impl Boxes {
    /// The `elems` values of box `j` of batch element `b` in `data`.
    pub fn row<'a>(&self, data: &'a [f32], b: usize, j: usize) -> &'a [f32] {
        let start = (b * self.anchors + j) * self.elems;
        &data[start..start + self.elems]
    }

    /// The `elems` values of box `j` of batch element `b` in `data`, mutable.
    pub fn row_mut<'a>(&self, data: &'a mut [f32], b: usize, j: usize) -> &'a mut [f32] {
        let start = (b * self.anchors + j) * self.elems;
        &mut data[start..start + self.elems]
    }
}

/// The attributes of `non_max_suppression` (Relay's names).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NmsAttrs {
    /// Suppress overlapping boxes of different classes too.
    pub force_suppress: bool,
    /// Keep only the `top_k` highest-scoring valid boxes before suppression (≤ 0: all).
    pub top_k: i64,
    /// Index of `x1` in a box; the corners are the four values from here.
    pub coord_start: usize,
    /// Index of the score.
    pub score_index: usize,
    /// Index of the class id (`None`: no class id).
    pub id_index: Option<usize>,
    /// Return the original indices of the kept boxes (else the box tensor).
    pub return_indices: bool,
    /// With the box tensor: move the kept boxes to the top.
    pub invalid_to_bottom: bool,
}
