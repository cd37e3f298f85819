//! The command-line side of [`crate::report::Format`]: the `--format` values of `byoc inspect`
//! with the help `--help` lists for each, parsed into the library's plain enum.

use clap::builder::{EnumValueParser, TypedValueParser};
use clap::ValueEnum;

use crate::report::Format;

/// The `--format` values, one per [`Format`], with their help.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    /// The module in the Relay text format.
    Text,
    /// The summary as one JSON object: after `partition` the functions, host ops, rejected,
    /// pruned and declined composites; before it the composites, the annotations per target
    /// and the host ops.
    Json,
    /// The dataflow graph of `@main` in Graphviz DOT, one cluster per partition.
    Dot,
    /// One self-contained HTML page: the rendered graph (SVG) and the summary tables.
    Html,
}

impl From<FormatArg> for Format {
    fn from(arg: FormatArg) -> Self {
        match arg {
            FormatArg::Text => Format::Text,
            FormatArg::Json => Format::Json,
            FormatArg::Dot => Format::Dot,
            FormatArg::Html => Format::Html,
        }
    }
}

/// Parses `--format` into a [`Format`], offering [`FormatArg`]'s values and help.
pub fn format_parser() -> impl TypedValueParser<Value = Format> {
    EnumValueParser::<FormatArg>::new().map(Format::from)
}
