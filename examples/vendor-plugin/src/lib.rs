//! `tinyacc`: a template byoc plugin for a small float32 accelerator.
//!
//! The accelerator runs `add`, `multiply` (both operands of one shape), `nn.relu`, `clip`,
//! and the fused composite `tinyacc.add_relu` (`nn.relu(add(*, *))`). Compiling a partition
//! turns it into a [`Program`]: a list of steps over numbered buffers, which the accelerator's
//! kernels ([`kernels`]) run. A program serializes to JSON, so an artifact can hold it.
//!
//! The whole vendor side of byoc is here: [`TinyAcc`] implements [`Plugin`] (what the target
//! takes, compile, deserialize), [`Program`] implements [`CompiledModule`] (run, serialize),
//! and `export_plugin!` turns the crate's `cdylib` into a plugin byoc loads.

pub mod kernels;
mod program;

use byoc_core::export_plugin;
use byoc_core::ir::{DType, Type};
use byoc_core::sdk::{
    CallView, CompileOptions, CompiledModule, OpRule, PartitionedFunction, Plugin, PluginError,
    PruneConfig, RejectReason, TargetDescription,
};

pub use program::{Program, Step};

/// The target name: the `Compiler` attribute of tinyacc partitions.
pub const TARGET: &str = "tinyacc";

/// The tinyacc plugin.
#[derive(Clone, Copy, Debug, Default)]
pub struct TinyAcc;

/// `add` and `multiply` run only on operands of one shape (the accelerator does not
/// broadcast).
fn same_shapes(call: &CallView<'_>) -> Result<(), RejectReason> {
    match call.arg_types {
        [a, b] if a == b => Ok(()),
        [a, b] => {
            Err(format!("operands {a} and {b} differ in shape (tinyacc does not broadcast)").into())
        }
        _ => Err("expected two operands".into()),
    }
}

/// The fused add+relu runs on float32 only. (A pattern check sees the root call of the
/// match; operand shapes of the inner `add` are checked when the partition compiles.)
fn fused_is_float32(call: &CallView<'_>) -> Result<(), RejectReason> {
    match call.result_type {
        Type::Tensor(t) if t.dtype == DType::Float32 => Ok(()),
        other => Err(format!("result {other} is not a float32 tensor").into()),
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

    fn compile(
        &self,
        function: &PartitionedFunction,
        _options: &CompileOptions,
    ) -> Result<Box<dyn CompiledModule>, PluginError> {
        Ok(Box::new(Program::compile(function)?))
    }

    fn deserialize(&self, bytes: &[u8]) -> Result<Box<dyn CompiledModule>, PluginError> {
        Ok(Box::new(Program::from_bytes(bytes)?))
    }
}

export_plugin!(TinyAcc, TinyAcc);

#[cfg(test)]
mod tests {
    //! The plugin linked statically (rlib): compile a partition, run it, compare with the host
    //! executor on the same function; serialized programs round-trip.

    use byoc_core::exec::{ExecOptions, Executor};
    use byoc_core::ir::Module;
    use byoc_core::sdk::{CompileOptions, PartitionedFunction, Plugin, TensorMut};
    use byoc_core::Tensor;

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

    #[test]
    fn compiled_partitions_match_the_host_executor() {
        let f = PartitionedFunction::from_text(PARTITION).unwrap();
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
        let reloaded = TinyAcc.deserialize(&compiled.serialize().unwrap()).unwrap();
        for module in [compiled, reloaded] {
            let mut outs: Vec<Tensor> =
                host.iter().map(|t| Tensor::zeros(t.ty().clone())).collect();
            let mut views: Vec<TensorMut<'_>> = outs.iter_mut().map(Tensor::view_mut).collect();
            module.run(&[a.view(), b.view()], &mut views).unwrap();
            drop(views);
            assert_eq!(outs, host);
        }
        assert!(TinyAcc.deserialize(b"{}").is_err());
    }
}
