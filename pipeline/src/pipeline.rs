//! The BYOC partitioning pipeline, one [`PassManager`] run:
//!
//! ```text
//! prepare -> merge-composite (each target's table, targets in priority order)
//!         -> annotate-target -> merge-compiler-regions (unless `merge` is off)
//!         -> partition-graph -> prune (unless `prune` is off)
//!         [-> outline-custom-reductions -> host-fuse: the host passes, when the host code
//!             generator compiles what stays on the host]
//! ```
//!
//! prepare is `fold-constant` (which infers types) and `dead-code-elimination`, plus
//! `simplify-inference` (and `fold-constant` again) and `fold-scale-axis` when a selected
//! target asks for them. `byoc_ir::stages::PASSES` declares the pipeline's passes and the
//! stage each belongs to: [`partition`] runs the passes up to [`PartitionOptions::stop_after`]
//! (what `byoc inspect --stage` shows), and `--print-before` / `--print-after` accept its
//! names. The pass manager verifies the module after every pass in debug builds and tests, and
//! errors name the pass (`in pass annotate-target: ...`). The passes' reports (rejections,
//! declined composites, pruned partitions) travel in the [`PassContext`].
//!
//! Every stage is deterministic: the same module and targets give a structurally identical
//! result, printed byte for byte the same. Modules that already carry
//! `annotation.compiler_begin/end` (manual annotation) go through the same stages;
//! AnnotateTarget keeps existing annotations.

use std::collections::BTreeSet;

use byoc_host_llvm::create_host_pass;
use byoc_ir::stages::{self, lookup, passes_of};
use byoc_ir::target::TargetSupport;
use byoc_ir::Module;
use byoc_passes::annotate_target::{AnnotateTarget, Rejection};
use byoc_passes::merge_compiler_regions::MergeCompilerRegions;
use byoc_passes::partition_graph::PartitionGraph;
use byoc_passes::prune::{Prune, Pruned};
use byoc_passes::{
    DeclinedMatch, Pass, PassContext, PassError, PassManager, SimplifyInference, AFTER, BEFORE,
};
use byoc_patterns::MergeComposite;
use thiserror::Error;

use crate::target::{check_distinct, DuplicateTarget, Target};

pub use byoc_ir::stages::Stage;

/// The names of the pipeline's passes, in order (what `--print-before` / `--print-after`
/// accept): the passes of `byoc_ir::stages::PASSES` that belong to a stage.
pub fn pass_names() -> impl Iterator<Item = &'static str> {
    stages::pipeline_passes().map(|p| p.name)
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
    /// Keep a copy of the module before each of these passes ([`Partitioned::snapshots`]).
    pub print_before: BTreeSet<String>,
    /// Keep a copy of the module after each of these passes ([`Partitioned::snapshots`]).
    pub print_after: BTreeSet<String>,
}

