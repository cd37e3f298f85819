//! A [`JsonRuntime`] is a plugin SDK [`CompiledModule`]: a JSON-style plugin's `compile`
//! returns one (serialize the partition, [`JsonRuntime::with_constants`]) and its
//! `deserialize` reads one back ([`JsonRuntime::from_bytes`]).
//!
//! `run` hands the SDK's views to [`JsonRuntime::run`] as they are: the kernels read the
//! host's input buffers and write the host's output buffers in place. Errors become
//! [`PluginError`]s carrying the runtime's message, which names the graph symbol and, for
//! kernel failures, the node id and name (`tinyacc_0: node 3 ('clip'): ...`).

use byoc_sdk::ir::tensor::{TensorMut, TensorRef};
use byoc_sdk::{CompiledModule, PluginError};

use crate::binary::BinaryError;
use crate::runtime::{JsonRuntime, KernelProvider, RuntimeError};
use crate::serialize::SerializeError;

impl From<RuntimeError> for PluginError {
    fn from(e: RuntimeError) -> Self {
        PluginError::new(e.to_string())
    }
}

impl From<SerializeError> for PluginError {
    fn from(e: SerializeError) -> Self {
        PluginError::new(e.to_string())
    }
}

impl From<BinaryError> for PluginError {
    fn from(e: BinaryError) -> Self {
        PluginError::new(e.to_string())
    }
}

impl<P: KernelProvider> CompiledModule for JsonRuntime<P> {
    fn run(
        &self,
        inputs: &[TensorRef<'_>],
        outputs: &mut [TensorMut<'_>],
    ) -> Result<(), PluginError> {
        Ok(JsonRuntime::run(self, inputs, outputs)?)
    }

    fn serialize(&self) -> Result<Vec<u8>, PluginError> {
        Ok(self.to_bytes()?)
    }
}
