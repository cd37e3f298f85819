//! [`PassContext`]: what passes share with their caller while a pipeline runs. Besides remarks
//! and timings it carries the reports of the BYOC passes, so a caller that runs them through
//! the [`super::PassManager`] still learns why ops stayed on the host ([`Rejection`]), which
//! pattern matches a check declined ([`DeclinedMatch`]) and which partitions were inlined back
//! ([`Pruned`]).

use std::time::Duration;

use super::annotate_target::Rejection;
use super::prune::Pruned;

/// A non-fatal observation a pass made, such as an expression it chose to leave alone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Remark {
    /// The pass that made it.
    pub pass: &'static str,
    /// What it observed, naming the function and expression (`@main %4: ...`).
    pub message: String,
}

/// How long one pass ran.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PassTiming {
    /// The pass.
    pub pass: &'static str,
    /// Wall-clock time of its `run`, verification excluded.
    pub elapsed: Duration,
}

/// A match of a pattern-table entry that the entry's check rejected (MergeComposite).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeclinedMatch {
    /// The global function.
    pub function: String,
    /// The table entry.
    pub pattern: String,
    /// The op of the match's root call (`tuple`, `var`, ... for other roots).
    pub op: String,
    /// The check's reason.
    pub reason: String,
}

/// What passes share with their caller while a pipeline runs: remarks, the time each pass
/// took, and the reports of the BYOC passes, each in the order the passes made them.
#[derive(Clone, Debug, Default)]
pub struct PassContext {
    /// Remarks in the order they were made.
    pub remarks: Vec<Remark>,
    /// One entry per pass run by a [`super::PassManager`], in order.
    pub timings: Vec<PassTiming>,
    /// Pattern matches a check declined (MergeComposite), targets in priority order.
    pub declined: Vec<DeclinedMatch>,
    /// For every op call AnnotateTarget left on the host, each target's reason.
    pub rejected: Vec<Rejection>,
    /// Partitions Prune inlined back.
    pub pruned: Vec<Pruned>,
}

impl PassContext {
    /// An empty context.
    pub fn new() -> Self {
        PassContext::default()
    }

    /// Records a remark of `pass`.
    pub fn remark(&mut self, pass: &'static str, message: impl Into<String>) {
        self.remarks.push(Remark {
            pass,
            message: message.into(),
        });
    }
}
