//! Tensor initializers: `zeros` and `ones` (no arguments) and `full` (a scalar `fill_value`
//! argument), each with `shape` and `dtype` attributes. `full` converts the fill value to
//! `dtype` like `cast` does; an empty `dtype` keeps the fill value's.

use crate::op::{Arity, AttrDef, AttrKind, OpDef, OpImpl, OpPattern, TypeCtx, TypeError};
use crate::{DType, TensorType, Type};

/// Which initializer an [`Init`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InitOp {
    /// `zeros`: every element 0.
    Zeros,
    /// `ones`: every element 1.
    Ones,
    /// `full`: every element the scalar argument `fill_value`.
    Full,
}

/// `zeros`, `ones` or `full`: a tensor of the `shape` and `dtype` attributes filled with one value.
pub struct Init(pub InitOp);

fn shape(ctx: &TypeCtx<'_>) -> Result<Vec<usize>, TypeError> {
    ctx.ints("shape")?
        .into_iter()
        .map(|d| {
            usize::try_from(d).map_err(|_| ctx.err(format!("shape has a negative dimension {d}")))
        })
        .collect()
}

impl OpImpl for Init {
    fn infer_type(&self, ctx: &TypeCtx<'_>) -> Result<Type, TypeError> {
        let shape = shape(ctx)?;
        let name = ctx.str("dtype")?;
        let dtype = if self.0 == InitOp::Full {
            let v = ctx.tensor(0)?;
            if v.rank() != 0 {
                return Err(ctx.err(format!("fill_value must be a scalar, got {v}")));
            }
            if name.is_empty() {
                Ok(v.dtype)
            } else {
                name.parse::<DType>()
            }
        } else {
            name.parse::<DType>()
        }
        .map_err(|e| ctx.err(e.to_string()))?;
        Ok(Type::Tensor(TensorType::new(shape, dtype)))
    }
}

pub(crate) fn register(ops: &mut Vec<OpDef>) {
    let attrs = |dtype: &str| {
        vec![
            AttrDef::new("shape", AttrKind::Ints, crate::AttrValue::ints([])),
            AttrDef::new("dtype", AttrKind::Str, dtype),
        ]
    };
    for (name, summary, arity, op, dtype) in [
        ("zeros", "a tensor of zeros", 0, InitOp::Zeros, "float32"),
        ("ones", "a tensor of ones", 0, InitOp::Ones, "float32"),
        (
            "full",
            "a tensor filled with fill_value",
            1,
            InitOp::Full,
            "",
        ),
    ] {
        ops.push(
            OpDef::new(
                name,
                summary,
                Arity::Exact(arity),
                OpPattern::ElemWise,
                Init(op),
            )
            .with_attrs(attrs(dtype)),
        );
    }
}
