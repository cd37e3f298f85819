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
//! **Concatenation in place** ([`ConcatParts::InPlace`], the default). A part of a
//! `concatenate` whose parts lie one after the other in its output
//! ([`super::plan::Instr::joins_in_order`]) is written by its producer straight into its slice
//! of the output, and the concatenation copies only the other parts, when the part is
//! - a value an instruction writes (not an input, a constant or a view of another value),
//! - not a result of `@main` (those are written into the buffer handed to the caller),
//! - not placed in another concatenation already, and passed to this one once,
//! - at a byte offset of the output that is a multiple of [`PART_ALIGN`] (64), so the
//!   producer's output starts exactly as aligned as a buffer of its own would, up to a cache
//!   line (see [`PART_ALIGN`]),
//! - the only output of its producer placed in place (an instruction borrows each of its
//!   outputs' buffers separately; two slices of one buffer would alias), and
//! - not written by an instruction that reads the same buffer (e.g. `y` in
//!   `concatenate(x, relu(x))` once `x` is placed; the executor borrows an instruction's
//!   outputs apart from its inputs).
//!
//! Other instructions may read a placed part (DenseNet: each layer reads the running
//! concatenation, which is itself a part of the next one): a byte range of the output belongs
//! to one value, written once, and the buffer lives until the last read of any value in it.
//! The producer may be a host kernel, a compiled host function or any external function: they
//! all write the output they are handed and nothing else. A concatenation's output may itself
//! be a part of an outer one (its parts then land in the outer output). The output's buffer is
//! live from the first write into it (the earliest producer of a part) to the last read of
//! any value in it, and it is the only buffer the parts take, so the arena and the memory
//! budget count each byte once.
//!
//! Invariant: two values whose lifetimes overlap never share bytes, except a part placed in
//! its concatenation's output, where the two hold the same bytes by construction.

use std::sync::Arc;

use super::plan::{Plan, Source, ValueId};
use byoc_ir::tensor::Tensor;

/// A part is placed only at an offset of its concatenation's output that is a multiple of this
/// many bytes. Run buffers are only promised 8-byte alignment (`AlignedBuf`), and the host
/// kernels and compiled loops need no more than their element's; the allocator gives 16 in
/// practice, and large buffers often more. A multiple of 64 keeps whatever alignment the
/// output's buffer has, up to a cache line, for the part: no producer (a plugin's code
/// included) sees an output less aligned than a buffer of its own. The light models' parts
/// are whole channel planes of `float32` (multiples of 64 bytes), so this excludes none.
pub(crate) const PART_ALIGN: usize = 64;

/// How an executor places the parts of a concatenation (see the module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ConcatParts {
    /// Eligible parts are written by their producers into their slice of the output, and the
    /// concatenation copies only the others.
    #[default]
    InPlace,
    /// Every part gets its own buffer and the concatenation's kernel copies all of them: the
    /// reference behaviour (`byoc verify` runs its reference side so).
    Copied,
}

/// Where a value's bytes are at run time.
#[derive(Clone, Debug)]
pub(crate) enum Loc {
    /// Flattened input `i`.
    Input(usize),
    /// A constant.
    Constant(Arc<Tensor>),
    /// Run buffer `buffer` (arena slots first, then one buffer per returned value root), from
    /// byte `offset` on (not 0 for a part placed in its concatenation's output).
    Buffer { buffer: usize, offset: usize },
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
    /// Concatenation parts written in place by their producers (not copied).
    pub in_place_parts: usize,
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

/// A concatenation some of whose parts were written in place: what is left for it to copy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct InPlaceConcat {
    /// Each part still to copy: its input index and its byte offset in the output.
    pub copies: Vec<(usize, usize)>,
    /// Parts written in place by their producers.
    pub in_place: usize,
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
    /// Per instruction: for a concatenation with parts written in place, what it still copies.
    pub in_place: Vec<Option<InPlaceConcat>>,
    /// The memory report.
    pub report: MemoryReport,
}

/// Where a produced root lives before arena and returned buffers are numbered together.
#[derive(Clone, Copy)]
enum Place {
    Slot(usize),
    Returned(usize),
}

