//! The summaries `byoc inspect --format json` prints (the contract is in
//! `docs/partitioning.md`). After partitioning, [`Summary`]: per external function its target,
//! ops, composites and arity; the ops left on the host; why calls stayed on the host; which
//! partitions Prune inlined back and why. Before partitioning, [`StageSummary`]: the
//! composites formed (name, `PartitionedFromPattern`, count), the ops and composites annotated
//! for each target, the ops left to the host, and the rejections and declined composites so
//! far.
//!
//! Conventions:
//! - `ops` and `host_ops` are sorted lists with repetition of primitive op calls, ops inside
//!   composite bodies counted (a composite of conv2d, bias_add and relu adds all three).
//!   `composites` is the sorted list with repetition of the `Composite` names called.
//! - `functions` are the global functions with a `Compiler` attribute, in name order;
//!   `host_ops` covers every other global function.
//! - `rejected` collapses duplicates: AnnotateTarget reports one rejection per call and target;
//!   calls with the same op, target and reason become one entry whose `count` says how many
//!   calls it stands for. Entries are sorted by op, then target, then reason.
//! - `pruned` lists the partitions Prune inlined back, in name order, with the reason in words.
//! - In a [`StageSummary`], `composites` are sorted by name, then `PartitionedFromPattern`;
//!   `annotations` has one entry per selected target in priority order, whose `ops` (composite
//!   bodies included) and `composites` are sorted lists with repetition and `regions` counts
//!   its regions (one per annotated call before MergeCompilerRegions); `host_ops` are the ops
//!   outside every target's region. Before AnnotateTarget every op is a host op.

use std::collections::BTreeMap;

use byoc_ir::analysis::regions::{composite_call, literal_members, RegionError, RegionSet};
use byoc_ir::partition::{
    skipped_by_passes, target_of, COMPOSITE, HOST_TARGET, PARTITIONED_FROM_PATTERN,
};
use byoc_ir::{Callee, Expr, ExprId, Function, Module, Type};
use byoc_passes::host_fuse::HOST_CODEGEN_TARGET;
use byoc_passes::prune::{PruneReason, Pruned};
use serde::Serialize;

use crate::pipeline::{Partitioned, Stage};

/// The summary of a partitioned module.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// The external functions, in name order.
    pub functions: Vec<FunctionSummary>,
    /// Primitive ops left in host functions, sorted, with repetition.
    pub host_ops: Vec<String>,
    /// Why op calls stayed on the host, duplicates collapsed.
    pub rejected: Vec<RejectedOp>,
    /// Partitions inlined back into the host.
    pub pruned: Vec<PrunedPartition>,
    /// Composite matches a pattern check rejected, duplicates collapsed.
    pub declined: Vec<DeclinedComposite>,
}

/// One external function.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FunctionSummary {
    /// The global function's name (`dnnl_0`).
    pub name: String,
    /// Its `Compiler` attribute.
    pub target: String,
    /// Primitive ops, sorted, with repetition, composite bodies included.
    pub ops: Vec<String>,
    /// Composite names called, sorted, with repetition.
    pub composites: Vec<String>,
    /// Number of parameters.
    pub num_inputs: usize,
    /// Number of results (fields of a tuple result, else 1).
    pub num_outputs: usize,
}

/// Op calls one target declined for one reason.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct RejectedOp {
    /// The op.
    pub op: String,
    /// The target that declined it.
    pub target: String,
    /// The target rule's reason.
    pub reason: String,
    /// How many calls this entry stands for.
    pub count: usize,
}

/// Matches of one pattern that its check rejected for one reason (the ops then went on to
/// later patterns or single-op rules).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct DeclinedComposite {
    /// The pattern table entry (`dnnl.conv2d_bias_sum_relu`).
    pub pattern: String,
    /// The op of the match's root.
    pub op: String,
    /// The check's reason.
    pub reason: String,
    /// How many matches this entry stands for.
    pub count: usize,
}

/// A partition Prune inlined back.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PrunedPartition {
    /// The partition's name before it was inlined.
    pub name: String,
    /// Its target.
    pub target: String,
    /// Why, in words.
    pub reason: String,
}

impl Summary {
    /// Summarizes a pipeline result (meaningful after the `partition` stage).
    pub fn of(result: &Partitioned) -> Self {
        let mut functions = Vec::new();
        let mut host_ops = Vec::new();
        for (name, f) in sorted_functions(&result.module) {
            let (ops, composites) = op_calls(f);
            match target_of(f) {
                // Fused host groups (after the host passes) are the host's ops.
                Some(HOST_CODEGEN_TARGET) | None => host_ops.extend(ops),
                Some(target) => functions.push(FunctionSummary {
                    name: name.to_string(),
                    target: target.to_string(),
                    ops,
                    composites,
                    num_inputs: f.params.len(),
                    num_outputs: num_outputs(f),
                }),
            }
        }
        host_ops.sort();
        let mut pruned: Vec<PrunedPartition> = result.pruned.iter().map(pruned_entry).collect();
        pruned.sort_by(|a, b| a.name.cmp(&b.name));
        Summary {
            functions,
            host_ops,
            rejected: rejected_ops(result),
            pruned,
            declined: declined_composites(result),
        }
    }

