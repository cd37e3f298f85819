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
//! Sets are bitsets over regions, shared between vertices while equal and freed after the
//! last user; a merge renames the absorbed region in the live sets. Cost:
//! `O(v · r / 64 + merges · s)` for `v` vertices, `r` regions and `s` distinct live sets.

use crate::analysis::regions::{annotation, AnnotationKind, RegionGraph, RegionSet, Vertex};
use crate::ir::{rewrite::Rebuild, Function, Module};
use crate::passes::partition_graph::{is_external, PartitionError};

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
        let mut out = Module::new();
        for (name, f) in module.functions() {
            let merged = if is_external(f) {
                f.clone()
            } else {
                merge_function(name, f)?
            };
            out.insert(name, merged);
        }
        Ok(out)
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
            f.expr(id).for_each_operand(|o| keep_end[o.index()] = true);
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
    let mut parent: Vec<usize> = (0..nr).collect();
    let mut sets = SetPool::new(nr);
    let nv = graph.preds.len();
    // Remaining uses of each vertex's set.
    let mut uses = vec![0usize; nv];
    for &v in &graph.order {
        for &u in graph.preds_of(v) {
            uses[graph.index(u)] += 1;
        }
    }
    let mut set_of: Vec<Option<usize>> = vec![None; nv];
    for &v in &graph.order {
        let vi = graph.index(v);
        let preds = graph.preds_of(v);
        let mut restr = sets.union(preds.iter().filter_map(|&u| set_of[graph.index(u)]));
        if let Vertex::Region(r) = v {
            let target = &regions.region(r).target;
            let mut candidates: Vec<usize> = preds
                .iter()
                .filter_map(|&u| match u {
                    Vertex::Region(p) if regions.region(p).target == *target => Some(p.index()),
                    _ => None,
                })
                .collect();
            candidates.sort_unstable();
            candidates.dedup();
            for p in candidates {
                let p = find(&mut parent, p);
                if p == r.index() || restr.is_some_and(|s| sets.contains(s, p)) {
                    continue;
                }
                parent[p] = r.index();
                sets.rename(p, r.index());
            }
        }
        let me = match v {
            Vertex::Region(r) => Some(find(&mut parent, r.index())),
            Vertex::Node(_) => None,
        };
        let mut exits: Vec<usize> = preds
            .iter()
            .filter_map(|&u| match u {
                Vertex::Region(p) => Some(find(&mut parent, p.index())),
                Vertex::Node(_) => None,
            })
            .filter(|&p| Some(p) != me)
            .collect();
        exits.sort_unstable();
        exits.dedup();
        if !exits.is_empty() {
            restr = Some(sets.with_bits(restr, &exits));
        }
        if let Some(s) = restr {
            if uses[vi] > 0 {
                sets.retain(s);
                set_of[vi] = Some(s);
            }
            sets.release(s);
        }
        for &u in preds {
            let ui = graph.index(u);
            uses[ui] -= 1;
            if uses[ui] == 0 {
                if let Some(s) = set_of[ui].take() {
                    sets.release(s);
                }
            }
        }
    }
    (0..nr).map(|r| find(&mut parent, r)).collect()
}

fn find(parent: &mut [usize], mut x: usize) -> usize {
    while parent[x] != x {
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    x
}

/// Reference-counted bitsets over region ids; a set is shared while unchanged.
struct SetPool {
    words: usize,
    bits: Vec<Vec<u64>>,
    refs: Vec<usize>,
    free: Vec<usize>,
}

impl SetPool {
    fn new(regions: usize) -> Self {
        SetPool {
            words: regions.div_ceil(64),
            bits: Vec::new(),
            refs: Vec::new(),
            free: Vec::new(),
        }
    }

    fn alloc(&mut self, bits: Vec<u64>) -> usize {
        match self.free.pop() {
            Some(i) => {
                self.bits[i] = bits;
                self.refs[i] = 1;
                i
            }
            None => {
                self.bits.push(bits);
                self.refs.push(1);
                self.bits.len() - 1
            }
        }
    }

    fn retain(&mut self, s: usize) {
        self.refs[s] += 1;
    }

    fn release(&mut self, s: usize) {
        self.refs[s] -= 1;
        if self.refs[s] == 0 {
            self.bits[s] = Vec::new();
            self.free.push(s);
        }
    }

    /// The union of `sets` (holding one reference), or `None` when all are empty.
    fn union(&mut self, sets: impl Iterator<Item = usize>) -> Option<usize> {
        let mut distinct: Vec<usize> = sets.collect();
        distinct.sort_unstable();
        distinct.dedup();
        match distinct.as_slice() {
            [] => None,
            [one] => {
                self.retain(*one);
                Some(*one)
            }
            [first, rest @ ..] => {
                let mut acc = self.bits[*first].clone();
                for &s in rest {
                    for (a, b) in acc.iter_mut().zip(&self.bits[s]) {
                        *a |= *b;
                    }
                }
                Some(self.alloc(acc))
            }
        }
    }

    /// `set` (consumed) with `extra` bits added, as a set holding one reference.
    fn with_bits(&mut self, set: Option<usize>, extra: &[usize]) -> usize {
        if let Some(s) = set {
            if extra.iter().all(|&b| self.contains(s, b)) {
                return s;
            }
        }
        let mut bits = match set {
            Some(s) => {
                let b = self.bits[s].clone();
                self.release(s);
                b
            }
            None => vec![0; self.words],
        };
        for &b in extra {
            bits[b / 64] |= 1 << (b % 64);
        }
        self.alloc(bits)
    }

    fn contains(&self, s: usize, bit: usize) -> bool {
        self.bits[s][bit / 64] & (1 << (bit % 64)) != 0
    }

    /// Region `from` was absorbed by `into`: every live set naming `from` now names `into`.
    fn rename(&mut self, from: usize, into: usize) {
        for (bits, &refs) in self.bits.iter_mut().zip(&self.refs) {
            if refs > 0 && bits[from / 64] & (1 << (from % 64)) != 0 {
                bits[into / 64] |= 1 << (into % 64);
            }
        }
    }
}
