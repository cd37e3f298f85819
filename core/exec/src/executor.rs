//! The executor: a planned module, run on the host with reused scratch memory.
//!
//! [`Executor::new`] types the module (on a copy, when types are missing), lowers `@main`
//! ([`super::plan`]), builds every kernel once and plans storage ([`super::storage`]).
//! [`Executor::with_externals`] does the same for a partitioned module, dispatching calls of
//! external functions to their compiled modules with views of the executor's buffers.
//! [`Executor::run`] takes `&self` and may be called from several threads at once: each run
//! borrows a scratch arena from a small pool (or makes one) and gives it back afterwards, so
//! repeated runs do not reallocate. Kernels run inside a rayon pool of the executor's thread
//! count, shared by every executor of that count alive in the process: a model with thousands
//! of partitions on the reference runtime plans thousands of sub-executors, which would
//! otherwise start a thread each.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Instant;

use super::error::ExecError;
use super::external::ExternalModules;
use super::plan::{lower, InputInfo, Instr, Kernel, Plan};
use super::profile::{CallTime, InPlaceParts, Profile};
use super::storage::{
    plan_storage, BufferSize, ConcatParts, InPlaceConcat, Loc, MemoryReport, OutputSource,
    StoragePlan,
};
use byoc_ir::infer_types;
use byoc_ir::memory::{budget, tensor_bytes, try_buffer, with_budget, RunTally, SizeError};
use byoc_ir::tensor::{AlignedBuf, Tensor, TensorMut, TensorRef};
use byoc_ir::{Module, Type};

/// How many idle scratch arenas an executor keeps.
const ARENA_POOL_SIZE: usize = 4;

/// Options of an [`Executor`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExecOptions {
    /// Worker threads for kernels; 0 means the machine's available parallelism.
    pub threads: usize,
    /// Record a per-op timing [`Profile`] of each run (see [`Executor::last_profile`]).
    pub profile: bool,
    /// The memory budget in bytes of planning and of each run: the buffers one run holds at
    /// once (the inputs the caller passes, the scratch and the outputs) must fit it
    /// (`byoc_ir::memory`). `None`: the caller's budget
    /// ([`byoc_ir::memory::budget`] when the executor is planned).
    pub memory_budget: Option<u64>,
}

/// A module planned for host execution.
pub struct Executor {
    plan: Plan,
    storage: StoragePlan,
    output_names: Vec<String>,
    threads: usize,
    profile: bool,
    /// The budget the plan was checked against; runs allocate under it.
    budget: u64,
    pool: Arc<rayon::ThreadPool>,
    /// Idle scratch arenas (one buffer per arena slot).
    arenas: Mutex<Vec<Vec<AlignedBuf>>>,
    last_profile: Mutex<Option<Profile>>,
}

impl std::fmt::Debug for Executor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Executor")
            .field("inputs", &self.plan.inputs)
            .field("instructions", &self.plan.instrs.len())
            .field("threads", &self.threads)
            .field("memory", &self.storage.report)
            .finish_non_exhaustive()
    }
}

/// True when every live node of every function has a type.
fn fully_typed(module: &Module) -> bool {
    module
        .functions()
        .all(|(_, f)| f.live_ids().into_iter().all(|id| f.ty(id).is_some()))
}

impl Executor {
    /// Plans `module` for execution: infers types if any are missing, lowers `@main`, builds
    /// each call site's kernel and plans storage. A module that calls an external function
    /// does not plan here (see [`Executor::with_externals`]).
    pub fn new(module: &Module, options: ExecOptions) -> Result<Executor, ExecError> {
        Executor::with_externals(module, options, &ExternalModules::new())
    }

    /// Plans a partitioned module: calls of external functions run the compiled modules in
    /// `externals`; an external function without one is an error.
    pub fn with_externals(
        module: &Module,
        options: ExecOptions,
        externals: &ExternalModules,
    ) -> Result<Executor, ExecError> {
        Executor::with_concat_parts(module, options, externals, ConcatParts::InPlace)
    }

    /// [`Executor::with_externals`], placing the parts of concatenations as `parts` says:
    /// [`ConcatParts::Copied`] plans every part in a buffer of its own, as the reference side
    /// of `byoc verify` does.
    pub fn with_concat_parts(
        module: &Module,
        options: ExecOptions,
        externals: &ExternalModules,
        parts: ConcatParts,
    ) -> Result<Executor, ExecError> {
        with_budget(options.memory_budget, || {
            Executor::plan(module, options, externals, parts)
        })
    }

