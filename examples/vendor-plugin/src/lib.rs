//! `tinyacc`: a template byoc plugin for a small float32 accelerator.
//!
//! The accelerator runs `add`, `multiply` (both operands of one shape), `nn.relu`, `clip`,
//! and the fused composite `tinyacc.add_relu` (`nn.relu(add(*, *))`), each with its own
//! kernel ([`kernels`]). It is built on byoc's JSON runtime base, as TVM's JSON-codegen
//! backends are:
//!
//! - compile: the partition becomes a TVM BYOC JSON graph plus its constants
//!   ([`byoc_json_runtime::serialize`]); the compiled module is a
//!   [`JsonRuntime<TinyaccProvider>`], which asks [`TinyaccProvider`] for one kernel per node;
//! - run: the runtime runs the nodes in order on views of the host's buffers;
//! - serialize / deserialize: the graph and constants as one versioned byte string
//!   ([`byoc_json_runtime::binary`]).
//!
//! The whole vendor side of byoc is here: [`TinyAcc`] implements [`Plugin`] (what the target
//! takes, compile, deserialize), [`provider`] turns graph nodes into kernels, and
//! `export_plugin!` turns the crate's `cdylib` into a plugin byoc loads.

pub mod kernels;
pub mod provider;

use byoc_json_runtime::{serialize, JsonRuntime};
use byoc_sdk::prelude::*;

pub use provider::{TinyaccKernel, TinyaccProvider};

/// The target name: the `Compiler` attribute of tinyacc partitions.
pub const TARGET: &str = "tinyacc";

/// The tinyacc plugin.
#[derive(Clone, Copy, Debug, Default)]
pub struct TinyAcc;

/// `add` and `multiply` run only on operands of one shape (the accelerator does not
/// broadcast).
fn same_shapes(call: &CallView<'_>) -> Result<(), RejectReason> {
    let (a, b) = (call.arg(0)?, call.arg(1)?);
    if a == b {
        Ok(())
    } else {
        Err(format!("operands {a} and {b} differ in shape (tinyacc does not broadcast)").into())
    }
}

/// The fused add+relu runs on float32 only. (A pattern check sees the root call of the
/// match; operand shapes of the inner `add` are checked when the partition compiles.)
fn fused_is_float32(call: &CallView<'_>) -> Result<(), RejectReason> {
    let result = call.result()?;
    if result.dtype == DType::Float32 {
        Ok(())
    } else {
        Err(format!("result {result} is not a float32 tensor").into())
    }
}

impl Plugin for TinyAcc {
    fn name(&self) -> &str {
        TARGET
    }

    fn version(&self) -> &str {
        env!("CARGO_PKG_VERSION")
    }

    fn describe(&self) -> TargetDescription {
        let f32_only = |op: &str| OpRule::new(op).with_dtypes([DType::Float32]);
        TargetDescription::new(TARGET)
            .with_rule_checked(f32_only("add"), same_shapes)
            .with_rule_checked(f32_only("multiply"), same_shapes)
            .with_rule(f32_only("nn.relu"))
            .with_rule(f32_only("clip"))
            .with_pattern_checked("tinyacc.add_relu", "nn.relu(add(*, *))", fused_is_float32)
            .with_prune(PruneConfig {
                min_ops: 1,
                ..PruneConfig::default()
            })
    }

    /// The partition as a JSON graph (constants named `<symbol>_const_<N>`), run by the
    /// JSON runtime with tinyacc's kernels; every node's kernel is built here, so a node
    /// tinyacc cannot run fails the compile, named. tinyacc declares no options, so any
    /// `tinyacc.*` key is refused.
    fn compile(
        &self,
        function: &PartitionedFunction,
        options: &CompileOptions,
    ) -> Result<Box<dyn CompiledModule>, PluginError> {
        self.options().parse(options)?;
        let graph = serialize(&function.function, &function.symbol)?;
        Ok(Box::new(JsonRuntime::with_constants(
            graph,
            TinyaccProvider,
        )?))
    }

    fn deserialize(
        &self,
        bytes: &[u8],
        options: &CompileOptions,
    ) -> Result<Box<dyn CompiledModule>, PluginError> {
        self.options().parse(options)?;
        Ok(Box::new(JsonRuntime::from_bytes(bytes, TinyaccProvider)?))
    }
}

