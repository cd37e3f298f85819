//! Annotated regions of a function (TVM's `AnnotatedRegionSet`) and the graph of regions.
//!
//! A region is a connected set of nodes delimited by `annotation.compiler_begin` (its inputs)
//! and `annotation.compiler_end` (its outputs) of one target. Regions are built in arena order
//! the way TVM builds them: every begin starts a region; an end joins the region of its
//! argument; any other node whose open (non-end) arguments lie in regions joins them, merging
//! those regions; a node none of whose arguments lie in a region stays outside. The callee of a
//! call is not an argument, so composite function literals stay outside regions and are used
//! by their members. So the per-op form AnnotateTarget writes and the merged form
//! MergeCompilerRegions writes (ops between a begin and its end without annotations of their
//! own) describe regions alike: a bare op reached only from a region's begins belongs to it.
//!
//! Checked here (TVM leaves these undefined or fails with an internal check):
//! - an end's argument lies in a region of the same target;
//! - no begin directly wraps a begin, no end an end;
//! - a node joining several regions joins regions of one target (TVM would merge regions of
//!   different targets into one);
//! - a region node's arguments are all begins, region nodes or ends (no raw variables, constants
//!   or host values mixed in; TVM fails with "Arg regions are inconsistent");
//! - a region's value leaves it only through an end, and an end's value enters a region only
//!   through a begin;
//! - regions are convex: the region graph (regions contracted to single vertices, every other
//!   node its own vertex) is acyclic.
//!
//! `default` annotations can be treated as transparent (as PartitionGraph does after removing
//! them): they then delimit nothing and are never region members.
//!
//! Cost: linear in the function size plus `O(v log v)` for the region graph's order.

use std::fmt;

use thiserror::Error;

use super::graph::{toposort_by_key, UnionFind};
use crate::partition::HOST_TARGET;
use crate::{Callee, Expr, ExprId, Function};

/// `annotation.compiler_begin`.
pub const COMPILER_BEGIN: &str = "annotation.compiler_begin";
/// `annotation.compiler_end`.
pub const COMPILER_END: &str = "annotation.compiler_end";

/// Which side of a region an annotation marks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AnnotationKind {
    /// `annotation.compiler_begin`: a region input.
    Begin,
    /// `annotation.compiler_end`: a region output.
    End,
}

/// A compiler annotation: its kind, target and argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Annotation<'a> {
    /// Begin or end.
    pub kind: AnnotationKind,
    /// The `compiler` attribute.
    pub target: &'a str,
    /// The annotated value.
    pub arg: ExprId,
}

/// The annotation at `expr`, if it is a compiler begin or end call.
pub fn annotation(expr: &Expr) -> Option<Annotation<'_>> {
    let (op, call) = expr.as_op_call()?;
    let kind = match op.name() {
        COMPILER_BEGIN => AnnotationKind::Begin,
        COMPILER_END => AnnotationKind::End,
        _ => return None,
    };
    Some(Annotation {
        kind,
        target: call.attrs.get_str("compiler").unwrap_or(HOST_TARGET),
        arg: *call.args.first()?,
    })
}

/// The dataflow arguments of a node: call arguments (not the callee), tuple fields, the tuple
/// of a get-item. Function literals, variables and constants have none.
pub fn dataflow_args(expr: &Expr) -> &[ExprId] {
    match expr {
        Expr::Call(call) => &call.args,
        Expr::Tuple(fields) => fields,
        Expr::TupleGetItem { tuple, .. } => std::slice::from_ref(tuple),
        Expr::Var(_) | Expr::Constant(_) | Expr::Function(_) => &[],
    }
}

/// The id of a region in its [`RegionSet`]; regions are numbered in arena order of their first
/// node (always a begin).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RegionId(pub u32);

impl RegionId {
    /// The index in [`RegionSet::regions`].
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for RegionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "region {}", self.0)
    }
}

/// One annotated region.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Region {
    /// Its id.
    pub id: RegionId,
    /// The target of its annotations.
    pub target: String,
    /// Its begins, in arena order.
    pub ins: Vec<ExprId>,
    /// Its ends, in arena order.
    pub outs: Vec<ExprId>,
    /// All members (begins, ends and the nodes between), in arena order.
    pub nodes: Vec<ExprId>,
}

