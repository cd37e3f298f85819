//! Data-rearranging ops: `transpose`, `concatenate`, `split`.
//!
//! `concatenate` takes ONE argument, a tuple of tensors (as in Relay); `split` returns a tuple.
//! `split`'s `indices_or_sections` is either a number of equal sections, which must divide the
//! axis, or a list of ascending split points within the axis.

use crate::op::{Arity, AttrDef, AttrKind, OpDef, OpImpl, OpPattern, TypeCtx, TypeError};
use crate::{AttrValue, TensorType, Type};

use super::support::normalize_axis;

/// `transpose`: permutes the dimensions by `axes` (default: reversed).
pub struct Transpose;

/// `transpose`'s permutation of a rank-`rank` input: `axes` normalized, else the axes reversed.
pub fn transpose_axes(ctx: &TypeCtx<'_>, rank: usize) -> Result<Vec<usize>, TypeError> {
    let Some(axes) = ctx.opt_ints("axes")? else {
        return Ok((0..rank).rev().collect());
    };
    if axes.len() != rank {
        return Err(ctx.err(format!(
            "axes {axes:?} must list {rank} axes for a tensor of rank {rank}"
        )));
    }
    super::support::normalize_axes(ctx, &axes, rank)
}

impl OpImpl for Transpose {
    fn infer_type(&self, ctx: &TypeCtx<'_>) -> Result<Type, TypeError> {
        let t = ctx.tensor(0)?;
        let axes = transpose_axes(ctx, t.rank())?;
        Ok(Type::tensor(
            axes.iter().map(|&a| t.shape[a]).collect::<Vec<_>>(),
            t.dtype,
        ))
    }
}

/// `concatenate`: joins a tuple of tensors along `axis`.
pub struct Concatenate;

/// The output type and normalized axis of concatenating `fields`.
pub fn concat_type(
    ctx: &TypeCtx<'_>,
    fields: &[&TensorType],
) -> Result<(TensorType, usize), TypeError> {
    let Some(first) = fields.first() else {
        return Err(ctx.err("needs at least one tensor"));
    };
    let axis = normalize_axis(ctx, ctx.int("axis")?, first.rank())?;
    let mut shape = first.shape.clone();
    for (i, f) in fields.iter().enumerate().skip(1) {
        if f.rank() != first.rank() {
            return Err(ctx.err(format!(
                "field {i} has rank {} but field 0 has rank {}",
                f.rank(),
                first.rank()
            )));
        }
        if f.dtype != first.dtype {
            return Err(ctx.err(format!(
                "field {i} has dtype {} but field 0 has dtype {}",
                f.dtype, first.dtype
            )));
        }
        let differs = (0..f.rank()).any(|d| d != axis && f.shape[d] != first.shape[d]);
        if differs {
            return Err(ctx.err(format!(
                "field {i} has shape {:?}, which differs from field 0's {:?} outside axis {axis}",
                f.shape, first.shape
            )));
        }
        shape[axis] += f.shape[axis];
    }
    Ok((TensorType::new(shape, first.dtype), axis))
}

impl OpImpl for Concatenate {
    fn infer_type(&self, ctx: &TypeCtx<'_>) -> Result<Type, TypeError> {
        let fields = match ctx.args.first() {
            Some(Type::Tuple(fields)) => fields,
            Some(other) => return Err(ctx.err(format!("expects a tuple of tensors, got {other}"))),
            None => return Err(ctx.err("missing argument 0")),
        };
        let tensors = fields
            .iter()
            .enumerate()
            .map(|(i, f)| {
                f.as_tensor()
                    .ok_or_else(|| ctx.err(format!("field {i} must be a tensor, got {f}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Type::Tensor(concat_type(ctx, &tensors)?.0))
    }
}

/// `split`: cuts a tensor into a tuple along `axis` at `indices_or_sections`.
pub struct Split;

/// The normalized axis and the sizes of the pieces along it.
pub fn split_sizes(ctx: &TypeCtx<'_>, t: &TensorType) -> Result<(usize, Vec<usize>), TypeError> {
    let axis = normalize_axis(ctx, ctx.int("axis")?, t.rank())?;
    let len = t.shape[axis];
    let sizes = match ctx.attr("indices_or_sections") {
        AttrValue::Int(n) => {
            let n = usize::try_from(*n).ok().filter(|&n| n > 0).ok_or_else(|| {
                ctx.err(format!(
                    "indices_or_sections must be a positive number of sections, got {n}"
                ))
            })?;
            if !len.is_multiple_of(n) {
                return Err(ctx.err(format!(
                    "{n} sections do not evenly divide axis {axis} of size {len}"
                )));
            }
            vec![len / n; n]
        }
        v => {
            let indices = v.as_int_list().ok_or_else(|| {
                ctx.err(format!(
                    "indices_or_sections must be an int or a list of ints, got {v}"
                ))
            })?;
            let mut sizes = Vec::with_capacity(indices.len() + 1);
            let mut begin = 0usize;
            for &i in &indices {
                let i = usize::try_from(i).ok().filter(|&i| i >= begin && i <= len).ok_or_else(|| {
                    ctx.err(format!(
                        "split indices {indices:?} must be ascending and within 0 to {len} (axis {axis})"
                    ))
                })?;
                sizes.push(i - begin);
                begin = i;
            }
            sizes.push(len - begin);
            sizes
        }
    };
    Ok((axis, sizes))
}

impl OpImpl for Split {
    fn infer_type(&self, ctx: &TypeCtx<'_>) -> Result<Type, TypeError> {
        let t = ctx.tensor(0)?;
        let (axis, sizes) = split_sizes(ctx, t)?;
        Ok(Type::Tuple(
            sizes
                .into_iter()
                .map(|s| {
                    let mut shape = t.shape.clone();
                    shape[axis] = s;
                    Type::tensor(shape, t.dtype)
                })
                .collect(),
        ))
    }
}

pub(crate) fn register(ops: &mut Vec<OpDef>) {
    ops.push(
        OpDef::new(
            "transpose",
            "permutes the dimensions",
            Arity::Exact(1),
            OpPattern::Injective,
            Transpose,
        )
        .with_attrs(vec![AttrDef::optional("axes", AttrKind::OptInts)]),
    );
    ops.push(
        OpDef::new(
            "concatenate",
            "joins a tuple of tensors along axis",
            Arity::Exact(1),
            OpPattern::Injective,
            Concatenate,
        )
        .with_attrs(vec![AttrDef::new("axis", AttrKind::Int, 0i64)]),
    );
    ops.push(
        OpDef::new(
            "split",
            "cuts a tensor into a tuple along axis",
            Arity::Exact(1),
            OpPattern::Injective,
            Split,
        )
        .with_attrs(vec![
            AttrDef::optional("indices_or_sections", AttrKind::Any),
            AttrDef::new("axis", AttrKind::Int, 0i64),
        ]),
    );
}
