//! Outlines the reductions that run on a custom datatype in `@main` (`nn.conv2d`, `nn.dense`,
//! pooling, `nn.softmax`; HostFuse leaves them alone as opaque ops) into functions of their
//! own, marked like HostFuse's groups (`@host_fused_N`, `Compiler="llvm"`, `Primitive=1`,
//! `global_symbol`) so the host code generator compiles each into one loop nest, and a
//! function it cannot compile goes back to the interpreted loop the same way a group does.
//!
//! `@main` functions with local function literals (composites) are left alone.

use std::collections::BTreeMap;

use byoc_ir::infer_types;
use byoc_ir::partition::{COMPILER, GLOBAL_SYMBOL, PRIMITIVE};
use byoc_ir::rewrite::Rebuild;
use byoc_ir::{Attrs, Expr, ExprId, Function, FunctionBuilder, IrError, Module, Type};
use byoc_passes::host_fuse::{FUSED_PREFIX, HOST_CODEGEN_TARGET};
use byoc_passes::{Pass, PassContext, PassError};

use super::kernel::REDUCTIONS;

/// True for a reduction op call on a custom datatype.
fn outlined(f: &Function, id: ExprId) -> bool {
    let Some((op, call)) = f.expr(id).as_op_call() else {
        return false;
    };
    REDUCTIONS.contains(&op.name())
        && !call.args.is_empty()
        && matches!(f.ty(id), Some(Type::Tensor(t)) if t.dtype.is_custom())
}

/// The function computing op call `id` of `main` on parameters, one per argument.
fn single_op(main: &Function, id: ExprId, name: &str) -> Result<Function, PassError> {
    let mut b = FunctionBuilder::new();
    let mut map: BTreeMap<ExprId, ExprId> = BTreeMap::new();
    let mut params = Vec::new();
    for arg in main.expr(id).operand_iter() {
        if map.contains_key(&arg) {
            continue;
        }
        let ty = main
            .ty(arg)
            .cloned()
            .ok_or(PassError::Ir(IrError::BadId(arg)))?;
        let p = b.param(format!("p{}", params.len()), ty);
        map.insert(arg, p);
        params.push(p);
    }
    let body = b.push(main.expr(id).map_ids(|x| map[&x]))?;
    if let Some(ty) = main.ty_shared(id) {
        b.set_ty_shared(body, ty.clone());
    }
    let attrs = Attrs::new()
        .with(COMPILER, HOST_CODEGEN_TARGET)
        .with(PRIMITIVE, 1i64)
        .with(GLOBAL_SYMBOL, name);
    Ok(b.finish(params, body, attrs)?)
}

/// The `outline-custom-reductions` pass: [`outline_reductions`], the host pipeline's first step
/// (before `host-fuse`).
#[derive(Clone, Copy, Debug, Default)]
pub struct OutlineCustomReductions;

impl Pass for OutlineCustomReductions {
    fn name(&self) -> &'static str {
        "outline-custom-reductions"
    }

    fn run(&self, module: &mut Module, _cx: &mut PassContext) -> Result<(), PassError> {
        outline_reductions(module).map(|_| ())
    }
}

/// Outlines every reduction on a custom datatype in `@main` (see the module docs); returns
/// how many.
pub fn outline_reductions(module: &mut Module) -> Result<usize, PassError> {
    infer_types(module)?;
    let main = module.main()?.clone();
    let live = main.live_ids();
    if live
        .iter()
        .any(|&id| matches!(main.expr(id), Expr::Function(_)))
        || !live.iter().any(|&id| outlined(&main, id))
    {
        return Ok(0);
    }
    let mut next = 0usize;
    let mut outlined_fns = Vec::new();
    let new_main = Rebuild::new(&main).run(|rb, id| -> Result<Option<ExprId>, PassError> {
        if !outlined(&main, id) {
            return Ok(None);
        }
        let name = loop {
            let name = format!("{FUSED_PREFIX}{next}");
            next += 1;
            if module.get(&name).is_none() {
                break name;
            }
        };
        let function = single_op(&main, id, &name)?;
        let mut args = Vec::new();
        for arg in main.expr(id).operand_iter() {
            if !args.contains(&arg) {
                args.push(arg);
            }
        }
        let args = args
            .into_iter()
            .map(|a| rb.get(a))
            .collect::<Result<Vec<_>, _>>()?;
        let call = rb.builder.call_global(name.clone(), &args)?;
        outlined_fns.push((name, function));
        Ok(Some(call))
    })?;
    let count = outlined_fns.len();
    for (name, f) in outlined_fns {
        module.insert(name, f);
    }
    module.insert("main", new_main);
    infer_types(module)?;
    Ok(count)
}
