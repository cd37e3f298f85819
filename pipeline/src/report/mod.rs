//! What `byoc inspect` shows besides the printed module: the partitioning summary
//! ([`summary`], `--format json`), the dataflow graph with one colour per target and one box per
//! partition ([`graph`], drawn by [`dot`] as Graphviz and by [`svg`] with a small layered
//! layout), and a self-contained HTML page with the drawing and the summary tables ([`html`]).
//!
//! Every output is deterministic: the same [`Partitioned`] and target list give byte-identical
//! text. The summary, the graph and the page describe a partitioned module, so they need the
//! `partition` stage ([`ReportError::NeedsPartition`] otherwise).

pub mod dot;
pub mod graph;
pub mod html;
pub mod summary;
pub mod svg;

use thiserror::Error;

use crate::pipeline::{Partitioned, Stage};

/// Output formats of `byoc inspect`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// The module in the Relay text format.
    Text,
    /// The partitioning summary as one JSON object (functions, host ops, rejected, pruned,
    /// declined composites).
    Json,
    /// The dataflow graph of `@main` in Graphviz DOT, one cluster per partition.
    Dot,
    /// One self-contained HTML page: the rendered graph (SVG) and the summary tables.
    Html,
}

impl Format {
    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Format::Text => "text",
            Format::Json => "json",
            Format::Dot => "dot",
            Format::Html => "html",
        }
    }
}

/// A report that cannot be made.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReportError {
    /// A summary format asked for before partitioning.
    #[error(
        "--format {format} describes partitions and needs --stage partition (the stage was {stage}); use --format text to see earlier stages"
    )]
    NeedsPartition {
        /// The format asked for.
        format: &'static str,
        /// The stage the pipeline stopped after.
        stage: &'static str,
    },
    /// The module has no `@main` to draw.
    #[error("the partitioned module has no @main function to draw")]
    NoMain,
}

/// Renders `result` in `format`; `targets` are the selected target names in priority order
/// (they fix the colours), `stage` is where the pipeline stopped. Text works after any stage,
/// the other formats after `partition`.
pub fn render(
    format: Format,
    stage: Stage,
    result: &Partitioned,
    targets: &[&str],
) -> Result<String, ReportError> {
    if format != Format::Text && stage != Stage::Partition {
        return Err(ReportError::NeedsPartition {
            format: format.name(),
            stage: stage.name(),
        });
    }
    let summary = || summary::Summary::of(result);
    let graph = || graph::ViewGraph::of_main(&result.module, targets).ok_or(ReportError::NoMain);
    Ok(match format {
        Format::Text => byoc_core::text::print_module(&result.module),
        Format::Json => summary().to_json(),
        Format::Dot => dot::render(&graph()?),
        Format::Html => html::render(&graph()?, &summary()),
    })
}
