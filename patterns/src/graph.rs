//! The dataflow graph of a function as the matcher and partitioner see it: users of each node
//! and the post-dominator tree (TVM's `IndexedGraph`).
//!
//! A node's immediate post-dominator is the lowest common ancestor, in the post-dominator tree,
//! of all its users. The function body and nodes without live users are roots. `a`
//! post-dominates `b` when every path from `b` to the body passes through `a` (a node
//! post-dominates itself). Built in one reverse topological sweep; a query walks up the tree.

use byoc_ir::{ExprId, Function};

const NONE: u32 = u32::MAX;

/// Users and post-dominators of a function's live nodes.
#[derive(Debug)]
pub struct Graph {
    users: Vec<Vec<ExprId>>,
    ipdom: Vec<u32>,
    depth: Vec<u32>,
}

impl Graph {
    /// Analyses `f`.
    pub fn new(f: &Function) -> Self {
        Graph::from_users(f.users())
    }

    /// Analyses the graph whose live users of each arena slot are `users` (dead slots have
    /// none; a user always comes after what it uses).
    pub(crate) fn from_users(users: Vec<Vec<ExprId>>) -> Self {
        let n = users.len();
        let mut g = Graph {
            users,
            ipdom: vec![NONE; n],
            depth: vec![0; n],
        };
        for i in (0..n).rev() {
            let mut lca: Option<u32> = None;
            for k in 0..g.users[i].len() {
                let u = g.users[i][k].index() as u32;
                lca = Some(match lca {
                    None => u,
                    Some(l) => g.lca(l, u),
                });
                if lca == Some(NONE) {
                    break;
                }
            }
            if let Some(p) = lca.filter(|&p| p != NONE) {
                g.ipdom[i] = p;
                g.depth[i] = g.depth[p as usize] + 1;
            }
        }
        g
    }

    fn lca(&self, mut a: u32, mut b: u32) -> u32 {
        while a != b {
            if a == NONE || b == NONE {
                return NONE;
            }
            let (da, db) = (self.depth[a as usize], self.depth[b as usize]);
            if da >= db {
                a = self.ipdom[a as usize];
            } else {
                b = self.ipdom[b as usize];
            }
        }
        a
    }

    /// The live users of `id`, in arena order.
    pub fn users(&self, id: ExprId) -> &[ExprId] {
        &self.users[id.index()]
    }

    /// The immediate post-dominator of `id`, if it has one.
    pub fn ipdom(&self, id: ExprId) -> Option<ExprId> {
        let p = self.ipdom[id.index()];
        (p != NONE).then(|| ExprId::from_index(p as usize))
    }

    /// True when every path from `b` to the function's result passes through `a`.
    pub fn post_dominates(&self, a: ExprId, b: ExprId) -> bool {
        let target_depth = self.depth[a.index()];
        let mut x = b.index() as u32;
        while x != NONE && self.depth[x as usize] > target_depth {
            x = self.ipdom[x as usize];
        }
        x == a.index() as u32
    }
}
