//! The execution plan of one graph: values (a oneDNN memory descriptor over a buffer),
//! buffers (an input, an output, a constant or an arena slot) and steps (a primitive with its
//! arguments), built once by [`Builder`].
//!
//! Invariants of a finished [`Plan`]:
//! - steps run in order; every value a step reads was written by an earlier step, or is an
//!   input or a constant;
//! - constants that a primitive wants in another layout were reordered once, at build;
//! - activations stay in the layout the producing primitive chose; a reorder step is inserted
//!   only where a consumer wants another layout, and reorders of one value to one layout are
//!   shared by all its consumers;
//! - every head ends in its caller-owned output buffer in plain row-major layout: a plain
//!   temporary is bound to the output directly, anything else is reordered into it;
//! - a value lies within its buffer, from its byte offset (non-zero only for the parts of an
//!   in-place concatenation, which are slices of the result's buffer);
//! - temporaries live in one arena; two share bytes only when their lifetimes (first to last
//!   step touching them) do not overlap.

use std::collections::HashMap;
use std::ffi::c_int;
use std::sync::Arc;

use byoc_sdk::ir::Tensor;

use super::int8::{IntPass, IntRange};
use super::pages::PageBuf;
use super::OpError;
use crate::dnnl::{
    ffi, DataType, DnnlError, Engine, Memory, MemoryDesc, Primitive, PrimitiveDesc, Query, Stream,
};

/// Index of a value in [`Plan::values`].
pub(crate) type ValueId = usize;

/// Where a buffer's bytes are.
pub(crate) enum Storage {
    /// Run input `k` (caller-owned, read only).
    Input(usize),
    /// Run output `k` (caller-owned).
    Output(usize),
    /// A constant bound at build (graph constant or pre-packed weights).
    Const(ConstData),
    /// An arena slot (offset assigned by liveness).
    Temp,
}

/// The bytes of a constant buffer.
pub(crate) enum ConstData {
    /// A graph constant, as bound (row-major).
    Graph(Arc<Tensor>),
    /// Weights reordered into a primitive's layout.
    Packed(PageBuf),
}

impl ConstData {
    pub fn ptr(&self) -> *mut u8 {
        match self {
            ConstData::Graph(t) => t.as_bytes().as_ptr().cast_mut(),
            ConstData::Packed(b) => b.ptr(),
        }
    }
}

/// One buffer.
pub(crate) struct Buffer {
    pub storage: Storage,
    pub bytes: usize,
    /// The graph entry whose producer made this buffer (in-place sums may reuse it only when
    /// nothing else reads that entry).
    pub owner: Option<usize>,
    /// Read through the values of several graph entries (a reshape's view): never
    /// overwritten in place.
    pub shared: bool,
}

/// A tensor as oneDNN sees it: a layout over a buffer, from a byte offset into it (a slice
/// of an in-place concatenation; 0 otherwise). Views share buffers.
pub(crate) struct Value {
    pub desc: MemoryDesc,
    pub buffer: usize,
    pub offset: usize,
}

/// What a step runs.
pub(crate) enum Work {
    /// A oneDNN primitive.
    Primitive(Primitive),
    /// An integer pass of the runtime's own ([`IntPass`]); its values are the step's
    /// `args` in the pass's order.
    Int(IntPass),
}

/// One step: a primitive execution or an integer pass.
pub(crate) struct Step {
    pub work: Work,
    pub args: Vec<(c_int, ValueId)>,
    pub scratchpad: usize,
    /// The graph node it belongs to and what it does, for errors and profiles.
    pub node: usize,
    pub label: String,
}

/// A finished plan.
pub(crate) struct Plan {
    pub values: Vec<Value>,
    pub buffers: Vec<Buffer>,
    pub steps: Vec<Step>,
    /// Arena offset of each temp buffer that steps touch.
    pub offsets: Vec<Option<usize>>,
    pub arena_bytes: usize,
    pub scratchpad_bytes: usize,
}

/// Builds a [`Plan`].
pub(crate) struct Builder<'e> {
    pub engine: &'e Engine,
    values: Vec<Value>,
    buffers: Vec<Buffer>,
    steps: Vec<Step>,
    /// (value, target layout) → reordered value, shared by consumers.
    reorders: Vec<(ValueId, MemoryDesc, ValueId)>,
    /// The step (graph node) being built, for labels.
    pub node: usize,
    /// The element type convolutions and matmuls read their data and weights in (the float
    /// math mode's; their results are f32 either way).
    pub operand_type: DataType,
    /// Whether int8 epilogues run as oneDNN post-ops where that is provably exact
    /// ([`super::Int8Epilogue`]).
    pub int8_post_ops: bool,
    /// The ranges proven for integer values (int8 and int32 results of the int8 nodes).
    int_ranges: HashMap<ValueId, IntRange>,
}

