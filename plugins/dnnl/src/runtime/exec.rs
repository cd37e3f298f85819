//! Per-run execution state and its pool.
//!
//! An [`ExecState`] owns what one run writes: a stream, the arena of temporaries, the
//! scratchpad and one oneDNN memory object per plan value (temporaries and constants bound
//! once, inputs and outputs re-pointed per run), plus the prepared argument lists. Runs take a
//! state from the pool (or make one) and give it back, so concurrent runs never share
//! writable memory.

use std::sync::Mutex;

use super::pages::PageBuf;
use super::plan::{Plan, Storage};
use crate::dnnl::{ffi, DnnlError, Engine, Memory, MemoryDesc, Stream};

/// The most idle states kept.
const POOL_SIZE: usize = 4;

/// What one run writes.
pub(crate) struct ExecState {
    pub stream: Stream,
    /// One memory per plan value.
    memories: Vec<Memory>,
    /// The data pointer of each plan value (for the integer passes).
    pub ptrs: Vec<*mut u8>,
    /// Values bound per run: (value, is_output, index, byte offset into that buffer).
    io: Vec<(usize, bool, usize, usize)>,
    /// Execution arguments per step.
    pub args: Vec<Vec<ffi::dnnl_exec_arg_t>>,
    _arena: PageBuf,
    _scratchpad: PageBuf,
    _scratchpad_memory: Memory,
}

// SAFETY: the raw memory handles in `args` point to memories owned by this state; the state
// moves between threads as a whole and is used by one run at a time.
unsafe impl Send for ExecState {}

impl ExecState {
    /// A state for `plan`.
    pub fn new(engine: &Engine, plan: &Plan) -> Result<Self, DnnlError> {
        let arena = PageBuf::try_zeroed(plan.arena_bytes, "allocating the arena")?;
        let arena_base = arena.ptr();
        let scratchpad = PageBuf::try_zeroed(plan.scratchpad_bytes, "allocating the scratchpad")?;
        let sp_base = scratchpad.ptr();
        let scratchpad_memory =
            Memory::new(engine, &MemoryDesc::bytes(plan.scratchpad_bytes)?, sp_base)?;
        let mut memories = Vec::with_capacity(plan.values.len());
        let mut ptrs = Vec::with_capacity(plan.values.len());
        let mut io = Vec::new();
        for (v, value) in plan.values.iter().enumerate() {
            let buffer = &plan.buffers[value.buffer];
            let ptr = match &buffer.storage {
                Storage::Input(k) => {
                    io.push((v, false, *k, value.offset));
                    std::ptr::null_mut()
                }
                Storage::Output(k) => {
                    io.push((v, true, *k, value.offset));
                    std::ptr::null_mut()
                }
                // SAFETY: a value's offset + size is within its buffer (Builder's invariant).
                Storage::Const(data) => unsafe { data.ptr().add(value.offset) },
                Storage::Temp => match plan.offsets[value.buffer] {
                    // SAFETY: offset + size <= arena_bytes (the arena layout's invariant) and
                    // the value lies within its buffer.
                    Some(off) => unsafe { arena_base.add(off + value.offset) },
                    None => std::ptr::null_mut(),
                },
            };
            memories.push(Memory::new(engine, &value.desc, ptr)?);
            ptrs.push(ptr);
        }
        let args = plan
            .steps
            .iter()
            .map(|s| {
                let mut a: Vec<ffi::dnnl_exec_arg_t> = s
                    .args
                    .iter()
                    .map(|&(arg, v)| ffi::dnnl_exec_arg_t {
                        arg,
                        memory: memories[v].handle(),
                    })
                    .collect();
                if s.scratchpad > 0 {
                    a.push(ffi::dnnl_exec_arg_t {
                        arg: ffi::DNNL_ARG_SCRATCHPAD,
                        memory: scratchpad_memory.handle(),
                    });
                }
                a
            })
            .collect();
        Ok(ExecState {
            stream: Stream::new(engine)?,
            memories,
            ptrs,
            io,
            args,
            _arena: arena,
            _scratchpad: scratchpad,
            _scratchpad_memory: scratchpad_memory,
        })
    }

    /// Points input and output memories at this run's buffers.
    pub fn bind(&mut self, inputs: &[*mut u8], outputs: &[*mut u8]) -> Result<(), DnnlError> {
        for &(v, is_out, k, offset) in &self.io {
            let ptr = if is_out { outputs[k] } else { inputs[k] };
            // A slice of the caller's buffer (an in-place concatenation bound to an output):
            // the buffer has the plan's size for it, so the slice lies within.
            let ptr = ptr.wrapping_add(offset);
            self.memories[v].set_data(ptr)?;
            self.ptrs[v] = ptr;
        }
        Ok(())
    }
}

/// Idle states, reused across runs.
#[derive(Default)]
pub(crate) struct StatePool(Mutex<Vec<ExecState>>);

impl StatePool {
    /// An idle state, if any.
    pub fn take(&self) -> Option<ExecState> {
        self.0.lock().ok().and_then(|mut p| p.pop())
    }

    /// Returns a state after a run.
    pub fn give(&self, state: ExecState) {
        if let Ok(mut p) = self.0.lock() {
            if p.len() < POOL_SIZE {
                p.push(state);
            }
        }
    }
}
