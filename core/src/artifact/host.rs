//! The host program section: the partitioned module with constants lifted out as parameters
//! and external function bodies replaced by zero-filled stubs of their result type.

use std::sync::Arc;

use crate::ir::{Expr, Function, FunctionBuilder, IrError, Module, Type};
use crate::passes::is_external;
use crate::tensor::Tensor;

/// Rebuilds `f` node for node (ids unchanged), replacing each constant with `map(constant)`.
fn map_constants<E>(
    f: &Function,
    mut map: impl FnMut(&Arc<Tensor>) -> Result<Arc<Tensor>, E>,
) -> Result<Result<Function, IrError>, E> {
    let mut b = FunctionBuilder::new();
    for (_, node) in f.iter() {
        let pushed = match &node.expr {
            Expr::Constant(t) => Ok(b.constant(map(t)?)),
            other => b.push(other.clone()),
        };
        if let Err(e) = pushed {
            return Ok(Err(e));
        }
    }
    Ok(b.finish(f.params.clone(), f.body, f.attrs.clone()))
}

/// A zero-filled value of type `ty` built in `b` (tensors and tuples of them).
fn zeros(b: &mut FunctionBuilder, ty: &Type) -> Result<crate::ir::ExprId, String> {
    match ty {
        Type::Tensor(t) => Ok(b.constant(Tensor::zeros(t.clone()))),
        Type::Tuple(fields) => {
            let ids = fields
                .iter()
                .map(|f| zeros(b, f))
                .collect::<Result<Vec<_>, _>>()?;
            b.tuple(&ids).map_err(|e| e.to_string())
        }
        Type::Func(_) => Err(format!("an external function returns a function ({ty})")),
    }
}

/// The same signature and attributes, with a zero-filled body.
fn stub(f: &Function) -> Result<Function, String> {
    let ret = f
        .ty(f.body)
        .cloned()
        .ok_or_else(|| "an external function is not typed".to_string())?;
    let mut b = FunctionBuilder::new();
    let params = f
        .params
        .iter()
        .map(|&p| {
            f.var(p)
                .map(|v| b.param(v.name.clone(), v.ty.clone()))
                .ok_or_else(|| format!("parameter {p} is not a variable"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let body = zeros(&mut b, &ret)?;
    b.finish(params, body, f.attrs.clone())
        .map_err(|e| e.to_string())
}

/// The host module to print, and the parameters its placeholders index.
pub(super) fn lift(module: &Module) -> Result<(Module, Vec<Arc<Tensor>>), String> {
    let mut params: Vec<Arc<Tensor>> = Vec::new();
    let mut out = Module::new();
    for (name, f) in module.functions() {
        let g = if is_external(f) {
            stub(f).map_err(|e| format!("@{name}: {e}"))?
        } else {
            let placeholder = |t: &Arc<Tensor>| -> Result<Arc<Tensor>, String> {
                params.push(t.clone());
                let index = i64::try_from(params.len() - 1)
                    .map_err(|_| "too many constants".to_string())?;
                Ok(Arc::new(Tensor::scalar(index)))
            };
            map_constants(f, placeholder)?.map_err(|e| format!("@{name}: {e}"))?
        };
        out.insert(name, g);
    }
    Ok((out, params))
}

/// Puts the parameters back in place of the placeholders of the host functions.
pub(super) fn restore(module: &Module, params: &[Arc<Tensor>]) -> Result<Module, String> {
    let mut out = Module::new();
    for (name, f) in module.functions() {
        let g = if is_external(f) {
            f.clone()
        } else {
            let lookup = |t: &Arc<Tensor>| -> Result<Arc<Tensor>, String> {
                let index = t
                    .as_slice::<i64>()
                    .ok()
                    .filter(|_| t.shape().is_empty())
                    .and_then(|v| v.first().copied())
                    .ok_or_else(|| format!("@{name}: a constant is not a parameter placeholder"))?;
                usize::try_from(index)
                    .ok()
                    .and_then(|i| params.get(i))
                    .cloned()
                    .ok_or_else(|| format!("@{name}: placeholder {index} names no parameter"))
            };
            map_constants(f, lookup)?.map_err(|e| format!("@{name}: {e}"))?
        };
        out.insert(name, g);
    }
    Ok(out)
}
