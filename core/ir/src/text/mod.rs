//! The Relay-compatible text format (`.relay`): reader and printer.
//!
//! [`parse_module`] reads text such as
//!
//! ```text
//! def @main(%x: Tensor[(1, 16), float32]) {
//!   %0 = nn.relu(%x);
//!   (%0, %x)
//! }
//! ```
//!
//! into a [`Module`](crate::Module), recording each node's source position; errors name the
//! line and column. [`print_module`] prints a module back; printing then reading gives a
//! structurally equal module. [`printed_ids`] gives the names the printer prints (`%3`, `%x`)
//! by arena slot, for messages that refer to printed text. The grammar and what differs from
//! TVM's printer are described in `docs/text-format.md`.

mod error;
mod lexer;
mod literal;
mod parser;
mod printer;

pub use error::{ParseError, ParseErrorKind};
pub use parser::{parse_module, MAX_CONSTANT_BYTES, MAX_DEPTH};
pub use printer::{print_module, print_module_with, printed_ids, PrintOptions, PrintedIds};

impl std::fmt::Display for crate::Module {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&print_module(self))
    }
}
