//! [`JsonRuntime`]: a parsed graph, its storage plan, and (after `init`) the bound constants
//! and built kernels.

use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use byoc_sdk::ir::tensor::{AlignedBuf, Tensor, TensorMut, TensorRef};
use byoc_sdk::ir::TensorType;

use super::plan::{plan, OutSlot, Plan, Slot};
use super::{ConstantMap, KernelProvider, KernelSpec, NodeKernel, RuntimeError};
use crate::format::{Entry, JsonGraph};
use crate::serialize::Serialized;

/// How many idle arenas a runtime keeps for reuse.
const ARENA_POOL_SIZE: usize = 4;

/// The alignment `TensorRef`/`TensorMut` promise kernels (any element type can be viewed).
const VIEW_ALIGN: usize = 8;

/// What `init` produces: constants in `const` node order and one kernel per kernel node.
struct Engine<K> {
    constants: Vec<Arc<Tensor>>,
    kernels: Vec<K>,
}

/// A JSON graph ready to run with a vendor's kernels. See the [module docs](super).
pub struct JsonRuntime<P: KernelProvider> {
    graph: JsonGraph,
    symbol: String,
    plan: Plan,
    provider: P,
    engine: OnceLock<Engine<P::Kernel>>,
    init_lock: Mutex<()>,
    arenas: Mutex<Vec<Vec<AlignedBuf>>>,
}

impl<P: KernelProvider> std::fmt::Debug for JsonRuntime<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JsonRuntime")
            .field("symbol", &self.symbol)
            .field("nodes", &self.graph.nodes.len())
            .field("initialized", &self.is_initialized())
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A buffer taken out of its slot while a kernel writes it.
enum Taken<'o> {
    Arena(usize, AlignedBuf),
    Output(usize, &'o mut [u8]),
}

impl<P: KernelProvider> JsonRuntime<P> {
    /// Parses and validates `json` and plans storage.
    pub fn new(json: &str, provider: P) -> Result<Self, RuntimeError> {
        Self::from_graph(JsonGraph::parse(json)?, provider)
    }

    /// Plans storage for a graph (validated again: graphs can be built by hand).
    pub fn from_graph(graph: JsonGraph, provider: P) -> Result<Self, RuntimeError> {
        graph.validate()?;
        let plan = plan(&graph);
        let symbol = graph
            .symbol
            .clone()
            .unwrap_or_else(|| "JSON graph".to_string());
        Ok(JsonRuntime {
            graph,
            symbol,
            plan,
            provider,
            engine: OnceLock::new(),
            init_lock: Mutex::new(()),
            arenas: Mutex::new(Vec::new()),
        })
    }

    /// The graph.
    pub fn graph(&self) -> &JsonGraph {
        &self.graph
    }

    /// The provider.
    pub fn provider(&self) -> &P {
        &self.provider
    }

    /// The names of the `run` inputs (input node names; a tuple-typed input repeats its name).
    pub fn input_names(&self) -> &[String] {
        &self.plan.input_names
    }

    /// The types of the `run` inputs, in order.
    pub fn input_types(&self) -> &[TensorType] {
        &self.plan.input_types
    }

    /// The types of the `run` outputs (one per head), in order.
    pub fn output_types(&self) -> &[TensorType] {
        &self.plan.output_types
    }

    /// Bytes of intermediate storage one run uses (the arena; buffers are shared by entries
    /// whose lifetimes do not overlap).
    pub fn arena_bytes(&self) -> usize {
        self.plan
            .arena_sizes
            .iter()
            .fold(0usize, |acc, &b| acc.saturating_add(b))
    }

    /// True once `init` succeeded.
    pub fn is_initialized(&self) -> bool {
        self.engine.get().is_some()
    }

