//! Indexing ops: `strided_slice` and `take`.
//!
//! `strided_slice` follows Relay: `begin`/`end`/`strides` apply to `axes` (default: the first
//! `len(begin)` axes; other axes are kept whole); a single stride applies to every sliced axis;
//! negative indices count from the end; indices are clamped to `[0, dim]` for positive strides
//! and `[-1, dim - 1]` for negative ones. With `slice_mode="size"`, `end` holds sizes (-1: to the
//! end) and strides are 1.
//!
//! `take` gathers along `axis` (default: the flattened input) with int32/int64 indices.
//! `mode="clip"` clamps indices to `[0, n - 1]` (so negative indices give the first element),
//! `"wrap"` takes them modulo `n` (so -1 is the last), and `"fast"` accepts `[-n, n)` (negative
//! counting from the end) and reports any other index as a kernel error instead of reading out
//! of bounds.

use crate::op::{Arity, AttrDef, AttrKind, OpDef, OpImpl, OpPattern, TypeCtx, TypeError};
use crate::{DType, TensorType, Type};

use super::support::{normalize_axes, normalize_axis};

/// `strided_slice`.
pub struct StridedSlice;

/// Per input axis: the first index and the step (in that axis's elements), and output shape.
pub struct SliceGeometry {
    /// The first index read, per input axis.
    pub begin: Vec<usize>,
    /// The step per input axis (negative for negative strides; 0 for at most one output element).
    pub step: Vec<isize>,
    /// The output shape.
    pub shape: Vec<usize>,
}

/// Checks a `strided_slice` call's attributes against input `t`; derives its [`SliceGeometry`].
pub fn slice_geometry(ctx: &TypeCtx<'_>, t: &TensorType) -> Result<SliceGeometry, TypeError> {
    let required = |name: &str| {
        ctx.opt_ints(name)?
            .ok_or_else(|| ctx.err(format!("attribute '{name}' is required")))
    };
    let begin = required("begin")?;
    let end = required("end")?;
    let strides = ctx.opt_ints("strides")?.unwrap_or_else(|| vec![1]);
    let mode = ctx.str("slice_mode")?;
    if mode != "end" && mode != "size" {
        return Err(ctx.err(format!(
            "slice_mode must be \"end\" or \"size\", got \"{mode}\""
        )));
    }
    let axes = match ctx.opt_ints("axes")? {
        Some(axes) => normalize_axes(ctx, &axes, t.rank())?,
        None => {
            if begin.len() > t.rank() {
                return Err(ctx.err(format!(
                    "begin {begin:?} has more entries than the rank {}",
                    t.rank()
                )));
            }
            (0..begin.len()).collect()
        }
    };
    if begin.len() != axes.len() || end.len() != axes.len() {
        return Err(ctx.err(format!(
            "begin {begin:?} and end {end:?} must have one entry per sliced axis ({})",
            axes.len()
        )));
    }
    if strides.len() != 1 && strides.len() != axes.len() {
        return Err(ctx.err(format!(
            "strides {strides:?} must have 1 or {} entries",
            axes.len()
        )));
    }
    let mut g = SliceGeometry {
        begin: vec![0; t.rank()],
        step: vec![1; t.rank()],
        shape: t.shape.clone(),
    };
    for (k, &axis) in axes.iter().enumerate() {
        let dim = crate::dims::dim_i64(t.shape[axis])
            .ok_or_else(|| ctx.err(format!("axis {axis} of {t} is over 2^63-1")))?;
        let stride = if mode == "size" {
            1
        } else {
            strides[if strides.len() == 1 { 0 } else { k }]
        };
        if stride == 0 {
            return Err(ctx.err(format!("stride of axis {axis} is 0")));
        }
        let (lo, hi) = if stride < 0 { (-1, dim - 1) } else { (0, dim) };
        let canon = |i: i64| (if i < 0 { i + dim } else { i }).clamp(lo, hi);
        let b = canon(begin[k]);
        let e = if mode == "size" {
            if end[k] < 0 {
                dim
            } else {
                b.saturating_add(end[k]).min(dim)
            }
        } else {
            canon(end[k])
        };
        // In i128, so no stride (i64::MIN included) overflows; `b` and `e` are in `-1..=dim`.
        let (span, step) = if stride > 0 {
            (i128::from(e) - i128::from(b), i128::from(stride))
        } else {
            (i128::from(b) - i128::from(e), -i128::from(stride))
        };
        let len = if span > 0 {
            (span + step - 1) / step
        } else {
            0
        };
        // `len` is at most `dim`, so it converts.
        g.shape[axis] = usize::try_from(len).expect("a slice is no longer than its axis");
        // An empty slice never reads its begin, which may then be out of range; a slice of
        // one element never steps, so its stride (which may be huge) is never multiplied.
        g.begin[axis] = if len > 0 {
            crate::dims::dim(b).unwrap_or(0)
        } else {
            0
        };
        g.step[axis] = if len > 1 {
            isize::try_from(stride).expect("a stride shorter than its axis fits isize")
        } else {
            0
        };
    }
    Ok(g)
}

