//! Per-op timing of one run: each kernel call's time, and the totals per op name.

use std::collections::BTreeMap;
use std::time::Duration;

/// The time of one kernel call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallTime {
    /// The op name.
    pub op: String,
    /// The call site (`@main:%7 > @f:%2`).
    pub site: String,
    /// Wall-clock time of the kernel.
    pub time: Duration,
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

/// The timing profile of one run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Profile {
    /// Every kernel call, in execution order.
    pub calls: Vec<CallTime>,
    /// Totals per op, largest total first (ties by name).
    pub ops: Vec<OpTime>,
    /// Wall-clock time of the whole run (kernels, copies and bookkeeping).
    pub total: Duration,
}

impl Profile {
    /// A profile from the calls of one run, aggregating per op.
    pub fn new(calls: Vec<CallTime>, total: Duration) -> Self {
        let mut per_op: BTreeMap<&str, (usize, Duration)> = BTreeMap::new();
        for c in &calls {
            let e = per_op.entry(&c.op).or_default();
            e.0 += 1;
            e.1 += c.time;
        }
        let mut ops: Vec<OpTime> = per_op
            .into_iter()
            .map(|(op, (calls, total))| OpTime {
                op: op.to_string(),
                calls,
                total,
            })
            .collect();
        ops.sort_by(|a, b| b.total.cmp(&a.total).then_with(|| a.op.cmp(&b.op)));
        Profile { calls, ops, total }
    }
}
