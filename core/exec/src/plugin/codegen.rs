//! Codegen: compiling every external function of a partitioned module with its target's
//! runtime, into the [`ExternalModules`] the executor dispatches to.
//!
//! For each global function with a `Compiler` attribute: the target's runtime is looked up
//! in [`Runtimes`] (missing: an error, never a host fallback); when the runtime's description
//! asks for it, its optimize hook rewrites the partition (the signature must not change);
//! then the runtime compiles it ([`compile_externals`]), or shows the source it would compile
//! ([`emit_sources`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use super::error::CodegenError;
use super::reference::ReferenceRuntime;
use crate::{ExternalModule, ExternalModules};
use byoc_ir::{infer_types, Function, Module};
use byoc_sdk::{CompileOptions, EmittedSource, PartitionedFunction, Plugin, PluginError};

/// The runtime that compiles each target's partitions.
#[derive(Clone, Default)]
pub struct Runtimes {
    by_target: BTreeMap<String, Arc<dyn Plugin>>,
}

impl std::fmt::Debug for Runtimes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map()
            .entries(self.by_target.iter().map(|(t, p)| (t, p.name())))
            .finish()
    }
}

impl Runtimes {
    /// No runtimes.
    pub fn new() -> Self {
        Runtimes::default()
    }

    /// Compiles `target`'s partitions with `plugin`.
    pub fn with(mut self, target: impl Into<String>, plugin: Arc<dyn Plugin>) -> Self {
        self.by_target.insert(target.into(), plugin);
        self
    }

    /// Compiles `target`'s partitions with the reference runtime (host kernels).
    pub fn with_reference(self, target: impl Into<String>) -> Self {
        self.with(target, Arc::new(ReferenceRuntime))
    }

    /// The reference runtime for every target that has a partition in `module` (tests and
    /// declarative targets).
    pub fn reference_for(module: &Module) -> Self {
        external_functions(module)
            .into_iter()
            .fold(Runtimes::new(), |r, (_, target)| r.with_reference(target))
    }

    /// The plugin names of the runtimes, without repeats.
    pub fn plugin_names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.by_target.values().map(|p| p.name()).collect();
        names.sort_unstable();
        names.dedup();
        names
    }

    /// The runtime of `target`.
    pub fn get(&self, target: &str) -> Option<&Arc<dyn Plugin>> {
        self.by_target.get(target)
    }
}

/// The external functions of `module` with their targets, by name.
pub fn external_functions(module: &Module) -> Vec<(String, String)> {
    module
        .partitions()
        .map(|(name, target, _)| (name.to_string(), target.to_string()))
        .collect()
}

/// One external function ready for its runtime: typed, and optimized when the runtime asks.
struct Prepared<'r> {
    name: String,
    target: String,
    plugin: &'r Arc<dyn Plugin>,
    function: PartitionedFunction,
}

impl Prepared<'_> {
    fn failed(&self, operation: &'static str, error: PluginError) -> CodegenError {
        CodegenError::Plugin {
            plugin: self.plugin.name().to_string(),
            operation,
            function: self.name.clone(),
            error,
        }
    }
}

/// The external functions of `module` with their runtimes, each prepared by [`prepare_one`].
fn prepare<'r>(module: &Module, runtimes: &'r Runtimes) -> Result<Vec<Prepared<'r>>, CodegenError> {
    module
        .partitions()
        .map(|(name, target, f)| prepare_one(name, target, f, runtimes))
        .collect()
}

