//! Global functions and the builder that creates them.
//!
//! A [`Function`] owns the arena of its expressions (local function literals included). The
//! arena only grows through [`FunctionBuilder`], which checks that every operand already exists,
//! so arena order is a topological order. Passes that transform a function build a new one
//! (see [`super::rewrite`]) rather than mutating nodes in place.

use std::sync::Arc;

use super::{
    Attrs, Call, Callee, Expr, ExprId, FuncType, IrError, LocalFunction, Node, Span, Type, Var,
};
use crate::op::{Op, OpRegistry};
use crate::tensor::Tensor;

/// A global function: parameters, a body, attributes, and the arena holding its expressions.
#[derive(Clone, Debug)]
pub struct Function {
    nodes: Vec<Node>,
    /// Parameter variables in order (each an [`Expr::Var`] node).
    pub params: Vec<ExprId>,
    /// The result expression.
    pub body: ExprId,
    /// Attributes (`Compiler`, `global_symbol`, `Primitive`, ...).
    pub attrs: Attrs,
}

impl Function {
    /// The node at `id`.
    ///
    /// # Panics
    /// If `id` does not belong to this function's arena (ids are only valid in the function
    /// that made them).
    pub fn node(&self, id: ExprId) -> &Node {
        &self.nodes[id.index()]
    }

    /// The expression at `id`.
    pub fn expr(&self, id: ExprId) -> &Expr {
        &self.node(id).expr
    }

    /// The inferred type at `id`, if type inference ran.
    pub fn ty(&self, id: ExprId) -> Option<&Type> {
        self.node(id).ty.as_deref()
    }

    /// The inferred type at `id`, shared (cloning it copies a pointer).
    pub fn ty_shared(&self, id: ExprId) -> Option<&Arc<Type>> {
        self.node(id).ty.as_ref()
    }

    /// Sets the inferred type at `id`.
    pub fn set_ty(&mut self, id: ExprId, ty: Type) {
        self.nodes[id.index()].ty = Some(Arc::new(ty));
    }

    /// Clears every inferred type.
    pub fn clear_types(&mut self) {
        self.nodes.iter_mut().for_each(|n| n.ty = None);
    }

    /// Number of arena slots (live or not).
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// True when the arena is empty (never, for a built function).
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// All ids in arena (topological) order.
    pub fn ids(&self) -> impl DoubleEndedIterator<Item = ExprId> + ExactSizeIterator {
        (0..self.nodes.len()).map(ExprId::from_index)
    }

    /// All nodes with their ids in arena order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (ExprId, &Node)> {
        self.nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (ExprId::from_index(i), n))
    }

    /// The parameter variable at `id`.
    pub fn var(&self, id: ExprId) -> Option<&Var> {
        self.expr(id).as_var()
    }

    /// The declared types of the parameters.
    pub fn param_types(&self) -> Vec<Type> {
        self.params
            .iter()
            .filter_map(|&p| self.var(p).map(|v| v.ty.clone()))
            .collect()
    }

    /// The function's type, once the body's type is inferred.
    pub fn func_type(&self) -> Option<FuncType> {
        Some(FuncType {
            params: self.param_types(),
            ret: Box::new(self.ty(self.body)?.clone()),
        })
    }

    /// The ops of the live op calls, in arena order, with repetition.
    pub fn op_names(&self) -> Vec<String> {
        self.live_ids()
            .into_iter()
            .filter_map(|id| {
                self.expr(id)
                    .as_op_call()
                    .map(|(op, _)| op.name().to_string())
            })
            .collect()
    }

    /// Ids reachable from the body, in arena order (dead nodes left out). Parameters are always
    /// included, used or not.
    pub fn live_ids(&self) -> Vec<ExprId> {
        let mut live = vec![false; self.nodes.len()];
        live[self.body.index()] = true;
        for &p in &self.params {
            live[p.index()] = true;
        }
        for i in (0..self.nodes.len()).rev() {
            if live[i] {
                for op in self.nodes[i].expr.operand_iter() {
                    live[op.index()] = true;
                }
            }
        }
        (0..self.nodes.len())
            .filter(|&i| live[i])
            .map(ExprId::from_index)
            .collect()
    }

    /// The number of uses of each node (operand occurrences in live nodes, plus one for the
    /// body), indexed by arena slot.
    pub fn use_counts(&self) -> Vec<u32> {
        let mut counts = vec![0u32; self.nodes.len()];
        counts[self.body.index()] += 1;
        for id in self.live_ids() {
            for op in self.expr(id).operand_iter() {
                counts[op.index()] += 1;
            }
        }
        counts
    }

    /// The users of each node among the live nodes, indexed by arena slot, in arena order.
    pub fn users(&self) -> Vec<Vec<ExprId>> {
        let mut users = vec![Vec::new(); self.nodes.len()];
        for id in self.live_ids() {
            for op in self.expr(id).operand_iter() {
                if users[op.index()].last() != Some(&id) {
                    users[op.index()].push(id);
                }
            }
        }
        users
    }

    /// A builder whose arena starts as a copy of this function's (ids stay valid), to append
    /// nodes and then [`FunctionBuilder::finish`] with a new body.
    pub fn to_builder(&self) -> FunctionBuilder {
        FunctionBuilder {
            nodes: self.nodes.clone(),
        }
    }
}

/// Appends expressions to a function arena, checking operands as it goes.
#[derive(Default, Debug)]
pub struct FunctionBuilder {
    nodes: Vec<Node>,
}

impl FunctionBuilder {
    /// An empty arena.
    pub fn new() -> Self {
        FunctionBuilder::default()
    }

