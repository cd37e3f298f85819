//! MergeCompilerRegions: grows annotated regions by merging producer and consumer regions of
//! the same target (TVM Relay's `MergeCompilerRegions`), never creating a cycle.
//!
//! Needs: a verified module with well-formed compiler annotations (AnnotateTarget's output or
//! hand-written ones). Holds after: regions joined by a producer→consumer edge of the same
//! target are one region wherever that keeps regions convex; the `compiler_begin(
//! compiler_end(x))` pairs inside a merged region are removed. `default` regions merge like
//! any other target; their annotations stay.
//!
//! Regions are visited in topological order of the region graph (regions contracted, every
//! other node its own vertex). Merged regions form classes (a union-find); a region absorbs a
//! same-target producer class unless that class reaches it along a path through some other
//! vertex of the graph *with every class merged so far contracted*. Checking against the
//! paths of the unmerged graph (TVM's restriction sets, kept per region as they were when the
//! region was visited) is not enough: a later merge can join a region reached from the
//! producer with one that feeds the consumer, e.g. a tuple merging two relus, one fed by
//! region `a` and one feeding `s`, so that `a` and `s` must then stay apart. Unlike TVM, which
//! also follows restrictions only along annotated edges (and `If`), the check follows every
//! dataflow edge, so paths through unannotated nodes (tuples left bare by
//! `include_non_call_ops=false`, hand-placed annotations) never let a merge create a cycle
//! either.
//!
//! The check is a backward search from the producers of the consumer's class, expanding a
//! class into the producers of all its members, and stops at the candidate class. Every merge
//! keeps the contracted graph acyclic, so the answer is exact: a merge is refused only when it
//! would close a cycle. Cost: one search per candidate edge, each at most `O(v + e)` over the
//! consumer's ancestors (`v` vertices, `e` edges).

use crate::{PartitionError, Pass, PassContext, PassError};
use byoc_ir::analysis::graph::UnionFind;
use byoc_ir::analysis::regions::{annotation, AnnotationKind, RegionGraph, RegionSet, Vertex};
use byoc_ir::partition::skipped_by_passes;
use byoc_ir::{rewrite::Rebuild, Function, Module};

/// The MergeCompilerRegions pass.
#[derive(Clone, Copy, Debug, Default)]
pub struct MergeCompilerRegions;

impl MergeCompilerRegions {
    /// The pass.
    pub fn new() -> Self {
        MergeCompilerRegions
    }

    /// Merges the regions of every function of `module` in place.
    fn merge(&self, module: &mut Module) -> Result<(), PartitionError> {
        for name in module.names() {
            let Some(f) = module.get(&name).filter(|f| !skipped_by_passes(f)) else {
                continue;
            };
            let merged = merge_function(&name, f)?;
            module.insert(name, merged);
        }
        Ok(())
    }
}

impl Pass for MergeCompilerRegions {
    fn name(&self) -> &'static str {
        "merge-compiler-regions"
    }

    fn run(&self, module: &mut Module, _cx: &mut PassContext) -> Result<(), PassError> {
        Ok(self.merge(module)?)
    }
}

fn merge_function(name: &str, f: &Function) -> Result<Function, PartitionError> {
    let regions = RegionSet::build(f, name, false)?;
    let graph = regions.graph(f, name)?;
    let class = merge_classes(&regions, &graph);
    let class_of = |id| regions.region_of(id).map(|r| class[r.index()]);
    // An end is dropped when every use is a begin of its own (merged) region.
    let mut keep_end = vec![false; f.len()];
    keep_end[f.body.index()] = true;
    let inner = |user| {
        annotation(f.expr(user)).is_some_and(|a| {
            a.kind == AnnotationKind::Begin
                && regions.is_end(a.arg)
                && class_of(user) == class_of(a.arg)
        })
    };
    for id in f.live_ids() {
        if !inner(id) {
            for o in f.expr(id).operand_iter() {
                keep_end[o.index()] = true;
            }
        }
    }
    let arg_of = |id| annotation(f.expr(id)).map_or(id, |a| a.arg);
    Rebuild::new(f).run(|rb, old| {
        // An inner begin reads the end's argument directly; a dropped end is never read.
        let through = if inner(old) {
            arg_of(arg_of(old))
        } else if regions.is_end(old) && !keep_end[old.index()] {
            arg_of(old)
        } else {
            return Ok(None);
        };
        rb.get(through).map(Some).map_err(PartitionError::from)
    })
}

