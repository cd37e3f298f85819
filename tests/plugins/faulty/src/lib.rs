//! `faulty`: a test plugin for target `faulty` (ops `add`, `nn.relu`) that misbehaves on
//! purpose, as chosen by the compile option `faulty.fault` (any other value is refused):
//!
//! - `panic_compile`: panics in compile;
//! - `error_compile`: returns an error from compile;
//! - `panic_run`: panics in run;
//! - `error_run`: returns an error from run;
//! - `wrong_size`: writes half as many values as the output has;
//! - `wrong_values`: writes every value off by one (what `byoc verify` must catch);
//! - none: computes the partition correctly (add and relu on float32, same shapes), so the
//!   test can also check that a working run gives the host's results.
//!
//! Its `nn.relu` predicate panics for rank-3 tensors, to check that a panicking predicate
//! only declines the call.

use byoc_sdk::export_plugin;
use byoc_sdk::ir::{Callee, Expr};
use byoc_sdk::{
    CompileOptions, CompiledModule, OpRule, OptionSchema, PartitionedFunction, Plugin, PluginError,
    TargetDescription, TensorMut, TensorRef,
};

/// The values of `faulty.fault` (the empty string: no fault).
const FAULTS: [&str; 7] = [
    "",
    "panic_compile",
    "error_compile",
    "panic_run",
    "error_run",
    "wrong_size",
    "wrong_values",
];

/// The fault chosen in `options`, checked against [`FAULTS`].
fn chosen_fault(plugin: &Faulty, options: &CompileOptions) -> Result<String, PluginError> {
    let parsed = plugin.options().parse(options)?;
    let fault = parsed.text("fault").unwrap_or("");
    if !FAULTS.contains(&fault) {
        return Err(PluginError::new(format!(
            "unknown fault 'faulty.fault={fault}' (one of: {})",
            FAULTS[1..].join(", ")
        )));
    }
    Ok(fault.to_string())
}

/// The plugin.
#[derive(Default)]
pub struct Faulty;

/// A compiled partition: the chosen fault and the op sequence (`true` for add, `false` for
/// relu), applied as a chain from the inputs.
struct Chain {
    fault: String,
    ops: Vec<String>,
}

impl Plugin for Faulty {
    fn name(&self) -> &str {
        "faulty"
    }

    fn version(&self) -> &str {
        "0.0.1"
    }

    fn describe(&self) -> TargetDescription {
        TargetDescription::new("faulty")
            .with_ops(["add"])
            .with_rule_checked(OpRule::new("nn.relu"), |call| {
                let rank = call.result_type.as_tensor().map_or(0, |t| t.rank());
                if rank == 3 {
                    panic!("predicate exploded on a rank-3 tensor");
                }
                Ok(())
            })
    }

    fn options(&self) -> OptionSchema {
        OptionSchema::new("faulty").text("fault", None, "the failure to inject (none by default)")
    }

    fn compile(
        &self,
        function: &PartitionedFunction,
        options: &CompileOptions,
    ) -> Result<Box<dyn CompiledModule>, PluginError> {
        let fault = chosen_fault(self, options)?;
        match fault.as_str() {
            "panic_compile" => panic!("compile exploded on @{}", function.symbol),
            "error_compile" => {
                return Err(PluginError::new(format!(
                    "cannot compile @{}: the device is busy",
                    function.symbol
                )))
            }
            _ => {}
        }
        let f = &function.function;
        let ops = f
            .live_ids()
            .into_iter()
            .filter_map(|id| match f.expr(id) {
                Expr::Call(c) => match &c.callee {
                    Callee::Op(op) => Some(op.name().to_string()),
                    _ => None,
                },
                _ => None,
            })
            .collect();
        Ok(Box::new(Chain { fault, ops }))
    }

    fn deserialize(
        &self,
        bytes: &[u8],
        options: &CompileOptions,
    ) -> Result<Box<dyn CompiledModule>, PluginError> {
        // The loading process's options are checked too; the fault comes from the bytes.
        chosen_fault(self, options)?;
        let text = String::from_utf8_lossy(bytes);
        let mut parts = text.split(';');
        let fault = parts.next().unwrap_or("").to_string();
        let ops = parts.map(str::to_string).collect();
        Ok(Box::new(Chain { fault, ops }))
    }
}

impl CompiledModule for Chain {
    fn run(
        &self,
        inputs: &[TensorRef<'_>],
        outputs: &mut [TensorMut<'_>],
    ) -> Result<(), PluginError> {
        match self.fault.as_str() {
            "panic_run" => panic!("run exploded"),
            "error_run" => return Err(PluginError::new("the device reported error 7")),
            _ => {}
        }
        // Inputs in order: the first is the chain's start, later ones are add operands.
        let mut next_input = inputs.iter().map(|t| t.to_f64_vec());
        let mut acc = next_input
            .next()
            .ok_or_else(|| PluginError::new("no inputs"))?;
        for op in &self.ops {
            match op.as_str() {
                "add" => {
                    let rhs = next_input
                        .next()
                        .ok_or_else(|| PluginError::new("add without a second input"))?;
                    for (a, b) in acc.iter_mut().zip(rhs) {
                        *a += b;
                    }
                }
                "nn.relu" => acc.iter_mut().for_each(|a| *a = a.max(0.0)),
                other => return Err(PluginError::new(format!("cannot run {other}"))),
            }
        }
        let out = outputs
            .first_mut()
            .ok_or_else(|| PluginError::new("no outputs"))?;
        match self.fault.as_str() {
            "wrong_size" => acc.truncate(acc.len() / 2),
            "wrong_values" => acc.iter_mut().for_each(|a| *a += 1.0),
            _ => {}
        }
        out.fill_from_f64(&acc)?;
        Ok(())
    }

    fn serialize(&self) -> Result<Vec<u8>, PluginError> {
        let mut parts = vec![self.fault.clone()];
        parts.extend(self.ops.iter().cloned());
        Ok(parts.join(";").into_bytes())
    }
}

export_plugin!(Faulty, Faulty);
