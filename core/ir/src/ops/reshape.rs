//! Shape-only ops: `reshape`, `squeeze`, `expand_dims`, `nn.batch_flatten`.
//!
//! The output holds the input's bytes unchanged, so these are views ([`OpDef::view`]); their
//! host kernels still copy, for executors that do not alias.
//!
//! `reshape` follows Relay's `newshape` codes: a positive value is a dimension, `0` copies the
//! input dimension at the same position (a literal 0 when `allowzero`), `-1` is inferred from
//! the element count (at most one), `-2` copies all remaining input dimensions, `-3` merges the
//! next two input dimensions, and `-4, a, b` splits the next input dimension into `a` and `b`
//! (one of them may be -1).

use crate::op::{Arity, AttrDef, AttrKind, OpDef, OpImpl, OpPattern, TypeCtx, TypeError};
use crate::{TensorType, Type};

use super::support::{normalize_axes, normalize_axis};

/// The output shape of an op computed from the input type and attributes.
pub type ShapeFn = fn(&TypeCtx<'_>, &TensorType) -> Result<Vec<usize>, TypeError>;

/// A view op: its shape function and a copying kernel.
pub struct View(pub ShapeFn);

impl OpImpl for View {
    fn infer_type(&self, ctx: &TypeCtx<'_>) -> Result<Type, TypeError> {
        let t = ctx.tensor(0)?;
        Ok(Type::tensor((self.0)(ctx, t)?, t.dtype))
    }
}

fn dim(ctx: &TypeCtx<'_>, v: i64) -> Result<usize, TypeError> {
    usize::try_from(v).map_err(|_| ctx.err(format!("invalid dimension {v} in newshape")))
}

fn reshape_shape(ctx: &TypeCtx<'_>, t: &TensorType) -> Result<Vec<usize>, TypeError> {
    let newshape = ctx.ints("newshape")?;
    let allowzero = ctx.bool("allowzero")?;
    let input = &t.shape;
    let src_dim = |i: usize| {
        input.get(i).copied().ok_or_else(|| {
            ctx.err(format!(
                "newshape {newshape:?} refers to input dimension {i} but the input has rank {}",
                input.len()
            ))
        })
    };
    let mut out: Vec<usize> = Vec::new();
    let mut infer: Option<usize> = None;
    let mut src = 0;
    let mut i = 0;
    while i < newshape.len() {
        match newshape[i] {
            v if v > 0 => {
                out.push(dim(ctx, v)?);
                src += 1;
            }
            0 => {
                out.push(if allowzero { 0 } else { src_dim(src)? });
                src += 1;
            }
            -1 => {
                if infer.is_some() {
                    return Err(ctx.err(format!("newshape {newshape:?} has more than one -1")));
                }
                infer = Some(out.len());
                out.push(1);
                src += 1;
            }
            -2 => {
                out.extend(input.iter().skip(src));
                src = input.len();
            }
            -3 => {
                out.push(src_dim(src)? * src_dim(src + 1)?);
                src += 2;
            }
            -4 => {
                let (Some(&a), Some(&b)) = (newshape.get(i + 1), newshape.get(i + 2)) else {
                    return Err(ctx.err(format!(
                        "newshape {newshape:?}: -4 must be followed by two dimensions"
                    )));
                };
                let d = src_dim(src)?;
                let (a, b) = match (a, b) {
                    (-1, -1) => {
                        return Err(ctx.err(format!(
                            "newshape {newshape:?}: -4 splits into at most one -1"
                        )))
                    }
                    (-1, b) => {
                        let b = dim(ctx, b)?;
                        (d.checked_div(b).unwrap_or(0), b)
                    }
                    (a, -1) => {
                        let a = dim(ctx, a)?;
                        (a, d.checked_div(a).unwrap_or(0))
                    }
                    (a, b) => (dim(ctx, a)?, dim(ctx, b)?),
                };
                if a * b != d {
                    return Err(ctx.err(format!("newshape {newshape:?}: cannot split dimension {src} of size {d} into {a} x {b}")));
                }
                out.extend([a, b]);
                src += 1;
                i += 2;
            }
            v => return Err(ctx.err(format!("invalid value {v} in newshape {newshape:?}"))),
        }
        i += 1;
    }
    let total = t.num_elements();
    if let Some(k) = infer {
        let known: usize = out
            .iter()
            .enumerate()
            .filter(|&(j, _)| j != k)
            .map(|(_, &d)| d)
            .product();
        if known == 0 || !total.is_multiple_of(known) {
            return Err(ctx.err(format!(
                "cannot infer the -1 in newshape {newshape:?} for input shape {input:?} ({total} elements)"
            )));
        }
        out[k] = total / known;
    }
    let count: usize = out.iter().product();
    if count != total {
        return Err(ctx.err(format!(
            "cannot reshape {input:?} ({total} elements) into {out:?} ({count} elements)"
        )));
    }
    Ok(out)
}

fn squeeze_shape(ctx: &TypeCtx<'_>, t: &TensorType) -> Result<Vec<usize>, TypeError> {
    let Some(axes) = ctx.opt_ints("axis")? else {
        return Ok(t.shape.iter().copied().filter(|&d| d != 1).collect());
    };
    let axes = normalize_axes(ctx, &axes, t.rank())?;
    for &a in &axes {
        if t.shape[a] != 1 {
            return Err(ctx.err(format!("axis {a} has size {}, not 1", t.shape[a])));
        }
    }
    Ok(t.shape
        .iter()
        .enumerate()
        .filter(|(i, _)| !axes.contains(i))
        .map(|(_, &d)| d)
        .collect())
}

fn expand_dims_shape(ctx: &TypeCtx<'_>, t: &TensorType) -> Result<Vec<usize>, TypeError> {
    let num = ctx.int("num_newaxis")?;
    let num = usize::try_from(num)
        .map_err(|_| ctx.err(format!("num_newaxis must be non-negative, got {num}")))?;
    let axis = normalize_axis(ctx, ctx.int("axis")?, t.rank() + 1)?;
    let mut shape = t.shape.clone();
    for _ in 0..num {
        shape.insert(axis, 1);
    }
    Ok(shape)
}

fn batch_flatten_shape(ctx: &TypeCtx<'_>, t: &TensorType) -> Result<Vec<usize>, TypeError> {
    match t.shape.split_first() {
        Some((&n, rest)) => Ok(vec![n, rest.iter().product()]),
        None => Err(ctx.err("requires a tensor of rank at least 1, got a scalar")),
    }
}

pub(crate) fn register(ops: &mut Vec<OpDef>) {
    let injective = |name: &str, summary: &'static str, f: ShapeFn| {
        OpDef::new(
            name,
            summary,
            Arity::Exact(1),
            OpPattern::Injective,
            View(f),
        )
        .view()
    };
    ops.push(
        injective(
            "reshape",
            "the same elements under a new shape",
            reshape_shape,
        )
        .with_attrs(vec![
            AttrDef::optional("newshape", AttrKind::Ints),
            AttrDef::new("allowzero", AttrKind::Bool, false),
        ]),
    );
    ops.push(
        injective("squeeze", "drops size-1 dimensions", squeeze_shape)
            .with_attrs(vec![AttrDef::optional("axis", AttrKind::OptInts)]),
    );
    ops.push(
        injective(
            "expand_dims",
            "inserts size-1 dimensions at axis",
            expand_dims_shape,
        )
        .with_attrs(vec![
            AttrDef::optional("axis", AttrKind::Int),
            AttrDef::new("num_newaxis", AttrKind::Int, 1i64),
        ]),
    );
    ops.push(injective(
        "nn.batch_flatten",
        "flattens all but the first dimension",
        batch_flatten_shape,
    ));
}
