//! The dnnl runtime: a JSON graph executed as one sequence of oneDNN primitives.
//!
//! [`DnnlRuntime::new`] parses the graph once, binds its constants and builds every primitive
//! ([`ops`]): compute primitives (convolution, deconvolution, inner product, pooling, concat)
//! get `format_tag::any` outputs and weights, so oneDNN picks its layouts (except where a
//! convolution's layout lets a concatenation run in place, [`layout`]); weights are
//! reordered once; activations stay blocked from primitive to primitive and are reordered
//! only where a consumer wants another layout and at the partition's outputs ([`plan`]).
//! Intermediates live in one arena laid out by liveness; every primitive uses a user
//! scratchpad. [`DnnlRuntime::run`] takes `&self`: each run borrows an execution state from a
//! pool ([`exec`]), so several threads may run one runtime at once. All oneDNN work runs on
//! one driver thread ([`team`]), so the process keeps a single OpenMP team.
//!
//! [`FpMath::Bf16`] runs convolutions, deconvolutions, inner products and matmuls on bf16
//! data and weights (float32 accumulation, post-ops and results): their operands are
//! converted by reorders (weights once, at build), everything else stays float32.

mod attrs;
mod exec;
mod int8;
mod layout;
mod ops;
mod pages;
mod plan;
mod team;

pub use int8::MAX_SPLIT_REDUCTION;
pub use team::on_team;

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use byoc_json_runtime::{ConstantMap, FormatError, JsonGraph, NodeKind};
use byoc_sdk::ir::tensor::{TensorMut, TensorRef};
use byoc_sdk::ir::DType;
use byoc_sdk::ir::TensorType;
use thiserror::Error;

use crate::dnnl::{channel_block, DataType, DnnlError, Engine, MemoryDesc};
use exec::{ExecState, StatePool};
use plan::{Builder, Plan, ValueId, Work};

/// Why building one node failed (wrapped with the node in [`RuntimeError::Node`]).
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum OpError {
    /// The node's attributes, types or inputs are not what the runtime can execute.
    #[error("{0}")]
    Unsupported(String),
    /// oneDNN refused.
    #[error(transparent)]
    Dnnl(#[from] DnnlError),
}

impl OpError {
    /// An [`OpError::Unsupported`] with this message.
    pub fn msg(message: impl Into<String>) -> Self {
        OpError::Unsupported(message.into())
    }
}

/// An error of the dnnl runtime.
#[derive(Debug, Error)]
pub enum RuntimeError {
    /// The graph text is not a valid JSON graph.
    #[error("invalid JSON graph: {0}")]
    Graph(#[from] FormatError),
    /// A node cannot be built.
    #[error("{symbol}: node {node} ('{op}'): {source}")]
    Node {
        /// The graph symbol.
        symbol: String,
        /// The node id.
        node: usize,
        /// The node's op or composite name.
        op: String,
        /// What is wrong.
        source: OpError,
    },
    /// A constant is missing or does not match its node.
    #[error("{symbol}: constant '{name}': {message}")]
    Constant {
        /// The graph symbol.
        symbol: String,
        /// The const node name.
        name: String,
        /// What is wrong.
        message: String,
    },
    /// The run's inputs or outputs do not match the graph.
    #[error("{symbol}: {message}")]
    Binding {
        /// The graph symbol.
        symbol: String,
        /// What is wrong.
        message: String,
    },
    /// oneDNN failed outside any node (engine, stream, execution state).
    #[error("{symbol}: {source}")]
    Dnnl {
        /// The graph symbol.
        symbol: String,
        /// The failed call.
        source: DnnlError,
    },
    /// A primitive failed while running.
    #[error("{symbol}: step {step} (node {node}, {label}): {source}")]
    Execute {
        /// The graph symbol.
        symbol: String,
        /// The step index.
        step: usize,
        /// The graph node of the step.
        node: usize,
        /// The step's label.
        label: String,
        /// The failed call.
        source: DnnlError,
    },
}

/// The float math mode: which element type convolutions and matmuls read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FpMath {
    /// Float32 everywhere (oneDNN's `fpmath_mode::strict`).
    #[default]
    Strict,
    /// Convolutions, deconvolutions, inner products and matmuls read bf16 data and weights
    /// and accumulate in float32; their post-ops (bias, sum, eltwise tail) run on the float32
    /// accumulator and their results are float32, as are all other ops and the partition's
    /// inputs and outputs (oneDNN's `fpmath_mode::bf16`).
    Bf16,
}

impl FpMath {
    /// The element type of convolution and matmul operands.
    pub fn operand_type(self) -> DataType {
        match self {
            FpMath::Strict => DataType::F32,
            FpMath::Bf16 => DataType::Bf16,
        }
    }
}

/// Where the exact integer epilogue of an int8 convolution or inner product runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Int8Epilogue {
    /// As oneDNN post-ops of the primitive wherever interval arithmetic proves float32
    /// computes it exactly, else as [`Int8Epilogue::Pass`].
    #[default]
    PostOps,
    /// Always as a separate integer pass of the runtime over the int32 accumulator.
    Pass,
}

