//! Partition by pattern (TVM's `pattern.partition`, `PatternPartitioner` in `dataflow_matcher.cc`): every match of a pattern
//! becomes a call of a local function literal holding the matched subgraph.
//!
//! Needs: a typed function (run `byoc_ir::infer_types` first). Holds after: each
//! accepted match root is replaced by `fn (FunctionVar_g_0, ...) { copy of the match }(inputs)`
//! with the function attrs given plus `PartitionedFromPattern`; every new node carries its type,
//! so no re-inference is needed.
//!
//! Rules, as TVM's `PatternGrouper`:
//! - Candidate roots are visited from the last node backwards, so a larger match containing a
//!   smaller one wins. Matches never overlap (shared constants excepted, they are copied).
//!   Nodes of composite functions (those with `PartitionedFromPattern`) are never matched.
//! - Inputs come from the pattern's leaves (`*`, `?x`, `var`, `const`, expression patterns) and
//!   from the arguments of `op(..)` / fields of `(..)`, in the pattern's post-order,
//!   de-duplicated. A constant matched by `const` or an expression pattern is embedded in the
//!   body; other constants become parameters.
//! - A match whose interior node is used outside it is rejected unless the root post-dominates
//!   that use; then the interior node is duplicated (the outside keeps the original).
//! - `PartitionedFromPattern` is the post-order of the copied calls: `nn.conv2d_add_nn.relu_`.
//!
//! Where this differs from TVM (on purpose): a check callback that rejects a match leaves its
//! nodes free for other matches (TVM keeps them claimed, hiding smaller matches); a parameter
//! the copy reaches without a pattern leaf binding it (below a dominator's parent, say) becomes
//! an extra input instead of a free variable, and a match that would copy a function literal is
//! rejected, so a composite is always closed. Nodes matched by a dominator's parent or path are
//! never inputs, as in TVM.
//!
//! Cost: one match attempt per candidate root (calls of the ops the pattern's root names, or
//! every node), plus for each accepted match its size and the users of its nodes; the rebuild
//! is linear in the function size. A pattern that matches nowhere leaves the function untouched
//! without a rebuild.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use byoc_ir::rewrite::Rebuild;
use byoc_ir::{Attrs, Callee, Expr, ExprId, FuncType, Function, IrError, Type};
use thiserror::Error;

use crate::matcher::{Match, Matcher};
use crate::overlay::{Overlay, View};
use crate::pattern::{Pattern, PatternKind};

/// A check callback: sees the typed function and the root call of a match; `Err(reason)`
/// rejects the match, and MergeComposite keeps the reason ([`Declined`]).
pub type Check = Arc<dyn Fn(&Function, ExprId) -> Result<(), String> + Send + Sync>;

/// A match that the pattern's check rejected: its root and the check's reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Declined {
    /// The root of the match.
    pub root: ExprId,
    /// Why it was declined: the entry's check, or a composite that could not keep one
    /// parameter per leaf of the pattern.
    pub reason: String,
}

pub use byoc_ir::partition::PARTITIONED_FROM_PATTERN;

/// Errors of partitioning.
#[derive(Debug, Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum PartitionError {
    /// An input of a match has no inferred type.
    #[error("input {at} of the match at {root} has no inferred type (run type inference first)")]
    Untyped {
        /// The match root.
        root: ExprId,
        /// The untyped input.
        at: ExprId,
    },
    /// Building the rewritten function failed.
    #[error(transparent)]
    Ir(#[from] IrError),
}

/// One accepted match: what it replaces and how.
#[derive(Clone, Debug)]
pub struct Group {
    /// The match root (in the source function).
    pub root: ExprId,
    /// The inputs, in parameter order.
    pub inputs: Vec<ExprId>,
    /// The copied nodes in post-order (the root last); inputs excluded.
    pub nodes: Vec<ExprId>,
    /// The `PartitionedFromPattern` name.
    pub name: String,
    /// The match.
    pub matched: Match,
}

