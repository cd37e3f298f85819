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
//! other node its own vertex). Each vertex carries the set of regions that reach it along a
//! path that has left them (TVM's restriction sets). A region absorbs a same-target producer
//! region unless that producer is in the union of its predecessors' sets, i.e. unless some
//! path from the producer reaches the region through another vertex. Unlike TVM, which
//! propagates restrictions only along annotated edges (and `If`), the sets here travel along
//! every dataflow edge, so paths through unannotated nodes (tuples left bare by
//! `include_non_call_ops=false`, hand-placed annotations) never let a merge create a cycle.
//!
//! Regions form a union-find of merge classes. A set is a sorted vector of class roots, freed
//! after the vertex's last user; members absorbed by a merge are renamed lazily (through the
//! union-find) when a set is next read. A class is dropped from new sets once every
//! same-target consumer edge of it has been visited: it can no longer be a merge candidate,
//! so it is never asked about again. Sets therefore hold only the classes still open on the
//! current frontier, and the cost is `O((v + e) · w log w)` for `v` vertices, `e` edges and
//! at most `w` open classes per set (small for CNN-like graphs), instead of one bitset over
//! all regions per vertex.

use crate::analysis::graph::UnionFind;
use crate::analysis::regions::{annotation, AnnotationKind, RegionGraph, RegionSet, Vertex};
use crate::byoc::is_external;
use crate::ir::{rewrite::Rebuild, Function, Module};
use crate::passes::{PartitionError, Pass, PassContext, PassError};

/// The MergeCompilerRegions pass.
#[derive(Clone, Copy, Debug, Default)]
pub struct MergeCompilerRegions;

impl MergeCompilerRegions {
    /// The pass.
    pub fn new() -> Self {
        MergeCompilerRegions
    }

    /// Runs the pass.
    pub fn run(&self, module: &Module) -> Result<Module, PartitionError> {
        self.run_owned(module.clone())
    }

    /// Runs the pass on a module it consumes, sparing the copy [`MergeCompilerRegions::run`]
    /// makes.
    pub fn run_owned(&self, mut module: Module) -> Result<Module, PartitionError> {
        for name in module.names() {
            let Some(f) = module.get(&name).filter(|f| !is_external(f)) else {
                continue;
            };
            let merged = merge_function(&name, f)?;
            module.insert(name, merged);
        }
        Ok(module)
    }
}

impl Pass for MergeCompilerRegions {
    fn name(&self) -> &'static str {
        "merge-compiler-regions"
    }

    fn run(&self, module: &mut Module, _cx: &mut PassContext) -> Result<(), PassError> {
        *module = self.run_owned(std::mem::take(module))?;
        Ok(())
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
    let nr = regions.regions().len();
    let mut classes = UnionFind::new(nr);
    let nv = graph.num_indices();
    // The same-target producer regions of a region vertex: its merge candidates.
    let candidates = |v: Vertex| -> Vec<usize> {
        let Vertex::Region(r) = v else {
            return Vec::new();
        };
        let target = &regions.region(r).target;
        let mut c: Vec<usize> = graph
            .preds_of(v)
            .iter()
            .filter_map(|&u| match u {
                Vertex::Region(p) if regions.region(p).target == *target => Some(p.index()),
                _ => None,
            })
            .collect();
        c.sort_unstable();
        c.dedup();
        c
    };
    // Remaining uses of each vertex's set, and (per class root) the candidate edges not yet
    // visited: a class with none left can never be asked about again.
    let mut uses = vec![0usize; nv];
    let mut open = vec![0usize; nr];
    for &v in &graph.order {
        for &u in graph.preds_of(v) {
            uses[graph.index(u)] += 1;
        }
        for p in candidates(v) {
            open[p] += 1;
        }
    }
    let mut set_of: Vec<Vec<usize>> = vec![Vec::new(); nv];
    for &v in &graph.order {
        let vi = graph.index(v);
        let preds = graph.preds_of(v);
        let mut restr: Vec<usize> = Vec::new();
        for &u in preds {
            restr.extend(set_of[graph.index(u)].iter().map(|&x| classes.find(x)));
        }
        restr.sort_unstable();
        restr.dedup();
        if let Vertex::Region(r) = v {
            let mine = candidates(v);
            for &c in &mine {
                let p = classes.find(c);
                if p == r.index() || restr.binary_search(&p).is_ok() {
                    continue;
                }
                classes.attach(p, r.index());
                open[r.index()] += std::mem::take(&mut open[p]);
            }
            for c in mine {
                let p = classes.find(c);
                open[p] -= 1;
            }
        }
        let me = match v {
            Vertex::Region(r) => Some(classes.find(r.index())),
            Vertex::Node(_) => None,
        };
        if uses[vi] > 0 {
            for &u in preds {
                if let Vertex::Region(p) = u {
                    let p = classes.find(p.index());
                    if Some(p) != me {
                        restr.push(p);
                    }
                }
            }
            // Normalize to live class roots: merges above may have renamed members.
            let mut set: Vec<usize> = restr
                .into_iter()
                .map(|x| classes.find(x))
                .filter(|&x| open[x] > 0)
                .collect();
            set.sort_unstable();
            set.dedup();
            set_of[vi] = set;
        }
        for &u in preds {
            let ui = graph.index(u);
            uses[ui] -= 1;
            if uses[ui] == 0 {
                set_of[ui] = Vec::new();
            }
        }
    }
    (0..nr).map(|r| classes.find(r)).collect()
}
