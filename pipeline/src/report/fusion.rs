//! The fusion groups after the `host-fuse` stage, as `byoc inspect --stage host-fuse --format
//! json` prints them: one entry per fused host function, with its ops, anchor, inputs and
//! output.

use byoc_core::byoc::COMPILER;
use byoc_core::ir::Module;
use byoc_core::passes::host_fuse::{anchor_op, FUSED_PREFIX, HOST_CODEGEN_TARGET};
use serde::Serialize;

use super::summary::pretty_json;

/// One fused host function.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FusionGroup {
    /// The global function.
    pub function: String,
    /// Its target (`llvm`), or `None` when it went back to the reference kernels.
    pub target: Option<String>,
    /// Its ops, in order.
    pub ops: Vec<String>,
    /// The op whose output the others rewrite as its epilogue (conv2d, dense, pooling,
    /// softmax), or `None` for an elementwise group.
    pub anchor: Option<String>,
    /// The types of its inputs.
    pub inputs: Vec<String>,
    /// The type of its output.
    pub output: String,
}

/// The fused host functions of a module.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FusionSummary {
    /// The fused-function target.
    pub target: &'static str,
    /// The groups, by function name.
    pub groups: Vec<FusionGroup>,
}

impl FusionSummary {
    /// The fused functions of `module` (named `host_fused_N`).
    pub fn of(module: &Module) -> Self {
        let groups = module
            .functions()
            .filter(|(name, _)| name.starts_with(FUSED_PREFIX))
            .map(|(name, f)| FusionGroup {
                function: name.to_string(),
                target: f.attrs.get_str(COMPILER).map(str::to_string),
                ops: f.op_names(),
                anchor: anchor_op(f),
                inputs: f.param_types().iter().map(|t| t.to_string()).collect(),
                output: f
                    .ty(f.body)
                    .map_or_else(|| "untyped".to_string(), |t| t.to_string()),
            })
            .collect();
        FusionSummary {
            target: HOST_CODEGEN_TARGET,
            groups,
        }
    }

    /// Pretty-printed JSON.
    pub fn to_json(&self) -> String {
        pretty_json(self)
    }
}
