//! Prune: inlines back the partitions that do not pay (TVM's `prune_dnnl_subgraphs`,
//! TensorRT's `remove_no_mac_subgraphs`, TFLite's `min_nodes_per_partition`).
//!
//! Needs: a partitioned module (PartitionGraph's output). For each target with a
//! [`PruneConfig`](byoc_ir::target::PruneConfig), a partition (a function with
//! `Compiler="<target>"`) is inlined back into its callers when it has fewer primitive ops than
//! `min_ops` (ops inside composite bodies counted, the composite call not), or when
//! `require_any` is non-empty and it contains none of those ops. Of the remaining ones, at most
//! `max_partitions` are kept: the largest by op count, ties broken by name order. Partitions of
//! targets without settings are kept. Holds after: no call refers to a removed function;
//! inlined bodies are plain host code (a tuple returned by an inlined function is read
//! directly instead of through tuple-get-item). Partition names are not renumbered.
//! Cost: linear in the module size.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::partitioning::copy_mapped;
use crate::{PartitionError, Pass, PassContext, PassError};
use byoc_ir::partition::{skipped_by_passes, target_of};
use byoc_ir::target::TargetSupport;
use byoc_ir::{rewrite::Rebuild, Callee, Expr, ExprId, Function, IrError, Module};

/// Why a partition was inlined back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PruneReason {
    /// Fewer primitive ops than the target's minimum.
    TooFewOps {
        /// Its op count.
        ops: usize,
        /// The minimum.
        min_ops: usize,
    },
    /// None of the ops the target requires.
    NoRequiredOp {
        /// The ops of which one was required.
        require_any: Vec<String>,
    },
    /// More partitions than the target keeps, and this one among the smallest.
    OverLimit {
        /// The number kept.
        max_partitions: usize,
    },
}

/// One partition inlined back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pruned {
    /// The function's name.
    pub name: String,
    /// Its target.
    pub target: String,
    /// Why.
    pub reason: PruneReason,
}

/// The Prune pass.
#[derive(Clone, Debug)]
pub struct Prune<'t> {
    targets: &'t [TargetSupport],
}

/// The primitive op calls of a function, composite bodies included.
pub fn op_names(f: &Function) -> Vec<&str> {
    f.live_ids()
        .into_iter()
        .filter_map(|id| f.expr(id).as_op_call().map(|(op, _)| op.name()))
        .collect()
}

impl<'t> Prune<'t> {
    /// Prunes with the settings of `targets`.
    pub fn new(targets: &'t [TargetSupport]) -> Self {
        Prune { targets }
    }

    /// Inlines back the partitions of `module` its targets' settings reject, in place;
    /// returns them in name order.
    fn prune(&self, module: &mut Module) -> Result<Vec<Pruned>, PartitionError> {
        let pruned = self.select(module);
        let gone: HashSet<&str> = pruned.iter().map(|p| p.name.as_str()).collect();
        let mut hosts = Vec::new();
        for (name, f) in module.functions() {
            if !gone.contains(name) && !skipped_by_passes(f) {
                hosts.push((name.to_string(), inline_calls(f, module, &gone)?));
            }
        }
        for (name, f) in hosts {
            module.insert(name, f);
        }
        for name in &gone {
            module.remove(name);
        }
        Ok(pruned)
    }

