//! The pattern language: [`Pattern`] values and the builder API that makes them.
//!
//! A pattern is an immutable tree of [`PatternKind`] nodes behind reference-counted handles.
//! Cloning a [`Pattern`] shares the node, and sharing means identity: when one pattern node
//! occurs twice in a pattern (built with the builder API), both occurrences must match the very
//! same expression, as TVM's reuse of one pattern object. In text, the same is said with named
//! wildcards (`?x`): every `?x` of one pattern binds the same expression.
//!
//! Equality of patterns is structural (two separately built `nn.relu(*)` are equal), which is
//! what the text round trip preserves.

use std::sync::Arc;

use byoc_ir::DType;
use byoc_ir::{AttrValue, Attrs, ExprId, Type};

/// A type constraint of [`PatternKind::Type`].
#[derive(Clone, Debug, PartialEq)]
pub enum TypeConstraint {
    /// The expression is a tensor of this dtype (`p : float32`).
    DType(DType),
    /// The expression is a tensor of this shape (`p : (1, 16, 8, 8)`).
    Shape(Vec<usize>),
    /// The expression has exactly this type (`p : Tensor[(1, 16, 8, 8), float32]`).
    Type(Type),
}

impl TypeConstraint {
    /// True when `ty` satisfies the constraint.
    pub fn accepts(&self, ty: &Type) -> bool {
        match self {
            TypeConstraint::DType(d) => ty.as_tensor().is_some_and(|t| t.dtype == *d),
            TypeConstraint::Shape(s) => ty.as_tensor().is_some_and(|t| t.shape == *s),
            TypeConstraint::Type(t) => t == ty,
        }
    }
}

/// One node of a pattern.
#[derive(Clone, Debug, PartialEq)]
pub enum PatternKind {
    /// `*`: any expression; each occurrence is independent.
    Wildcard,
    /// `?x`: any expression; every occurrence of the name in one pattern binds the same one.
    Named(String),
    /// `var`: a function parameter.
    Var,
    /// `const`: a constant; `const(v)`: a constant every element of which is `v` (within a
    /// relative 1e-5, so a float32 rounding of `v` matches).
    Const(Option<f64>),
    /// Exactly the expression with this id (builder only: ids belong to one function).
    Expr(ExprId),
    /// `op(p1, ..., pn)`, or `op(..)` when `args` is `None` (any arguments).
    Call {
        /// The op name.
        op: String,
        /// Argument patterns, or `None` for any arguments.
        args: Option<Vec<Pattern>>,
    },
    /// `op?(p1, ..., pn)`: `op(p1, ..., pn) | p1`.
    Optional {
        /// The op name.
        op: String,
        /// Argument patterns (at least one).
        args: Vec<Pattern>,
    },
    /// `(p1, ..., pn)`, or `(..)` when `fields` is `None` (any tuple).
    Tuple(Option<Vec<Pattern>>),
    /// `p.i`, or `p.*` when `index` is `None` (any field).
    TupleGetItem {
        /// The tuple pattern.
        tuple: Pattern,
        /// The field index, or `None` for any.
        index: Option<usize>,
    },
    /// `p | q`: `p` tried first; bindings of a failed `p` are rolled back.
    Alt(Pattern, Pattern),
    /// `p{attr=value, ...}`: `p` matches and the call's (or function literal's) attributes equal
    /// these.
    Attr {
        /// The constrained pattern.
        inner: Pattern,
        /// The required attribute values.
        attrs: Attrs,
    },
    /// `p : T`: `p` matches and the inferred type satisfies the constraint.
    Type {
        /// The constrained pattern.
        inner: Pattern,
        /// The constraint.
        constraint: TypeConstraint,
    },
    /// `dominates(parent, path, child)`: TVM's dominator pattern (see [`Pattern::dominates`]).
    Dominator {
        /// Where every path ends.
        parent: Pattern,
        /// What every node between child and parent matches (bindings inside are not kept).
        path: Pattern,
        /// The root of the match.
        child: Pattern,
    },
}