/// Names node `id` of `f` for messages: the op or kind of node, its arena id and, for parsed
/// input, where the text wrote it (`add %3 at 4:8`, `tuple %5`, `call of @f %7`, `%x`).
pub fn describe(f: &Function, id: ExprId) -> String {
    let what = describe_kind(f, id);
    match f.node(id).span {
        Some(span) if f.var(id).is_none() => format!("{what} at {span}"),
        _ => what,
    }
}

fn describe_kind(f: &Function, id: ExprId) -> String {
    match f.expr(id) {
        Expr::Call(call) => match &call.callee {
            Callee::Op(op) => format!("{} {id}", op.name()),
            Callee::Global(g) => format!("call of @{g} {id}"),
            Callee::Local(lit) => match composite_call(f, id) {
                Some((_, name)) => format!("composite {name} {id}"),
                None => format!("call of local function {lit} {id}"),
            },
        },
        Expr::Tuple(_) => format!("tuple {id}"),
        Expr::TupleGetItem { index, .. } => format!("tuple-get-item .{index} {id}"),
        Expr::Var(v) => format!("%{}", v.name),
        Expr::Constant(_) => format!("constant {id}"),
        Expr::Function(_) => format!("function literal {id}"),
    }
}

fn describe_annotation(f: &Function, id: ExprId) -> String {
    let target = annotation(f.expr(id)).map_or(HOST_TARGET, |a| a.target);
    format!("{} (compiler=\"{target}\")", describe(f, id))
}

/// An annotation problem, located in a function. Nodes are named as [`describe`] does.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RegionError {
    /// An end whose argument lies in no region.
    #[error("in @{function}: {end} (compiler=\"{target}\") closes no region: its argument {arg} lies outside every region (no compiler_begin leads to it)")]
    EndWithoutRegion {
        /// The function.
        function: String,
        /// The end, described.
        end: String,
        /// Its target.
        target: String,
        /// Its argument, described.
        arg: String,
    },
    /// An end of another target than the region it closes.
    #[error("in @{function}: {end} has compiler=\"{end_target}\" but its argument {arg} lies in a region of target \"{region_target}\"")]
    TargetMismatch {
        /// The function.
        function: String,
        /// The end, described.
        end: String,
        /// Its argument, described.
        arg: String,
        /// The end's target.
        end_target: String,
        /// The region's target.
        region_target: String,
    },
    /// A compiler annotation directly around another one of the same kind.
    #[error("in @{function}: nested annotation: {outer} wraps {inner} directly (a value enters a region through one compiler_begin and leaves it through one compiler_end)")]
    Nested {
        /// The function.
        function: String,
        /// The outer annotation, described.
        outer: String,
        /// The inner annotation, described.
        inner: String,
    },
    /// A node taking values from regions of two different targets.
    #[error("in @{function}: {node} takes {first} and {second}; a node belongs to one region, so one of them needs a compiler_end and a compiler_begin")]
    TwoTargets {
        /// The function.
        function: String,
        /// The node, described.
        node: String,
        /// An argument in the first region, described with that region's target.
        first: String,
        /// An argument in the second region, described with that region's target.
        second: String,
    },
    /// A node mixing region values with values that entered no region through a begin.
    #[error("in @{function}: {node} takes {inside} from a region of target \"{target}\" and {outside} from the host, which entered no region through a compiler_begin")]
    MixedArgs {
        /// The function.
        function: String,
        /// The node, described.
        node: String,
        /// The region's target.
        target: String,
        /// An argument inside a region, described.
        inside: String,
        /// An argument outside every region, described.
        outside: String,
    },
    /// A region value used outside its region without a compiler_end.
    #[error("in @{function}: {value} of a region of target \"{target}\" is used by {user} outside the region without a compiler_end")]
    ValueEscapes {
        /// The function.
        function: String,
        /// The region value, described.
        value: String,
        /// The region's target.
        target: String,
        /// The user outside the region, described (`the function result` for the body).
        user: String,
    },
    /// A region output consumed inside a region without a compiler_begin.
    #[error(
        "in @{function}: {end} is used by {user} inside a region of target \"{target}\" without a compiler_begin"
    )]
    EndEntersRegion {
        /// The function.
        function: String,
        /// The end, described.
        end: String,
        /// The region node using it, described.
        user: String,
        /// The user's region target.
        target: String,
    },
    /// Regions that are not convex: the region graph has a cycle.
    #[error("in @{function}: regions are not convex: {first} and other nodes depend on each other in a cycle through nodes outside the regions")]
    Cycle {
        /// The function.
        function: String,
        /// A node on the cycle, described.
        first: String,
    },
}