/// Where a `strided_slice` with `attrs` (normalized) reads `input`: per input axis, the index
/// its output's first element reads and the step (in that axis's elements, negative for
/// negative strides, 0 where the output has at most one element), clamped as the kernel
/// clamps them. The one rule for the slice's geometry, shared by its kernel and the host code
/// generator.
pub fn strided_slice_window(
    attrs: &crate::Attrs,
    input: &TensorType,
) -> Result<(Vec<usize>, Vec<isize>), TypeError> {
    let args = [Type::Tensor(input.clone())];
    let ctx = TypeCtx {
        op: "strided_slice",
        attrs,
        args: &args,
    };
    let g = slice_geometry(&ctx, input)?;
    Ok((g.begin, g.step))
}

impl OpImpl for StridedSlice {
    fn infer_type(&self, ctx: &TypeCtx<'_>) -> Result<Type, TypeError> {
        let t = ctx.tensor(0)?;
        Ok(Type::tensor(slice_geometry(ctx, t)?.shape, t.dtype))
    }
}

/// `take`: gathers along `axis` (default: the flattened input) with int32/int64 indices.
pub struct Take;

/// How `take` treats an index outside the axis (`mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TakeMode {
    /// `clip`: clamped to `[0, n - 1]`.
    Clip,
    /// `wrap`: taken modulo `n`.
    Wrap,
    /// `fast`: `[-n, n)`, negative counting from the end; any other index is a kernel error.
    Fast,
}

/// Normalized axis (None: flattened), mode, output type.
pub fn take_type(ctx: &TypeCtx<'_>) -> Result<(Option<usize>, TakeMode, TensorType), TypeError> {
    let (data, indices) = (ctx.tensor(0)?, ctx.tensor(1)?);
    if !matches!(indices.dtype, DType::Int32 | DType::Int64) {
        return Err(ctx.err(format!(
            "indices must be int32 or int64, got {}",
            indices.dtype
        )));
    }
    let batch_dims = ctx.int("batch_dims")?;
    if batch_dims != 0 {
        return Err(ctx.err(format!("batch_dims={batch_dims} is not supported (only 0)")));
    }
    let mode = match ctx.str("mode")? {
        "clip" => TakeMode::Clip,
        "wrap" => TakeMode::Wrap,
        "fast" => TakeMode::Fast,
        m => {
            return Err(ctx.err(format!(
                "mode must be \"clip\", \"wrap\" or \"fast\", got \"{m}\""
            )))
        }
    };
    let axis = ctx
        .opt_int("axis")?
        .map(|a| normalize_axis(ctx, a, data.rank()))
        .transpose()?;
    let (shape, axis_len) = match axis {
        None => (indices.shape.clone(), data.num_elements()),
        Some(a) => {
            let mut s = data.shape[..a].to_vec();
            s.extend(&indices.shape);
            s.extend(&data.shape[a + 1..]);
            (s, data.shape[a])
        }
    };
    if axis_len == 0 && indices.num_elements() > 0 {
        return Err(ctx.err("cannot take from an empty axis"));
    }
    Ok((axis, mode, TensorType::new(shape, data.dtype)))
}

impl OpImpl for Take {
    fn infer_type(&self, ctx: &TypeCtx<'_>) -> Result<Type, TypeError> {
        Ok(Type::Tensor(take_type(ctx)?.2))
    }
}

pub(crate) fn register(ops: &mut Vec<OpDef>) {
    ops.push(
        OpDef::new(
            "strided_slice",
            "a strided window of the input",
            Arity::Exact(1),
            OpPattern::Injective,
            StridedSlice,
        )
        .with_attrs(vec![
            AttrDef::optional("begin", AttrKind::OptInts),
            AttrDef::optional("end", AttrKind::OptInts),
            AttrDef::optional("strides", AttrKind::OptInts),
            AttrDef::optional("axes", AttrKind::OptInts),
            AttrDef::new("slice_mode", AttrKind::Str, "end"),
        ]),
    );
    ops.push(
        OpDef::new(
            "take",
            "gathers elements along axis",
            Arity::Exact(2),
            OpPattern::Injective,
            Take,
        )
        .with_attrs(vec![
            AttrDef::new("batch_dims", AttrKind::Int, 0i64),
            AttrDef::optional("axis", AttrKind::OptInt),
            AttrDef::new("mode", AttrKind::Str, "clip"),
        ]),
    );
}
