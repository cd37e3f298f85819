//! Matching a pattern against an expression of a typed function, with TVM's semantics
//! (`DFPatternMatcher`, `src/relay/ir/dataflow_matcher.cc` in TVM v0.16).
//!
//! - Binding identity: within one match, a pattern node that matched an expression is bound to
//!   it, and any later occurrence of the same node (a shared handle, or a `?x` of the same
//!   name) must match that very expression.
//! - A failed sub-match rolls back every binding it made (a watermark on the binding stack),
//!   so `p | q` tries `q` from a clean state.
//! - `add` and `multiply` are commutative: when the arguments fail in order, they are tried
//!   swapped.
//! - Type constraints read the inferred types: run `byoc_ir::infer_types` first (an
//!   untyped expression satisfies no type constraint).
//! - Attribute constraints on op calls compare against the normalized call attributes, the
//!   wanted value converted by the op's schema first (so `padding=1` reads as the op reads it,
//!   and defaults count).
//!
//! Cost: one match is linear in the pattern size (times 2 per commutative call), except the
//! dominator pattern, which walks the paths it accepts.

use std::cell::OnceCell;

use byoc_ir::op::Op;
use byoc_ir::{AttrValue, Attrs, Callee, Expr, ExprId, Function};

use crate::graph::Graph;
use crate::overlay::View;
use crate::pattern::{NodeKey, Pattern, PatternKind};

#[derive(Clone, Debug, PartialEq)]
enum Binding {
    Node(NodeKey, ExprId),
    Name(String, ExprId),
    /// Matched by a dominator pattern's parent or path: part of the match, never an input.
    Fuzzy(ExprId),
}

/// A successful match: the root and the bindings.
#[derive(Clone, Debug)]
pub struct Match {
    root: ExprId,
    bindings: Vec<Binding>,
}

impl Match {
    /// The expression the pattern matched at.
    pub fn root(&self) -> ExprId {
        self.root
    }

    /// The expression `?name` bound.
    pub fn get(&self, name: &str) -> Option<ExprId> {
        self.bindings.iter().find_map(|b| match b {
            Binding::Name(n, e) if n == name => Some(*e),
            _ => None,
        })
    }

    /// The expression the pattern node `p` (a handle into the matched pattern) bound, if that
    /// node took part in the match.
    pub fn matched(&self, p: &Pattern) -> Option<ExprId> {
        if let PatternKind::Named(n) = p.kind() {
            return self.get(n);
        }
        let key = p.key();
        self.bindings.iter().find_map(|b| match b {
            Binding::Node(k, e) if *k == key => Some(*e),
            _ => None,
        })
    }

    /// The named wildcards and what they bound, in binding order.
    pub fn named(&self) -> impl Iterator<Item = (&str, ExprId)> {
        self.bindings.iter().filter_map(|b| match b {
            Binding::Name(n, e) => Some((n.as_str(), *e)),
            _ => None,
        })
    }

    /// True when `e` was matched by a dominator pattern's parent or path.
    pub fn is_fuzzy(&self, e: ExprId) -> bool {
        self.bindings.contains(&Binding::Fuzzy(e))
    }
}

/// Matches patterns against the expressions of one function.
pub struct Matcher<'f> {
    view: View<'f>,
    graph: OnceCell<Graph>,
    bindings: Vec<Binding>,
}

impl<'f> Matcher<'f> {
    /// A matcher over `f` (which should be typed for type constraints to hold).
    pub fn new(f: &'f Function) -> Self {
        Matcher::on(View::plain(f))
    }

    /// A matcher over a view (a function with pending composites).
    pub(crate) fn on(view: View<'f>) -> Self {
        Matcher {
            view,
            graph: OnceCell::new(),
            bindings: Vec::new(),
        }
    }