/// The regions of one function.
#[derive(Clone, Debug)]
pub struct RegionSet {
    regions: Vec<Region>,
    region_of: Vec<Option<RegionId>>,
    ends: Vec<bool>,
    live: Vec<bool>,
}

/// A vertex of the region graph: a whole region, or a node outside every region.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Vertex {
    /// A region, contracted.
    Region(RegionId),
    /// A live node outside every region.
    Node(ExprId),
}

/// The region graph: regions contracted to single vertices, dataflow edges between them (the
/// callee edges from function literals included), in a topological order.
#[derive(Clone, Debug)]
pub struct RegionGraph {
    /// Vertices in topological order (ties broken by the first arena id of each vertex).
    pub order: Vec<Vertex>,
    /// The predecessors of all vertices, with repetition, vertex after vertex (dense index);
    /// those of vertex `i` are `pred_list[pred_start[i]..pred_start[i + 1]]`.
    pred_list: Vec<Vertex>,
    pred_start: Vec<u32>,
    num_regions: usize,
}

impl RegionGraph {
    /// The dense index of a vertex: regions first, then arena slots.
    pub fn index(&self, v: Vertex) -> usize {
        match v {
            Vertex::Region(r) => r.index(),
            Vertex::Node(n) => self.num_regions + n.index(),
        }
    }

    /// The number of dense indices (regions plus arena slots).
    pub fn num_indices(&self) -> usize {
        self.pred_start.len() - 1
    }

    /// The predecessors of `v`, with repetition.
    pub fn preds_of(&self, v: Vertex) -> &[Vertex] {
        let i = self.index(v);
        &self.pred_list[self.pred_start[i] as usize..self.pred_start[i + 1] as usize]
    }
}

impl RegionSet {
    /// Builds the regions of `f` (named `function` in errors). With `transparent_default`,
    /// `default` annotations delimit nothing.
    pub fn build(
        f: &Function,
        function: &str,
        transparent_default: bool,
    ) -> Result<RegionSet, RegionError> {
        let n = f.len();
        let mut live = vec![false; n];
        for id in f.live_ids() {
            live[id.index()] = true;
        }
        // Provisional regions, one per begin, merged by union-find.
        let mut uf = UnionFind::default();
        let mut targets: Vec<&str> = Vec::new();
        let mut prov: Vec<Option<u32>> = vec![None; n];
        let mut ends = vec![false; n];
        let err_fn = || function.to_string();
        let in_region = |id: ExprId, target: &str| {
            format!("{} from a region of target \"{target}\"", describe(f, id))
        };
        for id in f.ids().filter(|id| live[id.index()]) {
            let expr = f.expr(id);
            let delimiting = |id: ExprId| {
                annotation(f.expr(id)).filter(|a| !(transparent_default && a.target == HOST_TARGET))
            };
            let ann = delimiting(id);
            if let Some(a) = ann {
                if delimiting(a.arg).is_some_and(|inner| inner.kind == a.kind) {
                    return Err(RegionError::Nested {
                        function: err_fn(),
                        outer: describe_annotation(f, id),
                        inner: describe_annotation(f, a.arg),
                    });
                }
            }
            match ann {
                Some(Annotation {
                    kind: AnnotationKind::Begin,
                    target,
                    ..
                }) => {
                    let r = uf.push() as u32;
                    targets.push(target);
                    prov[id.index()] = Some(r);
                }
                Some(Annotation {
                    kind: AnnotationKind::End,
                    target,
                    arg,
                }) => {
                    let Some(r) = prov[arg.index()].filter(|_| !ends[arg.index()]) else {
                        return Err(RegionError::EndWithoutRegion {
                            function: err_fn(),
                            end: describe(f, id),
                            target: target.to_string(),
                            arg: describe(f, arg),
                        });
                    };
                    let r = uf.find(r as usize) as u32;
                    if targets[r as usize] != target {
                        return Err(RegionError::TargetMismatch {
                            function: err_fn(),
                            end: describe(f, id),
                            arg: describe(f, arg),
                            end_target: target.to_string(),
                            region_target: targets[r as usize].to_string(),
                        });
                    }
                    prov[id.index()] = Some(r);
                    ends[id.index()] = true;
                }
                None => {
                    // The node joins the regions of its open arguments, merging them when
                    // they are several regions of one target (as TVM's region builder does).
                    let mut joined: Option<(u32, ExprId)> = None;
                    let mut outside = None;
                    for &a in dataflow_args(expr) {
                        if ends[a.index()] {
                            continue;
                        }
                        let Some(r) = prov[a.index()] else {
                            outside = outside.or(Some(a));
                            continue;
                        };
                        let r = uf.find(r as usize) as u32;
                        match joined {
                            None => joined = Some((r, a)),
                            Some((into, at)) if into != r => {
                                if targets[into as usize] != targets[r as usize] {
                                    return Err(RegionError::TwoTargets {
                                        function: err_fn(),
                                        node: describe(f, id),
                                        first: in_region(at, targets[into as usize]),
                                        second: in_region(a, targets[r as usize]),
                                    });
                                }
                                // Keep the earlier region's id as the representative.
                                let (lo, hi) = (into.min(r), into.max(r));
                                uf.attach(hi as usize, lo as usize);
                                joined = Some((lo, at));
                            }
                            Some(_) => {}
                        }
                    }
                    if let Some((r, inside)) = joined {
                        if let Some(outside) = outside {
                            return Err(RegionError::MixedArgs {
                                function: err_fn(),
                                node: describe(f, id),
                                target: targets[r as usize].to_string(),
                                inside: describe(f, inside),
                                outside: describe(f, outside),
                            });
                        }
                        prov[id.index()] = Some(r);
                    }
                }
            }
        }
        // Compact: number regions by their first member in arena order.
        let mut final_id: Vec<Option<RegionId>> = vec![None; uf.len()];
        let mut regions: Vec<Region> = Vec::new();
        let mut region_of = vec![None; n];
        for id in f.ids() {
            let Some(p) = prov[id.index()] else { continue };
            let root = uf.find(p as usize);
            let rid = *final_id[root].get_or_insert_with(|| {
                let rid = RegionId(regions.len() as u32);
                regions.push(Region {
                    id: rid,
                    target: targets[root].to_string(),
                    ins: Vec::new(),
                    outs: Vec::new(),
                    nodes: Vec::new(),
                });
                rid
            });
            region_of[id.index()] = Some(rid);
            let region = &mut regions[rid.index()];
            region.nodes.push(id);
            if ends[id.index()] {
                region.outs.push(id);
            } else if annotation(f.expr(id)).is_some_and(|a| a.kind == AnnotationKind::Begin) {
                region.ins.push(id);
            }
        }
        let set = RegionSet {
            regions,
            region_of,
            ends,
            live,
        };
        set.check_boundaries(f, function)?;
        Ok(set)
    }

