//! The built-in `reference` runtime: compiles a partition into a host sub-executor.
//!
//! It is a reference and test target, not an accelerator: it runs the partition with the host
//! kernels, so partitioned modules of declarative targets (target-spec files) and tests run
//! end to end, and the results of real plugins can be compared against it. Its serialized
//! form is the partition's function record ([`byoc_sdk::record`]: Relay text with the
//! constants as raw bytes beside it); it also reads the Relay text that byoc versions before
//! the record wrote.

use crate::{ExecOptions, Executor};
use byoc_ir::Module;
use byoc_sdk::abi::SDK_VERSION;
use byoc_sdk::{
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
                memory_budget: None,
            },
        )
        .map_err(|e| PluginError::new(format!("@{}: {e}", function.symbol)))?;
        Ok(Box::new(ReferenceModule {
            executor,
            function: function.clone(),
        }))
    }

    fn deserialize(
        &self,
        bytes: &[u8],
        options: &CompileOptions,
    ) -> Result<Box<dyn CompiledModule>, PluginError> {
        let (function, _) = PartitionedFunction::from_bytes(bytes)
            .map_err(|e| PluginError::new(format!("reference module: {e}")))?;
        self.compile(&function, options)
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

#[cfg(test)]
mod tests {
    use super::*;
    use byoc_ir::tensor::Tensor;
    use byoc_sdk::record::RECORD_MAGIC;

    const FUNCTION: &str = "def @ref_0(%x: Tensor[(4), float32], Compiler=\"ref\", global_symbol=\"ref_0\", Primitive=1) {\n  add(%x, const((4), float32, [1f, 2f, 3f, 4f]))\n}\n";

    fn run(m: &dyn CompiledModule) -> Vec<f32> {
        let x = Tensor::from_vec(vec![4], vec![1.0f32; 4]).unwrap();
        let mut y = Tensor::from_vec(vec![4], vec![0.0f32; 4]).unwrap();
        m.run(&[x.view()], &mut [y.view_mut()]).unwrap();
        y.as_slice::<f32>().unwrap().to_vec()
    }

    #[test]
    fn modules_serialize_as_records_and_records_and_older_text_load() {
        let f = PartitionedFunction::from_text(FUNCTION).unwrap();
        let m = ReferenceRuntime
            .compile(&f, &CompileOptions::new())
            .unwrap();
        let record = m.serialize().unwrap();
        assert!(record.starts_with(RECORD_MAGIC));
        // Hand-computed: [1, 1, 1, 1] + [1, 2, 3, 4].
        for bytes in [record.clone(), f.to_text().into_bytes()] {
            let back = ReferenceRuntime
                .deserialize(&bytes, &CompileOptions::new())
                .unwrap();
            assert_eq!(run(back.as_ref()), [2.0, 3.0, 4.0, 5.0]);
        }
        let err = ReferenceRuntime
            .deserialize(&record[..record.len() - 3], &CompileOptions::new())
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("reference module: truncated function record: constant 0 data"),
            "{err}"
        );
    }
}
