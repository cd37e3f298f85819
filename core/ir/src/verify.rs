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
//!
//! Errors name expressions by arena slot; [`crate::Module::verify`] reports them per global
//! function with the ids of the printed text ([`crate::VerifyError`]).

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
    // One sweep: operands precede users, literals bind their parameters and are closed.
    // visited_by[i]: the last function literal (by arena slot) whose body walk reached `i`.
    let mut visited_by = vec![u32::MAX; n];
    let mut vars = Vec::new();
    for (id, node) in f.iter() {
        for op in node.expr.operand_iter() {
            if op >= id {
                return Err(IrError::ForwardReference {
                    at: id,
                    operand: op,
                });
            }
        }
        match &node.expr {
            Expr::Function(func) => {
                for &p in &func.params {
                    bind(&mut bound, p, Some(id))?;
                }
                check_closed(f, id, func.body, &mut visited_by)?;
            }
            Expr::Var(_) => vars.push(id),
            _ => {}
        }
    }
    // A literal binds parameters that precede it, so binding is complete only now.
    for id in vars {
        if bound[id.index()].is_none() {
            let name = f.var(id).map(|v| v.name.clone()).unwrap_or_default();
            return Err(IrError::BadVar {
                name,
                id,
                problem: "is not a parameter of any function".to_string(),
            });
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
                if let Some(Some(func)) = bound[id.index()] {
                    return Err(IrError::ParamEscapes {
                        name: v.name.clone(),
                        id,
                        func,
                    });
                }
            }
            e => stack.extend(e.operand_iter()),
        }
    }
    Ok(())
}

/// Checks that the nodes reachable from `body` (not entering nested literals) are constants,
/// the literal's own parameters, or built from those.
fn check_closed(
    f: &Function,
    func: ExprId,
    body: ExprId,
    visited_by: &mut [u32],
) -> Result<(), IrError> {
    let Some(lit) = f.expr(func).as_function() else {
        return Ok(());
    };
    let stamp = func.0;
    let mut stack = vec![body];
    while let Some(id) = stack.pop() {
        if std::mem::replace(&mut visited_by[id.index()], stamp) == stamp {
            continue;
        }
        match f.expr(id) {
            Expr::Var(_) => {
                if !lit.params.contains(&id) {
                    return Err(IrError::Capture { func, captured: id });
                }
            }
            Expr::Function(_) | Expr::Constant(_) => {}
            e => stack.extend(e.operand_iter()),
        }
    }
    Ok(())
}
