//! Errors of pattern parsing, each located at a line and column of the pattern text.

use byoc_ir::op::Arity;
use byoc_ir::{IrError, Span};
use thiserror::Error;

/// A pattern text that does not parse, with where.
#[derive(Debug, Error, Clone, PartialEq)]
#[error("{span}: {kind}")]
pub struct PatternParseError {
    /// Where in the text (1-based line and column, in characters).
    pub span: Span,
    /// What is wrong.
    pub kind: ParseErrorKind,
}

/// What is wrong with a pattern text.
#[derive(Debug, Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum ParseErrorKind {
    /// A token other than the ones the grammar allows here.
    #[error("expected {expected}, found {found}")]
    Unexpected {
        /// What the grammar allows.
        expected: String,
        /// What the text has.
        found: String,
    },
    /// An opening bracket without its closing one.
    #[error("'{open}' opened at {open_at} is not closed: expected '{close}', found {found}")]
    Unclosed {
        /// The opening bracket.
        open: char,
        /// Where it is.
        open_at: Span,
        /// The closing bracket expected.
        close: char,
        /// What the text has instead.
        found: String,
    },
    /// A closing bracket without an opening one.
    #[error("'{0}' has no matching opening bracket")]
    Unopened(char),
    /// A character no token starts with.
    #[error("unexpected character '{0}'")]
    BadChar(char),
    /// A string literal without its closing quote, or with a bad escape.
    #[error("bad string literal: {0}")]
    BadString(String),
    /// A number that does not fit.
    #[error("bad number '{0}'")]
    BadNumber(String),
    /// An op the registry does not know.
    #[error("unknown op '{op}'{}", suggestion.as_ref().map(|s| format!(" (did you mean '{s}'?)")).unwrap_or_default())]
    UnknownOp {
        /// The name written.
        op: String,
        /// The closest registered op name, if one is close.
        suggestion: Option<String>,
    },
    /// A call pattern with a number of arguments the op never takes.
    #[error("{op}: takes {expected} argument(s) but the pattern gives {got}")]
    Arity {
        /// The op.
        op: String,
        /// What it takes.
        expected: Arity,
        /// What the pattern gives.
        got: usize,
    },
    /// Attributes the op's schema rejects.
    #[error("{0}")]
    Attr(IrError),
    /// A dtype name that is not one.
    #[error("{0}")]
    DType(byoc_ir::DTypeError),
    /// A side of `|` with no pattern.
    #[error("empty alternative: expected a pattern {side} '|'")]
    EmptyAlternative {
        /// `before` or `after`.
        side: &'static str,
    },
    /// A named wildcard constrained in two incompatible ways (types, or attribute values).
    #[error("?{name} is constrained to {here} here but to {before} at {before_at}; no expression can be both")]
    ConflictingBinding {
        /// The name.
        name: String,
        /// The constraint here.
        here: String,
        /// The earlier constraint.
        before: String,
        /// Where the earlier one is.
        before_at: Span,
    },
    /// A pattern form that only the builder API can make.
    #[error("{0} patterns exist only in the builder API")]
    BuilderOnly(&'static str),
}