    /// Binds the constants (by `const` node name; extra names are ignored) and builds every
    /// kernel, once: concurrent and repeated calls after a success do nothing. A failed `init`
    /// leaves the runtime uninitialized, so it can be retried.
    pub fn init(&self, constants: &ConstantMap) -> Result<(), RuntimeError> {
        let _guard = lock(&self.init_lock);
        if self.is_initialized() {
            return Ok(());
        }
        let bound = self.bind_constants(constants)?;
        let mut kernels = Vec::with_capacity(self.plan.kernels.len());
        for &n in &self.plan.kernels {
            let node = &self.graph.nodes[n];
            let inputs: Vec<TensorType> = node
                .inputs
                .iter()
                .map(|&e| self.graph.entry_type(e).clone())
                .collect();
            let const_inputs: Vec<Option<&Tensor>> = node
                .inputs
                .iter()
                .map(|&e| match self.slot(e) {
                    Slot::Const(c) => Some(bound[c].as_ref()),
                    _ => None,
                })
                .collect();
            let spec = KernelSpec {
                node: n,
                name: &node.name,
                attrs: &node.attrs,
                inputs: &inputs,
                outputs: &node.outputs,
                constants: &const_inputs,
            };
            let kernel = self
                .provider
                .build(&spec)
                .map_err(|source| RuntimeError::Build {
                    symbol: self.symbol.clone(),
                    node: n,
                    name: node.name.clone(),
                    source,
                })?;
            kernels.push(kernel);
        }
        // Only this thread (holding `init_lock`) sets the engine, so this cannot fail.
        let _ = self.engine.set(Engine {
            constants: bound,
            kernels,
        });
        Ok(())
    }

    /// A runtime for a serialized function, initialized with its constants: what a plugin's
    /// `compile` returns after [`crate::serialize`].
    pub fn with_constants(serialized: Serialized, provider: P) -> Result<Self, RuntimeError> {
        let rt = Self::from_graph(serialized.graph, provider)?;
        rt.init(&serialized.constants)?;
        Ok(rt)
    }

    /// A runtime read from the bytes of [`JsonRuntime::to_bytes`] (or
    /// [`Serialized::to_bytes`]), initialized: what a plugin's `deserialize` returns.
    pub fn from_bytes(bytes: &[u8], provider: P) -> Result<Self, RuntimeError> {
        Self::with_constants(Serialized::from_bytes(bytes)?, provider)
    }

    /// The graph and the bound constants (shared, not copied); an error before `init`.
    pub fn to_serialized(&self) -> Result<Serialized, RuntimeError> {
        let engine = self.engine()?;
        let constants = self
            .graph
            .const_nodes()
            .zip(&engine.constants)
            .map(|(n, t)| (self.graph.nodes[n].name.clone(), t.clone()))
            .collect();
        Ok(Serialized {
            graph: self.graph.clone(),
            constants,
        })
    }

    /// The graph and the bound constants as bytes ([`crate::binary`]); an error before `init`.
    pub fn to_bytes(&self) -> Result<Vec<u8>, RuntimeError> {
        Ok(self.to_serialized()?.to_bytes()?)
    }

    fn engine(&self) -> Result<&Engine<P::Kernel>, RuntimeError> {
        self.engine
            .get()
            .ok_or_else(|| RuntimeError::NotInitialized {
                symbol: self.symbol.clone(),
            })
    }

    fn bind_constants(&self, constants: &ConstantMap) -> Result<Vec<Arc<Tensor>>, RuntimeError> {
        self.graph
            .const_nodes()
            .map(|n| {
                let node = &self.graph.nodes[n];
                let tensor =
                    constants
                        .get(&node.name)
                        .ok_or_else(|| RuntimeError::MissingConstant {
                            symbol: self.symbol.clone(),
                            node: n,
                            name: node.name.clone(),
                        })?;
                if node.outputs.len() != 1 || tensor.ty() != &node.outputs[0] {
                    return Err(RuntimeError::ConstantType {
                        symbol: self.symbol.clone(),
                        node: n,
                        name: node.name.clone(),
                        expected: node.outputs[0].clone(),
                        got: tensor.ty().clone(),
                    });
                }
                Ok(tensor.clone())
            })
            .collect()
    }

