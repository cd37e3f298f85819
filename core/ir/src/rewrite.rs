//! Rebuilding a function into a fresh arena: the way passes transform functions.
//!
//! [`Rebuild`] walks the live nodes of a source function in topological order. For each node a
//! visitor may produce a replacement (any id in the new arena, possibly built from several new
//! nodes); otherwise the node is copied with its operands mapped. Dead nodes are dropped, so
//! the result is compact. Inferred types and spans are carried over on copies: a pass that
//! changes the type of a value must set the new types or re-run type inference.
//!
//! Cost: linear in the size of the source function plus what the visitor builds.

use super::{Expr, ExprId, Function, FunctionBuilder, IrError};

/// A source function being copied into a new arena.
pub struct Rebuild<'f> {
    /// The function being rebuilt.
    pub src: &'f Function,
    /// The new arena.
    pub builder: FunctionBuilder,
    map: Vec<Option<ExprId>>,
}

impl<'f> Rebuild<'f> {
    /// Starts rebuilding `src`.
    pub fn new(src: &'f Function) -> Self {
        Rebuild {
            src,
            builder: FunctionBuilder::new(),
            map: vec![None; src.len()],
        }
    }

    /// The new id of source node `old`, once visited.
    pub fn mapped(&self, old: ExprId) -> Option<ExprId> {
        self.map.get(old.index()).copied().flatten()
    }

    /// The new id of source node `old`; it must already be visited (operands always are).
    pub fn get(&self, old: ExprId) -> Result<ExprId, IrError> {
        self.mapped(old).ok_or(IrError::BadId(old))
    }

    /// Declares that source node `old` is now `new`.
    pub fn set(&mut self, old: ExprId, new: ExprId) {
        self.map[old.index()] = Some(new);
    }

    /// The source expression at `old` with its operands mapped into the new arena.
    pub fn mapped_expr(&self, old: ExprId) -> Result<Expr, IrError> {
        let mut missing = None;
        let e = self.src.expr(old).map_ids(|id| match self.mapped(id) {
            Some(n) => n,
            None => {
                missing = Some(id);
                id
            }
        });
        match missing {
            Some(id) => Err(IrError::BadId(id)),
            None => Ok(e),
        }
    }

    /// Copies source node `old` (operands mapped, type and span kept) and records the mapping.
    pub fn copy(&mut self, old: ExprId) -> Result<ExprId, IrError> {
        let expr = self.mapped_expr(old)?;
        let new = self.builder.push(expr)?;
        let node = self.src.node(old);
        if let Some(ty) = &node.ty {
            self.builder.set_ty_shared(new, ty.clone());
        }
        if let Some(span) = node.span {
            self.builder.set_span(new, span);
        }
        self.set(old, new);
        Ok(new)
    }

    /// Visits every live node in topological order: `visit` returns `Some(new_id)` to replace a
    /// node, or `None` to copy it. Returns the rebuilt function with the source's attributes.
    pub fn run<E: From<IrError>>(
        mut self,
        mut visit: impl FnMut(&mut Self, ExprId) -> Result<Option<ExprId>, E>,
    ) -> Result<Function, E> {
        for old in self.src.live_ids() {
            match visit(&mut self, old)? {
                Some(new) => self.set(old, new),
                None => {
                    self.copy(old)?;
                }
            }
        }
        self.finish().map_err(E::from)
    }

    /// Finishes with the source's parameters, body and attributes mapped.
    pub fn finish(self) -> Result<Function, IrError> {
        let params = self
            .src
            .params
            .iter()
            .map(|&p| self.get(p))
            .collect::<Result<Vec<_>, _>>()?;
        let body = self.get(self.src.body)?;
        self.builder.finish(params, body, self.src.attrs.clone())
    }
}