/// Finds the non-overlapping matches of `pattern` in `f` (see the module docs).
pub fn find_groups(f: &Function, pattern: &Pattern, check: Option<&Check>) -> Vec<Group> {
    find_groups_in(f, &Overlay::new(f), pattern, check, &mut Vec::new())
}

/// Finds the non-overlapping matches of `pattern` in `f` with the groups of `overlay` applied;
/// matches the check rejects go to `declined`.
pub(crate) fn find_groups_in(
    f: &Function,
    overlay: &Overlay,
    pattern: &Pattern,
    check: Option<&Check>,
    declined: &mut Vec<Declined>,
) -> Vec<Group> {
    let view = View::with(f, overlay);
    let order = pattern.post_order();
    let mut matcher = Matcher::on(view);
    let mut claimed = vec![false; f.len()];
    let mut groups = Vec::new();
    for root in overlay.candidates(pattern) {
        if claimed[root.index()] {
            continue;
        }
        let Some(m) = matcher.try_match(pattern, root) else {
            continue;
        };
        let group = match extract(view, &order, m) {
            Ok(Some(group)) => group,
            Ok(None) => continue,
            Err(reason) => {
                declined.push(Declined { root, reason });
                continue;
            }
        };
        let valid = group.nodes.iter().all(|&n| {
            if matches!(f.expr(n), Expr::Constant(_)) {
                return true;
            }
            if claimed[n.index()] || overlay.in_composite(n) {
                return false;
            }
            n == root
                || overlay.users(n).all(|u| {
                    group.nodes.binary_search(&u).is_ok() || matcher.graph().post_dominates(root, u)
                })
        });
        if !valid {
            continue;
        }
        if let Some(Err(reason)) = check.map(|c| c(f, root)) {
            declined.push(Declined { root, reason });
            continue;
        }
        for &n in &group.nodes {
            if !matches!(f.expr(n), Expr::Constant(_)) {
                claimed[n.index()] = true;
            }
        }
        groups.push(group);
    }
    groups.reverse();
    groups
}

/// The inputs of a match from the pattern's leaves, in pattern post-order, de-duplicated; an
/// error (the reason the match is declined) when a composite of the match could not keep one
/// parameter per leaf: two leaves (`*`, `?name`, `var`) bind one value (`add(?y, ?sum)` on
/// `add(y, y)`, a residual that is the convolution's own input), or a leaf binds a value the
/// pattern also matches as one of its calls (the sum of `add(bias_add(conv2d(..)), ?sum)` bound
/// to the bias_add itself). A runtime given such a composite would miss an operand, or read a
/// buffer it is writing.
fn pattern_inputs(view: View<'_>, order: &[&Pattern], m: &Match) -> Result<Vec<ExprId>, String> {
    let structural: HashMap<ExprId, &Pattern> = order
        .iter()
        .filter(|p| {
            matches!(
                p.kind(),
                PatternKind::Call { .. } | PatternKind::Tuple(_) | PatternKind::TupleGetItem { .. }
            )
        })
        .filter_map(|p| Some((m.matched(p)?, *p)))
        .collect();
    let mut inputs: Vec<ExprId> = Vec::new();
    // The leaf that bound each input (`None`: an argument of `op(..)` or a field of `(..)`).
    let mut leaves: Vec<Option<&Pattern>> = Vec::new();
    for p in order {
        let Some(e) = m.matched(p) else { continue };
        let leaf = matches!(
            p.kind(),
            PatternKind::Wildcard | PatternKind::Named(_) | PatternKind::Var
        );
        let cands: Vec<ExprId> = match (p.kind(), view.expr(e)) {
            (PatternKind::Tuple(None), Expr::Tuple(fields)) => fields.clone(),
            (PatternKind::Call { args: None, .. }, Expr::Call(call)) => call.args.clone(),
            (
                PatternKind::Wildcard
                | PatternKind::Named(_)
                | PatternKind::Var
                | PatternKind::Const(_)
                | PatternKind::Expr(_),
                _,
            ) => vec![e],
            _ => Vec::new(),
        };
        for c in cands {
            let embedded = matches!(view.expr(c), Expr::Constant(_))
                && matches!(p.kind(), PatternKind::Const(_) | PatternKind::Expr(_));
            let fuzzy = m.is_fuzzy(c) || matches!(view.expr(c), Expr::Function(_));
            if embedded || fuzzy {
                continue;
            }
            if leaf {
                if let Some(inner) = structural.get(&c) {
                    return Err(format!(
                        "{p} binds the result of {} inside the match",
                        describe(inner)
                    ));
                }
            }
            match inputs.iter().position(|&i| i == c) {
                Some(k) => {
                    if let (true, Some(other)) = (leaf, leaves[k]) {
                        if !same_leaf(other, p) {
                            return Err(format!(
                                "{other} and {p} bind one value, which a composite cannot pass \
                                 as two parameters"
                            ));
                        }
                    }
                }
                None => {
                    inputs.push(c);
                    leaves.push(leaf.then_some(*p));
                }
            }
        }
    }
    Ok(inputs)
}