const ARENA_ALIGN: usize = 64;

impl<'e> Builder<'e> {
    pub fn new(engine: &'e Engine, operand_type: DataType, int8_post_ops: bool) -> Self {
        Builder {
            operand_type,
            int8_post_ops,
            int_ranges: HashMap::new(),
            engine,
            values: Vec::new(),
            buffers: Vec::new(),
            steps: Vec::new(),
            reorders: Vec::new(),
            node: 0,
        }
    }

    /// The layout of a value.
    pub fn desc(&self, v: ValueId) -> MemoryDesc {
        self.values[v].desc
    }

    fn add_buffer(&mut self, storage: Storage, bytes: usize) -> usize {
        self.buffers.push(Buffer {
            storage,
            bytes,
            owner: None,
            shared: false,
        });
        self.buffers.len() - 1
    }

    fn add_value(&mut self, desc: MemoryDesc, buffer: usize) -> ValueId {
        self.values.push(Value {
            desc,
            buffer,
            offset: 0,
        });
        self.values.len() - 1
    }

    /// A value with `desc` over the bytes of `v` (same buffer, same offset).
    fn over(&mut self, v: ValueId, desc: MemoryDesc) -> ValueId {
        let Value { buffer, offset, .. } = self.values[v];
        self.values.push(Value {
            desc,
            buffer,
            offset,
        });
        self.values.len() - 1
    }

    /// A value over run input `k` (plain).
    pub fn input(&mut self, k: usize, desc: MemoryDesc) -> ValueId {
        let b = self.add_buffer(Storage::Input(k), desc.size());
        self.add_value(desc, b)
    }

    /// A value over a graph constant (plain).
    pub fn constant(&mut self, tensor: Arc<Tensor>, desc: MemoryDesc) -> ValueId {
        let b = self.add_buffer(Storage::Const(ConstData::Graph(tensor)), desc.size());
        self.add_value(desc, b)
    }

    /// The graph constant `v` is, when it is one in its bound (row-major) layout.
    pub fn graph_constant(&self, v: ValueId) -> Option<&Tensor> {
        let value = &self.values[v];
        match &self.buffers[value.buffer].storage {
            Storage::Const(ConstData::Graph(t)) if value.desc.is_plain() => Some(t),
            _ => None,
        }
    }

    /// The range proven for the integer value `v`, if any.
    pub fn int_range(&self, v: ValueId) -> Option<IntRange> {
        self.int_ranges.get(&v).copied()
    }

    /// Records the range of the integer value `v`.
    pub fn set_int_range(&mut self, v: ValueId, range: IntRange) {
        self.int_ranges.insert(v, range);
    }

    /// A new temporary of `desc`.
    pub fn temp(&mut self, desc: MemoryDesc) -> ValueId {
        let b = self.add_buffer(Storage::Temp, desc.size());
        self.add_value(desc, b)
    }

    /// Marks `v`'s buffer as holding graph entry `entry` (an in-place result takes the
    /// buffer over from the dead entry it overwrote).
    pub fn set_owner(&mut self, v: ValueId, entry: usize) {
        let b = self.values[v].buffer;
        self.buffers[b].owner = Some(entry);
    }

    /// [`Builder::set_owner`] for a buffer nobody holds yet (a node's fresh result; results
    /// that pass an input through keep the input's owner).
    pub fn claim(&mut self, v: ValueId, entry: usize) {
        let b = self.values[v].buffer;
        if self.buffers[b].owner.is_none() {
            self.buffers[b].owner = Some(entry);
        }
    }

    /// Whether `v`'s buffer is a temporary made for `entry` (so a consumer that is the entry's
    /// only reader may overwrite it).
    pub fn owned_temp(&self, v: ValueId, entry: usize) -> bool {
        let b = &self.buffers[self.values[v].buffer];
        matches!(b.storage, Storage::Temp) && b.owner == Some(entry) && !b.shared
    }

    /// Marks `v`'s buffer as read through more than one graph entry, so that no consumer
    /// overwrites it in place ([`Builder::owned_temp`] is false from now on).
    pub fn share(&mut self, v: ValueId) {
        let b = self.values[v].buffer;
        self.buffers[b].shared = true;
    }

    /// A value with `desc` over `v`'s buffer (in-place results).
    pub fn alias(&mut self, v: ValueId, desc: MemoryDesc) -> ValueId {
        self.over(v, desc)
    }

    /// `v` in layout `desc`: `v` itself when it already is, else a reorder (done now for
    /// constants, a step for activations), shared with other consumers.
    pub fn in_layout(&mut self, v: ValueId, desc: MemoryDesc) -> Result<ValueId, OpError> {
        if self.values[v].desc == desc {
            return Ok(v);
        }
        if let Some(&(_, _, r)) = self
            .reorders
            .iter()
            .find(|(src, d, _)| *src == v && *d == desc)
        {
            return Ok(r);
        }
        let r = self.reorder(v, desc)?;
        self.reorders.push((v, desc, r));
        Ok(r)
    }