    /// The summary as pretty-printed JSON, ending in a newline.
    pub fn to_json(&self) -> String {
        pretty_json(self)
    }
}

/// The summary of a module before partitioning (after `composite`, `annotate` or `merge`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StageSummary {
    /// The stage the pipeline stopped after.
    pub stage: &'static str,
    /// The composites formed, counted per name and pattern.
    pub composites: Vec<CompositeCount>,
    /// What each selected target was given, in priority order.
    pub annotations: Vec<TargetAnnotations>,
    /// Primitive ops outside every target's region, sorted, with repetition.
    pub host_ops: Vec<String>,
    /// Why op calls stayed on the host (empty before `annotate`), duplicates collapsed.
    pub rejected: Vec<RejectedOp>,
    /// Composite matches a pattern check rejected, duplicates collapsed.
    pub declined: Vec<DeclinedComposite>,
}

/// Calls of one composite.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct CompositeCount {
    /// The `Composite` name (`dnnl.conv2d_bias_relu`).
    pub name: String,
    /// Its `PartitionedFromPattern` attribute (`nn.conv2d_nn.bias_add_nn.relu_`).
    #[serde(rename = "PartitionedFromPattern")]
    pub partitioned_from_pattern: String,
    /// How many calls.
    pub count: usize,
}

/// The calls annotated for one target.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TargetAnnotations {
    /// The target.
    pub target: String,
    /// Primitive ops in its regions, sorted, with repetition, composite bodies included.
    pub ops: Vec<String>,
    /// Composite names called in its regions, sorted, with repetition.
    pub composites: Vec<String>,
    /// Its regions.
    pub regions: usize,
}

impl StageSummary {
    /// Summarizes a pipeline result that stopped at `stage`, before partitioning; `targets`
    /// are the selected target names in priority order.
    pub fn of(
        stage: Stage,
        result: &Partitioned,
        targets: &[&str],
    ) -> Result<Self, Box<RegionError>> {
        let mut annotations: Vec<TargetAnnotations> = targets
            .iter()
            .map(|t| TargetAnnotations {
                target: t.to_string(),
                ops: Vec::new(),
                composites: Vec::new(),
                regions: 0,
            })
            .collect();
        let mut host = TargetAnnotations {
            target: HOST_TARGET.to_string(),
            ops: Vec::new(),
            composites: Vec::new(),
            regions: 0,
        };
        let mut composites: BTreeMap<(String, String), usize> = BTreeMap::new();
        for (name, f) in sorted_functions(&result.module) {
            if skipped_by_passes(f) {
                continue;
            }
            let regions = RegionSet::build(f, name, true)?;
            for r in regions.regions() {
                if let Some(a) = annotations.iter_mut().find(|a| a.target == r.target) {
                    a.regions += 1;
                }
            }
            let in_literal = literal_members(f);
            for id in f.live_ids() {
                if in_literal[id.index()] {
                    continue;
                }
                let target = regions
                    .region_of(id)
                    .map_or(HOST_TARGET, |r| regions.region(r).target.as_str());
                let into = annotations
                    .iter_mut()
                    .find(|a| a.target == target)
                    .unwrap_or(&mut host);
                if let Some((lit, composite)) = composite_call(f, id) {
                    let pattern = f
                        .expr(lit)
                        .as_function()
                        .and_then(|lf| lf.attrs.get_str(PARTITIONED_FROM_PATTERN))
                        .unwrap_or_default();
                    *composites
                        .entry((composite.to_string(), pattern.to_string()))
                        .or_default() += 1;
                    into.composites.push(composite.to_string());
                    into.ops.extend(literal_ops(f, lit));
                } else if let Some((op, _)) = f.expr(id).as_op_call() {
                    if !is_annotation(op.name()) {
                        into.ops.push(op.name().to_string());
                    }
                }
            }
        }
        for a in annotations.iter_mut().chain(std::iter::once(&mut host)) {
            a.ops.sort();
            a.composites.sort();
        }
        Ok(StageSummary {
            stage: stage.name(),
            composites: composites
                .into_iter()
                .map(|((name, partitioned_from_pattern), count)| CompositeCount {
                    name,
                    partitioned_from_pattern,
                    count,
                })
                .collect(),
            annotations,
            host_ops: host.ops,
            rejected: rejected_ops(result),
            declined: declined_composites(result),
        })
    }