    /// The function.
    pub fn function(&self) -> &'f Function {
        self.view.f
    }

    /// The users and post-dominators of the function (computed on first use).
    pub fn graph(&self) -> &Graph {
        self.graph
            .get_or_init(|| Graph::from_users(self.view.all_users()))
    }

    /// Matches `pattern` at `root`.
    pub fn try_match(&mut self, pattern: &Pattern, root: ExprId) -> Option<Match> {
        self.bindings.clear();
        if self.m(pattern, root) {
            Some(Match {
                root,
                bindings: std::mem::take(&mut self.bindings),
            })
        } else {
            None
        }
    }

    fn lookup(&self, p: &Pattern) -> Option<ExprId> {
        let key = p.key();
        self.bindings.iter().rev().find_map(|b| match b {
            Binding::Node(k, e) if *k == key => Some(*e),
            _ => None,
        })
    }

    fn lookup_name(&self, name: &str) -> Option<ExprId> {
        self.bindings.iter().rev().find_map(|b| match b {
            Binding::Name(n, e) if n == name => Some(*e),
            _ => None,
        })
    }

    fn m(&mut self, p: &Pattern, e: ExprId) -> bool {
        if let Some(bound) = self.lookup(p) {
            return bound == e;
        }
        let mark = self.bindings.len();
        let ok = self.m_kind(p, e);
        if ok {
            self.bindings.push(Binding::Node(p.key(), e));
        } else {
            self.bindings.truncate(mark);
        }
        ok
    }

    fn m_kind(&mut self, p: &Pattern, e: ExprId) -> bool {
        let view = self.view;
        let expr = view.expr(e);
        match p.kind() {
            PatternKind::Wildcard => true,
            PatternKind::Named(name) => match self.lookup_name(name) {
                Some(bound) => bound == e,
                None => {
                    self.bindings.push(Binding::Name(name.clone(), e));
                    true
                }
            },
            PatternKind::Var => matches!(expr, Expr::Var(_)),
            PatternKind::Const(None) => matches!(expr, Expr::Constant(_)),
            PatternKind::Const(Some(v)) => match expr {
                Expr::Constant(t) => all_equal(t, *v),
                _ => false,
            },
            PatternKind::Expr(id) => *id == e,
            PatternKind::Call { op, args } => match expr.as_op_call() {
                Some((o, call)) if o.name() == op => match args {
                    None => true,
                    Some(pargs) => self.m_call_args(op, pargs, &call.args),
                },
                _ => false,
            },
            PatternKind::Optional { op, args } => {
                let called = match expr.as_op_call() {
                    Some((o, call)) if o.name() == op => self.m_call_args(op, args, &call.args),
                    _ => false,
                };
                called || args.first().is_some_and(|a| self.m(a, e))
            }
            PatternKind::Tuple(fields) => match expr {
                Expr::Tuple(items) => match fields {
                    None => true,
                    Some(fields) => self.m_list(fields, items),
                },
                _ => false,
            },
            PatternKind::TupleGetItem { tuple, index } => match expr {
                Expr::TupleGetItem { tuple: t, index: i } => {
                    index.is_none_or(|x| x == *i) && self.m(tuple, *t)
                }
                _ => false,
            },
            PatternKind::Alt(a, b) => self.m(a, e) || self.m(b, e),
            PatternKind::Attr { inner, attrs } => self.m(inner, e) && attrs_match(expr, attrs),
            PatternKind::Type { inner, constraint } => {
                view.ty(e).is_some_and(|t| constraint.accepts(t)) && self.m(inner, e)
            }
            PatternKind::Dominator {
                parent,
                path,
                child,
            } => {
                self.m(child, e)
                    && self.matches_path(parent, path, e)
                    && self
                        .lookup(parent)
                        .is_some_and(|p| self.graph().post_dominates(e, p))
            }
        }
    }

    /// Pairwise argument match; for `add` and `multiply` the swapped order is tried too.
    fn m_call_args(&mut self, op: &str, pargs: &[Pattern], args: &[ExprId]) -> bool {
        if pargs.len() != args.len() {
            return false;
        }
        let mark = self.bindings.len();
        if self.m_list(pargs, args) {
            return true;
        }
        self.bindings.truncate(mark);
        if matches!(op, "add" | "multiply") && args.len() == 2 {
            if self.m(&pargs[0], args[1]) && self.m(&pargs[1], args[0]) {
                return true;
            }
            self.bindings.truncate(mark);
        }
        false
    }

    fn m_list(&mut self, pats: &[Pattern], ids: &[ExprId]) -> bool {
        pats.len() == ids.len() && pats.iter().zip(ids).all(|(p, &e)| self.m(p, e))
    }

    /// TVM's `MatchesPath`: every input of `e` matches `parent`, or matches `path` (bindings
    /// not kept) and recursively has the same property.
    fn matches_path(&mut self, parent: &Pattern, path: &Pattern, e: ExprId) -> bool {
        let inputs = dataflow_inputs(self.view.expr(e));
        if inputs.is_empty() {
            return false;
        }
        inputs.into_iter().all(|n| {
            if self.m(parent, n) {
                self.bindings.push(Binding::Fuzzy(n));
                return true;
            }
            // The path may match many nodes: its bindings are not kept.
            let mark = self.bindings.len();
            let on_path = self.m(path, n);
            self.bindings.truncate(mark);
            if on_path {
                self.bindings.push(Binding::Fuzzy(n));
            }
            on_path && self.matches_path(parent, path, n)
        })
    }
}