export_plugin!(TinyAcc, TinyAcc);

#[cfg(test)]
mod tests {
    //! The plugin linked statically (rlib): compile a partition, run it, compare with the host
    //! executor on the same function; compiled modules round-trip through bytes; errors name
    //! the node.

    use byoc_exec::{ExecOptions, Executor};
    use byoc_sdk::ir::Module;
    use byoc_sdk::ir::Tensor;
    use byoc_sdk::{CompileOptions, PartitionedFunction, Plugin, TensorMut};

    use super::TinyAcc;

    const PARTITION: &str = r#"
def @tinyacc_0(%a: Tensor[(2, 3), float32], %b: Tensor[(2, 3), float32], Compiler="tinyacc", global_symbol="tinyacc_0", Primitive=1) {
  %0 = fn (%p0: Tensor[(2, 3), float32], %p1: Tensor[(2, 3), float32], Composite="tinyacc.add_relu") {
    %1 = add(%p0, %p1);
    nn.relu(%1)
  };
  %2 = %0(%a, %b);
  %3 = multiply(%2, const((2, 3), float32, [1f, 2f, 3f, 4f, 5f, 6f]));
  %4 = clip(%3, a_min=0f, a_max=10f);
  (%4, %2)
}
"#;

    fn partition(text: &str) -> PartitionedFunction {
        PartitionedFunction::from_text(text).unwrap()
    }

    #[test]
    fn compiled_partitions_match_the_host_executor() {
        let f = partition(PARTITION);
        let a = Tensor::from_vec(vec![2, 3], vec![1.0f32, -2.0, 3.0, 0.5, 4.0, -1.0]).unwrap();
        let b = Tensor::from_vec(vec![2, 3], vec![0.5f32, 1.0, 1.0, 2.0, -5.0, 3.0]).unwrap();
        let host = Executor::new(
            &Module::from_main(f.function.clone()),
            ExecOptions::default(),
        )
        .unwrap()
        .run(&[a.clone(), b.clone()])
        .unwrap();
        let compiled = TinyAcc.compile(&f, &CompileOptions::new()).unwrap();
        let bytes = compiled.serialize().unwrap();
        let reloaded = TinyAcc.deserialize(&bytes, &CompileOptions::new()).unwrap();
        assert_eq!(reloaded.serialize().unwrap(), bytes);
        for module in [compiled, reloaded] {
            let mut outs: Vec<Tensor> =
                host.iter().map(|t| Tensor::zeros(t.ty().clone())).collect();
            let mut views: Vec<TensorMut<'_>> = outs.iter_mut().map(Tensor::view_mut).collect();
            module.run(&[a.view(), b.view()], &mut views).unwrap();
            drop(views);
            assert_eq!(outs, host);
        }
    }

    #[test]
    fn errors_name_the_node() {
        let softmax = partition(
            "def @tinyacc_1(%x: Tensor[(2, 3), float32], Compiler=\"tinyacc\", global_symbol=\"tinyacc_1\") {\n  %0 = nn.relu(%x);\n  nn.softmax(%0)\n}\n",
        );
        let err = TinyAcc
            .compile(&softmax, &CompileOptions::new())
            .err()
            .unwrap();
        assert_eq!(
            err.message,
            "tinyacc_1: node 2 ('nn.softmax'): building the kernel failed: tinyacc cannot run nn.softmax"
        );
        let broadcast = partition(
            "def @tinyacc_2(%x: Tensor[(2, 3), float32], %y: Tensor[(3), float32], Compiler=\"tinyacc\", global_symbol=\"tinyacc_2\") {\n  add(%x, %y)\n}\n",
        );
        let err = TinyAcc
            .compile(&broadcast, &CompileOptions::new())
            .err()
            .unwrap();
        assert!(
            err.message.contains("node 2 ('add'): building the kernel failed: operand Tensor[(3), float32] differs from the result Tensor[(2, 3), float32] (tinyacc does not broadcast)"),
            "{err}"
        );
        let err = TinyAcc
            .deserialize(
                br#"{"format": "tinyacc-program-1"}"#,
                &CompileOptions::new(),
            )
            .err()
            .unwrap();
        assert!(
            err.message.contains("not a byoc JSON graph record"),
            "{err}"
        );
    }
}