    /// The summary as pretty-printed JSON, ending in a newline.
    pub fn to_json(&self) -> String {
        pretty_json(self)
    }
}

/// `annotation.compiler_begin` and `annotation.compiler_end`: markers, not ops that run.
fn is_annotation(op: &str) -> bool {
    op.starts_with("annotation.")
}

/// The primitive ops in the body of the local function literal `lit`.
fn literal_ops(f: &Function, lit: ExprId) -> Vec<String> {
    let mut ops = Vec::new();
    let mut seen = vec![false; f.len()];
    let mut stack: Vec<ExprId> = f.expr(lit).operand_iter().collect();
    while let Some(id) = stack.pop() {
        if std::mem::replace(&mut seen[id.index()], true) {
            continue;
        }
        if let Some((op, _)) = f.expr(id).as_op_call() {
            ops.push(op.name().to_string());
        }
        stack.extend(f.expr(id).operand_iter());
    }
    ops
}

/// Why op calls stayed on the host, duplicates collapsed.
fn rejected_ops(result: &Partitioned) -> Vec<RejectedOp> {
    collapsed(
        result
            .rejected
            .iter()
            .map(|r| [r.op.as_str(), r.target.as_str(), r.reason.as_str()]),
    )
    .map(|([op, target, reason], count)| RejectedOp {
        op: op.to_string(),
        target: target.to_string(),
        reason: reason.to_string(),
        count,
    })
    .collect()
}

/// Composite matches a check rejected, duplicates collapsed.
fn declined_composites(result: &Partitioned) -> Vec<DeclinedComposite> {
    collapsed(
        result
            .declined
            .iter()
            .map(|d| [d.pattern.as_str(), d.op.as_str(), d.reason.as_str()]),
    )
    .map(|([pattern, op, reason], count)| DeclinedComposite {
        pattern: pattern.to_string(),
        op: op.to_string(),
        reason: reason.to_string(),
        count,
    })
    .collect()
}

/// A value as pretty-printed JSON, ending in a newline.
pub(super) fn pretty_json(value: &impl Serialize) -> String {
    // A tree of strings, numbers and lists always serializes.
    let mut text = serde_json::to_string_pretty(value).unwrap_or_default();
    text.push('\n');
    text
}

/// Equal keys counted, in sorted order.
fn collapsed<'a>(
    keys: impl Iterator<Item = [&'a str; 3]>,
) -> impl Iterator<Item = ([&'a str; 3], usize)> {
    let mut counts: BTreeMap<[&str; 3], usize> = BTreeMap::new();
    for k in keys {
        *counts.entry(k).or_default() += 1;
    }
    counts.into_iter()
}

/// The global functions in name order (the module's own order is not part of its meaning).
pub(crate) fn sorted_functions(module: &Module) -> Vec<(&str, &Function)> {
    let mut all: Vec<_> = module.functions().collect();
    all.sort_by(|a, b| a.0.cmp(b.0));
    all
}

/// The sorted primitive ops (composite bodies included) and composite names called in `f`.
fn op_calls(f: &Function) -> (Vec<String>, Vec<String>) {
    let mut ops = Vec::new();
    let mut composites = Vec::new();
    for id in f.live_ids() {
        let Some(call) = f.expr(id).as_call() else {
            continue;
        };
        match &call.callee {
            Callee::Op(op) => ops.push(op.name().to_string()),
            Callee::Local(callee) => {
                if let Some(name) = f
                    .expr(*callee)
                    .as_function()
                    .and_then(|lf| lf.attrs.get_str(COMPOSITE))
                {
                    composites.push(name.to_string());
                }
            }
            Callee::Global(_) => {}
        }
    }
    ops.sort();
    composites.sort();
    (ops, composites)
}

/// Fields of a tuple result (by type, or by the body's form when types are absent), else 1.
fn num_outputs(f: &Function) -> usize {
    match (f.ty(f.body), f.expr(f.body)) {
        (Some(Type::Tuple(fields)), _) => fields.len(),
        (None, Expr::Tuple(fields)) => fields.len(),
        _ => 1,
    }
}

fn pruned_entry(p: &Pruned) -> PrunedPartition {
    PrunedPartition {
        name: p.name.clone(),
        target: p.target.clone(),
        reason: prune_reason(&p.reason),
    }
}

/// A prune reason in words.
pub fn prune_reason(reason: &PruneReason) -> String {
    match reason {
        PruneReason::TooFewOps { ops, min_ops } => {
            format!("{ops} op(s), fewer than min_ops={min_ops}")
        }
        PruneReason::NoRequiredOp { require_any } => {
            format!("none of require_any=[{}]", require_any.join(", "))
        }
        PruneReason::OverLimit { max_partitions } => {
            format!("over max_partitions={max_partitions} (the larger partitions are kept)")
        }
    }
}
