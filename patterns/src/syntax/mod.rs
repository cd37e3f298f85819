//! The text syntax of patterns (`docs/patterns.md`): lexer, parser, printer, and their errors.
//!
//! `Pattern::from_str` parses; `Display` prints; printing then parsing gives back an equal
//! pattern for every pattern the text can express (all but the builder-only expression
//! pattern, and the empty tuple type, which prints like the scalar shape `()`).

mod display;
mod error;
mod lexer;
mod parser;

use std::str::FromStr;

pub use error::{ParseErrorKind, PatternParseError};

use crate::pattern::Pattern;

impl FromStr for Pattern {
    type Err = PatternParseError;

    /// Parses the text syntax, checking op names, arities and attributes against the op
    /// registry.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        parser::parse(text)
    }
}
