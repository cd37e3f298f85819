//! Errors of the text-format reader, each with the line and column it refers to.

use thiserror::Error;

use crate::{DTypeError, IrError, Span};

/// A text-format error at a position: `3:14: expected ')' but found ';'`.
#[derive(Debug, Error, Clone, PartialEq)]
#[error("{span}: {kind}")]
pub struct ParseError {
    /// Where the problem is (1-based line and column).
    pub span: Span,
    /// What the problem is.
    pub kind: ParseErrorKind,
}

impl ParseError {
    /// An error of `kind` at `span`.
    pub fn new(span: Span, kind: ParseErrorKind) -> Self {
        ParseError { span, kind }
    }

    /// The 1-based line.
    pub fn line(&self) -> u32 {
        self.span.line
    }

    /// The 1-based column, in characters.
    pub fn col(&self) -> u32 {
        self.span.col
    }
}

/// What went wrong while reading a module.
#[derive(Debug, Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum ParseErrorKind {
    /// A token other than the one the grammar needs here (or the end of the input).
    #[error("expected {expected} but found {found}")]
    Expected {
        /// What the grammar accepts here (`')'`, `an expression`).
        expected: String,
        /// What the text has (`';'`, `end of input`).
        found: String,
    },
    /// A character that starts no token.
    #[error("unexpected character {0:?}")]
    UnexpectedChar(char),
    /// A `/*` comment without its `*/`.
    #[error("unterminated /* comment")]
    UnterminatedComment,
    /// A string literal without its closing quote.
    #[error("unterminated string literal")]
    UnterminatedString,
    /// A backslash escape the format does not define.
    #[error("unknown escape sequence '\\{0}' in string literal")]
    BadEscape(String),
    /// A number that does not fit the type it is read as.
    #[error("number {text} does not fit in {ty}")]
    NumberOverflow {
        /// The literal as written.
        text: String,
        /// The type it must fit (`int32`, `a shape dimension`).
        ty: String,
    },
    /// A number literal that is malformed or has an unknown suffix.
    #[error("malformed number literal '{0}'")]
    BadNumber(String),
    /// A dtype name that is not a dtype.
    #[error("{0}")]
    DType(#[from] DTypeError),
    /// A tensor shape whose size overflows.
    #[error("shape {0} is too large: its byte size overflows")]
    ShapeOverflow(String),
    /// An inline constant above the size limit.
    #[error("constant of {bytes} bytes exceeds the {limit}-byte limit of inline constants")]
    ConstantTooLarge {
        /// The constant's size.
        bytes: usize,
        /// The limit.
        limit: usize,
    },
    /// A constant whose values do not fit its shape or dtype.
    #[error("const: {0}")]
    BadConstant(String),
    /// An op name the registry does not know.
    #[error("unknown op '{name}'{}", suggestion.as_ref().map(|s| format!(" (did you mean '{s}'?)")).unwrap_or_default())]
    UnknownOp {
        /// The name as written.
        name: String,
        /// A registered name within edit distance 2, if any.
        suggestion: Option<String>,
    },
    /// A call the IR rejects (arity, unknown attribute, attribute type).
    #[error("{0}")]
    Ir(#[from] IrError),
    /// A name bound twice in one scope.
    #[error("%{name} is already defined in this scope (at {first})")]
    DuplicateName {
        /// The name without `%`.
        name: String,
        /// Where it was first bound.
        first: Span,
    },
    /// An attribute given twice in one list.
    #[error("attribute '{0}' is given twice")]
    DuplicateAttr(String),
    /// A use of a name bound nowhere in scope.
    #[error("undefined variable %{0}")]
    UndefinedVar(String),
    /// A local function body using a value of an enclosing scope that depends on variables.
    #[error("local function uses %{0} from an enclosing scope; local functions are closed (only constants may be shared), pass it as a parameter")]
    Capture(String),
    /// A call of a global function the module does not define.
    #[error("call of undefined global function @{0}")]
    UndefinedGlobal(String),
    /// Two global functions of one name.
    #[error("global function @{name} is defined twice (first at {first})")]
    DuplicateGlobal {
        /// The name without `@`.
        name: String,
        /// Where it was first defined.
        first: Span,
    },
    /// A parameter without its `: Type`.
    #[error("parameter %{0} needs a type annotation (`%{0}: Tensor[(...), dtype]`)")]
    MissingParamType(String),
    /// A `meta[...]` reference.
    #[error("metadata sections are not supported: write the constant inline as const(shape, dtype, [v0, v1, ...]) or const(shape, dtype, fill=v)")]
    Metadata,
    /// Input nested deeper than the reader allows.
    #[error("nesting deeper than {0} levels")]
    TooDeep(usize),
}
