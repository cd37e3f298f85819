//! `where(condition, x, y)`: elements of `x` where the condition holds, else of `y`, with
//! numpy broadcasting over all three operands. The condition may be bool or numeric (nonzero
//! counts as true); `x` and `y` may have any dtype, custom ones included, as long as it is the
//! same.

use crate::op::{Arity, OpDef, OpImpl, OpPattern, TypeCtx, TypeError};
use crate::{TensorType, Type};

use super::elementwise::broadcast_shapes;

/// `where(condition, x, y)` with broadcasting over all three operands.
pub struct Where;

impl OpImpl for Where {
    fn infer_type(&self, ctx: &TypeCtx<'_>) -> Result<Type, TypeError> {
        let (c, x, y) = (ctx.tensor(0)?, ctx.tensor(1)?, ctx.tensor(2)?);
        if x.dtype != y.dtype {
            return Err(ctx.err(format!("x and y dtypes differ: {} vs {}", x.dtype, y.dtype)));
        }
        let xy = broadcast_shapes(ctx, &x.shape, &y.shape)?;
        Ok(Type::Tensor(TensorType::new(
            broadcast_shapes(ctx, &c.shape, &xy)?,
            x.dtype,
        )))
    }
}

pub(crate) fn register(ops: &mut Vec<OpDef>) {
    ops.push(OpDef::new(
        "where",
        "condition ? x : y with broadcasting",
        Arity::Exact(3),
        OpPattern::Broadcast,
        Where,
    ));
}