    fn slot(&self, e: Entry) -> Slot {
        self.plan.slots[self.graph.entry_id(e)]
    }

    fn check_binding<'t>(
        &self,
        what: &'static str,
        expected: &[TensorType],
        got: impl ExactSizeIterator<Item = (&'t TensorType, *const u8, usize)>,
        name: impl Fn(usize) -> String,
    ) -> Result<(), RuntimeError> {
        if got.len() != expected.len() {
            return Err(RuntimeError::Count {
                symbol: self.symbol.clone(),
                what,
                expected: expected.len(),
                got: got.len(),
            });
        }
        for (index, ((ty, ptr, bytes), want)) in got.zip(expected).enumerate() {
            let problem = if ty != want {
                format!("is {ty} but the graph expects {want}")
            } else if bytes != want.size_bytes() {
                format!("has {bytes} bytes but {want} takes {}", want.size_bytes())
            } else if !(ptr as usize).is_multiple_of(VIEW_ALIGN) {
                format!("is not {VIEW_ALIGN}-byte aligned (address {ptr:p})")
            } else {
                continue;
            };
            return Err(RuntimeError::Binding {
                symbol: self.symbol.clone(),
                what,
                index,
                name: name(index),
                problem,
            });
        }
        Ok(())
    }

    /// Runs the graph: `inputs` in [`JsonRuntime::input_types`] order, `outputs` (one per
    /// head, allocated by the caller) in [`JsonRuntime::output_types`] order. Every tensor's
    /// type, byte length and 8-byte alignment is checked first.
    pub fn run(
        &self,
        inputs: &[TensorRef<'_>],
        outputs: &mut [TensorMut<'_>],
    ) -> Result<(), RuntimeError> {
        let engine = self.engine()?;
        self.check_binding(
            "input",
            &self.plan.input_types,
            inputs
                .iter()
                .map(|t| (t.ty, t.bytes.as_ptr(), t.bytes.len())),
            |i| self.plan.input_names[i].clone(),
        )?;
        self.check_binding(
            "output",
            &self.plan.output_types,
            outputs
                .iter()
                .map(|t| (t.ty, t.bytes.as_ptr(), t.bytes.len())),
            |k| {
                self.graph.nodes[self.graph.heads[k].node_index()]
                    .name
                    .clone()
            },
        )?;
        let idle = lock(&self.arenas).pop();
        let mut arena = match idle {
            Some(arena) => arena,
            None => self.new_arena()?,
        };
        let mut out_bufs: Vec<Option<&mut [u8]>> =
            outputs.iter_mut().map(|o| Some(&mut *o.bytes)).collect();
        for (i, kernel) in engine.kernels.iter().enumerate() {
            self.run_node(i, kernel, engine, inputs, &mut arena, &mut out_bufs)?;
        }
        for &(k, source) in &self.plan.copies {
            self.copy_head(k, source, engine, inputs, &arena, &mut out_bufs);
        }
        let mut pool = lock(&self.arenas);
        if pool.len() < ARENA_POOL_SIZE {
            pool.push(arena);
        }
        Ok(())
    }

    /// A zero-filled arena; memory the system refuses is an error, never an abort.
    fn new_arena(&self) -> Result<Vec<AlignedBuf>, RuntimeError> {
        self.plan
            .arena_sizes
            .iter()
            .map(|&bytes| {
                AlignedBuf::try_zeroed(bytes).ok_or_else(|| RuntimeError::Memory {
                    symbol: self.symbol.clone(),
                    bytes,
                })
            })
            .collect()
    }

    /// The bytes of a slot that is not currently taken.
    fn read_slot<'a>(
        &self,
        slot: Slot,
        engine: &'a Engine<P::Kernel>,
        inputs: &'a [TensorRef<'_>],
        arena: &'a [AlignedBuf],
        out_bufs: &'a [Option<&mut [u8]>],
    ) -> &'a [u8] {
        match slot {
            Slot::Output(k) => out_bufs[k].as_deref().unwrap_or(&[]),
            other => Self::read_owned(other, engine, inputs, arena),
        }
    }

    /// The bytes of an input, constant or arena slot (an output slot reads as empty).
    fn read_owned<'a>(
        slot: Slot,
        engine: &'a Engine<P::Kernel>,
        inputs: &'a [TensorRef<'_>],
        arena: &'a [AlignedBuf],
    ) -> &'a [u8] {
        match slot {
            Slot::Input(i) => inputs[i].bytes,
            Slot::Const(c) => engine.constants[c].as_bytes(),
            Slot::Arena(a) => arena[a].as_bytes(),
            Slot::Output(_) => &[],
        }
    }

    /// Fills head `k` from `source` (an input, a constant, or another head's tensor), straight
    /// from buffer to buffer.
    fn copy_head(
        &self,
        k: usize,
        source: Slot,
        engine: &Engine<P::Kernel>,
        inputs: &[TensorRef<'_>],
        arena: &[AlignedBuf],
        out_bufs: &mut [Option<&mut [u8]>],
    ) {
        let (src, dst): (&[u8], &mut [u8]) = match source {
            // The plan copies a repeated head from the first head holding the entry, so `j < k`.
            Slot::Output(j) if j < k => {
                let (before, rest) = out_bufs.split_at_mut(k);
                (
                    before[j].as_deref().unwrap_or(&[]),
                    rest[0].as_deref_mut().unwrap_or_default(),
                )
            }
            other => (
                Self::read_owned(other, engine, inputs, arena),
                out_bufs[k].as_deref_mut().unwrap_or_default(),
            ),
        };
        let n = dst.len().min(src.len());
        dst[..n].copy_from_slice(&src[..n]);
    }

    /// Runs kernel `i` (the `i`-th kernel node in execution order).
    fn run_node<'o>(
        &self,
        i: usize,
        kernel: &P::Kernel,
        engine: &Engine<P::Kernel>,
        inputs: &[TensorRef<'_>],
        arena: &mut [AlignedBuf],
        out_bufs: &mut [Option<&'o mut [u8]>],
    ) -> Result<(), RuntimeError> {
        let n = self.plan.kernels[i];
        let node = &self.graph.nodes[n];
        let mut taken: Vec<Taken<'o>> = self.plan.kernel_outputs[i]
            .iter()
            .map(|&target| match target {
                OutSlot::Output(k) => Taken::Output(k, out_bufs[k].take().unwrap_or_default()),
                OutSlot::Arena(a) => Taken::Arena(a, std::mem::take(&mut arena[a])),
            })
            .collect();
        let result = {
            let in_views: Vec<TensorRef<'_>> = node
                .inputs
                .iter()
                .map(|&e| {
                    let ty = self.graph.entry_type(e);
                    let bytes = self.read_slot(self.slot(e), engine, inputs, arena, out_bufs);
                    TensorRef {
                        ty,
                        bytes: &bytes[..ty.size_bytes().min(bytes.len())],
                    }
                })
                .collect();
            let mut out_views: Vec<TensorMut<'_>> = taken
                .iter_mut()
                .zip(&node.outputs)
                .map(|(t, ty)| {
                    let bytes: &mut [u8] = match t {
                        Taken::Arena(_, buf) => buf.as_bytes_mut(),
                        Taken::Output(_, b) => b,
                    };
                    let len = ty.size_bytes().min(bytes.len());
                    TensorMut {
                        ty,
                        bytes: &mut bytes[..len],
                    }
                })
                .collect();
            kernel.run(&in_views, &mut out_views)
        };
        for t in taken {
            match t {
                Taken::Arena(a, buf) => arena[a] = buf,
                Taken::Output(k, b) => out_bufs[k] = Some(b),
            }
        }
        result.map_err(|source| RuntimeError::Kernel {
            symbol: self.symbol.clone(),
            node: n,
            name: node.name.clone(),
            source,
        })
    }
}
