//! Callback rewriting (TVM's `rewrite(callbacks, expr)`, `PatternRewriter` in `dataflow_matcher.cc`): each rule is a
//! pattern and a callback that builds a replacement for a match.
//!
//! Matches are found as partition finds them (from the output backwards, no overlap, the
//! interior-use rule). At each match root the callback sees the source match and a builder
//! over the new arena holding every node before the root; it returns the replacement's id, or
//! `None` to keep the node. Rules run in order, over and over, until a whole round changes
//! nothing (structurally), or the iteration limit is reached, which is an error: a rule set that
//! keeps changing the graph does not converge.
//!
//! Needs: a verified module. Holds after: types are re-inferred after every change, so
//! callbacks may build nodes without types. Cost per round: one match attempt per node and rule
//! plus a rebuild per effective rule.

use byoc_ir::rewrite::Rebuild;
use byoc_ir::{infer_types, TypeInferError};
use byoc_ir::{structural_eq_function, ExprId, Function, FunctionBuilder, IrError, Module};
use thiserror::Error;

use crate::matcher::Match;
use crate::partition::find_groups;
use crate::pattern::Pattern;
use byoc_ir::partition::skipped_by_passes;

/// What a rewrite callback sees.
pub struct RewriteCtx<'a, 'f> {
    rb: &'a mut Rebuild<'f>,
    matched: &'a Match,
}

impl RewriteCtx<'_, '_> {
    /// The match root in the source function.
    pub fn root(&self) -> ExprId {
        self.matched.root()
    }

    /// The match (ids in the source function).
    pub fn matched(&self) -> &Match {
        self.matched
    }

    /// The source function.
    pub fn src(&self) -> &Function {
        self.rb.src
    }

    /// The new id of source node `old` (every node before the root has one).
    pub fn mapped(&self, old: ExprId) -> Option<ExprId> {
        self.rb.mapped(old)
    }

    /// The new id of what `?name` bound.
    pub fn get(&self, name: &str) -> Option<ExprId> {
        self.matched.get(name).and_then(|old| self.rb.mapped(old))
    }

    /// The builder of the new arena, to append the replacement.
    pub fn builder(&mut self) -> &mut FunctionBuilder {
        &mut self.rb.builder
    }
}

/// A rewrite callback: the replacement's id in the new arena, or `None` to keep the match.
pub type RewriteFn = Box<dyn Fn(&mut RewriteCtx<'_, '_>) -> Result<Option<ExprId>, IrError>>;

/// Errors of rewriting.
#[derive(Debug, Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum RewriteError {
    /// The rules still changed the module after this many rounds.
    #[error("rewrite did not converge within {limit} rounds")]
    NoConvergence {
        /// The iteration limit.
        limit: usize,
    },
    /// A callback or the rebuild failed.
    #[error("in @{function}: {source}")]
    Ir {
        /// The global function.
        function: String,
        /// What failed.
        source: IrError,
    },
    /// The rewritten module does not type-check.
    #[error(transparent)]
    TypeInfer(#[from] TypeInferError),
}

/// An ordered set of rewrite rules with an iteration limit.
pub struct Rewriter {
    rules: Vec<(Pattern, RewriteFn)>,
    limit: usize,
}

impl Rewriter {
    /// No rules; at most `limit` rounds.
    pub fn new(limit: usize) -> Self {
        Rewriter {
            rules: Vec::new(),
            limit,
        }
    }

    /// Adds a rule, builder style.
    pub fn rule(
        mut self,
        pattern: Pattern,
        callback: impl Fn(&mut RewriteCtx<'_, '_>) -> Result<Option<ExprId>, IrError> + 'static,
    ) -> Self {
        self.rules.push((pattern, Box::new(callback)));
        self
    }

    /// Rewrites every function function passes visit until nothing changes; returns the
    /// number of rounds that changed something.
    pub fn run(&self, module: &mut Module) -> Result<usize, RewriteError> {
        infer_types(module)?;
        for round in 0..self.limit {
            let mut changed = false;
            for (pattern, callback) in &self.rules {
                for name in module.names() {
                    let Some(f) = module.get(&name).filter(|f| !skipped_by_passes(f)) else {
                        continue;
                    };
                    let ir = |source| RewriteError::Ir {
                        function: name.clone(),
                        source,
                    };
                    if let Some(new) = apply(f, pattern, callback).map_err(ir)? {
                        module.insert(name.clone(), new);
                        infer_types(module)?;
                        changed = true;
                    }
                }
            }
            if !changed {
                return Ok(round);
            }
        }
        Err(RewriteError::NoConvergence { limit: self.limit })
    }
}

/// Applies one rule to `f`; `None` when the result is structurally the same.
fn apply(
    f: &Function,
    pattern: &Pattern,
    callback: &RewriteFn,
) -> Result<Option<Function>, IrError> {
    let groups = find_groups(f, pattern, None);
    if groups.is_empty() {
        return Ok(None);
    }
    let mut next = 0;
    let rewritten = Rebuild::new(f).run(|rb, old| {
        while next < groups.len() && groups[next].root < old {
            next += 1;
        }
        match groups.get(next).filter(|g| g.root == old) {
            Some(g) => callback(&mut RewriteCtx {
                rb,
                matched: &g.matched,
            }),
            None => Ok(None),
        }
    })?;
    // The replaced matches' interiors were copied before their roots; drop them.
    let compact = Rebuild::new(&rewritten).run(|_, _| Ok::<_, IrError>(None))?;
    Ok(structural_eq_function(f, &compact)
        .is_err()
        .then_some(compact))
}
