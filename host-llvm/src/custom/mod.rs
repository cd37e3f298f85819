//! Custom datatypes (Bring Your Own Datatypes) through the host code generator: TVM's
//! `LowerCustomDatatypes`. A host function on a `custom[...]` tensor compiles to loops in which
//! every scalar operation calls the registering plugin's library function, the same lowering
//! key and function the interpreted loop (`byoc_kernels::datatypes::DatatypeCalls`) calls, in the
//! same order, so results are bit-identical to it.
//!
//! - [`outline`]: reductions on a custom datatype (conv2d, dense, pooling, softmax) become
//!   functions of their own, next to HostFuse's elementwise groups;
//! - [`kernel`]: such a function as a [`CustomKernel`] (calls by lowering key, constants
//!   converted once at build through the registered cast, loop body);
//! - [`codegen`]: the kernel as LLVM IR calling through a table of function pointers;
//! - [`module`]: the compiled kernel with its table resolved from the loaded datatype plugin
//!   (at build and again when an artifact is read: the library never links the plugin).

pub mod codegen;
pub mod kernel;
pub mod module;
pub mod outline;

use std::sync::Arc;

use byoc_exec::{ExternalModule, ExternalModules};
use byoc_ir::Module;
use byoc_passes::host_fuse::HOST_CODEGEN_TARGET;
use byoc_sdk::{Plugin, PluginError};
use inkwell::context::Context;
use inkwell::targets::FileType;

use crate::codegen::{host_machine, optimize, CodegenError};
use crate::host::{BuildError, Fallback};
use crate::library::{self, Library};
use crate::plugin::{HostLlvm, PLUGIN_NAME};

pub use kernel::{is_custom, CustomKernel};
pub use module::CustomModule;
pub use outline::{outline_reductions, OutlineCustomReductions};

fn module<'c>(
    context: &'c Context,
    kernels: &[(String, CustomKernel)],
) -> Result<(inkwell::module::Module<'c>, inkwell::targets::TargetMachine), CodegenError> {
    let machine = host_machine()?;
    let module = context.create_module("byoc_host_custom");
    for (symbol, kernel) in kernels {
        codegen::emit_kernel(context, &module, symbol, kernel)?;
    }
    optimize(&module, &machine)?;
    Ok((module, machine))
}

/// The optimized LLVM IR (text) of `kernels`, each under its symbol.
pub fn emit_ir(kernels: &[(String, CustomKernel)]) -> Result<String, CodegenError> {
    let context = Context::create();
    let (module, _) = module(&context, kernels)?;
    Ok(module.print_to_string().to_string())
}

/// Compiles `kernels` into one shared library and opens it.
pub fn build_library(kernels: &[(String, CustomKernel)]) -> Result<Arc<Library>, BuildError> {
    let context = Context::create();
    let (module, machine) = module(&context, kernels)?;
    let object = machine
        .write_to_memory_buffer(&module, FileType::Object)
        .map_err(|e| CodegenError(e.to_string()))?;
    let bytes = library::link_shared(object.as_slice())?;
    Ok(library::load(Arc::new(bytes))?)
}

/// Compiles `kernels` (functions of `module`) into one library and adds each as a compiled
/// host function to `externals`; when LLVM or the linker fails, each becomes a [`Fallback`]
/// with that error instead.
pub fn compile_into(
    module: &Module,
    kernels: Vec<(String, CustomKernel)>,
    threads: usize,
    externals: &mut ExternalModules,
    fallbacks: &mut Vec<Fallback>,
) -> Result<(), PluginError> {
    if kernels.is_empty() {
        return Ok(());
    }
    match build_library(&kernels) {
        Ok(library) => {
            for (name, k) in &kernels {
                let m = CustomModule::new(library.clone(), name, k, threads)?;
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
        Err(e) => fallbacks.extend(kernels.into_iter().map(|(name, _)| Fallback {
            ops: module.get(&name).map(|f| f.op_names()).unwrap_or_default(),
            function: name,
            reason: e.to_string(),
        })),
    }
    Ok(())
}
