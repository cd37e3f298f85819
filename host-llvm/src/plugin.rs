//! The host code generator as a [`Plugin`] named `host-llvm` for the `llvm` target: it
//! compiles fused host functions (one at a time here; [`crate::compile_host`] compiles a
//! model's functions together into one library) and reads compiled ones back from artifacts.
//! It is built into byoc, not loaded from a `.so`.

use std::sync::Arc;

use byoc_passes::host_fuse::HOST_CODEGEN_TARGET;
use byoc_sdk::{
    CompileOptions, CompiledModule, EmittedSource, OptionSchema, PartitionedFunction, Plugin,
    PluginError, TargetDescription,
};

use crate::codegen::emit_ir;
use crate::custom::{self, CustomKernel, CustomModule};
use crate::kernel::Kernel;
use crate::module::HostModule;

/// The plugin's name, recorded for the fused functions' partitions in artifacts.
pub const PLUGIN_NAME: &str = "host-llvm";

/// The host code generator plugin.
#[derive(Clone, Copy, Debug, Default)]
pub struct HostLlvm;

/// The executor's thread count from `options`, else the machine's parallelism.
pub(crate) fn threads(options: &CompileOptions) -> Result<usize, PluginError> {
    let parsed = OptionSchema::new(PLUGIN_NAME).parse(options)?;
    Ok(parsed
        .threads()
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())))
}

fn kernel_of(function: &PartitionedFunction) -> Result<Kernel, PluginError> {
    Kernel::from_function(&function.function)
        .map_err(|e| PluginError::new(format!("@{}: {e}", function.symbol)))
}

fn custom_kernel_of(function: &PartitionedFunction) -> Result<CustomKernel, PluginError> {
    CustomKernel::from_function(&function.function)
        .map_err(|e| PluginError::new(format!("@{}: {e}", function.symbol)))
}

impl Plugin for HostLlvm {
    fn name(&self) -> &str {
        PLUGIN_NAME
    }

    fn version(&self) -> &str {
        env!("CARGO_PKG_VERSION")
    }

    /// No ops of its own: it compiles the functions HostFuse forms, not partitions.
    fn describe(&self) -> TargetDescription {
        TargetDescription::new(HOST_CODEGEN_TARGET)
    }

    fn compile(
        &self,
        function: &PartitionedFunction,
        options: &CompileOptions,
    ) -> Result<Box<dyn CompiledModule>, PluginError> {
        if custom::is_custom(&function.function) {
            let kernel = custom_kernel_of(function)?;
            let symbol = function.symbol.clone();
            let library = custom::build_library(&[(symbol.clone(), kernel.clone())])
                .map_err(|e| PluginError::new(e.to_string()))?;
            return Ok(Box::new(CustomModule::new(
                library,
                &symbol,
                &kernel,
                threads(options)?,
            )?));
        }
        let kernel = kernel_of(function)?;
        let library = crate::host::build_library(&[(function.symbol.clone(), kernel.clone())])
            .map_err(|e| PluginError::new(e.to_string()))?;
        Ok(Box::new(HostModule::of_kernel(
            library,
            &function.symbol,
            &kernel,
            threads(options)?,
        )?))
    }

    fn deserialize(
        &self,
        bytes: &[u8],
        options: &CompileOptions,
    ) -> Result<Box<dyn CompiledModule>, PluginError> {
        let threads = threads(options)?;
        if bytes.starts_with(custom::module::MAGIC) {
            return Ok(Box::new(CustomModule::from_bytes(bytes, threads)?));
        }
        Ok(Box::new(HostModule::from_bytes(bytes, threads)?))
    }

    /// The optimized LLVM IR of the function's kernel.
    fn emit_source(
        &self,
        function: &PartitionedFunction,
        _options: &CompileOptions,
    ) -> Result<Option<EmittedSource>, PluginError> {
        let code = if custom::is_custom(&function.function) {
            custom::emit_ir(&[(function.symbol.clone(), custom_kernel_of(function)?)])
        } else {
            emit_ir(&[(function.symbol.clone(), kernel_of(function)?)])
        }
        .map_err(|e| PluginError::new(e.to_string()))?;
        Ok(Some(EmittedSource {
            extension: "ll".to_string(),
            code,
        }))
    }
}

/// The plugin, shared.
pub fn plugin() -> Arc<dyn Plugin> {
    Arc::new(HostLlvm)
}
