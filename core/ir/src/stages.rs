//! The one declaration of the compiler's passes: each pass's name, what it does, the stage of
//! the partitioning pipeline it runs in and when it runs there ([`PASSES`]).
//!
//! Everything that names passes derives from this list: the pass registry that builds them
//! (byoc-passes, and byoc-host-llvm for the host passes), the partitioning pipeline with its
//! stages (`byoc inspect --stage`) and its `--print-before` / `--print-after` names
//! (byoc-pipeline), and the prepare passes a target description may ask for (byoc-sdk,
//! [`prepare_passes`]). A unit test in each of those crates checks its side against it.

use std::fmt;

/// The stages of the partitioning pipeline, in order; the pipeline can stop after each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Stage {
    /// Prepare (constant folding, inference simplification) and MergeComposite: composite
    /// function literals formed.
    Composite,
    /// After AnnotateTarget: `compiler_begin`/`compiler_end` around every call.
    Annotate,
    /// After MergeCompilerRegions: redundant annotations between same-target neighbours gone.
    Merge,
    /// After PartitionGraph and Prune: one external function per region.
    Partition,
    /// After the host passes (reductions on custom datatypes outlined, then HostFuse): the
    /// host's ops grouped into fused functions for the host code generator.
    HostFuse,
}

impl Stage {
    /// Every stage, in pipeline order.
    pub const ALL: [Stage; 5] = [
        Stage::Composite,
        Stage::Annotate,
        Stage::Merge,
        Stage::Partition,
        Stage::HostFuse,
    ];

    /// The stage's name (`byoc inspect --stage NAME`).
    pub fn name(self) -> &'static str {
        match self {
            Stage::Composite => "composite",
            Stage::Annotate => "annotate",
            Stage::Merge => "merge",
            Stage::Partition => "partition",
            Stage::HostFuse => "host-fuse",
        }
    }

    /// What the module looks like after the stage, in one line.
    pub fn summary(self) -> &'static str {
        match self {
            Stage::Composite => "after prepare and MergeComposite",
            Stage::Annotate => "after AnnotateTarget",
            Stage::Merge => "after MergeCompilerRegions",
            Stage::Partition => "after PartitionGraph and pruning",
            Stage::HostFuse => "after the host passes: host ops grouped into fused functions",
        }
    }

    /// The stage called `name`.
    pub fn from_name(name: &str) -> Option<Stage> {
        Stage::ALL.into_iter().find(|s| s.name() == name)
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// When a pass of the pipeline runs in its stage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Schedule {
    /// Whenever the pipeline reaches the stage.
    Always,
    /// When a selected target asks for it (a target description's `prepare` list).
    TargetPrepare,
    /// Unless an option turns it off (`--no-merge`, pruning off).
    Optional,
    /// Not part of the partitioning pipeline: run on its own, by the code that has its inputs
    /// (parameters to bind, a datatype, calibration data).
    Standalone,
}

/// One pass of the compiler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PassDecl {
    /// The kebab-case name (`fold-constant`): what `Pass::name` returns and the command line
    /// accepts.
    pub name: &'static str,
    /// What the pass does, in one line.
    pub summary: &'static str,
    /// The pipeline stage it runs in (`None` for a standalone pass).
    pub stage: Option<Stage>,
    /// When it runs there.
    pub schedule: Schedule,
}

const fn pass(
    name: &'static str,
    stage: Option<Stage>,
    schedule: Schedule,
    summary: &'static str,
) -> PassDecl {
    PassDecl {
        name,
        summary,
        stage,
        schedule,
    }
}

use Schedule::{Always, Optional, Standalone, TargetPrepare};
use Stage::{Annotate, Composite, HostFuse, Merge, Partition};

