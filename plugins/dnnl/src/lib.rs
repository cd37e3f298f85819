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
//!
//! The plugin ([`DnnlPlugin`]) compiles a partition with byoc-json-runtime's serializer and
//! builds the runtime; `export_plugin!` makes the cdylib loadable by byoc.

pub mod composite;
pub mod dnnl;
pub mod module;
pub mod runtime;
pub mod support;

use byoc_core::sdk::prelude::*;
use byoc_json_runtime::serialize::{external_symbol, serialize};

pub use module::DnnlModule;
pub use runtime::{DnnlRuntime, RuntimeError};

/// The compile option naming the OpenMP thread count of runs: the host's `--threads`, or
/// `--plugin-option threads=N` (0 or absent: OpenMP's default, `OMP_NUM_THREADS` or all
/// cores).
pub use byoc_core::sdk::THREADS_OPTION;

/// The dnnl plugin.
#[derive(Clone, Copy, Debug, Default)]
pub struct DnnlPlugin;

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
        let threads = self.options().parse(options)?.threads();
        let symbol = external_symbol(&function.function)
            .unwrap_or_else(|| format!("{}_{}", support::TARGET, function.symbol));
        let s = serialize(&function.function, &symbol)?;
        Ok(Box::new(DnnlModule::new(s, threads)?))
    }

    fn deserialize(
        &self,
        bytes: &[u8],
        options: &CompileOptions,
    ) -> Result<Box<dyn CompiledModule>, PluginError> {
        let threads = self.options().parse(options)?.threads();
        Ok(Box::new(DnnlModule::from_bytes(bytes, threads)?))
    }
}

export_plugin!(DnnlPlugin, DnnlPlugin);
