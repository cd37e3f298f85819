//! The dnnl target's capability answer: supported ops with their predicates, the composite
//! pattern table and the prune settings.

use byoc_core::sdk::TargetDescription;

/// The target name, the `Compiler` attribute of dnnl partitions.
pub const TARGET: &str = "dnnl";

/// The dnnl target description.
pub fn description() -> TargetDescription {
    TargetDescription::new(TARGET).with_ops(["nn.conv2d", "nn.dense", "nn.relu", "add"])
}
