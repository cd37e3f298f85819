//! byoc-plugin-dnnl: partitions as TVM-style BYOC JSON graphs, executed with oneDNN
//! primitives — the JSON-codegen kind of BYOC integration (TVM's DNNL codegen and runtime).
//!
//! - [`support`]: what the target takes (ops with their predicates, the `dnnl.*` composite
//!   pattern table, prune settings), as an SDK `TargetDescription`.
//! - [`dnnl`]: bindings to the oneDNN 2.6 C API ([`dnnl::ffi`]) and a small safe layer.
//! - [`composite`]: composite kernel-node names (`dnnl.conv2d_bias_sum_relu`).
//! - [`runtime`]: [`DnnlRuntime`], a JSON graph built into oneDNN primitives once and run
//!   many times, from several threads.
//! - [`module`]: [`DnnlModule`], the compiled partition (graph + constants + runtime) and its
//!   bytes (byoc-json-runtime's graph + constants record).
//! - [`options`]: the plugin's options (`threads`, `dnnl.fpmath`, `dnnl.int8_epilogue`), read
//!   in one place.
//!
//! The plugin ([`DnnlPlugin`]) compiles a partition with byoc-json-runtime's serializer and
//! builds the runtime; `export_plugin!` makes the cdylib loadable by byoc.

pub mod composite;
pub mod dnnl;
pub mod module;
pub mod options;
pub mod runtime;
pub mod support;

use byoc_json_runtime::serialize::{external_symbol, serialize};
use byoc_sdk::prelude::*;

pub use module::DnnlModule;
pub use options::{Bf16Support, FPMATH_OPTION, INT8_EPILOGUE_OPTION};
pub use runtime::{DnnlRuntime, FpMath, Int8Epilogue, RuntimeError, RuntimeOptions};

/// The compile option naming the OpenMP thread count of runs: the host's `--threads`, or
/// `--plugin-option threads=N` (0 or absent: OpenMP's default, `OMP_NUM_THREADS` or all
/// cores).
pub use byoc_sdk::THREADS_OPTION;

/// The dnnl plugin.
#[derive(Clone, Copy, Debug, Default)]
pub struct DnnlPlugin;

/// The runtime options of a compile or load, with this CPU's bf16 support.
fn runtime_options(options: &CompileOptions) -> Result<RuntimeOptions, PluginError> {
    options::runtime_options(options, Bf16Support::probe)
}

impl Plugin for DnnlPlugin {
    fn name(&self) -> &str {
        support::TARGET
    }

    fn version(&self) -> &str {
        env!("CARGO_PKG_VERSION")
    }

    fn describe(&self) -> TargetDescription {
        support::description()
    }

    fn compile(
        &self,
        function: &PartitionedFunction,
        options: &CompileOptions,
    ) -> Result<Box<dyn CompiledModule>, PluginError> {
        let runtime = runtime_options(options)?;
        let symbol = external_symbol(&function.function)
            .unwrap_or_else(|| format!("{}_{}", support::TARGET, function.symbol));
        let s = serialize(&function.function, &symbol)?;
        Ok(Box::new(DnnlModule::new(s, runtime)?))
    }

    fn options(&self) -> OptionSchema {
        options::schema()
    }

    fn deserialize(
        &self,
        bytes: &[u8],
        options: &CompileOptions,
    ) -> Result<Box<dyn CompiledModule>, PluginError> {
        Ok(Box::new(DnnlModule::from_bytes(
            bytes,
            runtime_options(options)?,
        )?))
    }
}

export_plugin!(DnnlPlugin, DnnlPlugin);
