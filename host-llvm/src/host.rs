//! Host code generation for a whole module: the host passes (the `host-fuse` stage: reductions
//! on custom datatypes outlined, then HostFuse), then one native library holding every fused
//! function (or anchored function's epilogue) that compiles ([`compile_fused`]); a function
//! that does not compile goes back to the reference kernels with a [`Fallback`] note (or fails
//! the build when strict).

use std::sync::Arc;

use byoc_exec::plugin::external_functions;
use byoc_exec::{ExternalModule, ExternalModules};
use byoc_ir::stages::{known_names, passes_of, Stage};
use byoc_ir::Module;
use byoc_passes::host_fuse::{unfuse, HostFuse, HOST_CODEGEN_TARGET};
use byoc_passes::{Pass, PassContext, PassError, PassManager};
use byoc_sdk::{CompileOptions, Plugin, PluginError};

use crate::codegen::{compile_object, CodegenError};
use crate::custom::{self, CustomKernel};
use crate::kernel::Kernel;
use crate::library::{self, Library, LibraryError};
use crate::module::HostModule;
use crate::plugin::{threads, HostLlvm, PLUGIN_NAME};

/// Errors of [`compile_host`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HostCodegenError {
    /// HostFuse failed.
    #[error(transparent)]
    Fuse(#[from] PassError),
    /// A fused function cannot be compiled and fallback is off (`--strict-host-codegen`).
    #[error("host code generation (strict): @{function} ({ops}) cannot be compiled: {reason}")]
    Strict {
        /// The fused function.
        function: String,
        /// Its ops, comma-separated.
        ops: String,
        /// Why.
        reason: String,
    },
    /// The compile options are bad.
    #[error("host code generation: {0}")]
    Options(#[from] PluginError),
}

/// A build step failed for the whole library (LLVM or the linker).
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// LLVM failed.
    #[error(transparent)]
    Codegen(#[from] CodegenError),
    /// Linking or loading failed.
    #[error(transparent)]
    Library(#[from] LibraryError),
}

/// A fused function that runs on the reference kernels instead of compiled code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fallback {
    /// The fused function.
    pub function: String,
    /// Its ops.
    pub ops: Vec<String>,
    /// Why it was not compiled.
    pub reason: String,
}

impl std::fmt::Display for Fallback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "@{} ({}) runs on the reference kernels: {}",
            self.function,
            self.ops.join(", "),
            self.reason
        )
    }
}

/// A module with its host code compiled.
#[derive(Debug)]
pub struct HostCode {
    /// The module after HostFuse; fused functions that fell back have no `Compiler`.
    pub module: Module,
    /// The compiled fused functions, by name.
    pub externals: ExternalModules,
    /// The fused functions that fell back, in order.
    pub fallbacks: Vec<Fallback>,
}

/// Compiles `kernels` into one shared library and opens it.
pub fn build_library(kernels: &[(String, Kernel)]) -> Result<Arc<Library>, BuildError> {
    let object = compile_object(kernels)?;
    let bytes = library::link_shared(&object)?;
    Ok(library::load(Arc::new(bytes))?)
}

/// The host pass called `name`: one of the passes of the `host-fuse` stage
/// (`byoc_ir::stages::passes_of(Stage::HostFuse)`), which prepare a partitioned module for the
/// host code generator.
pub fn create_host_pass(name: &str) -> Option<Box<dyn Pass>> {
    match name {
        "outline-custom-reductions" => Some(Box::new(custom::OutlineCustomReductions)),
        "host-fuse" => Some(Box::new(HostFuse)),
        _ => None,
    }
}

/// Runs the host passes (the `host-fuse` stage, through the pass manager) on `module`.
pub fn run_host_passes(module: &mut Module) -> Result<(), PassError> {
    let mut manager = PassManager::new();
    for name in passes_of(Stage::HostFuse) {
        manager.push(
            create_host_pass(name).ok_or_else(|| PassError::UnknownPass {
                name: name.to_string(),
                known: known_names(),
            })?,
        );
    }
    manager.run(module, &mut PassContext::new())
}

/// Runs the host passes on `module` ([`run_host_passes`]), then compiles it
/// ([`compile_fused`]).
pub fn compile_host(
    module: &Module,
    options: &CompileOptions,
    strict: bool,
) -> Result<HostCode, HostCodegenError> {
    let mut module = module.clone();
    run_host_passes(&mut module)?;
    compile_fused(module, options, strict)
}

/// Compiles every fused function of `module` (after the host passes) into one native library
/// (see the module docs). Functions on custom datatypes compile into a library of their own
/// ([`custom::compile_into`]). `options` carries the executor's thread count.
pub fn compile_fused(
    mut module: Module,
    options: &CompileOptions,
    strict: bool,
) -> Result<HostCode, HostCodegenError> {
    let threads = threads(options)?;
    let mut fallbacks = Vec::new();
    let mut kernels = Vec::new();
    let mut custom_kernels = Vec::new();
    for (name, target) in external_functions(&module) {
        if target != HOST_CODEGEN_TARGET {
            continue;
        }
        let Some(f) = module.get(&name) else {
            continue;
        };
        if custom::is_custom(f) {
            match CustomKernel::from_function(f) {
                Ok(k) => custom_kernels.push((name, k)),
                Err(e) => fallbacks.push(Fallback {
                    function: name,
                    ops: f.op_names(),
                    reason: e.to_string(),
                }),
            }
            continue;
        }
        match Kernel::from_function(f) {
            Ok(k) => kernels.push((name, k)),
            Err(e) => fallbacks.push(Fallback {
                function: name,
                ops: f.op_names(),
                reason: e.to_string(),
            }),
        }
    }
    let mut externals = ExternalModules::new();
    if !kernels.is_empty() {
        match build_library(&kernels) {
            Ok(library) => {
                for (name, k) in &kernels {
                    let m = HostModule::of_kernel(library.clone(), name, k, threads)?;
                    externals.insert(
                        name.clone(),
                        ExternalModule {
                            target: HOST_CODEGEN_TARGET.to_string(),
                            plugin: PLUGIN_NAME.to_string(),
                            plugin_version: HostLlvm.version().to_string(),
                            module: Arc::new(m),
                        },
                    );
                }
            }
            Err(e) => {
                for (name, _) in kernels {
                    let ops = module.get(&name).map(|f| f.op_names()).unwrap_or_default();
                    fallbacks.push(Fallback {
                        function: name,
                        ops,
                        reason: e.to_string(),
                    });
                }
            }
        }
    }
    custom::compile_into(
        &module,
        custom_kernels,
        threads,
        &mut externals,
        &mut fallbacks,
    )?;
    if let (true, Some(f)) = (strict, fallbacks.first()) {
        return Err(HostCodegenError::Strict {
            function: f.function.clone(),
            ops: f.ops.join(", "),
            reason: f.reason.clone(),
        });
    }
    for f in &fallbacks {
        unfuse(&mut module, &f.function);
    }
    Ok(HostCode {
        module,
        externals,
        fallbacks,
    })
}