    /// [`Executor::with_concat_parts`] under the budget in force.
    fn plan(
        module: &Module,
        options: ExecOptions,
        externals: &ExternalModules,
        parts: ConcatParts,
    ) -> Result<Executor, ExecError> {
        let plan = if fully_typed(module) {
            lower(module, externals)?
        } else {
            let mut typed = module.clone();
            infer_types(&mut typed)?;
            lower(&typed, externals)?
        };
        let storage = plan_storage(&plan, parts);
        let mut tally = RunTally::new();
        let tally_budget = budget();
        // The caller holds the inputs through every run.
        for input in &plan.inputs {
            tensor_bytes(&input.ty)
                .and_then(|bytes| tally.add(&input.ty, bytes))
                .map_err(|error| ExecError::Memory {
                    site: format!("@main input %{}", input.name),
                    error,
                })?;
        }
        for size in storage.slot_sizes.iter().chain(&storage.output_sizes) {
            tally
                .add(&plan.values[size.value].ty, size.bytes)
                .map_err(|error| memory_error(&plan, size, error))?;
        }
        let threads = match options.threads {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => byoc_sdk::check_threads(n)?,
        };
        let pool = shared_pool(threads)?;
        let output_names = (0..plan.outputs.len())
            .map(|i| format!("output_{i}"))
            .collect();
        Ok(Executor {
            plan,
            storage,
            output_names,
            threads,
            profile: options.profile,
            budget: tally_budget,
            pool,
            arenas: Mutex::new(Vec::new()),
            last_profile: Mutex::new(None),
        })
    }

    /// The flattened inputs of `@main`, in the order [`Executor::run`] takes them.
    pub fn inputs(&self) -> &[InputInfo] {
        &self.plan.inputs
    }

    /// Output names, `output_0`, `output_1`, ..., one per flattened leaf of the result.
    pub fn output_names(&self) -> &[String] {
        &self.output_names
    }

    /// `@main`'s result type; its leaves, depth-first, are the outputs of a run.
    pub fn result_type(&self) -> &Type {
        &self.plan.result_type
    }

    /// The number of kernel calls a run makes.
    pub fn num_instructions(&self) -> usize {
        self.plan.instrs.len()
    }

    /// The worker thread count.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Planned versus naive memory use.
    pub fn memory_report(&self) -> MemoryReport {
        self.storage.report
    }

    /// The profile of the most recently finished run, when profiling is on.
    pub fn last_profile(&self) -> Option<Profile> {
        lock(&self.last_profile).clone()
    }

    /// Runs `@main` on `inputs` (flattened, in [`Executor::inputs`] order) and returns one
    /// tensor per flattened leaf of its result. No output shares memory with another output,
    /// an input or a constant.
    pub fn run(&self, inputs: &[Tensor]) -> Result<Vec<Tensor>, ExecError> {
        let views: Vec<TensorRef<'_>> = inputs.iter().map(Tensor::view).collect();
        self.run_views(&views)
    }