/// A dataflow pattern (a shared handle to a [`PatternKind`] node).
#[derive(Clone, Debug, PartialEq)]
pub struct Pattern(Arc<PatternKind>);

/// The identity of a pattern node within one pattern (see the module docs).
pub(crate) type NodeKey = usize;

impl Pattern {
    /// A pattern of this kind.
    pub fn new(kind: PatternKind) -> Self {
        Pattern(Arc::new(kind))
    }

    /// The node's kind.
    pub fn kind(&self) -> &PatternKind {
        &self.0
    }

    /// The node's identity: equal for clones of one handle, distinct otherwise.
    pub(crate) fn key(&self) -> NodeKey {
        Arc::as_ptr(&self.0) as NodeKey
    }

    /// `*`.
    pub fn wildcard() -> Self {
        Pattern::new(PatternKind::Wildcard)
    }

    /// `?name`.
    pub fn named(name: impl Into<String>) -> Self {
        Pattern::new(PatternKind::Named(name.into()))
    }

    /// `var`.
    pub fn var() -> Self {
        Pattern::new(PatternKind::Var)
    }

    /// `const`.
    pub fn constant() -> Self {
        Pattern::new(PatternKind::Const(None))
    }

    /// `const(v)`: a constant whose every element is `v` (TVM's `is_expr(const(v))`, with a
    /// float tolerance): a composite that computes a fixed function checks its constants.
    pub fn constant_of(value: f64) -> Self {
        Pattern::new(PatternKind::Const(Some(value)))
    }

    /// Exactly the expression `id` (TVM's `is_expr`); meaningful for one function only.
    pub fn expr(id: ExprId) -> Self {
        Pattern::new(PatternKind::Expr(id))
    }

    /// `op(args...)`.
    pub fn call(op: impl Into<String>, args: impl IntoIterator<Item = Pattern>) -> Self {
        Pattern::new(PatternKind::Call {
            op: op.into(),
            args: Some(args.into_iter().collect()),
        })
    }

    /// `op(..)`: a call of `op` with any arguments.
    pub fn call_any(op: impl Into<String>) -> Self {
        Pattern::new(PatternKind::Call {
            op: op.into(),
            args: None,
        })
    }

    /// `op?(self, rest...)`: an optional call of `op` wrapped around `self` (TVM's
    /// `p.optional(lambda x: is_op(op)(x, rest...))`).
    pub fn optional(self, op: impl Into<String>, rest: impl IntoIterator<Item = Pattern>) -> Self {
        let mut args = vec![self];
        args.extend(rest);
        Pattern::new(PatternKind::Optional {
            op: op.into(),
            args,
        })
    }

    /// `(fields...)`.
    pub fn tuple(fields: impl IntoIterator<Item = Pattern>) -> Self {
        Pattern::new(PatternKind::Tuple(Some(fields.into_iter().collect())))
    }

    /// `(..)`: any tuple.
    pub fn tuple_any() -> Self {
        Pattern::new(PatternKind::Tuple(None))
    }

    /// `self.index`.
    pub fn get(self, index: usize) -> Self {
        Pattern::new(PatternKind::TupleGetItem {
            tuple: self,
            index: Some(index),
        })
    }

    /// `self.*`: any field of a tuple matching `self`.
    pub fn get_any(self) -> Self {
        Pattern::new(PatternKind::TupleGetItem {
            tuple: self,
            index: None,
        })
    }

    /// `self | other`.
    pub fn or(self, other: Pattern) -> Self {
        Pattern::new(PatternKind::Alt(self, other))
    }

    /// `self{name=value}`; further calls add to the same constraint.
    pub fn has_attr(self, name: &str, value: impl Into<AttrValue>) -> Self {
        match self.kind() {
            PatternKind::Attr { inner, attrs } => Pattern::new(PatternKind::Attr {
                inner: inner.clone(),
                attrs: attrs.clone().with(name, value),
            }),
            _ => Pattern::new(PatternKind::Attr {
                inner: self,
                attrs: Attrs::new().with(name, value),
            }),
        }
    }

