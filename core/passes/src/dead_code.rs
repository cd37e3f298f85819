//! DeadCodeElimination (`dead-code-elimination`): drops what nothing uses.
//!
//! - In every function, expressions the body does not reach are dropped, unused local function
//!   literals among them, and the arena is compacted (parameters stay, used or not).
//! - Global functions other than `@main` that `@main` does not reach through calls are removed
//!   (TVM's `RemoveUnusedFunctions` with `main` as the entry).
//!
//! Needs: a verified module with `@main`. Holds after: every arena slot is live, every global
//! function is reachable from `@main`, every live expression is typed. Idempotent. Cost: linear in the module
//! size.

use std::collections::BTreeSet;

use byoc_ir::{rewrite::Rebuild, Callee, Expr, Function, IrError, Module};

use super::{Pass, PassContext, PassError};
use byoc_ir::infer_missing_types;

/// The `dead-code-elimination` pass.
#[derive(Clone, Copy, Debug, Default)]
pub struct DeadCodeElimination;

impl Pass for DeadCodeElimination {
    fn name(&self) -> &'static str {
        "dead-code-elimination"
    }

    fn run(&self, module: &mut Module, _cx: &mut PassContext) -> Result<(), PassError> {
        let reachable = reachable_from_main(module)?;
        for name in module.names() {
            if !reachable.contains(&name) {
                module.remove(&name);
            }
        }
        for (_, f) in module.functions_mut() {
            *f = eliminate_dead_code(f)?;
        }
        infer_missing_types(module)?;
        Ok(())
    }
}

/// A copy of `f` holding only its live expressions, in the same topological order, with their
/// types and spans.
pub fn eliminate_dead_code(f: &Function) -> Result<Function, IrError> {
    Rebuild::new(f).run(|_, _| Ok::<_, IrError>(None))
}

/// Names of `@main` and of every global function its live code calls, transitively.
fn reachable_from_main(module: &Module) -> Result<BTreeSet<String>, IrError> {
    module.main()?;
    let mut reachable = BTreeSet::new();
    let mut stack = vec!["main".to_string()];
    while let Some(name) = stack.pop() {
        let Some(f) = module.get(&name) else {
            // A call of a missing function: `Module::verify` reports it; nothing to keep.
            continue;
        };
        if !reachable.insert(name) {
            continue;
        }
        for id in f.live_ids() {
            if let Expr::Call(call) = f.expr(id) {
                if let Callee::Global(g) = &call.callee {
                    if !reachable.contains(g) {
                        stack.push(g.clone());
                    }
                }
            }
        }
    }
    Ok(reachable)
}
