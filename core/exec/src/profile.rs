//! Timing of one run: each kernel call's time, the totals per op name (an external call is
//! named `@function`, so its total is the partition's time) and per target (`default` for the
//! host). A concatenation whose parts were written in place by their producers keeps its entry,
//! marked [`CallTime::in_place`]; its time is that of copying the parts that were not.

use std::collections::BTreeMap;
use std::time::Duration;

/// The time of one kernel call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallTime {
    /// The op name, or `@function` for a call of an external function.
    pub op: String,
    /// The target that ran it (`default` for the host).
    pub target: String,
    /// The call site (`@main:%7 > @f:%2`).
    pub site: String,
    /// Wall-clock time of the kernel.
    pub time: Duration,
    /// For a concatenation with parts written in place: how many; `None` for any other call.
    pub in_place: Option<InPlaceParts>,
}

/// The parts of a concatenation that its producers wrote straight into its output, so that
/// the concatenation did not copy them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InPlaceParts {
    /// Parts written in place.
    pub written: usize,
    /// All parts.
    pub parts: usize,
}

impl std::fmt::Display for InPlaceParts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "in place: {} of {} part(s) written by their producers",
            self.written, self.parts
        )
    }
}

/// The total time of one op over all its call sites.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpTime {
    /// The op name.
    pub op: String,
    /// Number of kernel calls.
    pub calls: usize,
    /// Sum of their times.
    pub total: Duration,
}

/// The total time of one target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TargetTime {
    /// The target name (`default` for the host).
    pub target: String,
    /// Number of calls.
    pub calls: usize,
    /// Sum of their times.
    pub total: Duration,
}

/// The timing profile of one run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Profile {
    /// Every kernel call, in execution order.
    pub calls: Vec<CallTime>,
    /// Totals per op, largest total first (ties by name).
    pub ops: Vec<OpTime>,
    /// Totals per target, largest total first (ties by name).
    pub targets: Vec<TargetTime>,
    /// Wall-clock time of the whole run (kernels, copies and bookkeeping).
    pub total: Duration,
}

impl Profile {
    /// A profile from the calls of one run, aggregating per op.
    pub fn new(calls: Vec<CallTime>, total: Duration) -> Self {
        let mut ops: Vec<OpTime> = totals(&calls, |c| &c.op)
            .into_iter()
            .map(|(op, calls, total)| OpTime { op, calls, total })
            .collect();
        ops.sort_by(|a, b| b.total.cmp(&a.total).then_with(|| a.op.cmp(&b.op)));
        let mut targets: Vec<TargetTime> = totals(&calls, |c| &c.target)
            .into_iter()
            .map(|(target, calls, total)| TargetTime {
                target,
                calls,
                total,
            })
            .collect();
        targets.sort_by(|a, b| b.total.cmp(&a.total).then_with(|| a.target.cmp(&b.target)));
        Profile {
            calls,
            ops,
            targets,
            total,
        }
    }
}

/// Call counts and time sums grouped by `key`, in key order.
fn totals(
    calls: &[CallTime],
    key: impl Fn(&CallTime) -> &String,
) -> Vec<(String, usize, Duration)> {
    let mut groups: BTreeMap<&str, (usize, Duration)> = BTreeMap::new();
    for c in calls {
        let e = groups.entry(key(c)).or_default();
        e.0 += 1;
        e.1 += c.time;
    }
    groups
        .into_iter()
        .map(|(k, (n, t))| (k.to_string(), n, t))
        .collect()
}