    /// `self{attrs}`.
    pub fn has_attrs(self, attrs: Attrs) -> Self {
        Pattern::new(PatternKind::Attr { inner: self, attrs })
    }

    /// `self : dtype`.
    pub fn has_dtype(self, dtype: DType) -> Self {
        self.has_constraint(TypeConstraint::DType(dtype))
    }

    /// `self : (d0, d1, ...)`.
    pub fn has_shape(self, shape: impl Into<Vec<usize>>) -> Self {
        self.has_constraint(TypeConstraint::Shape(shape.into()))
    }

    /// `self : T`.
    pub fn has_type(self, ty: Type) -> Self {
        self.has_constraint(TypeConstraint::Type(ty))
    }

    fn has_constraint(self, constraint: TypeConstraint) -> Self {
        Pattern::new(PatternKind::Type {
            inner: self,
            constraint,
        })
    }

    /// TVM's dominator pattern with `self` as the child: matches an expression `e` that `self`
    /// matches when every input of `e` matches `parent` or matches `path` and recursively has
    /// the same property, and `e` post-dominates the node `parent` matched.
    pub fn dominates(self, parent: Pattern, path: Pattern) -> Self {
        Pattern::new(PatternKind::Dominator {
            parent,
            path,
            child: self,
        })
    }

    /// The direct sub-patterns in post-order position order (arguments left to right; for the
    /// dominator pattern: parent, path, child).
    pub fn children(&self) -> Vec<&Pattern> {
        match self.kind() {
            PatternKind::Wildcard
            | PatternKind::Named(_)
            | PatternKind::Var
            | PatternKind::Const(_)
            | PatternKind::Expr(_) => Vec::new(),
            PatternKind::Call { args, .. } | PatternKind::Tuple(args) => {
                args.iter().flatten().collect()
            }
            PatternKind::Optional { args, .. } => args.iter().collect(),
            PatternKind::TupleGetItem { tuple, .. } => vec![tuple],
            PatternKind::Alt(a, b) => vec![a, b],
            PatternKind::Attr { inner, .. } | PatternKind::Type { inner, .. } => vec![inner],
            PatternKind::Dominator {
                parent,
                path,
                child,
            } => vec![parent, path, child],
        }
    }

    /// Every node once, children before parents (TVM's post-DFS order over pattern objects;
    /// a shared node is listed at its first position).
    pub fn post_order(&self) -> Vec<&Pattern> {
        let mut seen = std::collections::HashSet::new();
        let mut out = Vec::new();
        fn visit<'p>(
            p: &'p Pattern,
            seen: &mut std::collections::HashSet<NodeKey>,
            out: &mut Vec<&'p Pattern>,
        ) {
            if !seen.insert(p.key()) {
                return;
            }
            for c in p.children() {
                visit(c, seen, out);
            }
            out.push(p);
        }
        visit(self, &mut seen, &mut out);
        out
    }

    /// The op names the pattern mentions, in post-order, with repetition removed.
    pub fn ops(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for p in self.post_order() {
            if let PatternKind::Call { op, .. } | PatternKind::Optional { op, .. } = p.kind() {
                if !out.contains(&op.as_str()) {
                    out.push(op);
                }
            }
        }
        out
    }

    /// True when the pattern can only match an expression that is not a leaf (a call, tuple,
    /// or tuple-get-item somewhere on every alternative), so a partition of it is not empty.
    pub fn is_structural(&self) -> bool {
        match self.kind() {
            PatternKind::Wildcard
            | PatternKind::Named(_)
            | PatternKind::Var
            | PatternKind::Const(_)
            | PatternKind::Expr(_) => false,
            PatternKind::Optional { args, .. } => args.first().is_some_and(Pattern::is_structural),
            PatternKind::Call { .. } | PatternKind::Tuple(_) | PatternKind::TupleGetItem { .. } => {
                true
            }
            PatternKind::Alt(a, b) => a.is_structural() && b.is_structural(),
            PatternKind::Attr { inner, .. } | PatternKind::Type { inner, .. } => {
                inner.is_structural()
            }
            PatternKind::Dominator { child, .. } => child.is_structural(),
        }
    }
}
