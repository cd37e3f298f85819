//! [`build`]: the compiler as one call. A module and targets in, a [`Compiled`] model out:
//!
//! ```text
//! partition (prepare .. prune)  -> the host passes (with the LLVM host code generator)
//!   -> codegen of each partition with its target's runtime -> host codegen -> the plan
//! ```
//!
//! Partitioning and the host passes are one pipeline run ([`crate::pipeline::partition`] up
//! to [`Stage::HostFuse`], or [`Stage::Partition`] with the reference kernels), so what
//! `byoc inspect --stage host-fuse` shows is what is compiled. Every partition is compiled by
//! the runtime its [`Target`] carries; the fused host functions by the host code generator
//! (a function it cannot compile runs on the reference kernels, with a [`Fallback`] note, or
//! fails the build when strict). The executor's plan is made on first use ([`Compiled::run`]).
//! A model without targets runs only the host passes.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use byoc_artifact::{Artifact, ArtifactError};
use byoc_exec::plugin::{compile_external, CodegenError};
use byoc_exec::{ExecError, ExecOptions, Executor, ExternalModules, Profile};
use byoc_host_llvm::{compile_fused, run_host_passes, Fallback, HostCodegenError};
use byoc_ir::{Module, Tensor};
use byoc_passes::host_fuse::HOST_CODEGEN_TARGET;
use byoc_passes::PassError;
use byoc_sdk::CompileOptions;
use thiserror::Error;

use crate::pipeline::{partition, PartitionOptions, Partitioned, PipelineError, Stage};
use crate::report::summary::Summary;
use crate::target::{runtimes, Target};

/// How the host runs what stays on it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HostCodegen {
    /// The reference kernels, one op at a time (the numerical reference).
    Kernels,
    /// Fused loops compiled with LLVM for the host CPU.
    #[default]
    Llvm,
}

/// Options of [`build`].
#[derive(Clone, Debug, Default)]
pub struct BuildOptions {
    /// Partitioning (its `stop_after` is set by the build: the host passes with
    /// [`HostCodegen::Llvm`], partitioning with [`HostCodegen::Kernels`]).
    pub partition: PartitionOptions,
    /// The options every partition is compiled with (plugin options); `threads` is the
    /// executor's thread count unless given here ([`CompileOptions::or_threads`]).
    pub compile: CompileOptions,
    /// The host code generator.
    pub host_codegen: HostCodegen,
    /// Fail when a fused host function cannot be compiled (instead of running it on the
    /// reference kernels); needs [`HostCodegen::Llvm`].
    pub strict_host_codegen: bool,
    /// Fail when any op of the model would stay on the host (`--strict`).
    pub no_host_fallback: bool,
    /// Threads, profiling and the memory budget of the executor that runs the model; the
    /// budget holds for the build as well (`byoc_ir::memory`).
    pub exec: ExecOptions,
}

