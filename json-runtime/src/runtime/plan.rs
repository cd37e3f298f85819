//! Entry → storage planning, done once per graph.
//!
//! Every entry lives in one [`Slot`]: a bound input, a bound constant, a caller's output
//! tensor (a head produced by a kernel is written in place, no copy), or a buffer of the
//! per-run arena. Arena buffers are shared between entries whose lifetimes do not overlap; the
//! outputs of a node are allocated before its inputs are released, so a kernel never reads and
//! writes the same buffer. Heads that are inputs, constants or repeated entries are copied
//! into their output tensor after the kernels ran.

use byoc_sdk::ir::TensorType;

use crate::format::{Entry, JsonGraph, NodeKind};

/// Where an entry's bytes are during a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Slot {
    /// Input tensor `i` of `run`.
    Input(usize),
    /// Bound constant `c` (in `const` node order).
    Const(usize),
    /// Output tensor `k` of `run`.
    Output(usize),
    /// Arena buffer `a`.
    Arena(usize),
}

/// Where a kernel writes one of its outputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OutSlot {
    /// Output tensor `k` of `run`.
    Output(usize),
    /// Arena buffer `a`.
    Arena(usize),
}

/// The storage plan of a graph.
#[derive(Debug)]
pub(crate) struct Plan {
    /// The slot of each entry, by entry id.
    pub slots: Vec<Slot>,
    /// Byte size of each arena buffer.
    pub arena_sizes: Vec<usize>,
    /// Kernel node ids in execution order.
    pub kernels: Vec<usize>,
    /// For each kernel (parallel to `kernels`), where each of its outputs goes.
    pub kernel_outputs: Vec<Vec<OutSlot>>,
    /// Heads filled by copying after the run: (output index, source slot). A source that is
    /// an output slot is an earlier head's (the first head holding the entry).
    pub copies: Vec<(usize, Slot)>,
    /// Types of the input tensors of `run`.
    pub input_types: Vec<TensorType>,
    /// Names of the input tensors (input node names).
    pub input_names: Vec<String>,
    /// Types of the output tensors of `run`.
    pub output_types: Vec<TensorType>,
}

/// A free list of arena buffers.
struct Arena {
    sizes: Vec<usize>,
    free: Vec<usize>,
}

impl Arena {
    /// A buffer of at least `bytes`: the smallest free one that fits, else the largest free one
    /// grown, else a new one.
    fn alloc(&mut self, bytes: usize) -> usize {
        let fitting = self
            .free
            .iter()
            .enumerate()
            .filter(|(_, &b)| self.sizes[b] >= bytes)
            .min_by_key(|(_, &b)| self.sizes[b])
            .map(|(i, _)| i);
        let largest = || {
            self.free
                .iter()
                .enumerate()
                .max_by_key(|(_, &b)| self.sizes[b])
                .map(|(i, _)| i)
        };
        match fitting.or_else(largest) {
            Some(i) => {
                let b = self.free.swap_remove(i);
                self.sizes[b] = self.sizes[b].max(bytes);
                b
            }
            None => {
                self.sizes.push(bytes);
                self.sizes.len() - 1
            }
        }
    }
}

/// Plans storage for a valid graph.
pub(crate) fn plan(graph: &JsonGraph) -> Plan {
    let unassigned = Slot::Arena(usize::MAX);
    let mut slots = vec![unassigned; graph.num_entries()];
    let input_entries = graph.input_entries();
    for (i, &e) in input_entries.iter().enumerate() {
        slots[graph.entry_id(e)] = Slot::Input(i);
    }
    for (c, n) in graph.const_nodes().enumerate() {
        slots[graph.entry_id(Entry::new(n as u32, 0))] = Slot::Const(c);
    }
    let mut copies = Vec::new();
    for (k, &head) in graph.heads.iter().enumerate() {
        let id = graph.entry_id(head);
        let kernel_made = graph.nodes[head.node_index()].kind == NodeKind::Kernel;
        if kernel_made && slots[id] == unassigned {
            slots[id] = Slot::Output(k);
        } else {
            copies.push((k, id));
        }
    }
    let kernels: Vec<usize> = (0..graph.nodes.len())
        .filter(|&n| graph.nodes[n].kind == NodeKind::Kernel)
        .collect();
    let mut last_use = vec![None; graph.num_entries()];
    for &n in &kernels {
        for &e in &graph.nodes[n].inputs {
            last_use[graph.entry_id(e)] = Some(n);
        }
    }
    let mut arena = Arena {
        sizes: Vec::new(),
        free: Vec::new(),
    };
    let mut kernel_outputs = Vec::with_capacity(kernels.len());
    for &n in &kernels {
        let node = &graph.nodes[n];
        let first = graph.node_row_ptr[n] as usize;
        let outputs = first..first + node.outputs.len();
        let mut targets = Vec::with_capacity(node.outputs.len());
        for (id, ty) in outputs.clone().zip(&node.outputs) {
            targets.push(match slots[id] {
                Slot::Output(k) => OutSlot::Output(k),
                _ => {
                    let a = arena.alloc(ty.size_bytes());
                    slots[id] = Slot::Arena(a);
                    OutSlot::Arena(a)
                }
            });
        }
        kernel_outputs.push(targets);
        let inputs = node.inputs.iter().map(|&e| graph.entry_id(e));
        let dead_outputs = outputs.filter(|&id| last_use[id].is_none());
        for id in inputs.chain(dead_outputs) {
            if let Slot::Arena(b) = slots[id] {
                if last_use[id].is_none_or(|last| last == n) && !arena.free.contains(&b) {
                    arena.free.push(b);
                }
            }
        }
    }
    let copies = copies.into_iter().map(|(k, id)| (k, slots[id])).collect();
    Plan {
        slots,
        arena_sizes: arena.sizes,
        kernels,
        kernel_outputs,
        copies,
        input_types: input_entries
            .iter()
            .map(|&e| graph.entry_type(e).clone())
            .collect(),
        input_names: input_entries
            .iter()
            .map(|&e| graph.nodes[e.node_index()].name.clone())
            .collect(),
        output_types: graph
            .heads
            .iter()
            .map(|&e| graph.entry_type(e).clone())
            .collect(),
    }
}