/// How a runtime is built and run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RuntimeOptions {
    /// The OpenMP thread count of builds and runs (`None`: OpenMP's default, i.e.
    /// `OMP_NUM_THREADS` or all cores).
    pub threads: Option<usize>,
    /// The float math mode.
    pub fpmath: FpMath,
    /// Where int8 epilogues run.
    pub int8_epilogue: Int8Epilogue,
}

/// Float32 with this thread count.
impl From<Option<usize>> for RuntimeOptions {
    fn from(threads: Option<usize>) -> Self {
        RuntimeOptions {
            threads,
            fpmath: FpMath::Strict,
            int8_epilogue: Int8Epilogue::PostOps,
        }
    }
}

/// A graph built into oneDNN primitives, ready to run.
pub struct DnnlRuntime {
    symbol: String,
    inputs: Vec<TensorType>,
    outputs: Vec<TensorType>,
    threads: Option<usize>,
    profile: bool,
    // Field order matters for drop: states, then the plan (whose constants the states'
    // memories point to), then the engine.
    pool: StatePool,
    plan: Plan,
    engine: Engine,
}

impl fmt::Debug for DnnlRuntime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DnnlRuntime")
            .field("symbol", &self.symbol)
            .field("steps", &self.plan.steps.len())
            .field("arena_bytes", &self.plan.arena_bytes)
            .finish()
    }
}

/// The one-line summary of a plan step, see [`DnnlRuntime::steps`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepInfo {
    /// The graph node.
    pub node: usize,
    /// What runs: the primitive kind and implementation, or a reorder's layouts.
    pub label: String,
}

fn dims_of(ty: &TensorType) -> Vec<i64> {
    if ty.shape.is_empty() {
        vec![1]
    } else {
        ty.shape.iter().map(|&d| d as i64).collect()
    }
}

impl DnnlRuntime {
    /// Parses `json`, binds `constants` (by const-node name) and builds every primitive.
    /// `options`: the thread count and float math mode ([`RuntimeOptions`]; a bare
    /// `Option<usize>` is the thread count in float32).
    pub fn new(
        json: &str,
        constants: &ConstantMap,
        options: impl Into<RuntimeOptions>,
    ) -> Result<Self, RuntimeError> {
        let graph = JsonGraph::parse(json)?;
        Self::from_graph(&graph, constants, options)
    }

    /// [`DnnlRuntime::new`] on a parsed graph.
    pub fn from_graph(
        graph: &JsonGraph,
        constants: &ConstantMap,
        options: impl Into<RuntimeOptions>,
    ) -> Result<Self, RuntimeError> {
        let options = options.into();
        team::on_team(options.threads, || Self::build(graph, constants, options))
    }