    /// [`Executor::run`] on borrowed inputs.
    pub fn run_views(&self, inputs: &[TensorRef<'_>]) -> Result<Vec<Tensor>, ExecError> {
        self.check_inputs(inputs)?;
        self.pool
            .install(|| with_budget(Some(self.budget), || self.execute(inputs)))
    }

    /// Runs `@main` on inputs keyed by name (see [`Executor::inputs`]), borrowed, not copied.
    pub fn run_named(&self, inputs: &BTreeMap<String, Tensor>) -> Result<Vec<Tensor>, ExecError> {
        if let Some(unknown) = inputs
            .keys()
            .find(|k| !self.plan.inputs.iter().any(|i| &i.name == *k))
        {
            return Err(ExecError::UnknownInput {
                name: unknown.clone(),
                known: self
                    .plan
                    .inputs
                    .iter()
                    .map(|i| i.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        }
        let ordered = self
            .plan
            .inputs
            .iter()
            .map(|i| {
                inputs
                    .get(&i.name)
                    .map(Tensor::view)
                    .ok_or_else(|| ExecError::MissingInput {
                        name: i.name.clone(),
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        self.run_views(&ordered)
    }

    fn check_inputs(&self, inputs: &[TensorRef<'_>]) -> Result<(), ExecError> {
        if inputs.len() != self.plan.inputs.len() {
            return Err(ExecError::InputCount {
                expected: self.plan.inputs.len(),
                got: inputs.len(),
            });
        }
        for (info, t) in self.plan.inputs.iter().zip(inputs) {
            if t.ty != &info.ty || t.bytes.len() != info.ty.size_bytes() {
                return Err(ExecError::InputType {
                    name: info.name.clone(),
                    expected: info.ty.clone(),
                    got: t.ty.clone(),
                });
            }
        }
        Ok(())
    }

    /// Runs the plan on checked inputs, inside the thread pool.
    fn execute(&self, inputs: &[TensorRef<'_>]) -> Result<Vec<Tensor>, ExecError> {
        let start = Instant::now();
        let mut bufs = self.take_arena()?;
        let n_slots = bufs.len();
        let mut calls = Vec::new();
        let result = self
            .allocate(&self.storage.output_sizes, &mut bufs)
            .and_then(|()| self.run_instructions(inputs, &mut bufs, &mut calls));
        let outputs = result.and_then(|()| self.collect_outputs(inputs, &mut bufs));
        bufs.truncate(n_slots);
        let mut idle = lock(&self.arenas);
        if idle.len() < ARENA_POOL_SIZE {
            idle.push(bufs);
        }
        drop(idle);
        if self.profile && outputs.is_ok() {
            *lock(&self.last_profile) = Some(Profile::new(calls, start.elapsed()));
        }
        outputs
    }

    /// An idle scratch arena, or a new one.
    fn take_arena(&self) -> Result<Vec<AlignedBuf>, ExecError> {
        if let Some(arena) = lock(&self.arenas).pop() {
            return Ok(arena);
        }
        let mut arena = Vec::new();
        self.allocate(&self.storage.slot_sizes, &mut arena)?;
        Ok(arena)
    }

    /// Appends a zero-filled buffer of each size to `bufs`; memory the system refuses is an
    /// error naming the tensor and its call site.
    fn allocate(&self, sizes: &[BufferSize], bufs: &mut Vec<AlignedBuf>) -> Result<(), ExecError> {
        for size in sizes {
            let buf = try_buffer(&self.plan.values[size.value].ty, size.bytes)
                .map_err(|error| memory_error(&self.plan, size, error))?;
            bufs.push(buf);
        }
        Ok(())
    }

    fn run_instructions(
        &self,
        inputs: &[TensorRef<'_>],
        bufs: &mut [AlignedBuf],
        calls: &mut Vec<CallTime>,
    ) -> Result<(), ExecError> {
        for (instr, in_place) in self.plan.instrs.iter().zip(&self.storage.in_place) {
            if let Some(concat) = in_place {
                let t0 = self.profile.then(Instant::now);
                self.copy_remaining_parts(instr, concat, inputs, bufs);
                if let Some(t0) = t0 {
                    calls.push(CallTime {
                        op: instr.label(),
                        target: instr.target().to_string(),
                        site: instr.site.clone(),
                        time: t0.elapsed(),
                        in_place: Some(InPlaceParts {
                            written: concat.in_place,
                            parts: instr.inputs.len(),
                        }),
                    });
                }
                continue;
            }
            // Outputs never share a buffer with the instruction's inputs, nor with each other
            // (storage invariant), so they are moved out while the inputs are borrowed, and put
            // back afterwards.
            let mut taken: Vec<(usize, usize, AlignedBuf)> = instr
                .outputs
                .iter()
                .map(|&o| {
                    let (b, offset) = self.buffer_of(o);
                    (b, offset, std::mem::take(&mut bufs[b]))
                })
                .collect();
            let ins: Vec<TensorRef<'_>> = instr
                .inputs
                .iter()
                .map(|&v| self.tensor_ref(v, inputs, bufs))
                .collect();
            let mut outs: Vec<TensorMut<'_>> = taken
                .iter_mut()
                .zip(&instr.outputs)
                .map(|((_, offset, buf), &o)| {
                    let ty = &self.plan.values[o].ty;
                    TensorMut {
                        ty,
                        bytes: &mut buf.as_bytes_mut()[*offset..*offset + ty.size_bytes()],
                    }
                })
                .collect();
            let t0 = self.profile.then(Instant::now);
            let status =
                match &instr.kernel {
                    Kernel::Host { op, kernel } => kernel
                        .run(&ins, &mut outs, self.threads)
                        .map_err(|source| ExecError::Kernel {
                            op: op.name().to_string(),
                            site: instr.site.clone(),
                            source,
                        }),
                    Kernel::External { function, module } => module
                        .module
                        .run(&ins, &mut outs)
                        .map_err(|error| ExecError::External {
                            site: instr.site.clone(),
                            function: function.clone(),
                            target: module.target.clone(),
                            plugin: module.plugin.clone(),
                            error,
                        }),
                };
            if let Some(t0) = t0 {
                calls.push(CallTime {
                    op: instr.label(),
                    target: instr.target().to_string(),
                    site: instr.site.clone(),
                    time: t0.elapsed(),
                    in_place: None,
                });
            }
            drop(outs);
            drop(ins);
            for (b, _, buf) in taken {
                bufs[b] = buf;
            }
            status?;
        }
        Ok(())
    }

    /// A concatenation whose other parts were written in place by their producers: copies
    /// the parts that were not into their slices of the output.
    fn copy_remaining_parts(
        &self,
        instr: &Instr,
        concat: &InPlaceConcat,
        inputs: &[TensorRef<'_>],
        bufs: &mut [AlignedBuf],
    ) {
        let (b, base) = self.buffer_of(instr.outputs[0]);
        let mut out = std::mem::take(&mut bufs[b]);
        for &(k, at) in &concat.copies {
            let v = instr.inputs[k];
            let start = base + at;
            match self.storage.locs[v] {
                // A part placed elsewhere in the same buffer (in another concatenation nested
                // there): its bytes never overlap the slice it is copied to.
                Loc::Buffer { buffer, offset } if buffer == b => {
                    let len = self.plan.values[v].ty.size_bytes();
                    out.as_bytes_mut().copy_within(offset..offset + len, start);
                }
                _ => {
                    let part = self.tensor_ref(v, inputs, bufs);
                    out.as_bytes_mut()[start..start + part.bytes.len()].copy_from_slice(part.bytes);
                }
            }
        }
        bufs[b] = out;
    }

    /// The run buffer of a produced value and the value's byte offset in it.
    fn buffer_of(&self, v: usize) -> (usize, usize) {
        match self.storage.locs[v] {
            Loc::Buffer { buffer, offset } => (buffer, offset),
            Loc::Input(_) | Loc::Constant(_) => {
                unreachable!("instruction outputs are planned into buffers")
            }
        }
    }

    fn tensor_ref<'a>(
        &'a self,
        v: usize,
        inputs: &[TensorRef<'a>],
        bufs: &'a [AlignedBuf],
    ) -> TensorRef<'a> {
        let ty = &self.plan.values[v].ty;
        let bytes = match &self.storage.locs[v] {
            Loc::Input(i) => inputs[*i].bytes,
            Loc::Constant(t) => t.as_bytes(),
            Loc::Buffer { buffer, offset } => {
                &bufs[*buffer].as_bytes()[*offset..*offset + ty.size_bytes()]
            }
        };
        TensorRef { ty, bytes }
    }

    /// The caller's outputs: copies first (they may read a buffer that is then moved out).
    fn collect_outputs(
        &self,
        inputs: &[TensorRef<'_>],
        bufs: &mut [AlignedBuf],
    ) -> Result<Vec<Tensor>, ExecError> {
        let mut outs: Vec<Option<Tensor>> = self
            .storage
            .outputs
            .iter()
            .enumerate()
            .map(|(i, o)| match *o {
                OutputSource::Copy(v) => {
                    let r = self.tensor_ref(v, inputs, bufs);
                    let mut buf =
                        try_buffer(r.ty, r.bytes.len()).map_err(|error| ExecError::Memory {
                            site: format!("copy of {}", self.output_names[i]),
                            error,
                        })?;
                    buf.as_bytes_mut().copy_from_slice(r.bytes);
                    let t = Tensor::from_buf(r.ty.clone(), buf)
                        .expect("the copy is sized to its value");
                    Ok(Some(t))
                }
                OutputSource::Take(_) => Ok(None),
            })
            .collect::<Result<_, ExecError>>()?;
        let n_slots = self.storage.slot_sizes.len();
        for ((slot, o), &v) in outs
            .iter_mut()
            .zip(&self.storage.outputs)
            .zip(&self.plan.outputs)
        {
            if let OutputSource::Take(k) = *o {
                let buf = std::mem::take(&mut bufs[n_slots + k]);
                let t = Tensor::from_buf(self.plan.values[v].ty.clone(), buf)
                    .expect("returned buffers are sized to their value");
                *slot = Some(t);
            }
        }
        Ok(outs
            .into_iter()
            .map(|t| t.expect("every output is copied or taken"))
            .collect())
    }
}

/// A memory error at the call site that writes the tensor `size` is for.
fn memory_error(plan: &Plan, size: &BufferSize, error: SizeError) -> ExecError {
    ExecError::Memory {
        site: plan.instrs[size.instr].site.clone(),
        error,
    }
}

/// The pool of `threads` workers that the executors of that count share: the live one, or a
/// new one when none is alive (the pools go with their last executor).
fn shared_pool(threads: usize) -> Result<Arc<rayon::ThreadPool>, ExecError> {
    static POOLS: Mutex<BTreeMap<usize, Weak<rayon::ThreadPool>>> = Mutex::new(BTreeMap::new());
    let mut pools = lock(&POOLS);
    if let Some(pool) = pools.get(&threads).and_then(Weak::upgrade) {
        return Ok(pool);
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(move |i| format!("byoc-{threads}x-{i}"))
        .build()
        .map_err(|e| ExecError::ThreadPool {
            threads,
            message: e.to_string(),
        })?;
    let pool = Arc::new(pool);
    pools.retain(|_, p| p.strong_count() > 0);
    pools.insert(threads, Arc::downgrade(&pool));
    Ok(pool)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
