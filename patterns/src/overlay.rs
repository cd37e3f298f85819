//! A function with partitions applied but not yet built: what MergeComposite works on while it
//! runs a whole pattern table, so the function is rebuilt once, not once per entry.
//!
//! An [`Overlay`] sits over a typed source function and never changes it. Applying a group marks
//! its root as *replaced*: from then on the matcher sees the root as a call of a composite
//! function whose arguments are the group's inputs (the composite itself exists only as the
//! group until [`Overlay::rebuild`]). Interior nodes that lose their last user die. So every
//! later match sees exactly the graph a rebuilt function would have, with the same ids.
//!
//! Invariants: a replaced node is live and is never an interior node of a later group (copying
//! it would copy a function literal, which partition rejects); a live node's current operands
//! are live; liveness only ever changes for interior nodes of applied groups. The callee id of
//! a replaced call is not an arena id and is never looked up (patterns match op callees only).
//!
//! Cost: building is linear in the function; applying a group is linear in its size and the
//! users of its nodes; [`Overlay::rebuild`] is linear in the function plus the composites.

use std::collections::HashMap;

use byoc_ir::rewrite::Rebuild;
use byoc_ir::{Attrs, Call, Callee, Expr, ExprId, Function, Type};

use crate::partition::{build_composite, Group, PartitionError, PARTITIONED_FROM_PATTERN};
use crate::pattern::{Pattern, PatternKind};

const NONE: u32 = u32::MAX;

/// A group applied to the overlay.
struct Applied {
    group: Group,
    /// The group's position among the groups of its pattern (names its parameters).
    index: usize,
    /// Index into [`Overlay::attrs`].
    attrs: usize,
    /// The call of the composite the matcher sees at the group root.
    call: Expr,
}

/// A source function plus the groups applied to it so far (see the module docs).
pub(crate) struct Overlay {
    live: Vec<bool>,
    /// Nodes of function literals with `PartitionedFromPattern` in the source (never matched).
    skip: Vec<bool>,
    /// Live users in the source, compressed rows: users of `i` are
    /// `users[user_start[i]..user_start[i + 1]]`, in arena order.
    user_start: Vec<u32>,
    users: Vec<ExprId>,
    /// Users gained by applying groups (group roots using their inputs).
    extra_users: Vec<Vec<ExprId>>,
    /// Index into `applied` for replaced nodes, `NONE` otherwise.
    replaced: Vec<u32>,
    applied: Vec<Applied>,
    attrs: Vec<Attrs>,
    /// Live op calls by op name, in arena order.
    by_op: HashMap<String, Vec<ExprId>>,
}

impl Overlay {
    /// An overlay over `f` with nothing applied.
    pub(crate) fn new(f: &Function) -> Self {
        let n = f.len();
        let mut live = vec![false; n];
        for id in f.live_ids() {
            live[id.index()] = true;
        }
        // A node using an operand twice is one user: `last_user` remembers who counted last.
        let mut last_user = vec![NONE; n];
        let mut counts = vec![0u32; n + 1];
        let mut by_op: HashMap<String, Vec<ExprId>> = HashMap::new();
        for (id, node) in f.iter().filter(|(id, _)| live[id.index()]) {
            for op in node.expr.operand_iter() {
                if std::mem::replace(&mut last_user[op.index()], id.index() as u32)
                    != id.index() as u32
                {
                    counts[op.index() + 1] += 1;
                }
            }
            if let Some((op, _)) = node.expr.as_op_call() {
                match by_op.get_mut(op.name()) {
                    Some(ids) => ids.push(id),
                    None => {
                        by_op.insert(op.name().to_string(), vec![id]);
                    }
                }
            }
        }
        for i in 0..n {
            counts[i + 1] += counts[i];
        }
        let user_start = counts;
        let mut fill = user_start.clone();
        let mut users = vec![ExprId::from_index(0); user_start[n] as usize];
        for (id, node) in f.iter().filter(|(id, _)| live[id.index()]) {
            for op in node.expr.operand_iter() {
                let at = &mut fill[op.index()];
                // Operands of one node are filled together, so a repeat is the previous slot.
                if *at == user_start[op.index()] || users[*at as usize - 1] != id {
                    users[*at as usize] = id;
                    *at += 1;
                }
            }
        }
        Overlay {
            live,
            skip: composite_nodes(f),
            user_start,
            users,
            extra_users: vec![Vec::new(); n],
            replaced: vec![NONE; n],
            applied: Vec::new(),
            attrs: Vec::new(),
            by_op,
        }
    }