    fn build(
        graph: &JsonGraph,
        constants: &ConstantMap,
        options: RuntimeOptions,
    ) -> Result<Self, RuntimeError> {
        let symbol = graph.symbol.clone().unwrap_or_else(|| "dnnl".to_string());
        let engine = Engine::cpu().map_err(|source| RuntimeError::Dnnl {
            symbol: symbol.clone(),
            source,
        })?;
        let mut b = Builder::new(
            &engine,
            options.fpmath.operand_type(),
            options.int8_epilogue == Int8Epilogue::PostOps,
        );
        let mut entry_value: HashMap<usize, ValueId> = HashMap::new();
        // The last node reading each entry (heads count as read after every node).
        let mut last_reader = vec![0usize; graph.num_entries()];
        for (id, node) in graph.nodes.iter().enumerate() {
            for &e in &node.inputs {
                last_reader[graph.entry_id(e)] = id;
            }
        }
        let heads: Vec<usize> = graph.heads.iter().map(|&e| graph.entry_id(e)).collect();
        for &h in &heads {
            last_reader[h] = usize::MAX;
        }
        let in_place_parts = layout::in_place_parts(graph, &last_reader, channel_block());
        let mut inputs = Vec::new();
        let node_err = |node: usize, op: &str, source: OpError| RuntimeError::Node {
            symbol: symbol.clone(),
            node,
            op: op.to_string(),
            source,
        };
        for (id, node) in graph.nodes.iter().enumerate() {
            b.node = id;
            let eid = |i: usize| graph.node_row_ptr[id] as usize + i;
            match node.kind {
                NodeKind::Input => {
                    for (i, ty) in node.outputs.iter().enumerate() {
                        let desc = plain_desc(ty).map_err(|e| node_err(id, &node.name, e))?;
                        let v = b.input(inputs.len(), desc);
                        inputs.push(ty.clone());
                        entry_value.insert(eid(i), v);
                    }
                }
                NodeKind::Const => {
                    let ty = &node.outputs[0];
                    let tensor =
                        constants
                            .get(&node.name)
                            .ok_or_else(|| RuntimeError::Constant {
                                symbol: symbol.clone(),
                                name: node.name.clone(),
                                message: "no value bound for it".to_string(),
                            })?;
                    if tensor.ty() != ty {
                        return Err(RuntimeError::Constant {
                            symbol: symbol.clone(),
                            name: node.name.clone(),
                            message: format!("bound {} but the graph says {ty}", tensor.ty()),
                        });
                    }
                    let desc = plain_desc(ty).map_err(|e| node_err(id, &node.name, e))?;
                    let v = b.constant(Arc::clone(tensor), desc);
                    entry_value.insert(eid(0), v);
                }
                NodeKind::Kernel => {
                    let args: Vec<ValueId> = node
                        .inputs
                        .iter()
                        .map(|&e| entry_value[&graph.entry_id(e)])
                        .collect();
                    let in_types: Vec<&TensorType> =
                        node.inputs.iter().map(|&e| graph.entry_type(e)).collect();
                    let in_entries: Vec<usize> =
                        node.inputs.iter().map(|&e| graph.entry_id(e)).collect();
                    let out_entries: Vec<usize> = (0..node.outputs.len()).map(eid).collect();
                    let cx = ops::NodeCx {
                        node: id,
                        name: &node.name,
                        attrs: &node.attrs,
                        args: &args,
                        in_types: &in_types,
                        in_entries: &in_entries,
                        out_types: &node.outputs,
                        out_entries: &out_entries,
                        last_reader: &last_reader,
                        in_place_parts: &in_place_parts,
                    };
                    let outs = ops::build(&mut b, &cx).map_err(|e| node_err(id, &node.name, e))?;
                    for (i, v) in outs.into_iter().enumerate() {
                        b.claim(v, eid(i));
                        entry_value.insert(eid(i), v);
                    }
                }
            }
        }
        let outputs: Vec<TensorType> = graph
            .heads
            .iter()
            .map(|&e| graph.entry_type(e).clone())
            .collect();
        let last = graph.nodes.len().saturating_sub(1);
        let mut head_values = Vec::with_capacity(heads.len());
        for (&h, ty) in heads.iter().zip(&outputs) {
            let desc = plain_desc(ty).map_err(|e| node_err(last, "output", e))?;
            head_values.push((entry_value[&h], desc));
        }
        let plan = b
            .finish(&head_values)
            .map_err(|e| node_err(last, "output", e))?;
        Ok(DnnlRuntime {
            symbol,
            inputs,
            outputs,
            threads: options.threads,
            profile: std::env::var_os("BYOC_DNNL_PROFILE").is_some_and(|v| !v.is_empty()),
            pool: StatePool::default(),
            plan,
            engine,
        })
    }

