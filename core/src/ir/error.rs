//! Errors of IR construction and verification.

use thiserror::Error;

use super::ExprId;

/// An IR construction or well-formedness error.
#[derive(Debug, Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum IrError {
    /// An op name the registry does not know.
    #[error("unknown op '{0}'")]
    UnknownOp(String),
    /// A call passes the wrong number of arguments.
    #[error("{op}: expects {expected} argument(s) but got {got}")]
    Arity {
        /// The op.
        op: String,
        /// What the op takes (e.g. `2`, `1 to 3`, `at least 1`).
        expected: String,
        /// Arguments given.
        got: usize,
    },
    /// An attribute the op's schema does not have.
    #[error("{op}: unknown attribute '{attr}' (known: {known})")]
    UnknownAttr {
        /// The op.
        op: String,
        /// The attribute.
        attr: String,
        /// The schema's attribute names.
        known: String,
    },
    /// An attribute value of the wrong kind.
    #[error("{op}: attribute '{attr}' expects {expected} but got {got}")]
    AttrType {
        /// The op.
        op: String,
        /// The attribute.
        attr: String,
        /// The kind the schema wants.
        expected: String,
        /// What was given.
        got: String,
    },
    /// An operand id that does not precede its user.
    #[error("{at} refers to {operand}, which is not defined before it")]
    ForwardReference {
        /// The user.
        at: ExprId,
        /// The operand.
        operand: ExprId,
    },
    /// A function parameter that is not a variable.
    #[error("{at}: parameter {param} is not a variable")]
    ParamNotVar {
        /// The function.
        at: ExprId,
        /// The parameter.
        param: ExprId,
    },
    /// A variable bound by more than one function, or not bound at all.
    #[error("variable %{name} ({id}) {problem}")]
    BadVar {
        /// The variable's name.
        name: String,
        /// Its id.
        id: ExprId,
        /// What is wrong.
        problem: String,
    },
    /// A local function body refers to something outside it other than constants.
    #[error("local function {func} captures {captured}, which is not one of its parameters (local functions must be closed)")]
    Capture {
        /// The function literal.
        func: ExprId,
        /// The captured expression.
        captured: ExprId,
    },
    /// A call of a global function the module lacks.
    #[error("call of unknown global function @{0}")]
    UnknownGlobal(String),
    /// Two global functions with one name.
    #[error("global function @{0} is defined twice")]
    DuplicateGlobal(String),
    /// The module has no `main`.
    #[error("module has no @main function")]
    NoMain,
    /// An id outside the arena.
    #[error("{0} is not in the function's arena")]
    BadId(ExprId),
}