    /// A fresh copy of `v` in layout `desc` (never shared: the consumer may write it).
    pub fn reorder(&mut self, v: ValueId, desc: MemoryDesc) -> Result<ValueId, OpError> {
        let src = self.values[v].desc;
        let pd = PrimitiveDesc::reorder(self.engine, &src, &desc)?;
        if let Storage::Const(data) = &self.buffers[self.values[v].buffer].storage {
            let packed = self.reorder_now(&pd, data.ptr(), &src, &desc)?;
            let b = self.add_buffer(Storage::Const(ConstData::Packed(packed)), desc.size());
            return Ok(self.add_value(desc, b));
        }
        let r = self.temp(desc);
        let label = format!("reorder {} -> {}", src.layout(), desc.layout());
        self.step(
            &pd,
            vec![(ffi::DNNL_ARG_SRC, v), (ffi::DNNL_ARG_DST, r)],
            label,
        )?;
        Ok(r)
    }

    /// Runs a reorder of constant bytes at build time (weights pre-packing).
    fn reorder_now(
        &self,
        pd: &PrimitiveDesc,
        src_ptr: *mut u8,
        src: &MemoryDesc,
        dst: &MemoryDesc,
    ) -> Result<PageBuf, DnnlError> {
        let out = PageBuf::try_zeroed(dst.size(), "allocating packed weights")?;
        let scratch = PageBuf::try_zeroed(
            pd.query(Query::Scratchpad).size(),
            "allocating a reorder scratchpad",
        )?;
        let prim = Primitive::new(pd)?;
        let stream = Stream::new(self.engine)?;
        let m_src = Memory::new(self.engine, src, src_ptr)?;
        let m_dst = Memory::new(self.engine, dst, out.ptr())?;
        let sd = pd.query(Query::Scratchpad);
        let m_sp = Memory::new(self.engine, &sd, scratch.ptr())?;
        let mut args = vec![
            ffi::dnnl_exec_arg_t {
                arg: ffi::DNNL_ARG_SRC,
                memory: m_src.handle(),
            },
            ffi::dnnl_exec_arg_t {
                arg: ffi::DNNL_ARG_DST,
                memory: m_dst.handle(),
            },
        ];
        if sd.size() > 0 {
            args.push(ffi::dnnl_exec_arg_t {
                arg: ffi::DNNL_ARG_SCRATCHPAD,
                memory: m_sp.handle(),
            });
        }
        // SAFETY: src points at the constant (alive in the plan, `src.size()` bytes), dst and
        // the scratchpad at buffers of their descriptors' sizes owned by this function.
        unsafe { prim.execute(&stream, &args)? };
        stream.wait()?;
        Ok(out)
    }

    /// `v` reinterpreted with `desc` (same bytes): `v` is first made plain; `desc` must not
    /// need more bytes than `v` has.
    pub fn view(&mut self, v: ValueId, desc: MemoryDesc) -> Result<ValueId, OpError> {
        let cur = self.values[v].desc;
        if cur == desc {
            return Ok(v);
        }
        let plain = self.in_layout(v, cur.plain_like()?)?;
        if desc.size() > self.values[plain].desc.size() {
            return Err(OpError::msg(format!(
                "cannot view {:?} as {desc:?}: it needs more bytes",
                self.values[plain].desc
            )));
        }
        Ok(self.over(plain, desc))
    }

    /// A concatenation without a step: a new temporary of `desc` whose bytes are `parts`'
    /// buffers end to end, each part becoming its slice (so its producer writes straight into
    /// the result). `desc` must be [`MemoryDesc::concat_of_slices`] of the parts' layouts, and
    /// nothing may read a part after the concatenation (the caller checks the graph). `None`,
    /// with nothing changed, unless every part is a fresh temporary of its own (no view, alias
    /// or in-place result over its buffer, none shared with another part).
    pub fn concat_in_place(&mut self, parts: &[ValueId], desc: MemoryDesc) -> Option<ValueId> {
        let mut seen = Vec::with_capacity(parts.len());
        for &v in parts {
            let b = self.values[v].buffer;
            let buffer = &self.buffers[b];
            let own = matches!(buffer.storage, Storage::Temp)
                && !buffer.shared
                && self.values[v].offset == 0
                && self.values.iter().filter(|x| x.buffer == b).count() == 1;
            if !own || seen.contains(&b) {
                return None;
            }
            seen.push(b);
        }
        let whole = self.add_buffer(Storage::Temp, desc.size());
        let mut offset = 0;
        for &v in parts {
            let value = &mut self.values[v];
            value.buffer = whole;
            value.offset = offset;
            offset += value.desc.size();
        }
        Some(self.add_value(desc, whole))
    }

