//! What `byoc inspect` shows besides the printed module: the partitioning summary
//! ([`summary`], `--format json`), the dataflow graph with one colour per target and one box per
//! partition ([`graph`], drawn by [`dot`] as Graphviz and by [`svg`] with a small layered
//! layout), and a self-contained HTML page with the drawing and the summary tables ([`html`]).
//!
//! Every output is deterministic: the same [`Partitioned`] and target list give byte-identical
//! text. The JSON summary works after every stage; the graph and the page draw partitions, so
//! they need the `partition` stage ([`ReportError::NeedsPartition`] otherwise). After `host-fuse`
//! the JSON lists the fused host functions ([`fusion`]).

pub mod dot;
pub mod fusion;
pub mod graph;
pub mod html;
pub mod summary;
pub mod svg;

use std::fmt;
use std::str::FromStr;

use byoc_ir::analysis::regions::RegionError;
use thiserror::Error;

use crate::pipeline::{Partitioned, Stage};

/// Output formats of `byoc inspect`, named on the command line by [`Format::name`] (parsed
/// back by [`FromStr`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
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

impl Format {
    /// Every format, in the order the command line lists them.
    pub const ALL: [Format; 4] = [Format::Text, Format::Json, Format::Dot, Format::Html];

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

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is not one of the [`Format`]s.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[error("unknown format '{0}' (expected text, json, dot or html)")]
pub struct UnknownFormat(pub String);

impl FromStr for Format {
    type Err = UnknownFormat;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Format::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| UnknownFormat(s.to_string()))
    }
}

/// A report that cannot be made.
#[derive(Debug, Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum ReportError {
    /// A drawing of partitions asked for before partitioning.
    #[error(
        "format {format} draws partitions and needs the partition stage (the stage was {stage}); text and json show earlier stages"
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
    /// The module's compiler annotations are malformed, so they cannot be summarized (boxed:
    /// the located messages are large).
    #[error(transparent)]
    Regions(#[from] Box<RegionError>),
}

/// Renders `result` in `format`; `targets` are the selected target names in priority order
/// (they fix the colours and the order of the annotation summary), `stage` is where the
/// pipeline stopped. Text and JSON work after any stage, DOT and HTML after `partition`.
pub fn render(
    format: Format,
    stage: Stage,
    result: &Partitioned,
    targets: &[&str],
) -> Result<String, ReportError> {
    if matches!(format, Format::Dot | Format::Html) && stage != Stage::Partition {
        return Err(ReportError::NeedsPartition {
            format: format.name(),
            stage: stage.name(),
        });
    }
    let summary = || summary::Summary::of(result);
    let graph = || graph::ViewGraph::of_main(&result.module, targets).ok_or(ReportError::NoMain);
    Ok(match format {
        Format::Text if stage == Stage::HostFuse => {
            let module = byoc_ir::text::print_module(&result.module);
            format!(
                "{module}{}",
                fusion::FusionSummary::of(&result.module).to_comments()
            )
        }
        Format::Text => byoc_ir::text::print_module(&result.module),
        Format::Json if stage == Stage::Partition => summary().to_json(),
        Format::Json if stage == Stage::HostFuse => {
            fusion::FusionSummary::of(&result.module).to_json()
        }
        Format::Json => summary::StageSummary::of(stage, result, targets)?.to_json(),
        Format::Dot => dot::render(&graph()?),
        Format::Html => html::render(&graph()?, &summary()),
    })
}
