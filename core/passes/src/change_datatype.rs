//! ChangeDatatype (`change-datatype`): every value of one dtype becomes another (TVM's
//! `relay.frontend.ChangeDatatype`), typically `float32` to a custom datatype such as
//! `custom[posites2]16`.
//!
//! In every function that is not external: parameter and local-function variables whose type
//! holds the source dtype are retyped, constants of the source dtype are converted element by
//! element through the datatype library's casts, and the `dtype` / `out_dtype` attributes
//! that name the source dtype name the destination. Types are then inferred again.
//!
//! With [`ChangeDatatype::keeping_interface`] `@main` keeps its parameter and result types:
//! each retyped parameter is cast to the new dtype on entry, and each result tensor of the
//! source dtype is cast back on exit, so a model converted to a custom datatype still takes and
//! gives `float32`.
//!
//! Needs: a module whose types infer, and the datatype's library registered (a plugin that
//! brings it loaded). Holds after: no live value of the source dtype remains, except `@main`'s
//! interface when it is kept. Cost: linear in the module plus the constants' elements.

use std::sync::Arc;

use byoc_ir::partition::skipped_by_passes;
use byoc_ir::{rewrite::Rebuild, Attrs, DType, Expr, ExprId, Function, Module, TensorType, Type};
use byoc_kernels::datatypes::convert_tensor;

use super::{Pass, PassContext, PassError};
use byoc_ir::infer_types;

/// The attributes that name a dtype.
const DTYPE_ATTRS: [&str; 2] = ["dtype", "out_dtype"];

/// The `change-datatype` pass.
#[derive(Clone, Debug)]
pub struct ChangeDatatype {
    src: DType,
    dst: DType,
    keep_interface: bool,
}

impl ChangeDatatype {
    /// Changes every `src` value to `dst`, `@main`'s parameters and result included.
    pub fn new(src: DType, dst: DType) -> Self {
        ChangeDatatype {
            src,
            dst,
            keep_interface: false,
        }
    }

    /// Changes every `src` value to `dst` but keeps `@main`'s interface in `src`, with casts at
    /// the boundary.
    pub fn keeping_interface(src: DType, dst: DType) -> Self {
        ChangeDatatype {
            keep_interface: true,
            ..ChangeDatatype::new(src, dst)
        }
    }

    fn retype(&self, ty: &Type) -> Type {
        match ty {
            Type::Tensor(t) if t.dtype == self.src => {
                Type::Tensor(TensorType::new(t.shape.clone(), self.dst))
            }
            Type::Tuple(fields) => Type::Tuple(fields.iter().map(|f| self.retype(f)).collect()),
            other => other.clone(),
        }
    }

    fn retype_attrs(&self, attrs: &Attrs) -> Attrs {
        let mut attrs = attrs.clone();
        let (src, dst) = (self.src.to_string(), self.dst.to_string());
        for name in DTYPE_ATTRS {
            if attrs.get_str(name) == Some(src.as_str()) {
                attrs.set(name, dst.clone());
            }
        }
        attrs
    }

    /// `cast(x, dtype=to)`.
    fn cast(rb: &mut Rebuild<'_>, x: ExprId, to: DType) -> Result<ExprId, PassError> {
        Ok(rb
            .builder
            .call("cast", &[x], Attrs::new().with("dtype", to.to_string()))?)
    }

    /// `x` of type `ty` with each tensor leaf of dtype `from` cast to `to`.
    fn cast_leaves(
        rb: &mut Rebuild<'_>,
        x: ExprId,
        ty: &Type,
        from: DType,
        to: DType,
    ) -> Result<ExprId, PassError> {
        match ty {
            Type::Tensor(t) if t.dtype == from => Self::cast(rb, x, to),
            Type::Tuple(fields) => {
                let mut leaves = Vec::with_capacity(fields.len());
                for (i, f) in fields.iter().enumerate() {
                    let item = rb.builder.tuple_get_item(x, i)?;
                    leaves.push(Self::cast_leaves(rb, item, f, from, to)?);
                }
                Ok(rb.builder.tuple(&leaves)?)
            }
            _ => Ok(x),
        }
    }

    fn rewrite(&self, name: &str, f: &Function, interface: bool) -> Result<Function, PassError> {
        let failed = |message: String| PassError::Rewrite {
            function: name.to_string(),
            message,
        };
        let mut rb = Rebuild::new(f);
        let mut params = Vec::with_capacity(f.params.len());
        for old in f.live_ids() {
            let new = match f.expr(old) {
                Expr::Var(v) if interface && f.params.contains(&old) => {
                    let p = rb.builder.param(v.name.clone(), v.ty.clone());
                    params.push(p);
                    Some(Self::cast_leaves(&mut rb, p, &v.ty, self.src, self.dst)?)
                }
                Expr::Var(v) => {
                    let ty = self.retype(&v.ty);
                    (ty != v.ty).then(|| rb.builder.param(v.name.clone(), ty))
                }
                Expr::Constant(t) if t.dtype() == self.src => {
                    let converted = convert_tensor(t, self.dst)
                        .map_err(|e| failed(format!("constant {old}: {e}")))?;
                    Some(rb.builder.constant(Arc::new(converted)))
                }
                Expr::Call(call) if DTYPE_ATTRS.iter().any(|a| call.attrs.contains(a)) => {
                    match rb.mapped_expr(old)? {
                        Expr::Call(mut call) => {
                            call.attrs = self.retype_attrs(&call.attrs);
                            Some(rb.builder.push(Expr::Call(call))?)
                        }
                        _ => None,
                    }
                }
                _ => None,
            };
            match new {
                Some(new) => rb.set(old, new),
                None => {
                    rb.copy(old)?;
                }
            }
        }
        if !interface {
            return Ok(rb.finish()?);
        }
        let result_ty = f
            .ty(f.body)
            .cloned()
            .ok_or_else(|| failed("the result is not typed".into()))?;
        let body = rb.get(f.body)?;
        let body = Self::cast_leaves(&mut rb, body, &self.retype(&result_ty), self.dst, self.src)?;
        let attrs = f.attrs.clone();
        Ok(std::mem::take(&mut rb.builder).finish(params, body, attrs)?)
    }
}

impl Pass for ChangeDatatype {
    fn name(&self) -> &'static str {
        "change-datatype"
    }

    fn run(&self, module: &mut Module, _cx: &mut PassContext) -> Result<(), PassError> {
        infer_types(module)?;
        let mut rewritten = Vec::new();
        for (name, f) in module.functions() {
            if skipped_by_passes(f) {
                continue;
            }
            let interface = self.keep_interface && name == "main";
            rewritten.push((name.to_string(), self.rewrite(name, f, interface)?));
        }
        for (name, f) in rewritten {
            module.insert(name, f);
        }
        for (_, f) in module.functions_mut() {
            f.clear_types();
        }
        infer_types(module)?;
        Ok(())
    }
}