    fn applied_at(&self, id: ExprId) -> Option<&Applied> {
        let k = *self.replaced.get(id.index())?;
        (k != NONE).then(|| &self.applied[k as usize])
    }

    /// True when `id` is live in the current graph.
    pub(crate) fn is_live(&self, id: ExprId) -> bool {
        self.live[id.index()]
    }

    /// True when `id` lies inside a composite function literal of the source.
    pub(crate) fn in_composite(&self, id: ExprId) -> bool {
        self.skip[id.index()]
    }

    /// True when `id` is the root of an applied group.
    pub(crate) fn is_replaced(&self, id: ExprId) -> bool {
        self.replaced[id.index()] != NONE
    }

    /// The live users of `id` in the current graph, each once.
    pub(crate) fn users(&self, id: ExprId) -> impl Iterator<Item = ExprId> + '_ {
        let i = id.index();
        let original = &self.users[self.user_start[i] as usize..self.user_start[i + 1] as usize];
        original
            .iter()
            .copied()
            .filter(|u| self.live[u.index()] && !self.is_replaced(*u))
            .chain(self.extra_users[i].iter().copied())
    }

    /// Number of arena slots of the source.
    pub(crate) fn len(&self) -> usize {
        self.live.len()
    }

    /// The candidate roots for `pattern`, last first: live nodes outside source composites,
    /// narrowed to calls of the ops the pattern's root can match when it names them.
    pub(crate) fn candidates(&self, pattern: &Pattern) -> Vec<ExprId> {
        let mut out: Vec<ExprId> = match root_ops(pattern) {
            Some(ops) => ops
                .into_iter()
                .filter_map(|op| self.by_op.get(op))
                .flatten()
                .copied()
                .filter(|&id| self.live[id.index()] && !self.is_replaced(id))
                .collect(),
            None => (0..self.len())
                .map(ExprId::from_index)
                .filter(|&id| self.live[id.index()])
                .collect(),
        };
        out.retain(|&id| !self.skip[id.index()]);
        out.sort_unstable_by(|a, b| b.cmp(a));
        out.dedup();
        out
    }

    /// Registers attributes shared by the groups of one pattern; returns their handle.
    pub(crate) fn add_attrs(&mut self, attrs: &Attrs) -> usize {
        self.attrs.push(attrs.clone());
        self.attrs.len() - 1
    }

    /// Replaces the root of `group` (the `index`-th group of its pattern, with the attributes
    /// `attrs` from [`Overlay::add_attrs`]) by a call of its composite.
    pub(crate) fn apply(&mut self, group: Group, index: usize, attrs: usize) {
        let root = group.root;
        // Fewer groups than arena slots, so the index fits the slot type.
        let k = self.applied.len() as u32;
        let callee = ExprId::from_index(self.len() + self.applied.len());
        let call = Expr::Call(Call {
            callee: Callee::Local(callee),
            args: group.inputs.clone(),
            attrs: Attrs::new(),
        });
        self.replaced[root.index()] = k;
        for &x in &group.inputs {
            self.extra_users[x.index()].push(root);
        }
        for &n in group.nodes.iter().rev() {
            if n != root && self.users(n).next().is_none() {
                self.live[n.index()] = false;
            }
        }
        self.applied.push(Applied {
            group,
            index,
            attrs,
            call,
        });
    }

    /// True when no group was applied.
    pub(crate) fn is_unchanged(&self) -> bool {
        self.applied.is_empty()
    }

    /// Builds the function: every live node copied in arena order, each replaced root becoming
    /// its composite function literal and the call of it.
    pub(crate) fn rebuild(&self, f: &Function) -> Result<Function, PartitionError> {
        let mut rb = Rebuild::new(f);
        for i in (0..self.len()).filter(|&i| self.live[i]) {
            let id = ExprId::from_index(i);
            match self.applied_at(id) {
                Some(a) => {
                    let call = build_composite(&mut rb, &a.group, a.index, &self.attrs[a.attrs])?;
                    rb.set(id, call);
                }
                None => {
                    rb.copy(id)?;
                }
            }
        }
        Ok(rb.finish()?)
    }
}