impl Default for PartitionOptions {
    fn default() -> Self {
        PartitionOptions {
            stop_after: Stage::Partition,
            merge: true,
            include_non_call_ops: true,
            bind_constants: true,
            prune: true,
            print_before: BTreeSet::new(),
            print_after: BTreeSet::new(),
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
    /// The modules asked for by [`PartitionOptions::print_before`] and
    /// [`PartitionOptions::print_after`], in the order the passes ran.
    pub snapshots: Vec<Snapshot>,
}

impl Partitioned {
    /// A module no stage has decided anything about (nothing rejected, pruned or declined).
    pub fn of(module: Module) -> Self {
        Partitioned {
            module,
            rejected: Vec::new(),
            pruned: Vec::new(),
            declined: Vec::new(),
            snapshots: Vec::new(),
        }
    }
}

/// The module around one pass, as `--print-before` / `--print-after` show it.
#[derive(Clone, Debug)]
pub struct Snapshot {
    /// The pass.
    pub pass: String,
    /// `before` or `after`.
    pub when: &'static str,
    /// The module at that point.
    pub module: Module,
}

/// Errors of the pipeline.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum PipelineError {
    /// Two targets with one name.
    #[error(transparent)]
    DuplicateTarget(#[from] DuplicateTarget),
    /// A pass failed; the message names it (`in pass annotate-target: ...`).
    #[error(transparent)]
    Pass(#[from] PassError),
    /// A print hook names a pass the pipeline does not have.
    #[error("unknown pass '{name}' (the pipeline's passes: {known})")]
    UnknownPass {
        /// The name given.
        name: String,
        /// The pipeline's pass names, comma-separated.
        known: String,
    },
}

/// Runs the pipeline on `module` for `targets` (priority order: earlier targets win).
pub fn partition(
    module: &Module,
    targets: &[Target],
    options: &PartitionOptions,
) -> Result<Partitioned, PipelineError> {
    check_distinct(targets)?;
    if let Some(name) = options
        .print_before
        .iter()
        .chain(&options.print_after)
        .find(|n| !pass_names().any(|p| p == n.as_str()))
    {
        return Err(PipelineError::UnknownPass {
            name: name.clone(),
            known: pass_names().collect::<Vec<_>>().join(", "),
        });
    }
    let supports: Vec<TargetSupport> = targets.iter().map(|t| t.support.clone()).collect();
    let passes = pipeline_passes(targets, &supports, options)?;
    let mut manager = PassManager::new();
    for pass in passes {
        manager.push(pass);
    }
    // The manager checks print names against the passes of this run; names of passes that do
    // not run here (a stage not reached, an optional pass no target asks for) print nothing.
    let ran = manager.pass_names();
    let wanted = |names: &BTreeSet<String>| -> Vec<String> {
        names
            .iter()
            .filter(|n| ran.contains(&n.as_str()))
            .cloned()
            .collect()
    };
    let mut snapshots = Vec::new();
    let mut module = module.clone();
    let mut cx = PassContext::new();
    manager
        .print_before(wanted(&options.print_before))
        .print_after(wanted(&options.print_after))
        .print_sink(|pass, when, m| {
            snapshots.push(Snapshot {
                pass: pass.to_string(),
                when: if when == BEFORE { BEFORE } else { AFTER },
                module: m.clone(),
            })
        })
        .run(&mut module, &mut cx)?;
    Ok(Partitioned {
        module,
        rejected: cx.rejected,
        pruned: cx.pruned,
        declined: cx.declined,
        snapshots,
    })
}

/// The passes of one run, in declaration order (`byoc_ir::stages::PASSES`), up to
/// `options.stop_after` (a pass without a stage never runs; a unit test keeps the two in step).
///
/// Prepare always folds constants (which infers the types) and eliminates dead code, and runs
/// SimplifyInference and FoldScaleAxis when a target asks for them (TVM's DNNL flow:
/// SimplifyInference, FoldConstant, FoldScaleAxis). The passes after FoldConstant keep the
/// types, so no later pass infers the module again.
fn pipeline_passes<'t>(
    targets: &'t [Target],
    supports: &'t [TargetSupport],
    options: &PartitionOptions,
) -> Result<Vec<Box<dyn Pass + 't>>, PassError> {
    let mut names = vec!["fold-constant", "dead-code-elimination"];
    if targets.iter().any(|t| t.asks_for("simplify-inference")) {
        names.extend(["simplify-inference", "fold-constant"]);
    }
    if targets.iter().any(|t| t.asks_for("fold-scale-axis")) {
        names.push("fold-scale-axis");
    }
    names.extend(["merge-composite", "annotate-target"]);
    if options.merge {
        names.push("merge-compiler-regions");
    }
    names.push("partition-graph");
    if options.prune {
        names.push("prune");
    }
    names.extend(passes_of(Stage::HostFuse));
    names
        .into_iter()
        .filter(|n| stage_of(n).is_some_and(|s| s <= options.stop_after))
        .map(|n| create_pass(n, targets, supports, options))
        .collect()
}

/// Builds the pass called `name` as the pipeline configures it for `targets` (`supports` are
/// their [`TargetSupport`]s, in the same order) and `options`: MergeComposite with the
/// targets' tables in priority order, AnnotateTarget and Prune with their support,
/// SimplifyInference keeping `nn.layer_norm` whole when a target runs it as one op; any other
/// name is a core pass built with its defaults.
pub fn create_pass<'t>(
    name: &str,
    targets: &'t [Target],
    supports: &'t [TargetSupport],
    options: &PartitionOptions,
) -> Result<Box<dyn Pass + 't>, PassError> {
    Ok(match name {
        "merge-composite" => Box::new(MergeComposite::with_tables(
            targets.iter().map(|t| &t.patterns),
        )),
        "annotate-target" => Box::new(
            AnnotateTarget::new(supports).include_non_call_ops(options.include_non_call_ops),
        ),
        "merge-compiler-regions" => Box::new(MergeCompilerRegions::new()),
        "partition-graph" => Box::new(PartitionGraph::new().bind_constants(options.bind_constants)),
        "prune" => Box::new(Prune::new(supports)),
        "simplify-inference" => Box::new(SimplifyInference {
            keep_layer_norm: targets.iter().any(|t| t.support.lists_op("nn.layer_norm")),
        }),
        other => match create_host_pass(other) {
            Some(pass) => pass,
            None => byoc_passes::create_pass(other)?,
        },
    })
}

/// The stage a pipeline pass belongs to.
fn stage_of(pass: &str) -> Option<Stage> {
    lookup(pass).and_then(|p| p.stage)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every pass the pipeline builds carries a declared name, in declaration order.
    #[test]
    fn the_pipeline_runs_passes_of_the_list_in_its_order() {
        let mut target = Target::new(TargetSupport::new("acc"));
        target.prepare = vec!["simplify-inference".into(), "fold-scale-axis".into()];
        let targets = [target];
        let supports = [targets[0].support.clone()];
        let passes = pipeline_passes(&targets, &supports, &PartitionOptions::default())
            .expect("the pipeline's passes build");
        let names: Vec<&str> = passes.iter().map(|p| p.name()).collect();
        assert_eq!(
            names,
            [
                "fold-constant",
                "dead-code-elimination",
                "simplify-inference",
                "fold-constant",
                "fold-scale-axis",
                "merge-composite",
                "annotate-target",
                "merge-compiler-regions",
                "partition-graph",
                "prune"
            ]
        );
        // In declaration order, but for prepare's second fold-constant.
        let mut once = names.clone();
        once.remove(3);
        let declared: Vec<&str> = pass_names().filter(|n| once.contains(n)).collect();
        assert_eq!(once, declared);
        let composite = PartitionOptions {
            stop_after: Stage::Composite,
            ..PartitionOptions::default()
        };
        let passes = pipeline_passes(&targets, &supports, &composite).expect("passes build");
        let last = passes.last().map(|p| p.name());
        assert_eq!(last, Some("merge-composite"));
    }
}