    fn check_boundaries(&self, f: &Function, function: &str) -> Result<(), RegionError> {
        let target_of = |id| {
            self.region_of(id)
                .map(|r| self.regions[r.index()].target.clone())
                .unwrap_or_default()
        };
        let escape = |value: ExprId, user: String| RegionError::ValueEscapes {
            function: function.to_string(),
            value: describe(f, value),
            target: target_of(value),
            user,
        };
        if self.region_of(f.body).is_some() && !self.ends[f.body.index()] {
            return Err(escape(f.body, "the function result".to_string()));
        }
        for id in f.ids().filter(|id| self.live[id.index()]) {
            let expr = f.expr(id);
            let mine = self.region_of(id);
            let is_begin =
                mine.is_some() && annotation(expr).is_some_and(|a| a.kind == AnnotationKind::Begin);
            for o in expr.operands() {
                let Some(theirs) = self.region_of(o) else {
                    continue;
                };
                if self.ends[o.index()] {
                    if mine.is_some() && !is_begin {
                        return Err(RegionError::EndEntersRegion {
                            function: function.to_string(),
                            end: describe(f, o),
                            user: describe(f, id),
                            target: target_of(id),
                        });
                    }
                } else if mine != Some(theirs) {
                    return Err(escape(o, describe(f, id)));
                }
            }
        }
        Ok(())
    }

    /// The regions, by id.
    pub fn regions(&self) -> &[Region] {
        &self.regions
    }

    /// The region `id` belongs to, if any.
    pub fn region_of(&self, id: ExprId) -> Option<RegionId> {
        self.region_of.get(id.index()).copied().flatten()
    }

    /// The region by id.
    pub fn region(&self, id: RegionId) -> &Region {
        &self.regions[id.index()]
    }

    /// True when `id` is a region's compiler_end.
    pub fn is_end(&self, id: ExprId) -> bool {
        self.ends.get(id.index()).copied().unwrap_or(false)
    }