/// True when `a` and `b` are one leaf: the same pattern node, or one named wildcard.
fn same_leaf(a: &Pattern, b: &Pattern) -> bool {
    match (a.kind(), b.kind()) {
        (PatternKind::Named(x), PatternKind::Named(y)) => x == y,
        _ => a.key() == b.key(),
    }
}

/// A structural pattern node in a decline reason: its op, or what kind of node it is.
fn describe(p: &Pattern) -> String {
    match p.kind() {
        PatternKind::Call { op, .. } => op.clone(),
        PatternKind::Tuple(_) => "a tuple".to_string(),
        _ => "a tuple field".to_string(),
    }
}

/// Collects the nodes a match copies and its name; `None` when it would copy a function
/// literal (a call of a pending composite included).
fn extract(view: View<'_>, order: &[&Pattern], m: Match) -> Result<Option<Group>, String> {
    let root = m.root();
    let mut inputs = pattern_inputs(view, order, &m)?;
    if inputs.contains(&root) {
        return Ok(None);
    }
    let mut visited: HashSet<ExprId> = inputs.iter().copied().collect();
    let mut nodes = Vec::new();
    let mut name = String::new();
    // Iterative depth-first post-order, operands left to right: (node, operands pushed yet).
    let mut stack = vec![(root, false)];
    while let Some((id, expanded)) = stack.pop() {
        let expr = view.expr(id);
        if expanded {
            match expr {
                Expr::Call(call) => match &call.callee {
                    Callee::Op(op) => {
                        name.push_str(op.name());
                        name.push('_');
                    }
                    _ => name.push_str("Call_"),
                },
                Expr::Tuple(_) => name.push_str("Tuple_"),
                Expr::TupleGetItem { index, .. } => {
                    name.push_str(&format!("TupleGetItem{index}_"));
                }
                Expr::Function(_) | Expr::Var(_) | Expr::Constant(_) => {}
            }
            nodes.push(id);
            continue;
        }
        if !visited.insert(id) {
            continue;
        }
        if view.is_replaced(id) {
            return Ok(None);
        }
        match expr {
            Expr::Var(_) => {
                inputs.push(id);
                continue;
            }
            Expr::Function(_) => return Ok(None),
            _ => {}
        }
        stack.push((id, true));
        for op in expr.operands().into_iter().rev() {
            if !visited.contains(&op) {
                stack.push((op, false));
            }
        }
    }
    nodes.sort_unstable();
    Ok(Some(Group {
        root,
        inputs,
        nodes,
        name,
        matched: m,
    }))
}