/// Every pass, the pipeline's in pipeline order (prepare runs SimplifyInference and FoldConstant
/// again before FoldScaleAxis, as TVM's DNNL flow does), then the standalone ones.
pub const PASSES: &[PassDecl] = &[
    pass(
        "fold-constant",
        Some(Composite),
        Always,
        "evaluate op calls whose arguments are all constants",
    ),
    pass(
        "dead-code-elimination",
        Some(Composite),
        Always,
        "drop unused expressions and uncalled global functions",
    ),
    pass(
        "simplify-inference",
        Some(Composite),
        TargetPrepare,
        "rewrite nn.batch_norm, nn.dropout and nn.layer_norm for inference",
    ),
    pass(
        "fold-scale-axis",
        Some(Composite),
        TargetPrepare,
        "fold per-channel constant scales after nn.conv2d / nn.dense into the weights",
    ),
    pass(
        "merge-composite",
        Some(Composite),
        Always,
        "form composite functions from the targets' pattern tables",
    ),
    pass(
        "annotate-target",
        Some(Annotate),
        Always,
        "mark each call with the first target that supports it",
    ),
    pass(
        "merge-compiler-regions",
        Some(Merge),
        Optional,
        "merge neighbouring regions of one target, never creating a cycle",
    ),
    pass(
        "partition-graph",
        Some(Partition),
        Always,
        "turn each region into a global function for its target",
    ),
    pass(
        "prune",
        Some(Partition),
        Optional,
        "inline back partitions their target's prune settings reject",
    ),
    pass(
        "outline-custom-reductions",
        Some(HostFuse),
        Always,
        "outline reductions on custom datatypes into functions for the host code generator",
    ),
    pass(
        "host-fuse",
        Some(HostFuse),
        Always,
        "group the host's ops of @main into fused functions for the host code generator",
    ),
    pass(
        "infer-type",
        None,
        Standalone,
        "infer the type of every expression",
    ),
    pass(
        "bind-params",
        None,
        Standalone,
        "replace @main parameters by constant tensors, by name",
    ),
    pass(
        "change-datatype",
        None,
        Standalone,
        "change every value of one dtype to another (float32 to a custom datatype)",
    ),
    pass(
        "quantize",
        None,
        Standalone,
        "annotate, calibrate and realize a float model as int8 (TVM's relay.quantize)",
    ),
];

/// The pass called `name`.
pub fn lookup(name: &str) -> Option<&'static PassDecl> {
    PASSES.iter().find(|p| p.name == name)
}

/// The passes of the partitioning pipeline, in order.
pub fn pipeline_passes() -> impl Iterator<Item = &'static PassDecl> {
    PASSES.iter().filter(|p| p.stage.is_some())
}

/// The passes of one stage, in order.
pub fn passes_of(stage: Stage) -> impl Iterator<Item = &'static str> {
    pipeline_passes()
        .filter(move |p| p.stage == Some(stage))
        .map(|p| p.name)
}

/// The prepare passes a target may ask for, by name, in the order prepare runs them.
pub fn prepare_passes() -> impl Iterator<Item = &'static str> {
    PASSES
        .iter()
        .filter(|p| p.schedule == TargetPrepare)
        .map(|p| p.name)
}

/// All pass names, comma-separated (for messages naming the passes that exist).
pub fn known_names() -> String {
    PASSES.iter().map(|p| p.name).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_the_pipeline_is_in_stage_order() {
        for (i, p) in PASSES.iter().enumerate() {
            assert!(
                PASSES[..i].iter().all(|q| q.name != p.name),
                "{} is declared twice",
                p.name
            );
            assert_eq!(p.stage.is_none(), p.schedule == Standalone, "{}", p.name);
        }
        let stages: Vec<Stage> = pipeline_passes().filter_map(|p| p.stage).collect();
        assert!(stages.windows(2).all(|w| w[0] <= w[1]), "{stages:?}");
        for stage in Stage::ALL {
            assert_eq!(Stage::from_name(stage.name()), Some(stage));
            assert!(passes_of(stage).next().is_some(), "{stage} has no pass");
        }
        assert_eq!(
            prepare_passes().collect::<Vec<_>>(),
            ["simplify-inference", "fold-scale-axis"]
        );
    }
}