/// A function as the matcher sees it: the source, and the overlay's replaced roots if any.
#[derive(Clone, Copy)]
pub(crate) struct View<'a> {
    /// The source function.
    pub(crate) f: &'a Function,
    overlay: Option<&'a Overlay>,
}

impl<'a> View<'a> {
    /// The function as it is.
    pub(crate) fn plain(f: &'a Function) -> Self {
        View { f, overlay: None }
    }

    /// The function with the overlay's groups applied.
    pub(crate) fn with(f: &'a Function, overlay: &'a Overlay) -> Self {
        View {
            f,
            overlay: Some(overlay),
        }
    }

    /// The expression at `id` in the current graph.
    pub(crate) fn expr(&self, id: ExprId) -> &'a Expr {
        match self.overlay.and_then(|o| o.applied_at(id)) {
            Some(a) => &a.call,
            None => self.f.expr(id),
        }
    }

    /// The inferred type at `id` (a replaced root keeps its type).
    pub(crate) fn ty(&self, id: ExprId) -> Option<&'a Type> {
        self.f.ty(id)
    }

    /// True when `id` is a call of a composite not built yet (its callee is no arena id).
    pub(crate) fn is_replaced(&self, id: ExprId) -> bool {
        self.overlay.is_some_and(|o| o.is_replaced(id))
    }

    /// The live users of every node of the current graph, in arena order.
    pub(crate) fn all_users(&self) -> Vec<Vec<ExprId>> {
        match self.overlay {
            None => self.f.users(),
            Some(o) => (0..o.len())
                .map(|i| {
                    let id = ExprId::from_index(i);
                    if !o.is_live(id) {
                        return Vec::new();
                    }
                    let mut us: Vec<ExprId> = o.users(id).collect();
                    us.sort_unstable();
                    us
                })
                .collect(),
        }
    }
}

/// The ops a call at the root of a match of `p` can have; `None` when the root may be
/// something other than an op call.
fn root_ops(p: &Pattern) -> Option<Vec<&str>> {
    match p.kind() {
        PatternKind::Call { op, .. } => Some(vec![op.as_str()]),
        PatternKind::Optional { op, args } => {
            let mut ops = root_ops(args.first()?)?;
            ops.push(op);
            Some(ops)
        }
        PatternKind::Alt(a, b) => {
            let mut ops = root_ops(a)?;
            ops.extend(root_ops(b)?);
            Some(ops)
        }
        PatternKind::Attr { inner, .. } | PatternKind::Type { inner, .. } => root_ops(inner),
        PatternKind::Dominator { child, .. } => root_ops(child),
        PatternKind::Wildcard
        | PatternKind::Named(_)
        | PatternKind::Var
        | PatternKind::Const(_)
        | PatternKind::Expr(_)
        | PatternKind::Tuple(_)
        | PatternKind::TupleGetItem { .. } => None,
    }
}

/// Marks the function literals with `PartitionedFromPattern` and everything in their bodies.
fn composite_nodes(f: &Function) -> Vec<bool> {
    let mut skip = vec![false; f.len()];
    for (id, node) in f.iter().rev() {
        if let Expr::Function(lit) = &node.expr {
            if lit.attrs.contains(PARTITIONED_FROM_PATTERN) && !skip[id.index()] {
                let mut stack = vec![id];
                while let Some(x) = stack.pop() {
                    if !std::mem::replace(&mut skip[x.index()], true) {
                        stack.extend(f.expr(x).operand_iter());
                    }
                }
            }
        }
    }
    skip
}
