//! byoc-patterns: the dataflow pattern language of byoc and the passes built on it.
//!
//! - [`Pattern`]: the language (`docs/patterns.md`), built with the builder API or parsed from text
//!   (`"nn.relu(add(nn.conv2d(*, *), *))".parse::<Pattern>()`), printed back with `Display`.
//! - [`Matcher`] / [`match_at`]: TVM's matching semantics on a typed function.
//! - [`partition()`]: every match becomes a call of a local function literal.
//! - [`PatternTable`] and [`MergeComposite`]: the first BYOC pass.
//! - [`Rewriter`]: callback rewriting to a fixed point with an iteration limit.

mod graph;
mod matcher;
mod merge_composite;
mod overlay;
mod partition;
mod pattern;
mod rewrite;
mod syntax;
mod table;

pub use byoc_passes::DeclinedMatch;
pub use graph::Graph;
pub use matcher::{match_at, Match, Matcher};
pub use merge_composite::{MergeComposite, MergeCompositeError, COMPOSITE};
pub use partition::{
    find_groups, partition, try_partition, Check, Declined, Group, PartitionError,
    PARTITIONED_FROM_PATTERN,
};
pub use pattern::{Pattern, PatternKind, TypeConstraint};
pub use rewrite::{RewriteCtx, RewriteError, RewriteFn, Rewriter};
pub use syntax::{ParseErrorKind, PatternParseError};
pub use table::{PatternTable, TableEntry, TableError};
