//! The graph algorithms the passes and the ONNX importer share: a union-find of merge classes
//! and a deterministic topological sort with its cycle check.
//!
//! The sort is Kahn's algorithm taking, among the vertices whose predecessors are all placed,
//! the one with the smallest key. It gives the lexicographically smallest topological order by
//! key, so an input already in topological order by key comes back unchanged (the ONNX
//! importer keeps a file's node order) and ties are broken the same way on every run (region
//! numbering in PartitionGraph). petgraph's `toposort` follows depth-first finishing order
//! instead, which has neither property.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Disjoint sets over `0..len`, with path halving. Which root represents a merged class is the
/// caller's choice ([`UnionFind::attach`]), so it can keep, say, the earliest id.
#[derive(Clone, Debug, Default)]
pub struct UnionFind {
    parent: Vec<u32>,
}

impl UnionFind {
    /// `len` singleton classes.
    ///
    /// # Panics
    /// When `len` exceeds `u32::MAX` (callers number arena nodes, which are `u32` ids).
    pub fn new(len: usize) -> Self {
        let len = u32::try_from(len).expect("at most u32::MAX elements");
        UnionFind {
            parent: (0..len).collect(),
        }
    }

    /// Adds a singleton class and returns its element.
    pub fn push(&mut self) -> usize {
        let x = self.parent.len();
        self.parent
            .push(u32::try_from(x).expect("at most u32::MAX elements"));
        x
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.parent.len()
    }

    /// True when there are no elements.
    pub fn is_empty(&self) -> bool {
        self.parent.is_empty()
    }

    /// The representative of `x`'s class.
    pub fn find(&mut self, x: usize) -> usize {
        let mut x = x as u32;
        while self.parent[x as usize] != x {
            let up = self.parent[self.parent[x as usize] as usize];
            self.parent[x as usize] = up;
            x = up;
        }
        x as usize
    }

    /// Merges the class whose root is `child` into the class whose root is `root`, which
    /// represents the union. Both must be roots ([`UnionFind::find`] of some element).
    pub fn attach(&mut self, child: usize, root: usize) {
        debug_assert!(self.parent[child] as usize == child && self.parent[root] as usize == root);
        self.parent[child] = root as u32;
    }
}

/// Vertices a topological sort could not place: each lies on a cycle or after one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cycle {
    /// The unplaced vertices, in increasing order.
    pub left: Vec<usize>,
}

/// Sorts the vertices `v` with `keys[v] = Some(k)` topologically (vertices with `None` are
/// not in the graph), taking the ready vertex with the smallest key first (see the module
/// docs). `indegree[v]` is the number of edges into `v`; `successors(v)` lists the heads of
/// the edges out of `v`, one entry per edge. Fails with the unplaced vertices when the graph
/// has a cycle. Cost: `O((v + e) log v)`.
pub fn toposort_by_key<K, I>(
    keys: &[Option<K>],
    mut indegree: Vec<u32>,
    successors: impl Fn(usize) -> I,
) -> Result<Vec<usize>, Cycle>
where
    K: Ord + Copy,
    I: IntoIterator<Item = usize>,
{
    let mut ready: BinaryHeap<Reverse<(K, usize)>> = keys
        .iter()
        .enumerate()
        .filter_map(|(v, k)| k.filter(|_| indegree[v] == 0).map(|k| Reverse((k, v))))
        .collect();
    let mut order = Vec::with_capacity(keys.len());
    while let Some(Reverse((_, v))) = ready.pop() {
        order.push(v);
        for s in successors(v) {
            indegree[s] -= 1;
            if indegree[s] == 0 {
                if let Some(k) = keys[s] {
                    ready.push(Reverse((k, s)));
                }
            }
        }
    }
    let total = keys.iter().filter(|k| k.is_some()).count();
    if order.len() == total {
        return Ok(order);
    }
    Err(Cycle {
        left: (0..keys.len())
            .filter(|&v| keys[v].is_some() && indegree[v] > 0)
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sort(keys: &[Option<u32>], edges: &[(usize, usize)]) -> Result<Vec<usize>, Cycle> {
        let mut indegree = vec![0; keys.len()];
        for &(_, b) in edges {
            indegree[b] += 1;
        }
        toposort_by_key(keys, indegree, |v| {
            edges
                .iter()
                .filter(move |(a, _)| *a == v)
                .map(|&(_, b)| b)
                .collect::<Vec<_>>()
        })
    }

    #[test]
    fn smallest_key_first_and_unchanged_when_already_ordered() {
        let keys: Vec<Option<u32>> = (0..4).map(Some).collect();
        assert_eq!(sort(&keys, &[(0, 1), (1, 3), (0, 2)]), Ok(vec![0, 1, 2, 3]));
        // 3 must come before 0; among the ready ones the smallest key goes first.
        assert_eq!(sort(&keys, &[(3, 0), (2, 1)]), Ok(vec![2, 1, 3, 0]));
        // Keys, not indices, order the ready vertices; vertices without a key are skipped.
        let keys = [Some(9), Some(1), None, Some(5)];
        assert_eq!(sort(&keys, &[]), Ok(vec![1, 3, 0]));
    }

    #[test]
    fn a_cycle_leaves_its_vertices_and_those_after_it() {
        let keys: Vec<Option<u32>> = (0..5).map(Some).collect();
        let err = sort(&keys, &[(0, 1), (1, 2), (2, 1), (2, 3)]).unwrap_err();
        assert_eq!(err.left, [1, 2, 3]);
    }

    #[test]
    fn union_find_keeps_the_chosen_root() {
        let mut uf = UnionFind::new(3);
        assert_eq!(uf.push(), 3);
        uf.attach(2, 0);
        let (child, root) = (uf.find(3), uf.find(2));
        uf.attach(child, root);
        assert_eq!(
            [uf.find(0), uf.find(1), uf.find(2), uf.find(3)],
            [0, 1, 0, 0]
        );
        assert_eq!(uf.len(), 4);
    }
}