    fn select(&self, module: &Module) -> Vec<Pruned> {
        let mut pruned = Vec::new();
        // Survivors per target: (op count, name).
        let mut kept: BTreeMap<&str, Vec<(usize, &str)>> = BTreeMap::new();
        for (name, f) in module.functions() {
            let Some(target) = target_of(f) else {
                continue;
            };
            let Some(support) = self.targets.iter().find(|t| t.name() == target) else {
                continue;
            };
            let cfg = &support.prune;
            let ops = op_names(f);
            let reason = if ops.len() < cfg.min_ops {
                Some(PruneReason::TooFewOps {
                    ops: ops.len(),
                    min_ops: cfg.min_ops,
                })
            } else if !cfg.require_any.is_empty()
                && !ops.iter().any(|op| cfg.require_any.iter().any(|r| r == op))
            {
                Some(PruneReason::NoRequiredOp {
                    require_any: cfg.require_any.clone(),
                })
            } else {
                None
            };
            match reason {
                Some(reason) => pruned.push(Pruned {
                    name: name.to_string(),
                    target: target.to_string(),
                    reason,
                }),
                None => kept.entry(target).or_default().push((ops.len(), name)),
            }
        }
        for (target, mut parts) in kept {
            let max = self
                .targets
                .iter()
                .find(|t| t.name() == target)
                .and_then(|t| t.prune.max_partitions);
            let Some(max) = max else { continue };
            // Largest first; module order (name order) breaks ties.
            parts.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
            for &(_, name) in parts.iter().skip(max) {
                pruned.push(Pruned {
                    name: name.to_string(),
                    target: target.to_string(),
                    reason: PruneReason::OverLimit {
                        max_partitions: max,
                    },
                });
            }
        }
        pruned.sort_by(|a, b| a.name.cmp(&b.name));
        pruned
    }
}

impl Pass for Prune<'_> {
    fn name(&self) -> &'static str {
        "prune"
    }

    /// Prunes `module`; the inlined partitions go to [`PassContext::pruned`].
    fn run(&self, module: &mut Module, cx: &mut PassContext) -> Result<(), PassError> {
        cx.pruned.extend(self.prune(module)?);
        Ok(())
    }
}

/// Rebuilds `f` with every call of a function in `gone` replaced by that function's body.
fn inline_calls(
    f: &Function,
    module: &Module,
    gone: &HashSet<&str>,
) -> Result<Function, PartitionError> {
    // Tuples returned by inlined bodies, read directly by tuple-get-item.
    let mut inlined_tuples: HashSet<ExprId> = HashSet::new();
    Rebuild::new(f).run(|rb, old| -> Result<Option<ExprId>, PartitionError> {
        match rb.src.expr(old) {
            Expr::Call(call) => {
                let Callee::Global(name) = &call.callee else {
                    return Ok(None);
                };
                if !gone.contains(name.as_str()) {
                    return Ok(None);
                }
                let callee = module
                    .get(name)
                    .ok_or_else(|| IrError::UnknownGlobal(name.clone()))?;
                let args = call
                    .args
                    .iter()
                    .map(|&a| rb.get(a))
                    .collect::<Result<Vec<_>, _>>()?;
                let body = inline_body(rb, callee, &args)?;
                if matches!(rb.builder.get(body), Some(Expr::Tuple(_))) {
                    inlined_tuples.insert(body);
                }
                Ok(Some(body))
            }
            Expr::TupleGetItem { tuple, index } => {
                let t = rb.get(*tuple)?;
                if !inlined_tuples.contains(&t) {
                    return Ok(None);
                }
                match rb.builder.get(t) {
                    Some(Expr::Tuple(fields)) => Ok(fields.get(*index).copied()),
                    _ => Ok(None),
                }
            }
            _ => Ok(None),
        }
    })
}

/// Copies the live nodes of `callee` into `rb`'s arena with its parameters bound to `args`;
/// returns the new id of its body.
fn inline_body(
    rb: &mut Rebuild<'_>,
    callee: &Function,
    args: &[ExprId],
) -> Result<ExprId, IrError> {
    if callee.params.len() != args.len() {
        return Err(IrError::Arity {
            op: "inlined function".to_string(),
            expected: callee.params.len().to_string(),
            got: args.len(),
        });
    }
    let mut map: HashMap<ExprId, ExprId> = callee
        .params
        .iter()
        .copied()
        .zip(args.iter().copied())
        .collect();
    for id in callee.live_ids() {
        if !map.contains_key(&id) {
            copy_mapped(callee, id, &mut map, &mut rb.builder)?;
        }
    }
    map.get(&callee.body)
        .copied()
        .ok_or(IrError::BadId(callee.body))
}