/// Errors of [`build`].
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum BuildError {
    /// Partitioning failed.
    #[error("partitioning failed")]
    Partition(#[from] PipelineError),
    /// A host pass failed (a build without targets).
    #[error("host passes failed")]
    HostPass(#[from] PassError),
    /// Ops would stay on the host and [`BuildOptions::no_host_fallback`] is set; the message
    /// lists them with the reasons the targets gave.
    #[error("{count} op call(s) would fall back to the host:\n{ops}")]
    HostFallback {
        /// How many op calls.
        count: usize,
        /// One line per op: `  <op> x<n> (<reasons>)`.
        ops: String,
    },
    /// A partition's codegen failed.
    #[error("codegen failed")]
    Codegen(#[from] CodegenError),
    /// Host code generation failed.
    #[error("host code generation failed")]
    HostCodegen(#[from] HostCodegenError),
    /// Strict host code generation asks for the LLVM code generator.
    #[error("strict host code generation needs the LLVM host code generator")]
    StrictNeedsLlvm,
}

/// A compiled model: the module (partitioned, its host part fused), the compiled code of its
/// partitions and host functions, what partitioning decided, and the executor's plan.
pub struct Compiled {
    partitioned: Partitioned,
    externals: ExternalModules,
    fallbacks: Vec<Fallback>,
    exec: ExecOptions,
    plan: OnceLock<Executor>,
}

impl std::fmt::Debug for Compiled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compiled")
            .field("partitioned", &self.partitioned)
            .field("externals", &self.externals)
            .field("fallbacks", &self.fallbacks)
            .field("exec", &self.exec)
            .field("planned", &self.plan.get().is_some())
            .finish()
    }
}

impl Compiled {
    /// A model as an artifact holds it: the module and its compiled functions (no
    /// partitioning report, no fallbacks).
    pub fn from_artifact(module: Module, externals: ExternalModules, exec: ExecOptions) -> Self {
        Compiled {
            partitioned: Partitioned::of(module),
            externals,
            fallbacks: Vec::new(),
            exec,
            plan: OnceLock::new(),
        }
    }

    /// The module that runs.
    pub fn module(&self) -> &Module {
        &self.partitioned.module
    }

    /// The compiled functions, by name.
    pub fn externals(&self) -> &ExternalModules {
        &self.externals
    }

    /// The fused host functions that run on the reference kernels, and why.
    pub fn fallbacks(&self) -> &[Fallback] {
        &self.fallbacks
    }

    /// What partitioning decided (rejections, pruned partitions, declined composites,
    /// snapshots), with the module.
    pub fn partitioned(&self) -> &Partitioned {
        &self.partitioned
    }

    /// The partitioning summary (partitions per target, host ops, reasons).
    pub fn summary(&self) -> Summary {
        Summary::of(&self.partitioned)
    }

    /// The executor's plan, made on first use.
    pub fn executor(&self) -> Result<&Executor, ExecError> {
        if let Some(executor) = self.plan.get() {
            return Ok(executor);
        }
        let executor = Executor::with_externals(self.module(), self.exec, &self.externals)?;
        Ok(self.plan.get_or_init(|| executor))
    }

    /// Runs the model on inputs by name; outputs in the module's result order.
    pub fn run(&self, inputs: &BTreeMap<String, Tensor>) -> Result<Vec<Tensor>, ExecError> {
        self.executor()?.run_named(inputs)
    }

    /// The profile of the last run (with [`ExecOptions::profile`]).
    pub fn profile(&self) -> Option<Profile> {
        self.plan.get().and_then(Executor::last_profile)
    }

    /// The model as an artifact (sign it with `Artifact::to_signed_bytes`).
    pub fn to_artifact(&self) -> Result<Artifact, ArtifactError> {
        Artifact::build(self.module(), &self.externals)
    }

    /// The parts: the module, its compiled functions and the host fallbacks.
    pub fn into_parts(self) -> (Module, ExternalModules, Vec<Fallback>) {
        (self.partitioned.module, self.externals, self.fallbacks)
    }
}

/// A step of [`build_observed`], for progress display.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BuildStep<'a> {
    /// Partitioning is done: this many partitions are to be compiled by their runtimes.
    Partitioned {
        /// Partitions to compile.
        partitions: usize,
    },
    /// A partition was compiled.
    Compiled {
        /// Its name.
        partition: &'a str,
    },
    /// The host code generator starts.
    HostCodegen,
}

/// Compiles `module` for `targets` (priority order: earlier targets win; none: the host runs
/// everything), as the module docs say.
pub fn build(
    module: &Module,
    targets: &[Target],
    options: &BuildOptions,
) -> Result<Compiled, BuildError> {
    build_observed(module, targets, options, &mut |_| {})
}

/// [`build`], telling `observe` each [`BuildStep`] as it is reached.
pub fn build_observed(
    module: &Module,
    targets: &[Target],
    options: &BuildOptions,
    observe: &mut dyn FnMut(BuildStep<'_>),
) -> Result<Compiled, BuildError> {
    byoc_ir::memory::with_budget(options.exec.memory_budget, || {
        build_under_budget(module, targets, options, observe)
    })
}

/// [`build_observed`] under the budget in force.
fn build_under_budget(
    module: &Module,
    targets: &[Target],
    options: &BuildOptions,
    observe: &mut dyn FnMut(BuildStep<'_>),
) -> Result<Compiled, BuildError> {
    if options.strict_host_codegen && options.host_codegen != HostCodegen::Llvm {
        return Err(BuildError::StrictNeedsLlvm);
    }
    let stop_after = match options.host_codegen {
        HostCodegen::Llvm => Stage::HostFuse,
        HostCodegen::Kernels => Stage::Partition,
    };
    let partitioned = if targets.is_empty() {
        host_passes_only(module, stop_after)?
    } else {
        partition(
            module,
            targets,
            &PartitionOptions {
                stop_after,
                ..options.partition.clone()
            },
        )?
    };
    if options.no_host_fallback {
        check_no_fallback(&Summary::of(&partitioned))?;
    }
    let runtimes = runtimes(targets);
    let compile = options.compile.or_threads(options.exec.threads);
    let mut externals = ExternalModules::new();
    let partitions: Vec<_> = partitioned
        .module
        .partitions()
        .filter(|(_, target, _)| *target != HOST_CODEGEN_TARGET)
        .collect();
    observe(BuildStep::Partitioned {
        partitions: partitions.len(),
    });
    for (name, target, f) in partitions {
        externals.insert(
            name,
            compile_external(name, target, f, &runtimes, &compile)?,
        );
        observe(BuildStep::Compiled { partition: name });
    }
    let (module, fallbacks) = match options.host_codegen {
        HostCodegen::Kernels => (partitioned.module, Vec::new()),
        HostCodegen::Llvm => {
            observe(BuildStep::HostCodegen);
            let host = compile_fused(partitioned.module, &compile, options.strict_host_codegen)?;
            for (name, m) in host.externals.iter() {
                externals.insert(name, m.clone());
            }
            (host.module, host.fallbacks)
        }
    };
    Ok(Compiled {
        partitioned: Partitioned {
            module,
            ..partitioned
        },
        externals,
        fallbacks,
        exec: options.exec,
        plan: OnceLock::new(),
    })
}

/// A build without targets: only the host passes run (with the LLVM host code generator).
fn host_passes_only(module: &Module, stop_after: Stage) -> Result<Partitioned, PassError> {
    let mut module = module.clone();
    if stop_after == Stage::HostFuse {
        run_host_passes(&mut module)?;
    }
    Ok(Partitioned::of(module))
}

/// [`BuildOptions::no_host_fallback`]: fails when `summary` leaves any op on the host, naming
/// each op with its count and the reasons the targets declined it.
fn check_no_fallback(summary: &Summary) -> Result<(), BuildError> {
    if summary.host_ops.is_empty() {
        return Ok(());
    }
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for op in &summary.host_ops {
        match counts.last_mut() {
            Some((last, n)) if *last == op.as_str() => *n += 1,
            _ => counts.push((op, 1)),
        }
    }
    let lines: Vec<String> = counts
        .iter()
        .map(|(op, n)| {
            let reasons: Vec<String> = summary
                .rejected
                .iter()
                .filter(|r| r.op == *op)
                .map(|r| format!("{}: {}", r.target, r.reason))
                .collect();
            let why = if !reasons.is_empty() {
                reasons.join("; ")
            } else if summary.pruned.is_empty() {
                "no selected target took it".to_string()
            } else {
                "supported, but Prune inlined its partition back".to_string()
            };
            format!("  {op} x{n} ({why})")
        })
        .collect();
    Err(BuildError::HostFallback {
        count: summary.host_ops.len(),
        ops: lines.join("\n"),
    })
}
