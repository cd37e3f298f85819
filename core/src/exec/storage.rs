//! Memory planning: where each value of a [`Plan`] lives while it runs.
//!
//! Inputs and constants are read in place. Every other value root gets a buffer: values that
//! `@main` returns get a fresh buffer per run, handed to the caller without a copy; the others
//! share a scratch arena of slots. A slot is taken when an instruction writes a value and
//! given back after the value's last use (a view extends the life of the value it aliases).
//! Slots are chosen best-fit: the smallest free slot that is large enough, else the largest
//! free slot grown to fit, else a new one. An instruction's outputs are placed before its
//! inputs are freed, so no kernel writes over its own inputs.
//!
//! Invariant: two values whose lifetimes overlap never share a slot.

use std::sync::Arc;

use super::plan::{Plan, Source, ValueId};
use crate::tensor::Tensor;

/// Where a value's bytes are at run time.
#[derive(Clone, Debug)]
pub(crate) enum Loc {
    /// Flattened input `i`.
    Input(usize),
    /// A constant.
    Constant(Arc<Tensor>),
    /// Run buffer `b`: arena slots first, then one buffer per returned value root.
    Buffer(usize),
}

/// How the caller receives one output of `@main`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OutputSource {
    /// Moved out of run buffer `b`: the value was written there for the caller.
    Take(usize),
    /// Copied from this value: an input, a constant, or a value returned twice.
    Copy(ValueId),
}

/// Planned versus naive memory use of an executor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryReport {
    /// Bytes of all tensors written by kernels, as if each had its own buffer.
    pub naive_bytes: usize,
    /// Bytes actually allocated per run: scratch arena slots plus returned buffers.
    pub planned_bytes: usize,
    /// Of `planned_bytes`, the scratch arena (reused across runs).
    pub arena_bytes: usize,
    /// Number of scratch arena slots.
    pub arena_slots: usize,
}

/// A run buffer's size and what it is sized for: the largest value it holds and the
/// instruction that writes that value (for errors that name a tensor and a call site).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BufferSize {
    /// Size in bytes.
    pub bytes: usize,
    /// The value the buffer is sized for.
    pub value: ValueId,
    /// The instruction that writes that value.
    pub instr: usize,
}

/// The storage assignment of a plan.
pub(crate) struct StoragePlan {
    /// Location of every value (views resolved to their root's location).
    pub locs: Vec<Loc>,
    /// Each arena slot.
    pub slot_sizes: Vec<BufferSize>,
    /// Each returned buffer (run buffer `slot_sizes.len() + k`).
    pub output_sizes: Vec<BufferSize>,
    /// How each output of `@main` is delivered.
    pub outputs: Vec<OutputSource>,
    /// The memory report.
    pub report: MemoryReport,
}

/// Where a produced root lives before arena and returned buffers are numbered together.
#[derive(Clone, Copy)]
enum Place {
    Slot(usize),
    Returned(usize),
}

/// Plans the storage of `plan`.
pub(crate) fn plan_storage(plan: &Plan) -> StoragePlan {
    let n = plan.values.len();
    // Returned roots: the first output leaf of each produced root takes its buffer.
    let mut returned: Vec<Option<usize>> = vec![None; n];
    let mut n_returned = 0;
    let mut outputs = Vec::with_capacity(plan.outputs.len());
    for &v in &plan.outputs {
        let r = plan.root(v);
        if matches!(plan.values[r].source, Source::Produced) && returned[r].is_none() {
            returned[r] = Some(n_returned);
            outputs.push(OutputSource::Take(n_returned));
            n_returned += 1;
        } else {
            outputs.push(OutputSource::Copy(v));
        }
    }

    // The instruction after which each arena root dies: its last use, or its definition
    // when nothing reads it.
    let mut last_use: Vec<Option<usize>> = vec![None; n];
    for (i, instr) in plan.instrs.iter().enumerate() {
        for &v in &instr.inputs {
            last_use[plan.root(v)] = Some(i);
        }
    }
    let mut dies_after: Vec<Vec<ValueId>> = vec![Vec::new(); plan.instrs.len()];
    for (i, instr) in plan.instrs.iter().enumerate() {
        for &o in &instr.outputs {
            if returned[o].is_none() {
                dies_after[last_use[o].unwrap_or(i)].push(o);
            }
        }
    }

    let mut places: Vec<Option<Place>> = vec![None; n];
    let mut slot_sizes: Vec<BufferSize> = Vec::new();
    let mut output_sizes: Vec<Option<BufferSize>> = vec![None; n_returned];
    let mut free: Vec<usize> = Vec::new();
    let mut naive_bytes: usize = 0;
    for (i, instr) in plan.instrs.iter().enumerate() {
        for &o in &instr.outputs {
            let size = BufferSize {
                bytes: plan.values[o].ty.size_bytes(),
                value: o,
                instr: i,
            };
            naive_bytes = naive_bytes.saturating_add(size.bytes);
            places[o] = Some(match returned[o] {
                Some(k) => {
                    output_sizes[k] = Some(size);
                    Place::Returned(k)
                }
                None => Place::Slot(take_slot(&mut slot_sizes, &mut free, size)),
            });
        }
        for &r in &dies_after[i] {
            if let Some(Place::Slot(s)) = places[r] {
                free.push(s);
            }
        }
    }

    let n_slots = slot_sizes.len();
    let locs = (0..n)
        .map(|v| {
            let r = plan.root(v);
            match (&plan.values[r].source, places[r]) {
                (Source::Input(i), _) => Loc::Input(*i),
                (Source::Constant(t), _) => Loc::Constant(t.clone()),
                (_, Some(Place::Slot(s))) => Loc::Buffer(s),
                (_, Some(Place::Returned(k))) => Loc::Buffer(n_slots + k),
                (Source::Produced | Source::View(_), None) => {
                    unreachable!("every produced value is written by an instruction")
                }
            }
        })
        .collect();
    let output_sizes: Vec<BufferSize> = output_sizes
        .into_iter()
        .map(|s| s.expect("every returned root is written by an instruction"))
        .collect();
    let total = |sizes: &[BufferSize]| {
        sizes
            .iter()
            .fold(0usize, |acc, s| acc.saturating_add(s.bytes))
    };
    let arena_bytes = total(&slot_sizes);
    let report = MemoryReport {
        naive_bytes,
        planned_bytes: arena_bytes.saturating_add(total(&output_sizes)),
        arena_bytes,
        arena_slots: n_slots,
    };
    StoragePlan {
        locs,
        slot_sizes,
        output_sizes,
        outputs,
        report,
    }
}

/// Best-fit slot choice (see the module docs); returns the slot, removed from `free`. A slot
/// that grows is then sized for the new value.
fn take_slot(slot_sizes: &mut Vec<BufferSize>, free: &mut Vec<usize>, size: BufferSize) -> usize {
    let fitting = free
        .iter()
        .enumerate()
        .filter(|(_, &s)| slot_sizes[s].bytes >= size.bytes)
        .min_by_key(|(_, &s)| slot_sizes[s].bytes);
    let pick = fitting.or_else(|| {
        free.iter()
            .enumerate()
            .max_by_key(|(_, &s)| slot_sizes[s].bytes)
    });
    match pick.map(|(i, _)| i) {
        Some(i) => {
            let s = free.swap_remove(i);
            if size.bytes > slot_sizes[s].bytes {
                slot_sizes[s] = size;
            }
            s
        }
        None => {
            slot_sizes.push(size);
            slot_sizes.len() - 1
        }
    }
}
