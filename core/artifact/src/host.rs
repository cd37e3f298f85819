//! The host program section: the partitioned module with constants lifted out as parameters
//! (placeholders shared with the function record, [`byoc_sdk::placeholders`]) and external
//! function bodies replaced by stubs that return zeros of their result type.

use std::sync::Arc;

use byoc_ir::partition::skipped_by_passes;
use byoc_ir::tensor::Tensor;
use byoc_ir::{Attrs, Function, FunctionBuilder, Module, Type};
use byoc_sdk::placeholders::{lift_constants, restore_constants};

/// A zero-filled value of type `ty` built in `b` (tensors and tuples of them): `zeros` calls,
/// so the stub costs no memory however large the partition's outputs are.
fn zeros(b: &mut FunctionBuilder, ty: &Type) -> Result<byoc_ir::ExprId, String> {
    match ty {
        Type::Tensor(t) => {
            let shape = byoc_ir::dims::dims_i64(&t.shape)
                .ok_or_else(|| format!("{t} has a dimension over 2^63-1"))?;
            let attrs = Attrs::new()
                .with("shape", shape)
                .with("dtype", t.dtype.to_string());
            b.call("zeros", &[], attrs).map_err(|e| e.to_string())
        }
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
        let g = if skipped_by_passes(f) {
            stub(f).map_err(|e| format!("@{name}: {e}"))?
        } else {
            lift_constants(f, &mut params).map_err(|e| format!("@{name}: {e}"))?
        };
        out.insert(name, g);
    }
    Ok((out, params))
}

/// Puts the parameters back in place of the placeholders of the host functions.
pub(super) fn restore(module: &Module, params: &[Arc<Tensor>]) -> Result<Module, String> {
    let mut out = Module::new();
    for (name, f) in module.functions() {
        let g = if skipped_by_passes(f) {
            f.clone()
        } else {
            restore_constants(f, params).map_err(|e| format!("@{name}: {e}"))?
        };
        out.insert(name, g);
    }
    Ok(out)
}