/// Operands of `expr` that carry data (a local callee is left out, as TVM leaves out the op).
fn dataflow_inputs(expr: &Expr) -> Vec<ExprId> {
    match expr {
        Expr::Call(call) => call.args.clone(),
        other => other.operands(),
    }
}

/// True when `expr` (a call or function literal) carries every wanted attribute value.
fn attrs_match(expr: &Expr, want: &Attrs) -> bool {
    match expr {
        Expr::Call(call) => match &call.callee {
            Callee::Op(op) => want.iter().all(|(k, v)| {
                call.attrs
                    .get(k)
                    .is_some_and(|have| op_attr_eq(op, k, v, have))
            }),
            _ => want
                .iter()
                .all(|(k, v)| call.attrs.get(k).is_some_and(|have| value_eq(v, have))),
        },
        Expr::Function(lit) => want
            .iter()
            .all(|(k, v)| lit.attrs.get(k).is_some_and(|have| value_eq(v, have))),
        _ => false,
    }
}

/// Compares a wanted op attribute after converting it as the op's schema would.
fn op_attr_eq(op: &Op, name: &str, want: &AttrValue, have: &AttrValue) -> bool {
    match op.normalize_attrs(Attrs::new().with(name, want.clone())) {
        Ok(norm) => norm.get(name).is_some_and(|w| value_eq(w, have)),
        Err(_) => value_eq(want, have),
    }
}

/// Attribute value equality as TVM's `MatchRetValue`: numbers by value, booleans against 0/1.
pub(crate) fn value_eq(want: &AttrValue, have: &AttrValue) -> bool {
    match (want, have) {
        (AttrValue::List(a), AttrValue::List(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| value_eq(x, y))
        }
        (AttrValue::Bool(_), _) | (_, AttrValue::Bool(_)) => {
            want.as_bool().is_some() && want.as_bool() == have.as_bool()
        }
        (AttrValue::Int(_) | AttrValue::Float(_), AttrValue::Int(_) | AttrValue::Float(_)) => {
            want.as_f64() == have.as_f64()
        }
        _ => want == have,
    }
}

/// Matches `pattern` at `root` of `f` (a one-off; use a [`Matcher`] to match at many roots).
pub fn match_at(f: &Function, pattern: &Pattern, root: ExprId) -> Option<Match> {
    Matcher::new(f).try_match(pattern, root)
}

/// True when every element of `t` is `v` within a relative 1e-5 (an empty constant is not
/// `v`): `const(0.5)` matches a float32 or float64 0.5 (any dtype, as its value), `const(1.4142135)` the float32
/// rounding of the square root of two.
fn all_equal(t: &byoc_ir::Tensor, v: f64) -> bool {
    let tolerance = 1e-5 * v.abs().max(1.0);
    let values = t.to_f64_vec();
    !values.is_empty() && values.iter().all(|x| (x - v).abs() <= tolerance)
}
