//! Comparisons and logical ops with numpy broadcasting; all produce bool tensors.
//!
//! `equal`, `not_equal`, `less`, `less_equal`, `greater`, `greater_equal` take two operands of
//! the same dtype; `logical_and`, `logical_or` (broadcasting) and `logical_not` take bool.

use crate::op::{Arity, OpDef, OpImpl, OpPattern, TypeCtx, TypeError};
use crate::{DType, Type};

use super::binary::broadcast_operands;

/// Which comparison a [`Compare`] computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompareOp {
    /// `equal`: `a == b`.
    Equal,
    /// `not_equal`: `a != b`.
    NotEqual,
    /// `less`: `a < b`.
    Less,
    /// `less_equal`: `a <= b`.
    LessEqual,
    /// `greater`: `a > b`.
    Greater,
    /// `greater_equal`: `a >= b`.
    GreaterEqual,
}

/// A broadcasting comparison (`equal`, `less`, ...) of two same-dtype operands, giving bool.
pub struct Compare(pub CompareOp);

impl OpImpl for Compare {
    fn infer_type(&self, ctx: &TypeCtx<'_>) -> Result<Type, TypeError> {
        let t = broadcast_operands(ctx)?;
        Ok(Type::tensor(t.shape, DType::Bool))
    }
}

/// Which logical op a [`Logical`] computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogicalOp {
    /// `logical_and`: `a && b`.
    And,
    /// `logical_or`: `a || b`.
    Or,
    /// `logical_not`: `!a` (one operand).
    Not,
}

/// A logical op on bool tensors: `logical_and`, `logical_or` (broadcasting) or `logical_not`.
pub struct Logical(pub LogicalOp);

impl OpImpl for Logical {
    fn infer_type(&self, ctx: &TypeCtx<'_>) -> Result<Type, TypeError> {
        let t = if self.0 == LogicalOp::Not {
            ctx.tensor(0)?.clone()
        } else {
            broadcast_operands(ctx)?
        };
        if t.dtype != DType::Bool {
            return Err(ctx.err(format!("requires bool operands, got {}", t.dtype)));
        }
        Ok(Type::Tensor(t))
    }
}

pub(crate) fn register(ops: &mut Vec<OpDef>) {
    use CompareOp::*;
    let compare: [(&str, &'static str, CompareOp); 6] = [
        ("equal", "a == b with broadcasting", Equal),
        ("not_equal", "a != b with broadcasting", NotEqual),
        ("less", "a < b with broadcasting", Less),
        ("less_equal", "a <= b with broadcasting", LessEqual),
        ("greater", "a > b with broadcasting", Greater),
        ("greater_equal", "a >= b with broadcasting", GreaterEqual),
    ];
    for (name, summary, op) in compare {
        ops.push(OpDef::new(
            name,
            summary,
            Arity::Exact(2),
            OpPattern::Broadcast,
            Compare(op),
        ));
    }
    for (name, summary, arity, pattern, op) in [
        (
            "logical_and",
            "a && b with broadcasting",
            2,
            OpPattern::Broadcast,
            LogicalOp::And,
        ),
        (
            "logical_or",
            "a || b with broadcasting",
            2,
            OpPattern::Broadcast,
            LogicalOp::Or,
        ),
        ("logical_not", "!a", 1, OpPattern::ElemWise, LogicalOp::Not),
    ] {
        ops.push(OpDef::new(
            name,
            summary,
            Arity::Exact(arity),
            pattern,
            Logical(op),
        ));
    }
}