/// Replaces every match of `pattern` in `f` by a call of a local function with `attrs` plus
/// `PartitionedFromPattern` (see the module docs). Returns `f` unchanged (a clone) when nothing
/// matches.
pub fn partition(
    f: &Function,
    pattern: &Pattern,
    attrs: &Attrs,
    check: Option<&Check>,
) -> Result<Function, PartitionError> {
    Ok(try_partition(f, pattern, attrs, check)?.unwrap_or_else(|| f.clone()))
}

/// As [`partition`], but `None` when nothing matches (no copy made).
pub fn try_partition(
    f: &Function,
    pattern: &Pattern,
    attrs: &Attrs,
    check: Option<&Check>,
) -> Result<Option<Function>, PartitionError> {
    let mut overlay = Overlay::new(f);
    partition_into(f, &mut overlay, pattern, attrs, check, &mut Vec::new());
    if overlay.is_unchanged() {
        return Ok(None);
    }
    overlay.rebuild(f).map(Some)
}

/// Finds the groups of `pattern` in the current graph of `overlay` and applies them, each
/// composite getting `attrs`; returns how many there were. Matches the check rejects go to
/// `declined`.
pub(crate) fn partition_into(
    f: &Function,
    overlay: &mut Overlay,
    pattern: &Pattern,
    attrs: &Attrs,
    check: Option<&Check>,
    declined: &mut Vec<Declined>,
) -> usize {
    let groups = find_groups_in(f, overlay, pattern, check, declined);
    let count = groups.len();
    if count > 0 {
        let attrs = overlay.add_attrs(attrs);
        for (g, group) in groups.into_iter().enumerate() {
            overlay.apply(group, g, attrs);
        }
    }
    count
}

/// Appends the composite function of `group` and its call; returns the call.
pub(crate) fn build_composite(
    rb: &mut Rebuild<'_>,
    group: &Group,
    g: usize,
    attrs: &Attrs,
) -> Result<ExprId, PartitionError> {
    let src = rb.src;
    let ty_of = |at: ExprId| {
        src.ty(at).cloned().ok_or(PartitionError::Untyped {
            root: group.root,
            at,
        })
    };
    let mut local: HashMap<ExprId, ExprId> = HashMap::new();
    let mut params = Vec::with_capacity(group.inputs.len());
    let mut param_types = Vec::with_capacity(group.inputs.len());
    for (i, &input) in group.inputs.iter().enumerate() {
        let ty = ty_of(input)?;
        let p = rb.builder.param(format!("FunctionVar_{g}_{i}"), ty.clone());
        local.insert(input, p);
        params.push(p);
        param_types.push(ty);
    }
    for &n in &group.nodes {
        let mut missing = None;
        let expr = src.expr(n).map_ids(|x| match local.get(&x) {
            Some(&y) => y,
            None => {
                missing = Some(x);
                x
            }
        });
        if let Some(x) = missing {
            return Err(IrError::BadId(x).into());
        }
        let new = rb.builder.push(expr)?;
        if let Some(ty) = src.ty(n) {
            rb.builder.set_ty(new, ty.clone());
        }
        if let Some(span) = src.node(n).span {
            rb.builder.set_span(new, span);
        }
        local.insert(n, new);
    }
    let body = local[&group.root];
    let ret = ty_of(group.root)?;
    let mut fattrs = attrs.clone();
    fattrs.set(PARTITIONED_FROM_PATTERN, group.name.clone());
    let func = rb.builder.function(&params, body, fattrs)?;
    rb.builder.set_ty(
        func,
        Type::Func(FuncType {
            params: param_types,
            ret: Box::new(ret.clone()),
        }),
    );
    let args = group
        .inputs
        .iter()
        .map(|&x| rb.get(x))
        .collect::<Result<Vec<_>, _>>()?;
    let call = rb.builder.call_local(func, &args)?;
    rb.builder.set_ty(call, ret);
    Ok(call)
}