    /// The vertex of a live node in the region graph.
    pub fn vertex(&self, id: ExprId) -> Vertex {
        match self.region_of(id) {
            Some(r) => Vertex::Region(r),
            None => Vertex::Node(id),
        }
    }

    /// The region graph of `f` (the function this set was built from) in topological order.
    /// Fails when regions are not convex.
    pub fn graph(&self, f: &Function, function: &str) -> Result<RegionGraph, RegionError> {
        let nr = self.regions.len();
        let nv = nr + f.len();
        let index = |v: Vertex| match v {
            Vertex::Region(r) => r.index(),
            Vertex::Node(n) => nr + n.index(),
        };
        // Edges in compressed rows: count, then fill (predecessors and successors alike).
        let mut key: Vec<Option<ExprId>> = vec![None; nv];
        let mut pred_start = vec![0u32; nv + 1];
        let mut succ_start = vec![0u32; nv + 1];
        let live_ids = || f.ids().filter(|id| self.live[id.index()]);
        for id in live_ids() {
            let v = self.vertex(id);
            let vi = index(v);
            key[vi].get_or_insert(id);
            for o in f.expr(id).operand_iter() {
                let u = self.vertex(o);
                if u != v {
                    pred_start[vi + 1] += 1;
                    succ_start[index(u) + 1] += 1;
                }
            }
        }
        for i in 0..nv {
            pred_start[i + 1] += pred_start[i];
            succ_start[i + 1] += succ_start[i];
        }
        let placeholder = Vertex::Region(RegionId(0));
        let mut pred_list = vec![placeholder; pred_start[nv] as usize];
        let mut succ_list = vec![placeholder; succ_start[nv] as usize];
        let mut pred_fill = pred_start.clone();
        let mut succ_fill = succ_start.clone();
        for id in live_ids() {
            let v = self.vertex(id);
            let vi = index(v);
            for o in f.expr(id).operand_iter() {
                let u = self.vertex(o);
                if u != v {
                    pred_list[pred_fill[vi] as usize] = u;
                    pred_fill[vi] += 1;
                    let ui = index(u);
                    succ_list[succ_fill[ui] as usize] = v;
                    succ_fill[ui] += 1;
                }
            }
        }
        let indegree: Vec<u32> = (0..nv).map(|i| pred_start[i + 1] - pred_start[i]).collect();
        let vertex = |vi: usize| match vi.checked_sub(nr) {
            None => Vertex::Region(RegionId(vi as u32)),
            Some(node) => Vertex::Node(ExprId::from_index(node)),
        };
        // Ties go to the vertex whose first member comes first in the arena.
        let order = toposort_by_key(&key, indegree, |vi| {
            succ_list[succ_start[vi] as usize..succ_start[vi + 1] as usize]
                .iter()
                .map(|&s| index(s))
        })
        .map_err(|cycle| RegionError::Cycle {
            function: function.to_string(),
            first: describe(
                f,
                key[cycle.left[0]].expect("unplaced vertices are in the graph"),
            ),
        })?;
        let g = RegionGraph {
            order: order.into_iter().map(vertex).collect(),
            pred_list,
            pred_start,
            num_regions: nr,
        };
        Ok(g)
    }
}

/// The node under a stack of compiler begins and ends.
pub fn strip_annotations(f: &Function, mut id: ExprId) -> ExprId {
    while let Some(a) = annotation(f.expr(id)) {
        id = a.arg;
    }
    id
}

/// Marks the nodes inside local function literals (their parameters and body subgraphs):
/// composite and primitive bodies, which annotation and regions leave as they are.
pub fn literal_members(f: &Function) -> Vec<bool> {
    let mut inside = vec![false; f.len()];
    for id in f.ids().rev() {
        if inside[id.index()] || f.expr(id).as_function().is_some() {
            for o in f.expr(id).operand_iter() {
                inside[o.index()] = true;
            }
        }
    }
    inside
}

/// True when `id` calls a local function literal carrying a `Composite` attribute, which is
/// then returned with the composite's name.
pub fn composite_call(f: &Function, id: ExprId) -> Option<(ExprId, &str)> {
    let call = f.expr(id).as_call()?;
    let Callee::Local(lit) = call.callee else {
        return None;
    };
    let name = f
        .expr(lit)
        .as_function()?
        .attrs
        .get_str(crate::partition::COMPOSITE)?;
    Some((lit, name))
}
