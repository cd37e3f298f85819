//! Storage planning of a lowered partition: where each step writes.
//!
//! - A step whose value is a partition output writes straight into the caller's output buffer
//!   (destination-passing style). An output that is an input, a constant, or a value already
//!   written to an earlier output is copied at the end.
//! - Every other step result, and every step's scratch, gets an offset in one arena allocated
//!   once per call. Offsets come from liveness: a buffer lives from the step that defines it
//!   to the last step reading it (through views), and buffers whose lifetimes overlap never
//!   share bytes. Placement is first-fit in definition order, 64-byte aligned.
//!
//! Invariant: two buffers that overlap in the arena have disjoint live ranges.

use super::program::{Program, Source, ValueId};

/// Arena offsets are multiples of this (a cache line, and enough for any vector load).
const ALIGN: usize = 64;

/// Where a root value's elements live at run time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Storage {
    /// Partition input `i`.
    Input(usize),
    /// Constant `k`.
    Constant(usize),
    /// Partition output `k`.
    Output(usize),
    /// The arena, at a byte offset.
    Arena(usize),
}

/// The storage plan of a program.
#[derive(Clone, Debug)]
pub(crate) struct MemoryPlan {
    /// Storage of each value, by value id (views get their root's storage).
    pub storage: Vec<Storage>,
    /// Arena byte offset of each step's scratch, when it needs one.
    pub scratch: Vec<Option<usize>>,
    /// Outputs filled by a copy at the end: `(output index, value)`.
    pub copies: Vec<(usize, ValueId)>,
    /// Arena size in bytes.
    pub arena_bytes: usize,
}

/// A buffer to place: its size and live range in steps (inclusive).
struct Interval {
    bytes: usize,
    first: usize,
    last: usize,
}

/// Places `buffers` (in definition order) first-fit; returns offsets and the arena size.
fn place(buffers: &[Interval]) -> (Vec<usize>, usize) {
    let mut offsets: Vec<usize> = Vec::with_capacity(buffers.len());
    let mut size = 0;
    for (i, b) in buffers.iter().enumerate() {
        let mut busy: Vec<(usize, usize)> = buffers[..i]
            .iter()
            .zip(&offsets)
            .filter(|(o, _)| o.first <= b.last && b.first <= o.last)
            .map(|(o, &off)| (off, off + o.bytes))
            .collect();
        busy.sort_unstable();
        let mut at = 0;
        for (start, end) in busy {
            if at + b.bytes <= start {
                break;
            }
            at = at.max(end.div_ceil(ALIGN) * ALIGN);
        }
        offsets.push(at);
        size = size.max(at + b.bytes);
    }
    (offsets, size)
}

/// Plans storage for `program`.
pub(crate) fn plan(program: &Program) -> MemoryPlan {
    let n = program.values.len();
    let mut storage: Vec<Option<Storage>> = vec![None; n];
    let mut copies = Vec::new();
    for (k, &out) in program.outputs.iter().enumerate() {
        let root = program.root(out);
        match (program.values[root].source, storage[root]) {
            (Source::Step(_), None) => storage[root] = Some(Storage::Output(k)),
            _ => copies.push((k, out)),
        }
    }
    // Last step reading each root value.
    let mut last_use = vec![None; n];
    for (s, step) in program.steps.iter().enumerate() {
        for &a in &step.args {
            last_use[program.root(a)] = Some(s);
        }
    }
    let mut buffers = Vec::new();
    let mut owners = Vec::new();
    for (s, step) in program.steps.iter().enumerate() {
        let scratch = step.kernel.scratch_floats();
        if scratch > 0 {
            buffers.push(Interval {
                bytes: scratch * 4,
                first: s,
                last: s,
            });
            owners.push(None);
        }
        if storage[step.out].is_none() {
            buffers.push(Interval {
                bytes: program.values[step.out].len() * 4,
                first: s,
                last: last_use[step.out].unwrap_or(s).max(s),
            });
            owners.push(Some(step.out));
        }
    }
    let (offsets, arena_bytes) = place(&buffers);
    let mut scratch = vec![None; program.steps.len()];
    let mut scratch_steps = program
        .steps
        .iter()
        .enumerate()
        .filter(|(_, st)| st.kernel.scratch_floats() > 0)
        .map(|(s, _)| s);
    for (owner, off) in owners.iter().zip(offsets) {
        match owner {
            Some(v) => storage[*v] = Some(Storage::Arena(off)),
            None => {
                if let Some(s) = scratch_steps.next() {
                    scratch[s] = Some(off);
                }
            }
        }
    }
    let storage = (0..n)
        .map(|v| {
            let root = program.root(v);
            match program.values[root].source {
                Source::Input(i) => Storage::Input(i),
                Source::Constant(k) => Storage::Constant(k),
                // Every step result was given storage above.
                _ => storage[root].unwrap_or(Storage::Arena(0)),
            }
        })
        .collect();
    MemoryPlan {
        storage,
        scratch,
        copies,
        arena_bytes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disjoint_lifetimes_share_bytes() {
        let bufs = [
            Interval {
                bytes: 100,
                first: 0,
                last: 1,
            },
            Interval {
                bytes: 100,
                first: 1,
                last: 2,
            },
            Interval {
                bytes: 50,
                first: 2,
                last: 3,
            },
        ];
        let (off, size) = place(&bufs);
        assert_eq!(off, vec![0, 128, 0]);
        assert_eq!(size, 228);
    }

    #[test]
    fn gaps_are_reused_first_fit() {
        let bufs = [
            Interval {
                bytes: 64,
                first: 0,
                last: 0,
            },
            Interval {
                bytes: 64,
                first: 0,
                last: 2,
            },
            Interval {
                bytes: 32,
                first: 1,
                last: 2,
            },
        ];
        let (off, _) = place(&bufs);
        assert_eq!(off, vec![0, 64, 0]);
    }
}
