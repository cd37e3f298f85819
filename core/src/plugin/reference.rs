//! The built-in `reference` runtime: compiles a partition into a host sub-executor.
//!
//! It is a reference and test target, not an accelerator: it runs the partition with the host
//! kernels, so partitioned modules of declarative targets (target-spec files) and tests run
//! end to end, and the results of real plugins can be compared against it. Its serialized
//! form is the partition's function record ([`crate::sdk::record`]: Relay text with the
//! constants as raw bytes beside it); it also reads the Relay text that byoc versions before
//! the record wrote.

use crate::exec::{ExecOptions, Executor};
use crate::ir::Module;
use crate::sdk::abi::SDK_VERSION;
use crate::sdk::{
    CompileOptions, CompiledModule, PartitionedFunction, Plugin, PluginError, TargetDescription,
    TensorMut, TensorRef,
};

/// The reference runtime's plugin name.
pub const REFERENCE_RUNTIME: &str = "reference";

/// The reference runtime (see the module docs).
#[derive(Clone, Copy, Debug, Default)]
pub struct ReferenceRuntime;

impl Plugin for ReferenceRuntime {
    fn name(&self) -> &str {
        REFERENCE_RUNTIME
    }

    fn version(&self) -> &str {
        SDK_VERSION
    }

    /// The reference runtime plans nothing itself: declarative targets bring their own rules.
    fn describe(&self) -> TargetDescription {
        TargetDescription::new(REFERENCE_RUNTIME)
    }

    fn compile(
        &self,
        function: &PartitionedFunction,
        _options: &CompileOptions,
    ) -> Result<Box<dyn CompiledModule>, PluginError> {
        let executor = Executor::new(
            &Module::from_main(function.function.clone()),
            ExecOptions {
                threads: 1,
                profile: false,
            },
        )
        .map_err(|e| PluginError::new(format!("@{}: {e}", function.symbol)))?;
        Ok(Box::new(ReferenceModule {
            executor,
            function: function.clone(),
        }))
    }

    fn deserialize(&self, bytes: &[u8]) -> Result<Box<dyn CompiledModule>, PluginError> {
        let (function, _) = PartitionedFunction::from_bytes(bytes)
            .map_err(|e| PluginError::new(format!("reference module: {e}")))?;
        self.compile(&function, &CompileOptions::new())
    }
}

/// A partition planned on a host sub-executor, and the partition (its constants shared with
/// the executor) to serialize.
struct ReferenceModule {
    executor: Executor,
    function: PartitionedFunction,
}

impl CompiledModule for ReferenceModule {
    fn run(
        &self,
        inputs: &[TensorRef<'_>],
        outputs: &mut [TensorMut<'_>],
    ) -> Result<(), PluginError> {
        let results = self
            .executor
            .run_views(inputs)
            .map_err(|e| PluginError::new(e.to_string()))?;
        if results.len() != outputs.len() {
            return Err(PluginError::new(format!(
                "the partition has {} output(s) but {} were given",
                results.len(),
                outputs.len()
            )));
        }
        for (i, (r, o)) in results.iter().zip(outputs.iter_mut()).enumerate() {
            if r.ty() != o.ty {
                return Err(PluginError::new(format!(
                    "output {i}: the partition gives {} but the caller expects {}",
                    r.ty(),
                    o.ty
                )));
            }
            o.bytes.copy_from_slice(r.as_bytes());
        }
        Ok(())
    }

    fn serialize(&self) -> Result<Vec<u8>, PluginError> {
        self.function
            .to_record()
            .map_err(|e| PluginError::new(format!("@{}: {e}", self.function.symbol)))
    }
}