    /// Appends `expr`, checking that its operands exist. Prefer the typed helpers below.
    pub fn push(&mut self, expr: Expr) -> Result<ExprId, IrError> {
        let id = ExprId::from_index(self.nodes.len());
        for op in expr.operand_iter() {
            if op.index() >= self.nodes.len() {
                return Err(IrError::ForwardReference {
                    at: id,
                    operand: op,
                });
            }
        }
        if let Expr::Function(f) = &expr {
            for &p in &f.params {
                if self.nodes[p.index()].expr.as_var().is_none() {
                    return Err(IrError::ParamNotVar { at: id, param: p });
                }
            }
        }
        self.nodes.push(Node {
            expr,
            ty: None,
            span: None,
        });
        Ok(id)
    }

    /// The expression at `id`, if it exists.
    pub fn get(&self, id: ExprId) -> Option<&Expr> {
        self.nodes.get(id.index()).map(|n| &n.expr)
    }

    /// The inferred type at `id`, if one was recorded (see [`FunctionBuilder::set_ty`]).
    pub fn ty(&self, id: ExprId) -> Option<&Type> {
        self.nodes.get(id.index()).and_then(|n| n.ty.as_deref())
    }

    /// The recorded type of `id`, shared (cloning it copies a pointer).
    pub fn ty_shared(&self, id: ExprId) -> Option<&Arc<Type>> {
        self.nodes.get(id.index()).and_then(|n| n.ty.as_ref())
    }

    /// Records a type for `id` (passes that keep types up to date use this).
    pub fn set_ty(&mut self, id: ExprId, ty: Type) {
        self.set_ty_shared(id, Arc::new(ty));
    }

    /// Records a shared type for `id`, typically one copied from another arena's node.
    pub fn set_ty_shared(&mut self, id: ExprId, ty: Arc<Type>) {
        if let Some(n) = self.nodes.get_mut(id.index()) {
            n.ty = Some(ty);
        }
    }

    /// Records the source position of `id`.
    pub fn set_span(&mut self, id: ExprId, span: Span) {
        if let Some(n) = self.nodes.get_mut(id.index()) {
            n.span = Some(span);
        }
    }

    /// Number of nodes so far.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// True when no node was added yet.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// A new parameter variable. Its type is also recorded as its inferred type.
    pub fn param(&mut self, name: impl Into<String>, ty: Type) -> ExprId {
        let id = ExprId::from_index(self.nodes.len());
        self.nodes.push(Node {
            expr: Expr::Var(Var {
                name: name.into(),
                ty: ty.clone(),
            }),
            ty: Some(Arc::new(ty)),
            span: None,
        });
        id
    }

    /// A constant.
    pub fn constant(&mut self, tensor: impl Into<Arc<Tensor>>) -> ExprId {
        let tensor: Arc<Tensor> = tensor.into();
        let ty = Type::Tensor(tensor.ty().clone());
        let id = ExprId::from_index(self.nodes.len());
        self.nodes.push(Node {
            expr: Expr::Constant(tensor),
            ty: Some(Arc::new(ty)),
            span: None,
        });
        id
    }

    /// A call of the registered op `name`; attributes are checked and completed with the op's
    /// defaults.
    pub fn call(&mut self, name: &str, args: &[ExprId], attrs: Attrs) -> Result<ExprId, IrError> {
        let op = OpRegistry::lookup(name).ok_or_else(|| IrError::UnknownOp(name.to_string()))?;
        self.call_op(&op, args, attrs)
    }

    /// A call of `op`; attributes are checked and completed with the op's defaults.
    pub fn call_op(&mut self, op: &Op, args: &[ExprId], attrs: Attrs) -> Result<ExprId, IrError> {
        op.check_arity(args.len())?;
        let attrs = op.normalize_attrs(attrs)?;
        self.push(Expr::Call(Call {
            callee: Callee::Op(op.clone()),
            args: args.to_vec(),
            attrs,
        }))
    }

    /// A call of the global function `name`.
    pub fn call_global(
        &mut self,
        name: impl Into<String>,
        args: &[ExprId],
    ) -> Result<ExprId, IrError> {
        self.push(Expr::Call(Call {
            callee: Callee::Global(name.into()),
            args: args.to_vec(),
            attrs: Attrs::new(),
        }))
    }

    /// A call of a local function literal (or other function-valued expression).
    pub fn call_local(&mut self, func: ExprId, args: &[ExprId]) -> Result<ExprId, IrError> {
        self.push(Expr::Call(Call {
            callee: Callee::Local(func),
            args: args.to_vec(),
            attrs: Attrs::new(),
        }))
    }

    /// A tuple.
    pub fn tuple(&mut self, fields: &[ExprId]) -> Result<ExprId, IrError> {
        self.push(Expr::Tuple(fields.to_vec()))
    }

    /// Field `index` of a tuple.
    pub fn tuple_get_item(&mut self, tuple: ExprId, index: usize) -> Result<ExprId, IrError> {
        self.push(Expr::TupleGetItem { tuple, index })
    }

    /// A local function literal over parameters made with [`FunctionBuilder::param`].
    pub fn function(
        &mut self,
        params: &[ExprId],
        body: ExprId,
        attrs: Attrs,
    ) -> Result<ExprId, IrError> {
        self.push(Expr::Function(LocalFunction {
            params: params.to_vec(),
            body,
            attrs,
        }))
    }

    /// Finishes a global function and checks it with [`super::verify_function`].
    pub fn finish(
        self,
        params: Vec<ExprId>,
        body: ExprId,
        attrs: Attrs,
    ) -> Result<Function, IrError> {
        let f = Function {
            nodes: self.nodes,
            params,
            body,
            attrs,
        };
        super::verify_function(&f)?;
        Ok(f)
    }
}