/// The external function `name` of target `target` with its runtime: copied once, typed
/// (inferred only where it has untyped nodes: the pipeline's partitions arrive typed; a
/// partition calls no other global, so it types alone) and run through the runtime's optimize
/// hook when its description asks for it (see the module docs).
fn prepare_one<'r>(
    name: &str,
    target: &str,
    f: &Function,
    runtimes: &'r Runtimes,
) -> Result<Prepared<'r>, CodegenError> {
    let plugin = runtimes
        .get(target)
        .ok_or_else(|| CodegenError::NoRuntime {
            function: name.to_string(),
            target: target.to_string(),
            reason: "no plugin or target spec provides it".to_string(),
        })?;
    let untyped = f.live_ids().into_iter().any(|id| f.ty(id).is_none());
    let f = if untyped {
        let mut alone = Module::new();
        alone.insert(name.to_string(), f.clone());
        infer_types(&mut alone)?;
        alone.remove(name).unwrap_or_else(|| f.clone())
    } else {
        f.clone()
    };
    let mut function = PartitionedFunction {
        symbol: name.to_string(),
        function: f,
    };
    if plugin.describe().optimize {
        let before = function.function.func_type();
        function = plugin
            .optimize(function)
            .map_err(|error| CodegenError::Plugin {
                plugin: plugin.name().to_string(),
                operation: "optimize",
                function: name.to_string(),
                error,
            })?;
        let after = function.function.func_type();
        if before != after {
            let show = |t: Option<byoc_ir::FuncType>| {
                t.map_or("an untyped function".to_string(), |t| {
                    let params: Vec<String> = t.params.iter().map(|p| p.to_string()).collect();
                    format!("fn ({}) -> {}", params.join(", "), t.ret)
                })
            };
            return Err(CodegenError::Signature {
                plugin: plugin.name().to_string(),
                function: name.to_string(),
                before: show(before),
                after: show(after),
            });
        }
    }
    Ok(Prepared {
        name: name.to_string(),
        target: target.to_string(),
        plugin,
        function,
    })
}

/// Compiles every external function of `module` (see the module docs).
pub fn compile_externals(
    module: &Module,
    runtimes: &Runtimes,
    options: &CompileOptions,
) -> Result<ExternalModules, CodegenError> {
    let mut out = ExternalModules::new();
    for p in prepare(module, runtimes)? {
        let name = p.name.clone();
        out.insert(name, compile(p, options)?);
    }
    Ok(out)
}

/// Compiles the one external function `name` (of target `target`) with its target's runtime,
/// as [`compile_externals`] does for each, for callers that report progress per partition.
pub fn compile_external(
    name: &str,
    target: &str,
    f: &Function,
    runtimes: &Runtimes,
    options: &CompileOptions,
) -> Result<ExternalModule, CodegenError> {
    compile(prepare_one(name, target, f, runtimes)?, options)
}

/// Compiles a prepared function with its runtime.
fn compile(p: Prepared<'_>, options: &CompileOptions) -> Result<ExternalModule, CodegenError> {
    let compiled = p
        .plugin
        .compile(&p.function, options)
        .map_err(|e| p.failed("compile", e))?;
    Ok(ExternalModule {
        target: p.target,
        plugin: p.plugin.name().to_string(),
        plugin_version: p.plugin.version().to_string(),
        module: Arc::from(compiled),
    })
}

/// The source one external function's plugin generates for it ([`Plugin::emit_source`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionSource {
    /// The external function (its `global_symbol`).
    pub function: String,
    /// Its target.
    pub target: String,
    /// The plugin that compiles it.
    pub plugin: String,
    /// The source, or `None` when the plugin has none to show.
    pub source: Option<EmittedSource>,
}

/// The source of every external function of `module`, as its runtime would compile it (the
/// same typing and optimize hook as [`compile_externals`]).
pub fn emit_sources(
    module: &Module,
    runtimes: &Runtimes,
    options: &CompileOptions,
) -> Result<Vec<PartitionSource>, CodegenError> {
    prepare(module, runtimes)?
        .into_iter()
        .map(|p| {
            let source = p
                .plugin
                .emit_source(&p.function, options)
                .map_err(|e| p.failed("emit_source", e))?;
            Ok(PartitionSource {
                function: p.name,
                target: p.target,
                plugin: p.plugin.name().to_string(),
                source,
            })
        })
        .collect()
}