/// Plans the storage of `plan`, placing concatenation parts as `parts` says.
pub(crate) fn plan_storage(plan: &Plan, parts: ConcatParts) -> StoragePlan {
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
    let placed = match parts {
        ConcatParts::InPlace => place_parts(plan, &returned),
        ConcatParts::Copied => vec![None; n],
    };
    // The buffer owner of each produced root and its byte offset there: the root itself, or
    // the outermost concatenation it was placed in.
    let home: Vec<(ValueId, usize)> = (0..n)
        .map(|v| {
            let (mut owner, mut offset) = (plan.root(v), 0);
            while let Some((outer, at)) = placed[owner] {
                owner = outer;
                offset += at;
            }
            (owner, offset)
        })
        .collect();

    // The instruction after which each buffer owner dies: the last instruction that reads or
    // writes any value in its buffer.
    let mut end: Vec<Option<usize>> = vec![None; n];
    for (i, instr) in plan.instrs.iter().enumerate() {
        for &v in instr.inputs.iter().chain(&instr.outputs) {
            end[home[v].0] = Some(i);
        }
    }
    let mut dies_after: Vec<Vec<ValueId>> = vec![Vec::new(); plan.instrs.len()];
    for (owner, e) in end.iter().enumerate() {
        if let (Some(i), Source::Produced) = (e, &plan.values[owner].source) {
            if returned[owner].is_none() && home[owner].0 == owner {
                dies_after[*i].push(owner);
            }
        }
    }
    // The instruction that writes each value (for the sites memory errors name).
    let mut writer: Vec<usize> = vec![0; n];
    for (i, instr) in plan.instrs.iter().enumerate() {
        for &o in &instr.outputs {
            writer[o] = i;
        }
    }

    let mut places: Vec<Option<Place>> = vec![None; n];
    let mut slot_sizes: Vec<BufferSize> = Vec::new();
    let mut output_sizes: Vec<Option<BufferSize>> = vec![None; n_returned];
    let mut free: Vec<usize> = Vec::new();
    let mut naive_bytes: usize = 0;
    for (i, instr) in plan.instrs.iter().enumerate() {
        for &o in &instr.outputs {
            naive_bytes = naive_bytes.saturating_add(plan.values[o].ty.size_bytes());
            // A buffer is placed at the first write into it: its owner's, or a part's.
            let owner = home[o].0;
            if places[owner].is_some() {
                continue;
            }
            let size = BufferSize {
                bytes: plan.values[owner].ty.size_bytes(),
                value: owner,
                instr: writer[owner],
            };
            places[owner] = Some(match returned[owner] {
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
            let (owner, offset) = home[v];
            match (&plan.values[r].source, places[owner]) {
                (Source::Input(i), _) => Loc::Input(*i),
                (Source::Constant(t), _) => Loc::Constant(t.clone()),
                (_, Some(Place::Slot(s))) => Loc::Buffer { buffer: s, offset },
                (_, Some(Place::Returned(k))) => Loc::Buffer {
                    buffer: n_slots + k,
                    offset,
                },
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
    let in_place = in_place_concats(plan, &placed);
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
        in_place_parts: placed.iter().filter(|p| p.is_some()).count(),
    };
    StoragePlan {
        locs,
        slot_sizes,
        output_sizes,
        outputs,
        in_place,
        report,
    }
}

/// The concatenation parts placed in their output (see the module docs): for each value,
/// `Some((output, byte offset))` when its producer writes it there.
fn place_parts(plan: &Plan, returned: &[Option<usize>]) -> Vec<Option<(ValueId, usize)>> {
    let n = plan.values.len();
    let mut producer: Vec<Option<usize>> = vec![None; n];
    for (i, instr) in plan.instrs.iter().enumerate() {
        for &o in &instr.outputs {
            producer[o] = Some(i);
        }
    }
    let mut producer_placed = vec![false; plan.instrs.len()];
    let mut placed = vec![None; n];
    for instr in plan.instrs.iter().filter(|i| i.joins_in_order) {
        let [output] = instr.outputs[..] else {
            continue;
        };
        let mut offset = 0usize;
        for &part in &instr.inputs {
            let eligible = matches!(plan.values[part].source, Source::Produced)
                && placed[part].is_none()
                && returned[part].is_none()
                && instr.inputs.iter().filter(|&&v| v == part).count() == 1
                && offset.is_multiple_of(PART_ALIGN);
            if let Some(p) = producer[part].filter(|&p| eligible && !producer_placed[p]) {
                producer_placed[p] = true;
                placed[part] = Some((output, offset));
            }
            offset = offset.saturating_add(plan.values[part].ty.size_bytes());
        }
    }
    // An instruction other than a concatenation with parts in place never reads the buffer it
    // writes (the executor borrows its outputs apart from its inputs): where one would, its
    // output goes back to a buffer of its own. That only splits buffers, so it creates no
    // such case in the instructions already checked.
    let owner = |placed: &[Option<(ValueId, usize)>], v: ValueId| {
        let mut r = plan.root(v);
        while let Some((outer, _)) = placed[r] {
            r = outer;
        }
        r
    };
    for instr in &plan.instrs {
        let [output] = instr.outputs[..] else {
            // Several outputs: at most one is placed; check it the same way.
            for &o in &instr.outputs {
                if placed[o].is_some()
                    && instr
                        .inputs
                        .iter()
                        .any(|&v| owner(&placed, v) == owner(&placed, o))
                {
                    placed[o] = None;
                }
            }
            continue;
        };
        let copies_parts = instr.joins_in_order
            && instr
                .inputs
                .iter()
                .any(|&v| placed[v].is_some_and(|(c, _)| c == output));
        if copies_parts || placed[output].is_none() {
            continue;
        }
        let home = owner(&placed, output);
        if instr.inputs.iter().any(|&v| owner(&placed, v) == home) {
            placed[output] = None;
        }
    }
    placed
}

/// What each concatenation with parts in place still copies (indexed by instruction).
fn in_place_concats(
    plan: &Plan,
    placed: &[Option<(ValueId, usize)>],
) -> Vec<Option<InPlaceConcat>> {
    plan.instrs
        .iter()
        .map(|instr| {
            let [output] = instr.outputs[..] else {
                return None;
            };
            let in_here = |v: ValueId| placed[v].is_some_and(|(c, _)| c == output);
            let in_place = instr.inputs.iter().filter(|&&v| in_here(v)).count();
            if !instr.joins_in_order || in_place == 0 {
                return None;
            }
            let mut copies = Vec::new();
            let mut offset = 0usize;
            for (k, &part) in instr.inputs.iter().enumerate() {
                if !in_here(part) {
                    copies.push((k, offset));
                }
                offset = offset.saturating_add(plan.values[part].ty.size_bytes());
            }
            Some(InPlaceConcat { copies, in_place })
        })
        .collect()
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