/// Merges regions greedily in topological order; returns each region's final class (the id of
/// the region that absorbed it, as an index).
fn merge_classes(regions: &RegionSet, graph: &RegionGraph) -> Vec<usize> {
    let mut classes = Classes::new(regions, graph);
    for &v in &graph.order {
        let Vertex::Region(r) = v else { continue };
        let target = &regions.region(r).target;
        // The same-target producer regions of `r`: its merge candidates.
        let mut candidates: Vec<usize> = graph
            .preds_of(v)
            .iter()
            .filter_map(|&u| match u {
                Vertex::Region(p) if regions.region(p).target == *target => Some(p.index()),
                _ => None,
            })
            .collect();
        candidates.sort_unstable();
        candidates.dedup();
        for c in candidates {
            let from = classes.union.find(c);
            let to = classes.union.find(r.index());
            if from != to && !classes.reaches_around(graph, from, to) {
                classes.merge(from, to);
            }
        }
    }
    (0..regions.regions().len())
        .map(|r| classes.union.find(r))
        .collect()
}

/// The merge classes of regions, with what the cycle check needs: each class's producers
/// outside it, and the visit marks of the backward search (stamped per search, so they are
/// allocated once).
struct Classes {
    union: UnionFind,
    /// Per class root, the producers of its members outside it (entries that a merge moved
    /// inside, and repeats, are dropped when next read). Nodes without producers lead nowhere
    /// and are left out.
    frontier: Vec<Vec<Vertex>>,
    /// Per dense vertex index, the stamp of the last search that queued it.
    seen: Vec<u32>,
    /// Per class root, the stamp of the last search that expanded it.
    expanded: Vec<u32>,
    stamp: u32,
    /// Per dense vertex index, the number of the last frontier read that kept it.
    listed: Vec<u32>,
    reads: u32,
    stack: Vec<Vertex>,
}

impl Classes {
    fn new(regions: &RegionSet, graph: &RegionGraph) -> Self {
        let leads_somewhere =
            |w: &Vertex| matches!(w, Vertex::Region(_)) || !graph.preds_of(*w).is_empty();
        let frontier = regions
            .regions()
            .iter()
            .map(|r| {
                let mut f: Vec<Vertex> = graph
                    .preds_of(Vertex::Region(r.id))
                    .iter()
                    .copied()
                    .filter(leads_somewhere)
                    .collect();
                f.sort_unstable();
                f.dedup();
                f
            })
            .collect();
        let nr = regions.regions().len();
        Classes {
            union: UnionFind::new(nr),
            frontier,
            seen: vec![0; graph.num_indices()],
            expanded: vec![0; nr],
            stamp: 0,
            listed: vec![0; graph.num_indices()],
            reads: 0,
            stack: Vec::new(),
        }
    }

    /// Merges class `from` into class `to` (both roots).
    fn merge(&mut self, from: usize, to: usize) {
        self.union.attach(from, to);
        let moved = std::mem::take(&mut self.frontier[from]);
        self.frontier[to].extend(moved);
    }

    fn class_of(&mut self, w: Vertex) -> Option<usize> {
        match w {
            Vertex::Region(q) => Some(self.union.find(q.index())),
            Vertex::Node(_) => None,
        }
    }

    /// The producers outside class `c` (a root), with the stale entries dropped for good.
    fn frontier_of(&mut self, graph: &RegionGraph, c: usize) -> Vec<Vertex> {
        self.reads += 1;
        let read = self.reads;
        let mut f = std::mem::take(&mut self.frontier[c]);
        f.retain(|&w| {
            let wi = graph.index(w);
            let fresh = self.listed[wi] != read && self.class_of(w) != Some(c);
            self.listed[wi] = read;
            fresh
        });
        self.frontier[c] = f.clone();
        f
    }

    /// True when class `from` reaches class `to` along a path through some vertex of
    /// neither, in the graph with every class contracted: merging them would close a cycle.
    /// Walks backward from the producers of `to`, leaving out the direct edges from `from`.
    fn reaches_around(&mut self, graph: &RegionGraph, from: usize, to: usize) -> bool {
        self.stack.clear();
        self.stamp += 1;
        let stamp = self.stamp;
        let start = self.frontier_of(graph, to);
        for w in start {
            if self.class_of(w) != Some(from) {
                self.queue(graph, w, to, stamp);
            }
        }
        while let Some(u) = self.stack.pop() {
            let Some(c) = self.class_of(u) else {
                for &w in graph.preds_of(u) {
                    self.queue(graph, w, to, stamp);
                }
                continue;
            };
            if c == from {
                return true;
            }
            if self.expanded[c] != stamp {
                self.expanded[c] = stamp;
                let producers = self.frontier_of(graph, c);
                for w in producers {
                    self.queue(graph, w, to, stamp);
                }
            }
        }
        false
    }

    /// Queues `w` unless this search (`stamp`) has seen it or it lies in class `to` (a path
    /// back into `to` would already be a cycle; the graph has none).
    fn queue(&mut self, graph: &RegionGraph, w: Vertex, to: usize, stamp: u32) {
        let wi = graph.index(w);
        if self.seen[wi] != stamp && self.class_of(w) != Some(to) {
            self.seen[wi] = stamp;
            self.stack.push(w);
        }
    }
}
