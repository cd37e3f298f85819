//! Expression nodes of the dataflow IR.
//!
//! Expressions live in a per-function arena ([`super::Function`]) and refer to their operands by
//! [`ExprId`]. An operand always has a smaller id than its user, so arena order is a topological
//! order and a function can never hold a cycle.

use std::fmt;
use std::sync::Arc;

use super::{Attrs, Type};
use crate::op::Op;
use crate::tensor::Tensor;

/// The id of an expression in its function's arena. Displays as `%<n>`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct ExprId(pub(crate) u32);

impl ExprId {
    /// The arena index.
    pub fn index(self) -> usize {
        self.0 as usize
    }

    /// The id of arena slot `index`.
    pub fn from_index(index: usize) -> Self {
        ExprId(u32::try_from(index).expect("arena holds fewer than 2^32 nodes"))
    }
}

impl fmt::Display for ExprId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "%{}", self.0)
    }
}

/// A variable: a parameter of a global function or of a local function literal.
#[derive(Clone, Debug, PartialEq)]
pub struct Var {
    /// The name without `%` (`x`, `dnnl_0_i0`).
    pub name: String,
    /// The declared type.
    pub ty: Type,
}

/// What a call calls.
#[derive(Clone, Debug, PartialEq)]
pub enum Callee {
    /// A primitive op from the registry.
    Op(Op),
    /// A global function of the module, by name (without `@`).
    Global(String),
    /// A local function literal (or any expression of function type) in the same arena.
    Local(ExprId),
}

/// A call expression.
#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    /// What is called.
    pub callee: Callee,
    /// The arguments.
    pub args: Vec<ExprId>,
    /// Call attributes; for op calls normalized against the op's schema.
    pub attrs: Attrs,
}

impl Call {
    /// The op, if this calls an op.
    pub fn op(&self) -> Option<&Op> {
        match &self.callee {
            Callee::Op(op) => Some(op),
            _ => None,
        }
    }

    /// True when this calls the op named `name`.
    pub fn is_op(&self, name: &str) -> bool {
        self.op().is_some_and(|op| op.name() == name)
    }
}

/// A local function literal (`fn (%a, %b, Composite="dnnl.conv2d_relu") { ... }`).
///
/// Its body may refer only to its own parameters and to constants: local functions are closed,
/// as composite and primitive functions are in Relay.
#[derive(Clone, Debug, PartialEq)]
pub struct LocalFunction {
    /// Parameter variables (each a [`Expr::Var`] node of the same arena).
    pub params: Vec<ExprId>,
    /// The result expression.
    pub body: ExprId,
    /// Function attributes (`Composite`, `PartitionedFromPattern`, `Primitive`, ...).
    pub attrs: Attrs,
}

/// An expression.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// A parameter.
    Var(Var),
    /// A constant tensor, shared between copies of the module.
    Constant(Arc<Tensor>),
    /// A call of an op, a global function, or a local function.
    Call(Call),
    /// A tuple of values.
    Tuple(Vec<ExprId>),
    /// Field `index` of a tuple value.
    TupleGetItem {
        /// The tuple.
        tuple: ExprId,
        /// The field index.
        index: usize,
    },
    /// A local function literal.
    Function(LocalFunction),
}

impl Expr {
    /// The operands in order: call arguments (and a local callee first), tuple fields, the
    /// tuple of a get-item, the parameters and then the body of a function literal (parameters
    /// are binders; listing them keeps them live and ordered before the literal).
    pub fn operands(&self) -> Vec<ExprId> {
        self.operand_iter().collect()
    }

    /// The operands of [`Expr::operands`] without allocating.
    pub fn operand_iter(&self) -> Operands<'_> {
        let (head, mid, tail): (Option<ExprId>, &[ExprId], Option<ExprId>) = match self {
            Expr::Var(_) | Expr::Constant(_) => (None, &[], None),
            Expr::Call(call) => match call.callee {
                Callee::Local(f) => (Some(f), &call.args, None),
                _ => (None, &call.args, None),
            },
            Expr::Tuple(fields) => (None, fields, None),
            Expr::TupleGetItem { tuple, .. } => (Some(*tuple), &[], None),
            Expr::Function(f) => (None, &f.params, Some(f.body)),
        };
        Operands {
            head,
            mid: mid.iter(),
            tail,
        }
    }

    /// The same expression with every operand and binder id passed through `f`.
    pub fn map_ids(&self, mut f: impl FnMut(ExprId) -> ExprId) -> Expr {
        match self {
            Expr::Var(_) | Expr::Constant(_) => self.clone(),
            Expr::Call(call) => Expr::Call(Call {
                callee: match &call.callee {
                    Callee::Local(id) => Callee::Local(f(*id)),
                    other => other.clone(),
                },
                args: call.args.iter().map(|&a| f(a)).collect(),
                attrs: call.attrs.clone(),
            }),
            Expr::Tuple(fields) => Expr::Tuple(fields.iter().map(|&a| f(a)).collect()),
            Expr::TupleGetItem { tuple, index } => Expr::TupleGetItem {
                tuple: f(*tuple),
                index: *index,
            },
            Expr::Function(func) => Expr::Function(LocalFunction {
                params: func.params.iter().map(|&p| f(p)).collect(),
                body: f(func.body),
                attrs: func.attrs.clone(),
            }),
        }
    }

    /// The call, if this is one.
    pub fn as_call(&self) -> Option<&Call> {
        match self {
            Expr::Call(c) => Some(c),
            _ => None,
        }
    }

    /// The op call, if this is a call of an op.
    pub fn as_op_call(&self) -> Option<(&Op, &Call)> {
        let call = self.as_call()?;
        Some((call.op()?, call))
    }

    /// The variable, if this is one.
    pub fn as_var(&self) -> Option<&Var> {
        match self {
            Expr::Var(v) => Some(v),
            _ => None,
        }
    }

    /// The constant, if this is one.
    pub fn as_constant(&self) -> Option<&Arc<Tensor>> {
        match self {
            Expr::Constant(t) => Some(t),
            _ => None,
        }
    }

    /// The function literal, if this is one.
    pub fn as_function(&self) -> Option<&LocalFunction> {
        match self {
            Expr::Function(f) => Some(f),
            _ => None,
        }
    }
}

/// The operands of an expression (see [`Expr::operand_iter`]).
#[derive(Clone, Debug)]
pub struct Operands<'a> {
    head: Option<ExprId>,
    mid: std::slice::Iter<'a, ExprId>,
    tail: Option<ExprId>,
}

impl Iterator for Operands<'_> {
    type Item = ExprId;

    fn next(&mut self) -> Option<ExprId> {
        self.head
            .take()
            .or_else(|| self.mid.next().copied())
            .or_else(|| self.tail.take())
    }
}

/// A position in a source text, 1-based.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Span {
    /// Line, from 1.
    pub line: u32,
    /// Column, from 1, in characters.
    pub col: u32,
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.col)
    }
}

/// An arena slot: the expression, its inferred type once `InferType` ran, and where it came from.
#[derive(Clone, Debug)]
pub struct Node {
    /// The expression.
    pub expr: Expr,
    /// The checked type, filled by type inference; shared, so copying a node into another
    /// arena does not copy its type.
    pub ty: Option<Arc<Type>>,
    /// Where in a source text the expression was written, when parsed.
    pub span: Option<Span>,
}
