//! Well-formedness checks of a function's arena.
//!
//! What holds after [`verify_function`] succeeds:
//! - every operand precedes its user (so the arena is acyclic and in topological order);
//! - every variable is bound exactly once, as a parameter of the global function or of one
//!   local function literal;
//! - the body of a local function refers only to its own parameters, constants, and nodes
//!   built from those (local functions are closed);
//! - the global body does not use a local function's parameters.
//!
//! Cost: linear in the arena size.

use super::{Expr, ExprId, Function, IrError};

/// Checks the invariants listed in the module docs.
pub fn verify_function(f: &Function) -> Result<(), IrError> {
    let n = f.len();
    for id in [f.body].iter().chain(&f.params) {
        if id.index() >= n {
            return Err(IrError::BadId(*id));
        }
    }
    // owner[i]: the binder (None for the global function) of each variable.
    let mut bound: Vec<Option<Option<ExprId>>> = vec![None; n];
    let bind = |bound: &mut Vec<Option<Option<ExprId>>>, var: ExprId, owner: Option<ExprId>| {
        let Some(v) = f.var(var) else {
            return Err(IrError::ParamNotVar {
                at: owner.unwrap_or(var),
                param: var,
            });
        };
        if bound[var.index()].is_some() {
            return Err(IrError::BadVar {
                name: v.name.clone(),
                id: var,
                problem: "is a parameter of more than one function".to_string(),
            });
        }
        bound[var.index()] = Some(owner);
        Ok(())
    };
    for &p in &f.params {
        bind(&mut bound, p, None)?;
    }
    for (id, node) in f.iter() {
        let mut forward = None;
        node.expr.for_each_operand(|op| {
            if op >= id && forward.is_none() {
                forward = Some(op);
            }
        });
        if let Some(operand) = forward {
            return Err(IrError::ForwardReference { at: id, operand });
        }
        if let Expr::Function(func) = &node.expr {
            for &p in &func.params {
                bind(&mut bound, p, Some(id))?;
            }
        }
    }
    for (id, node) in f.iter() {
        if let Expr::Function(func) = &node.expr {
            check_closed(f, id, func.body)?;
        }
    }
    for (id, node) in f.iter() {
        if let Expr::Var(v) = &node.expr {
            if bound[id.index()].is_none() {
                return Err(IrError::BadVar {
                    name: v.name.clone(),
                    id,
                    problem: "is not a parameter of any function".to_string(),
                });
            }
        }
    }
    // The global body may not reach a local function's parameter except through that literal.
    let mut stack = vec![f.body];
    let mut seen = vec![false; n];
    while let Some(id) = stack.pop() {
        if std::mem::replace(&mut seen[id.index()], true) {
            continue;
        }
        match f.expr(id) {
            Expr::Function(_) => {}
            Expr::Var(v) => {
                if let Some(Some(owner)) = bound[id.index()] {
                    return Err(IrError::BadVar {
                        name: v.name.clone(),
                        id,
                        problem: format!(
                            "belongs to local function {owner} but is used outside it"
                        ),
                    });
                }
            }
            e => e.for_each_operand(|o| stack.push(o)),
        }
    }
    Ok(())
}

/// Checks that the nodes reachable from `body` (not entering nested literals) are constants,
/// the literal's own parameters, or built from those.
fn check_closed(f: &Function, func: ExprId, body: ExprId) -> Result<(), IrError> {
    let Some(lit) = f.expr(func).as_function() else {
        return Ok(());
    };
    let mut stack = vec![body];
    let mut seen = std::collections::HashSet::new();
    while let Some(id) = stack.pop() {
        if !seen.insert(id) {
            continue;
        }
        match f.expr(id) {
            Expr::Var(_) => {
                if !lit.params.contains(&id) {
                    return Err(IrError::Capture { func, captured: id });
                }
            }
            Expr::Function(_) | Expr::Constant(_) => {}
            e => e.for_each_operand(|o| stack.push(o)),
        }
    }
    Ok(())
}
