//! The BYOC partitioning pipeline (DESIGN §2):
//!
//! ```text
//! prepare -> MergeComposite (each target's table, targets in priority order)
//!         -> AnnotateTarget -> MergeCompilerRegions (unless `merge` is off)
//!         -> PartitionGraph -> Prune
//! ```
//!
//! prepare is type inference, constant folding and dead-code elimination, plus
//! SimplifyInference (and folding again) and FoldScaleAxis when a selected target asks for
//! them. [`partition`]
//! can stop after any [`Stage`], which is what `byoc inspect --stage` shows. Every stage is
//! deterministic: the same module and targets give a structurally identical result, printed
//! byte for byte the same. Modules that already carry `annotation.compiler_begin/end` (manual
//! annotation) go through the same stages; AnnotateTarget keeps existing annotations.

use byoc_core::ir::Module;
use byoc_core::passes::annotate_target::{AnnotateTarget, Rejection};
use byoc_core::passes::merge_compiler_regions::MergeCompilerRegions;
use byoc_core::passes::partition_graph::{PartitionError, PartitionGraph};
use byoc_core::passes::prune::{Prune, Pruned};
use byoc_core::passes::{
    DeadCodeElimination, FoldConstant, FoldScaleAxis, PassContext, PassError, PassManager,
    SimplifyInference,
};
use byoc_core::target::TargetSupport;
use byoc_patterns::{merge_composite_explained, DeclinedMatch, MergeCompositeError};
use thiserror::Error;

use crate::target::{check_distinct, DuplicateTarget, Target};

/// The stages of the pipeline, in order; the pipeline can stop after each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Stage {
    /// After MergeComposite: composite function literals formed.
    Composite,
    /// After AnnotateTarget: `compiler_begin`/`compiler_end` around every call.
    Annotate,
    /// After MergeCompilerRegions: redundant annotations between same-target neighbours gone.
    Merge,
    /// After PartitionGraph and Prune: one external function per region.
    Partition,
}

impl Stage {
    /// The stage's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Stage::Composite => "composite",
            Stage::Annotate => "annotate",
            Stage::Merge => "merge",
            Stage::Partition => "partition",
        }
    }
}

/// Options of [`partition`].
#[derive(Clone, Debug)]
pub struct PartitionOptions {
    /// The last stage to run.
    pub stop_after: Stage,
    /// Run MergeCompilerRegions (off: one partition per annotated call, `--no-merge`).
    pub merge: bool,
    /// Annotate tuples and tuple-get-items too (TVM's `include_non_call_ops`).
    pub include_non_call_ops: bool,
    /// Bind constants into external functions (off: pass them as parameters).
    pub bind_constants: bool,
    /// Inline back partitions the targets' prune settings reject.
    pub prune: bool,
}

impl Default for PartitionOptions {
    fn default() -> Self {
        PartitionOptions {
            stop_after: Stage::Partition,
            merge: true,
            include_non_call_ops: true,
            bind_constants: true,
            prune: true,
        }
    }
}

/// The pipeline's result: the module after the last stage run and what the stages decided.
#[derive(Clone, Debug)]
pub struct Partitioned {
    /// The module after `stop_after`.
    pub module: Module,
    /// For every op call left on the host, each target's reason (empty before annotation).
    pub rejected: Vec<Rejection>,
    /// Partitions inlined back by Prune (empty before partitioning or with prune off).
    pub pruned: Vec<Pruned>,
    /// Pattern matches a check rejected (at MergeComposite), targets in priority order.
    pub declined: Vec<DeclinedMatch>,
}

/// Errors of the pipeline, naming the stage.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum PipelineError {
    /// Two targets with one name.
    #[error(transparent)]
    DuplicateTarget(#[from] DuplicateTarget),
    /// A prepare pass failed.
    #[error("prepare: {0}")]
    Prepare(#[from] PassError),
    /// MergeComposite failed for a target's table.
    #[error("composite (target {target}): {source}")]
    Composite {
        /// The target whose table was applied.
        target: String,
        /// The error.
        source: MergeCompositeError,
    },
    /// A partitioning stage failed.
    #[error("{stage}: {source}", stage = .stage.name())]
    Partition {
        /// The stage.
        stage: Stage,
        /// The error.
        source: PartitionError,
    },
}

/// Runs the pipeline on `module` for `targets` (priority order: earlier targets win).
pub fn partition(
    module: &Module,
    targets: &[Target],
    options: &PartitionOptions,
) -> Result<Partitioned, PipelineError> {
    check_distinct(targets)?;
    let mut module = module.clone();
    prepare(&mut module, targets)?;
    let mut declined = Vec::new();
    for t in targets {
        let d = merge_composite_explained(&mut module, &t.patterns).map_err(|source| {
            PipelineError::Composite {
                target: t.name().to_string(),
                source,
            }
        })?;
        declined.extend(d);
    }
    let mut out = Partitioned {
        module,
        rejected: Vec::new(),
        pruned: Vec::new(),
        declined,
    };
    if options.stop_after == Stage::Composite {
        return Ok(out);
    }
    let supports: Vec<TargetSupport> = targets.iter().map(|t| t.support.clone()).collect();
    let at = |stage| move |source| PipelineError::Partition { stage, source };
    let (annotated, report) = AnnotateTarget::new(&supports)
        .include_non_call_ops(options.include_non_call_ops)
        .run_owned(std::mem::take(&mut out.module))
        .map_err(at(Stage::Annotate))?;
    out.module = annotated;
    out.rejected = report.rejected;
    if options.stop_after == Stage::Annotate {
        return Ok(out);
    }
    if options.merge {
        out.module = MergeCompilerRegions::new()
            .run_owned(std::mem::take(&mut out.module))
            .map_err(at(Stage::Merge))?;
    }
    if options.stop_after == Stage::Merge {
        return Ok(out);
    }
    out.module = PartitionGraph::new()
        .bind_constants(options.bind_constants)
        .run_owned(std::mem::take(&mut out.module))
        .map_err(at(Stage::Partition))?;
    if options.prune {
        let (pruned, report) = Prune::new(&supports)
            .run_owned(std::mem::take(&mut out.module))
            .map_err(at(Stage::Partition))?;
        out.module = pruned;
        out.pruned = report.pruned;
    }
    Ok(out)
}

/// Constant folding and dead-code elimination, plus SimplifyInference and FoldScaleAxis when
/// a target asks for them (TVM's DNNL flow: SimplifyInference, FoldConstant, FoldScaleAxis).
/// FoldConstant infers the types; the passes after it keep them, so no later stage infers the
/// module again.
fn prepare(module: &mut Module, targets: &[Target]) -> Result<(), PassError> {
    let mut passes = PassManager::new()
        .pass(FoldConstant)
        .pass(DeadCodeElimination);
    if targets.iter().any(|t| t.asks_for("simplify-inference")) {
        // A target that runs layer_norm as one kernel (dnnl) gets it whole.
        let keep_layer_norm = targets.iter().any(|t| t.support.lists_op("nn.layer_norm"));
        passes = passes
            .pass(SimplifyInference { keep_layer_norm })
            .pass(FoldConstant);
    }
    if targets.iter().any(|t| t.asks_for("fold-scale-axis")) {
        passes = passes.pass(FoldScaleAxis);
    }
    passes.run(module, &mut PassContext::new())
}
