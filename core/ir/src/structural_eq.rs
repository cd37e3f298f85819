//! Structural equality modulo renaming (TVM's `structural_equal` with free-variable mapping).
//!
//! Two functions are equal when there is a one-to-one map between their live nodes that
//! preserves expression kinds, ops, attributes, constants, declared variable types, tuple
//! indices and operands, and maps parameters to parameters by position. Variable names, arena
//! ids, inferred types and source spans do not matter. Cost: linear in the graph size.

use std::collections::HashMap;

use super::{Callee, Expr, ExprId, Function, Module};

/// Why two functions or modules differ, for test failure messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch(pub String);

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Compares two modules function by function (functions matched by name).
pub fn structural_eq_module(a: &Module, b: &Module) -> Result<(), Mismatch> {
    if a.names() != b.names() {
        return Err(Mismatch(format!(
            "functions differ: {:?} vs {:?}",
            a.names(),
            b.names()
        )));
    }
    for (name, fa) in a.functions() {
        let fb = b.get(name).expect("names are equal");
        structural_eq_function(fa, fb).map_err(|m| Mismatch(format!("in @{name}: {m}")))?;
    }
    Ok(())
}

/// Compares two functions modulo renaming.
pub fn structural_eq_function(a: &Function, b: &Function) -> Result<(), Mismatch> {
    if a.attrs != b.attrs {
        return Err(Mismatch(format!(
            "function attributes differ: {:?} vs {:?}",
            a.attrs, b.attrs
        )));
    }
    if a.params.len() != b.params.len() {
        return Err(Mismatch(format!(
            "{} vs {} parameters",
            a.params.len(),
            b.params.len()
        )));
    }
    let mut eq = Matcher {
        a,
        b,
        fwd: HashMap::new(),
        back: HashMap::new(),
        work: Vec::new(),
    };
    for (&pa, &pb) in a.params.iter().zip(&b.params) {
        eq.pair(pa, pb)?;
    }
    eq.pair(a.body, b.body)?;
    while let Some((x, y)) = eq.work.pop() {
        eq.compare(x, y)?;
    }
    Ok(())
}

struct Matcher<'f> {
    a: &'f Function,
    b: &'f Function,
    fwd: HashMap<ExprId, ExprId>,
    back: HashMap<ExprId, ExprId>,
    work: Vec<(ExprId, ExprId)>,
}

impl Matcher<'_> {
    /// Records that `x` (in a) corresponds to `y` (in b), scheduling a comparison the first time.
    fn pair(&mut self, x: ExprId, y: ExprId) -> Result<(), Mismatch> {
        match (self.fwd.get(&x), self.back.get(&y)) {
            (Some(&y2), _) if y2 != y => {
                Err(Mismatch(format!("{x} corresponds to both {y2} and {y}")))
            }
            (_, Some(&x2)) if x2 != x => {
                Err(Mismatch(format!("{y} corresponds to both {x2} and {x}")))
            }
            (Some(_), _) => Ok(()),
            _ => {
                self.fwd.insert(x, y);
                self.back.insert(y, x);
                self.work.push((x, y));
                Ok(())
            }
        }
    }

    fn pair_all(&mut self, xs: &[ExprId], ys: &[ExprId], what: &str) -> Result<(), Mismatch> {
        if xs.len() != ys.len() {
            return Err(Mismatch(format!(
                "{what}: {} vs {} operands",
                xs.len(),
                ys.len()
            )));
        }
        xs.iter().zip(ys).try_for_each(|(&x, &y)| self.pair(x, y))
    }

    fn compare(&mut self, x: ExprId, y: ExprId) -> Result<(), Mismatch> {
        let differ = |what: &str| Err(Mismatch(format!("{x} vs {y}: {what}")));
        match (self.a.expr(x), self.b.expr(y)) {
            (Expr::Var(va), Expr::Var(vb)) => {
                if va.ty != vb.ty {
                    return differ(&format!("variable types {} vs {}", va.ty, vb.ty));
                }
            }
            (Expr::Constant(ta), Expr::Constant(tb)) => {
                if ta != tb {
                    return differ("constants differ");
                }
            }
            (Expr::Call(ca), Expr::Call(cb)) => {
                match (&ca.callee, &cb.callee) {
                    (Callee::Op(oa), Callee::Op(ob)) if oa == ob => {}
                    (Callee::Global(ga), Callee::Global(gb)) if ga == gb => {}
                    (Callee::Local(la), Callee::Local(lb)) => self.pair(*la, *lb)?,
                    (p, q) => return differ(&format!("callees {p:?} vs {q:?}")),
                }
                if ca.attrs != cb.attrs {
                    return differ(&format!("call attributes {:?} vs {:?}", ca.attrs, cb.attrs));
                }
                self.pair_all(&ca.args, &cb.args, "call")?;
            }
            (Expr::Tuple(fa), Expr::Tuple(fb)) => self.pair_all(fa, fb, "tuple")?,
            (
                Expr::TupleGetItem {
                    tuple: ta,
                    index: ia,
                },
                Expr::TupleGetItem {
                    tuple: tb,
                    index: ib,
                },
            ) => {
                if ia != ib {
                    return differ(&format!("tuple indices {ia} vs {ib}"));
                }
                self.pair(*ta, *tb)?;
            }
            (Expr::Function(fa), Expr::Function(fb)) => {
                if fa.attrs != fb.attrs {
                    return differ(&format!(
                        "function attributes {:?} vs {:?}",
                        fa.attrs, fb.attrs
                    ));
                }
                self.pair_all(&fa.params, &fb.params, "function parameters")?;
                self.pair(fa.body, fb.body)?;
            }
            (ea, eb) => {
                return differ(&format!(
                    "expression kinds differ: {} vs {}",
                    kind(ea),
                    kind(eb)
                ))
            }
        }
        Ok(())
    }
}

fn kind(e: &Expr) -> &'static str {
    match e {
        Expr::Var(_) => "variable",
        Expr::Constant(_) => "constant",
        Expr::Call(_) => "call",
        Expr::Tuple(_) => "tuple",
        Expr::TupleGetItem { .. } => "tuple-get-item",
        Expr::Function(_) => "function",
    }
}