    /// Appends a primitive step.
    pub fn step(
        &mut self,
        pd: &PrimitiveDesc,
        args: Vec<(c_int, ValueId)>,
        label: String,
    ) -> Result<(), OpError> {
        let primitive = Primitive::new(pd)?;
        let scratchpad = pd.query(Query::Scratchpad).size();
        // Steps reading bf16 (the bf16 float math mode) say so.
        let on = match pd.query(Query::Src(0)).data_type() {
            Some(DataType::Bf16) => " on bf16",
            _ => "",
        };
        let label = format!("{label}{on} [{}]", pd.impl_name());
        self.steps.push(Step {
            work: Work::Primitive(primitive),
            args,
            scratchpad,
            node: self.node,
            label,
        });
        Ok(())
    }

    /// Appends an integer pass over `values` (in the pass's order).
    pub fn int_step(&mut self, pass: IntPass, values: &[ValueId], label: String) {
        self.steps.push(Step {
            work: Work::Int(pass),
            args: values.iter().map(|&v| (0, v)).collect(),
            scratchpad: 0,
            node: self.node,
            label: format!("{label} [byoc:int]"),
        });
    }

    /// Puts the heads into output buffers `0..` (plain) and lays out the arena.
    pub fn finish(mut self, heads: &[(ValueId, MemoryDesc)]) -> Result<Plan, OpError> {
        let mut bound = vec![false; self.buffers.len()];
        for (k, &(v, plain)) in heads.iter().enumerate() {
            let b = self.values[v].buffer;
            if self.values[v].desc == plain
                && matches!(self.buffers[b].storage, Storage::Temp)
                && !bound[b]
                && self.buffers[b].bytes == plain.size()
            {
                self.buffers[b].storage = Storage::Output(k);
                bound[b] = true;
            } else {
                let ob = self.add_buffer(Storage::Output(k), plain.size());
                let o = self.add_value(plain, ob);
                let src = self.values[v].desc;
                let pd = PrimitiveDesc::reorder(self.engine, &src, &plain)?;
                self.node = self.steps.last().map_or(0, |s| s.node);
                self.step(
                    &pd,
                    vec![(ffi::DNNL_ARG_SRC, v), (ffi::DNNL_ARG_DST, o)],
                    format!("reorder {} -> output {k}", src.layout()),
                )?;
            }
        }
        let (offsets, arena_bytes) = self.lay_out_arena();
        let scratchpad_bytes = self.steps.iter().map(|s| s.scratchpad).max().unwrap_or(0);
        Ok(Plan {
            values: self.values,
            buffers: self.buffers,
            steps: self.steps,
            offsets,
            arena_bytes,
            scratchpad_bytes,
        })
    }

    /// Assigns arena offsets: temporaries in order of first use; a slot is reused by a
    /// temporary whose first use comes after the slot's last use (best fit, growing the
    /// largest free slot when none fits).
    fn lay_out_arena(&self) -> (Vec<Option<usize>>, usize) {
        let n = self.buffers.len();
        let mut first = vec![usize::MAX; n];
        let mut last = vec![0usize; n];
        for (i, s) in self.steps.iter().enumerate() {
            for &(_, v) in &s.args {
                let b = self.values[v].buffer;
                first[b] = first[b].min(i);
                last[b] = last[b].max(i);
            }
        }
        let mut temps: Vec<usize> = (0..n)
            .filter(|&b| matches!(self.buffers[b].storage, Storage::Temp) && first[b] != usize::MAX)
            .collect();
        temps.sort_by_key(|&b| (first[b], b));
        // Slots: (size, last step using it).
        let mut slots: Vec<(usize, usize)> = Vec::new();
        let mut slot_of = vec![None; n];
        for b in temps {
            let need = self.buffers[b].bytes.div_ceil(ARENA_ALIGN) * ARENA_ALIGN;
            let free = |s: &(usize, usize)| s.1 < first[b];
            let fit = (0..slots.len())
                .filter(|&i| free(&slots[i]) && slots[i].0 >= need)
                .min_by_key(|&i| slots[i].0);
            let slot = match fit {
                Some(i) => i,
                None => match (0..slots.len())
                    .filter(|&i| free(&slots[i]))
                    .max_by_key(|&i| slots[i].0)
                {
                    Some(i) => {
                        slots[i].0 = need;
                        i
                    }
                    None => {
                        slots.push((need, 0));
                        slots.len() - 1
                    }
                },
            };
            slots[slot].1 = last[b];
            slot_of[b] = Some(slot);
        }
        let mut base = Vec::with_capacity(slots.len());
        let mut total = 0;
        for &(size, _) in &slots {
            base.push(total);
            total += size;
        }
        let offsets = slot_of.iter().map(|s| s.map(|i| base[i])).collect();
        (offsets, total)
    }
}
