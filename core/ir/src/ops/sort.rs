//! `topk(data; k, axis=-1, ret_type="both", is_ascend=False, dtype="int32")`: the `k` largest
//! (or, with `is_ascend`, smallest) elements along `axis`, in order, and their indices, as
//! Relay defines it. Equal values keep their order (the lower index first), and NaN ranks above
//! every number, as in a descending numpy sort. `ret_type` is `both` (a tuple of values and
//! indices), `values` or `indices`.

use crate::op::{Arity, AttrDef, AttrKind, OpDef, OpImpl, OpPattern, TypeCtx, TypeError};
use crate::{DType, TensorType, Type};

use super::support::normalize_axis;

/// What a `topk` call returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TopKResult {
    /// `(values, indices)`.
    Both,
    /// The values.
    Values,
    /// The indices.
    Indices,
}

/// A `topk` call site's attributes, checked against its input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopKSetup {
    /// The normalized axis.
    pub axis: usize,
    /// How many elements are kept.
    pub k: usize,
    /// Smallest first (else largest first).
    pub ascending: bool,
    /// What is returned.
    pub result: TopKResult,
    /// The indices' dtype (int32 or int64).
    pub index_dtype: DType,
}

/// Reads and checks a `topk` call site against `data`.
pub fn topk_setup(ctx: &TypeCtx<'_>, data: &TensorType) -> Result<TopKSetup, TypeError> {
    let axis = normalize_axis(ctx, ctx.int("axis")?, data.rank())?;
    let len = data.shape[axis];
    let k = ctx.int("k")?;
    let k = usize::try_from(k)
        .ok()
        .filter(|&k| k <= len)
        .ok_or_else(|| {
            ctx.err(format!(
                "k = {k} must be within 0 and the axis length {len}"
            ))
        })?;
    let result = match ctx.str("ret_type")? {
        "both" => TopKResult::Both,
        "values" => TopKResult::Values,
        "indices" => TopKResult::Indices,
        other => {
            return Err(ctx.err(format!(
                "ret_type '{other}' is not one of both, values, indices"
            )))
        }
    };
    let index_dtype = match ctx.str("dtype")? {
        "int32" => DType::Int32,
        "int64" => DType::Int64,
        other => return Err(ctx.err(format!("dtype '{other}' must be int32 or int64"))),
    };
    if data.dtype == DType::Bool || data.dtype.is_custom() {
        return Err(ctx.err(format!("requires a numeric tensor, got {}", data.dtype)));
    }
    Ok(TopKSetup {
        axis,
        k,
        ascending: ctx.bool("is_ascend")?,
        result,
        index_dtype,
    })
}

/// `topk`.
pub struct TopK;

impl OpImpl for TopK {
    fn infer_type(&self, ctx: &TypeCtx<'_>) -> Result<Type, TypeError> {
        let data = ctx.tensor(0)?;
        let s = topk_setup(ctx, data)?;
        let mut shape = data.shape.clone();
        shape[s.axis] = s.k;
        let values = Type::tensor(shape.clone(), data.dtype);
        let indices = Type::tensor(shape, s.index_dtype);
        Ok(match s.result {
            TopKResult::Both => Type::Tuple(vec![values, indices]),
            TopKResult::Values => values,
            TopKResult::Indices => indices,
        })
    }
}

pub(crate) fn register(ops: &mut Vec<OpDef>) {
    ops.push(
        OpDef::new(
            "topk",
            "the k largest (or smallest) elements along an axis, in order, and their indices",
            Arity::Exact(1),
            OpPattern::Opaque,
            TopK,
        )
        .with_attrs(vec![
            AttrDef::new("k", AttrKind::Int, 1i64),
            AttrDef::new("axis", AttrKind::Int, -1i64),
            AttrDef::new("ret_type", AttrKind::Str, "both"),
            AttrDef::new("is_ascend", AttrKind::Bool, false),
            AttrDef::new("dtype", AttrKind::Str, "int32"),
        ]),
    );
}
