//! Binary arithmetic with numpy broadcasting: `add`, `subtract`, `multiply`, `divide`,
//! `power`, `maximum`, `minimum`, `left_shift`, `right_shift`.
//!
//! Integer semantics are C's on two's complement, which the quantized path relies on:
//! `add`/`subtract`/`multiply` wrap, `divide` truncates toward zero (TVM's `truncdiv`) and gives
//! 0 for a zero divisor instead of trapping, `right_shift` is arithmetic on signed types.
//! Shift amounts at least the bit width give 0 (`left_shift`) or the sign fill
//! (`right_shift`); negative amounts leave the value unchanged. `maximum`/`minimum` propagate
//! NaN as numpy does.

use crate::op::{Arity, OpDef, OpImpl, OpPattern, TypeCtx, TypeError};
use crate::{TensorType, Type};

use super::elementwise::broadcast_shapes;

/// The broadcast result shape of two same-dtype operands; returns the shared dtype's type.
pub fn broadcast_operands(ctx: &TypeCtx<'_>) -> Result<TensorType, TypeError> {
    let a = ctx.tensor(0)?;
    let b = ctx.tensor(1)?;
    if a.dtype != b.dtype {
        return Err(ctx.err(format!("operand dtypes differ: {} vs {}", a.dtype, b.dtype)));
    }
    Ok(TensorType::new(
        broadcast_shapes(ctx, &a.shape, &b.shape)?,
        a.dtype,
    ))
}

/// Which arithmetic a [`Binary`] computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinaryOp {
    /// `add`: `a + b` (integers wrap).
    Add,
    /// `subtract`: `a - b` (integers wrap).
    Subtract,
    /// `multiply`: `a * b` (integers wrap).
    Multiply,
    /// `divide`: `a / b`; integers truncate toward zero and a zero divisor gives 0.
    Divide,
    /// `power`: `a ** b`.
    Power,
    /// `maximum`: the larger of `a` and `b` (NaN propagates).
    Maximum,
    /// `minimum`: the smaller of `a` and `b` (NaN propagates).
    Minimum,
    /// `left_shift`: `a << b` (integers only).
    LeftShift,
    /// `right_shift`: `a >> b`, arithmetic on signed types (integers only).
    RightShift,
}

impl BinaryOp {}

/// A broadcasting binary arithmetic op (`add`, `subtract`, ...) on two operands of one dtype.
pub struct Binary(pub BinaryOp);

impl OpImpl for Binary {
    fn infer_type(&self, ctx: &TypeCtx<'_>) -> Result<Type, TypeError> {
        let t = broadcast_operands(ctx)?;
        if matches!(self.0, BinaryOp::LeftShift | BinaryOp::RightShift) && !t.dtype.is_int() {
            return Err(ctx.err(format!("requires integer operands, got {}", t.dtype)));
        }
        Ok(Type::Tensor(t))
    }
}

pub(crate) fn register(ops: &mut Vec<OpDef>) {
    use BinaryOp::*;
    let binary: [(&str, &'static str, BinaryOp); 9] = [
        ("add", "a + b with broadcasting", Add),
        ("subtract", "a - b with broadcasting", Subtract),
        ("multiply", "a * b with broadcasting", Multiply),
        (
            "divide",
            "a / b with broadcasting (integers truncate)",
            Divide,
        ),
        ("power", "a ** b with broadcasting", Power),
        ("maximum", "elementwise max with broadcasting", Maximum),
        ("minimum", "elementwise min with broadcasting", Minimum),
        ("left_shift", "a << b with broadcasting", LeftShift),
        ("right_shift", "a >> b with broadcasting", RightShift),
    ];
    for (name, summary, op) in binary {
        ops.push(OpDef::new(
            name,
            summary,
            Arity::Exact(2),
            OpPattern::Broadcast,
            Binary(op),
        ));
    }
}
