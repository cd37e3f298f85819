//! The compiled dnnl module: the partition's JSON graph and constants, with the runtime built
//! from them. Its bytes (for artifacts) are byoc-json-runtime's graph + constants record
//! ([`Serialized::to_bytes`]), not the primitives: deserializing rebuilds the primitives for
//! the machine it runs on.

use byoc_json_runtime::Serialized;
use byoc_sdk::ir::tensor::{TensorMut, TensorRef};
use byoc_sdk::{CompiledModule, PluginError};

use crate::runtime::{DnnlRuntime, RuntimeOptions};

/// A partition compiled for oneDNN.
#[derive(Debug)]
pub struct DnnlModule {
    source: Serialized,
    runtime: DnnlRuntime,
}

impl DnnlModule {
    /// Builds the runtime of a serialized partition.
    pub fn new(source: Serialized, options: RuntimeOptions) -> Result<Self, PluginError> {
        let runtime = DnnlRuntime::from_graph(&source.graph, &source.constants, options)
            .map_err(|e| PluginError::new(e.to_string()))?;
        Ok(DnnlModule { source, runtime })
    }

    /// The runtime.
    pub fn runtime(&self) -> &DnnlRuntime {
        &self.runtime
    }

    /// The graph and constants the runtime was built from.
    pub fn source(&self) -> &Serialized {
        &self.source
    }

    /// Reads [`Serialized::to_bytes`] and rebuilds the runtime with the loading process's
    /// `options` (the float math mode is the loader's choice: its CPU is the one to check).
    pub fn from_bytes(bytes: &[u8], options: RuntimeOptions) -> Result<Self, PluginError> {
        let source = Serialized::from_bytes(bytes)
            .map_err(|e| PluginError::new(format!("dnnl module: {e}")))?;
        DnnlModule::new(source, options)
    }
}

impl CompiledModule for DnnlModule {
    fn run(
        &self,
        inputs: &[TensorRef<'_>],
        outputs: &mut [TensorMut<'_>],
    ) -> Result<(), PluginError> {
        self.runtime
            .run(inputs, outputs)
            .map_err(|e| PluginError::new(e.to_string()))
    }

    fn serialize(&self) -> Result<Vec<u8>, PluginError> {
        self.source
            .to_bytes()
            .map_err(|e| PluginError::new(format!("dnnl module: {e}")))
    }
}
