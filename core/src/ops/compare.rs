//! Comparisons and logical ops with numpy broadcasting; all produce bool tensors.
//!
//! `equal`, `not_equal`, `less`, `less_equal`, `greater`, `greater_equal` take two operands of
//! the same dtype; `logical_and`, `logical_or` (broadcasting) and `logical_not` take bool.

use crate::ir::{DType, Type};
use crate::op::{Arity, OpDef, OpImpl, OpPattern, TypeCtx, TypeError};

use super::binary::broadcast_operands;
#[cfg(feature = "executor")]
use {
    super::binary::broadcast_kernel,
    super::elementwise::map_kernel,
    super::support::check_io,
    crate::kernels,
    crate::op::{HostKernel, KernelError, KernelSpec},
};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CompareOp {
    Equal,
    NotEqual,
    Less,
    LessEqual,
    Greater,
    GreaterEqual,
}

#[cfg_attr(
    not(feature = "executor"),
    allow(dead_code, reason = "only the host kernel reads it")
)]
struct Compare(CompareOp);

#[cfg(feature = "executor")]
fn compare_kernel<T: kernels::Scalar>(
    spec: &KernelSpec<'_>,
    op: CompareOp,
) -> Result<Box<dyn HostKernel>, KernelError> {
    use CompareOp::*;
    match op {
        Equal => broadcast_kernel(spec, |a: T, b: T| u8::from(a == b)),
        NotEqual => broadcast_kernel(spec, |a: T, b: T| u8::from(a != b)),
        Less => broadcast_kernel(spec, |a: T, b: T| u8::from(a < b)),
        LessEqual => broadcast_kernel(spec, |a: T, b: T| u8::from(a <= b)),
        Greater => broadcast_kernel(spec, |a: T, b: T| u8::from(a > b)),
        GreaterEqual => broadcast_kernel(spec, |a: T, b: T| u8::from(a >= b)),
    }
}

impl OpImpl for Compare {
    fn infer_type(&self, ctx: &TypeCtx<'_>) -> Result<Type, TypeError> {
        let t = broadcast_operands(ctx)?;
        Ok(Type::tensor(t.shape, DType::Bool))
    }

    #[cfg(feature = "executor")]
    fn host_kernel(&self, spec: &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> {
        check_io(spec, 2, 1)?;
        let dtype = spec.inputs[0].dtype;
        kernels::with_numeric_or_bool!(
            dtype,
            |T| compare_kernel::<T>(spec, self.0),
            Err(spec.unsupported(dtype))
        )
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LogicalOp {
    And,
    Or,
    Not,
}

struct Logical(LogicalOp);

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

    #[cfg(feature = "executor")]
    fn host_kernel(&self, spec: &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> {
        match self.0 {
            LogicalOp::And => broadcast_kernel(spec, |a: u8, b: u8| u8::from(a != 0 && b != 0)),
            LogicalOp::Or => broadcast_kernel(spec, |a: u8, b: u8| u8::from(a != 0 || b != 0)),
            LogicalOp::Not => {
                check_io(spec, 1, 1)?;
                Ok(map_kernel(spec, |a: u8| u8::from(a == 0)))
            }
        }
    }
}

pub(super) fn register(ops: &mut Vec<OpDef>) {
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
