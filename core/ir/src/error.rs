//! Errors of IR construction and verification.
//!
//! [`IrError`] names expressions by [`ExprId`] (arena slots); [`IrError::render`] writes the
//! same message with other names. [`VerifyError`], what [`crate::Module::verify`] returns, names
//! the global function and uses the ids of the printed text ([`crate::text::printed_ids`]), so an
//! id in the message can be found in `print_module` output.

use std::fmt;

use super::{ExprId, Function};

/// An IR construction or well-formedness error.
///
/// Displays with arena ids (`%N` = arena slot N); [`IrError::render`] takes other names.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum IrError {
    /// An op name the registry does not know.
    UnknownOp(String),
    /// A call passes the wrong number of arguments.
    Arity {
        /// The op.
        op: String,
        /// What the op takes (e.g. `2`, `1 to 3`, `at least 1`).
        expected: String,
        /// Arguments given.
        got: usize,
    },
    /// An attribute the op's schema does not have.
    UnknownAttr {
        /// The op.
        op: String,
        /// The attribute.
        attr: String,
        /// The schema's attribute names.
        known: String,
    },
    /// An attribute value of the wrong kind.
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
    ForwardReference {
        /// The user.
        at: ExprId,
        /// The operand.
        operand: ExprId,
    },
    /// A function parameter that is not a variable.
    ParamNotVar {
        /// The function (the parameter itself for the global function).
        at: ExprId,
        /// The parameter.
        param: ExprId,
    },
    /// A variable bound by more than one function, or not bound at all.
    BadVar {
        /// The variable's name.
        name: String,
        /// Its id.
        id: ExprId,
        /// What is wrong.
        problem: String,
    },
    /// A parameter of a local function used by the global body outside that literal.
    ParamEscapes {
        /// The variable's name.
        name: String,
        /// Its id.
        id: ExprId,
        /// The local function literal that binds it.
        func: ExprId,
    },
    /// A local function body refers to something outside it other than constants.
    Capture {
        /// The function literal.
        func: ExprId,
        /// The captured expression.
        captured: ExprId,
    },
    /// A call of a global function the module lacks.
    UnknownGlobal(String),
    /// Two global functions with one name.
    DuplicateGlobal(String),
    /// The module has no `main`.
    NoMain,
    /// An id outside the arena.
    BadId(ExprId),
}

impl IrError {
    /// The message with every expression named by `id` (the [`fmt::Display`] text is
    /// `render(|i| i.to_string())`, arena ids).
    pub fn render(&self, id: impl Fn(ExprId) -> String) -> String {
        match self {
            IrError::UnknownOp(op) => format!("unknown op '{op}'"),
            IrError::Arity { op, expected, got } => {
                format!("{op}: expects {expected} argument(s) but got {got}")
            }
            IrError::UnknownAttr { op, attr, known } => {
                format!("{op}: unknown attribute '{attr}' (known: {known})")
            }
            IrError::AttrType {
                op,
                attr,
                expected,
                got,
            } => format!("{op}: attribute '{attr}' expects {expected} but got {got}"),
            IrError::ForwardReference { at, operand } => format!(
                "{} refers to {}, which is not defined before it",
                id(*at),
                id(*operand)
            ),
            IrError::ParamNotVar { at, param } => {
                format!("{}: parameter {} is not a variable", id(*at), id(*param))
            }
            IrError::BadVar {
                name,
                id: var,
                problem,
            } => format!("{} {problem}", variable(name, id(*var))),
            IrError::ParamEscapes {
                name,
                id: var,
                func,
            } => format!(
                "{} belongs to local function {} but is used outside it",
                variable(name, id(*var)),
                id(*func)
            ),
            IrError::Capture { func, captured } => format!(
                "local function {} captures {}, which is not one of its parameters \
                 (local functions must be closed)",
                id(*func),
                id(*captured)
            ),
            IrError::UnknownGlobal(name) => format!("call of unknown global function @{name}"),
            IrError::DuplicateGlobal(name) => format!("global function @{name} is defined twice"),
            IrError::NoMain => "module has no @main function".to_string(),
            IrError::BadId(bad) => format!("{} is not in the function's arena", id(*bad)),
        }
    }

    /// The expression the error is about, when it names one in the arena: the user of a forward
    /// reference, the offending parameter or variable, the capturing literal.
    pub fn at(&self) -> Option<ExprId> {
        match self {
            IrError::ForwardReference { at, .. } => Some(*at),
            IrError::ParamNotVar { param, .. } => Some(*param),
            IrError::BadVar { id, .. } | IrError::ParamEscapes { id, .. } => Some(*id),
            IrError::Capture { func, .. } => Some(*func),
            _ => None,
        }
    }
}

/// `variable %x` when the shown id is the variable's own name, else `variable %x (<id>)`.
fn variable(name: &str, shown: String) -> String {
    if shown.strip_prefix('%') == Some(name) {
        format!("variable {shown}")
    } else {
        format!("variable %{name} ({shown})")
    }
}

impl fmt::Display for IrError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render(|id| id.to_string()))
    }
}

impl std::error::Error for IrError {}

/// A well-formedness error of one global function of a module, with the ids of the printed
/// text. Displays as `in @main, at %3: <message>` (`in @main: <message>` when it is about no
/// particular expression). Boxed, so results carrying it stay small.
#[derive(Debug, Clone, PartialEq)]
pub struct VerifyError(Box<VerifyErrorInner>);

#[derive(Debug, Clone, PartialEq)]
struct VerifyErrorInner {
    function: String,
    at: Option<String>,
    message: String,
    error: IrError,
}

impl VerifyError {
    /// `error`, found in the global function `function` (`f`), at `at` (or where the error
    /// itself points, [`IrError::at`]), with ids rendered as [`crate::text::printed_ids`] gives
    /// them.
    pub fn new(function: &str, f: &Function, error: IrError, at: Option<ExprId>) -> Self {
        let ids = crate::text::printed_ids(f);
        VerifyError(Box::new(VerifyErrorInner {
            function: function.to_string(),
            at: at.or_else(|| error.at()).map(|id| ids.render(id)),
            message: error.render(|id| ids.render(id)),
            error,
        }))
    }

    /// The global function (without `@`).
    pub fn function(&self) -> &str {
        &self.0.function
    }

    /// The printed id (`%3`, `%x`) of the expression the error is about, if any.
    pub fn at(&self) -> Option<&str> {
        self.0.at.as_deref()
    }

    /// The problem, every id in it as printed.
    pub fn message(&self) -> &str {
        &self.0.message
    }

    /// The underlying error, with arena ids.
    pub fn error(&self) -> &IrError {
        &self.0.error
    }
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "in @{}", self.function())?;
        if let Some(at) = self.at() {
            write!(f, ", at {at}")?;
        }
        write!(f, ": {}", self.message())
    }
}

impl std::error::Error for VerifyError {}