    /// The graph symbol.
    pub fn symbol(&self) -> &str {
        &self.symbol
    }

    /// The run inputs' types, in order.
    pub fn input_types(&self) -> &[TensorType] {
        &self.inputs
    }

    /// The run outputs' types, in order.
    pub fn output_types(&self) -> &[TensorType] {
        &self.outputs
    }

    /// Bytes of intermediates one run uses (after reuse by liveness).
    pub fn arena_bytes(&self) -> usize {
        self.plan.arena_bytes
    }

    /// The primitives a run executes, in order.
    pub fn steps(&self) -> Vec<StepInfo> {
        self.plan
            .steps
            .iter()
            .map(|s| StepInfo {
                node: s.node,
                label: s.label.clone(),
            })
            .collect()
    }

    /// Runs the graph: `inputs` and `outputs` in graph order, exactly the graph's types.
    /// With `BYOC_DNNL_PROFILE` set (when the runtime was built), each run also prints its
    /// steps' times to stderr (see docs/dnnl.md).
    pub fn run(
        &self,
        inputs: &[TensorRef<'_>],
        outputs: &mut [TensorMut<'_>],
    ) -> Result<(), RuntimeError> {
        if !self.profile {
            return self.execute(inputs, outputs, None);
        }
        let times = self.run_profiled(inputs, outputs)?;
        let total: Duration = times.iter().sum();
        let mut report = format!(
            "dnnl profile {}: {} steps, {:.3} ms\n",
            self.symbol,
            times.len(),
            total.as_secs_f64() * 1e3
        );
        for (i, (s, t)) in self.plan.steps.iter().zip(&times).enumerate() {
            report += &format!(
                "  step {i:>3} node {:>4} {:>9.3} ms  {}\n",
                s.node,
                t.as_secs_f64() * 1e3,
                s.label
            );
        }
        eprint!("{report}");
        Ok(())
    }

    /// [`DnnlRuntime::run`] that waits after every step and returns each step's wall time, in
    /// [`DnnlRuntime::steps`] order.
    pub fn run_profiled(
        &self,
        inputs: &[TensorRef<'_>],
        outputs: &mut [TensorMut<'_>],
    ) -> Result<Vec<Duration>, RuntimeError> {
        let mut times = Vec::with_capacity(self.plan.steps.len());
        self.execute(inputs, outputs, Some(&mut times))?;
        Ok(times)
    }

    fn execute(
        &self,
        inputs: &[TensorRef<'_>],
        outputs: &mut [TensorMut<'_>],
        times: Option<&mut Vec<Duration>>,
    ) -> Result<(), RuntimeError> {
        team::on_team(self.threads, || self.execute_here(inputs, outputs, times))
    }

    fn execute_here(
        &self,
        inputs: &[TensorRef<'_>],
        outputs: &mut [TensorMut<'_>],
        mut times: Option<&mut Vec<Duration>>,
    ) -> Result<(), RuntimeError> {
        self.check_views(
            "input",
            &self.inputs,
            &inputs.iter().map(|t| t.ty).collect::<Vec<_>>(),
        )?;
        self.check_views(
            "output",
            &self.outputs,
            &outputs.iter().map(|t| t.ty).collect::<Vec<_>>(),
        )?;
        let dnnl_err = |source| RuntimeError::Dnnl {
            symbol: self.symbol.clone(),
            source,
        };
        let mut state = match self.pool.take() {
            Some(s) => s,
            None => ExecState::new(&self.engine, &self.plan).map_err(dnnl_err)?,
        };
        let in_ptrs: Vec<*mut u8> = inputs.iter().map(|t| t.bytes.as_ptr().cast_mut()).collect();
        let out_ptrs: Vec<*mut u8> = outputs.iter_mut().map(|t| t.bytes.as_mut_ptr()).collect();
        state.bind(&in_ptrs, &out_ptrs).map_err(dnnl_err)?;
        for (i, (step, args)) in self.plan.steps.iter().zip(&state.args).enumerate() {
            let start = Instant::now();
            let failed = |source| RuntimeError::Execute {
                symbol: self.symbol.clone(),
                step: i,
                node: step.node,
                label: step.label.clone(),
                source,
            };
            match &step.work {
                // SAFETY: the state's memories point at its arena and scratchpad (sized by the
                // plan), at the plan's constants, and at this run's views, whose types (hence
                // byte sizes) were checked above; the state is this run's alone.
                Work::Primitive(p) => unsafe { p.execute(&state.stream, args) }.map_err(failed)?,
                Work::Int(pass) => {
                    // The pass reads what earlier primitives wrote.
                    state.stream.wait().map_err(failed)?;
                    let ptrs: Vec<*mut u8> =
                        step.args.iter().map(|&(_, v)| state.ptrs[v]).collect();
                    // SAFETY: as above; the pass was built for these values' descriptors.
                    if !unsafe { pass.run(&ptrs) } {
                        return Err(RuntimeError::Execute {
                            symbol: self.symbol.clone(),
                            step: i,
                            node: step.node,
                            label: step.label.clone(),
                            source: DnnlError {
                                call: "integer pass",
                                status: "a worker panicked",
                            },
                        });
                    }
                }
            }
            if let Some(times) = times.as_deref_mut() {
                state.stream.wait().map_err(failed)?;
                times.push(start.elapsed());
            }
        }
        state.stream.wait().map_err(dnnl_err)?;
        self.pool.give(state);
        Ok(())
    }

    fn check_views(
        &self,
        what: &str,
        expected: &[TensorType],
        got: &[&TensorType],
    ) -> Result<(), RuntimeError> {
        let err = |message: String| RuntimeError::Binding {
            symbol: self.symbol.clone(),
            message,
        };
        if expected.len() != got.len() {
            return Err(err(format!(
                "expected {} {what}(s) but got {}",
                expected.len(),
                got.len()
            )));
        }
        for (i, (e, g)) in expected.iter().zip(got).enumerate() {
            if e != *g {
                return Err(err(format!("{what} {i} is {g} but the graph expects {e}")));
            }
        }
        Ok(())
    }
}

/// The row-major descriptor of a graph input, constant or output (float32, or int8/int32 of
/// quantized graphs).
fn plain_desc(ty: &TensorType) -> Result<MemoryDesc, OpError> {
    Ok(MemoryDesc::plain_of(&dims_of(ty), int8::data_type(ty)?)?)
}

/// Only float32 runs on this runtime's ops other than the int8 composites and `cast`.
fn check_f32(ty: &TensorType) -> Result<(), OpError> {
    if ty.dtype == DType::Float32 {
        Ok(())
    } else {
        Err(OpError::msg(format!(
            "dtype {} is not supported (the dnnl runtime runs float32 only)",
            ty.dtype
        )))
    }
}
