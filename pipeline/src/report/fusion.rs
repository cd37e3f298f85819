//! The fusion groups after the `host-fuse` stage, as `byoc inspect --stage host-fuse --format
//! json` prints them: one entry per fused host function, with its kind, ops, anchor, inputs
//! and output. The text format prints the module and then one comment line per group.

use byoc_ir::partition::target_of;
use byoc_ir::Module;
use byoc_passes::host_fuse::{
    anchor_op, group_kind, reduction_op, FUSED_PREFIX, HOST_CODEGEN_TARGET,
};
use serde::Serialize;

use super::summary::pretty_json;

/// One fused host function.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FusionGroup {
    /// The global function.
    pub function: String,
    /// Its target (`llvm`), or `None` when it went back to the reference kernels.
    pub target: Option<String>,
    /// `elementwise`, `injective` (with transposes, slices, concatenations, pads or reshapes),
    /// `anchored` or `reduction`.
    pub kind: &'static str,
    /// Its ops, in order.
    pub ops: Vec<String>,
    /// The op whose output the others rewrite as its epilogue (conv2d, dense, pooling,
    /// softmax), or `None` for an elementwise group.
    pub anchor: Option<String>,
    /// The reduction whose loop computes the group (`sum`, `mean`, `max`, `min`, `prod`, the
    /// global poolings), its producers inside the loop and its consumers after it, or `None`.
    pub reduction: Option<String>,
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
                target: target_of(f).map(str::to_string),
                kind: group_kind(f),
                ops: f.op_names(),
                anchor: anchor_op(f),
                reduction: reduction_op(f),
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

    /// One comment line per group (`// @host_fused_0: injective, llvm: transpose, nn.relu`),
    /// for the end of the printed module.
    pub fn to_comments(&self) -> String {
        self.groups
            .iter()
            .map(|g| {
                format!(
                    "// @{}: {}, {}: {}\n",
                    g.function,
                    g.kind,
                    g.target.as_deref().unwrap_or("reference kernels"),
                    g.ops.join(", ")
                )
            })
            .collect()
    }

    /// Pretty-printed JSON.
    pub fn to_json(&self) -> String {
        pretty_json(self)
    }
}
