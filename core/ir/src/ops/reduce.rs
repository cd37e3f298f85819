//! Reductions: `sum`, `mean`, `max`, `min`, `prod`, and the index reductions `argmax`,
//! `argmin` (int32 result).
//!
//! `axis` is None (every axis), an int or a list (negative counts from the end); `exclude`
//! reduces every axis NOT listed; `keepdims` keeps reduced axes as size 1. Integer `sum`/`prod`
//! wrap and `mean` truncates (sum / count). `max`/`min` over an empty axis give the dtype's
//! lowest/highest value (-inf/+inf for floats). `argmax`/`argmin` over several axes return the
//! row-major position within the reduced axes; ties go to the first occurrence, or the last with
//! `select_last_index`.

use crate::op::{Arity, AttrDef, AttrKind, OpDef, OpImpl, OpPattern, TypeCtx, TypeError};
use crate::{DType, TensorType, Type};

use super::support::normalize_axes;

/// The reduced axes (sorted) and the output shape.
pub fn reduce_axes(
    ctx: &TypeCtx<'_>,
    t: &TensorType,
) -> Result<(Vec<usize>, Vec<usize>), TypeError> {
    let mut axes = match ctx.opt_ints("axis")? {
        None => (0..t.rank()).collect(),
        Some(list) => {
            let listed = normalize_axes(ctx, &list, t.rank())?;
            if ctx.bool("exclude")? {
                (0..t.rank()).filter(|a| !listed.contains(a)).collect()
            } else {
                listed
            }
        }
    };
    axes.sort_unstable();
    let keepdims = ctx.bool("keepdims")?;
    let shape = t
        .shape
        .iter()
        .enumerate()
        .filter_map(|(i, &d)| match (axes.contains(&i), keepdims) {
            (false, _) => Some(d),
            (true, true) => Some(1),
            (true, false) => None,
        })
        .collect();
    Ok((axes, shape))
}

/// Which reduction a [`Reduce`] computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReduceOp {
    /// `sum` (integers wrap).
    Sum,
    /// `mean`: the sum over the count (integers truncate).
    Mean,
    /// `max`.
    Max,
    /// `min`.
    Min,
    /// `prod` (integers wrap).
    Prod,
    /// `argmax`: the int32 index of the maximum.
    ArgMax,
    /// `argmin`: the int32 index of the minimum.
    ArgMin,
}

impl ReduceOp {
    /// True for the index reductions `argmax` and `argmin` (int32 result).
    pub fn is_arg(self) -> bool {
        matches!(self, ReduceOp::ArgMax | ReduceOp::ArgMin)
    }
}

/// A reduction over `axis` (`sum`, `mean`, `max`, `min`, `prod`, `argmax`, `argmin`).
pub struct Reduce(pub ReduceOp);

impl OpImpl for Reduce {
    fn infer_type(&self, ctx: &TypeCtx<'_>) -> Result<Type, TypeError> {
        let t = ctx.tensor(0)?;
        let (_, shape) = reduce_axes(ctx, t)?;
        let dtype = if self.0.is_arg() {
            DType::Int32
        } else {
            t.dtype
        };
        Ok(Type::tensor(shape, dtype))
    }
}

pub(crate) fn register(ops: &mut Vec<OpDef>) {
    use ReduceOp::*;
    let common = || {
        vec![
            AttrDef::optional("axis", AttrKind::OptInts),
            AttrDef::new("keepdims", AttrKind::Bool, false),
            AttrDef::new("exclude", AttrKind::Bool, false),
        ]
    };
    let reductions: [(&str, &'static str, ReduceOp); 7] = [
        ("sum", "sum over axes", Sum),
        ("mean", "mean over axes", Mean),
        ("max", "maximum over axes", Max),
        ("min", "minimum over axes", Min),
        ("prod", "product over axes", Prod),
        ("argmax", "index of the maximum over axes (int32)", ArgMax),
        ("argmin", "index of the minimum over axes (int32)", ArgMin),
    ];
    for (name, summary, op) in reductions {
        let mut attrs = common();
        if op.is_arg() {
            attrs.push(AttrDef::new("select_last_index", AttrKind::Bool, false));
        }
        ops.push(
            OpDef::new(
                name,
                summary,
                Arity::Exact(1),
                OpPattern::CommReduce,
                Reduce(op),
            )
            .with_attrs(attrs),
        );
    }
}
