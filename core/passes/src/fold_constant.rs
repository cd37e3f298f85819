//! FoldConstant (`fold-constant`): evaluates every op call whose arguments are all constant and
//! replaces it by the constant result (TVM's `FoldConstant`).
//!
//! An argument is constant when it is a constant, a tuple of constants, a field of a constant
//! tuple, or a call folded before it (so folding is transitive). A call is evaluated with its
//! op's host kernel on one thread; a call with a tuple result becomes a tuple of constants, and
//! a tuple-get-item of a constant tuple becomes the field. Left alone:
//! - `annotation.*` calls (region boundaries are not computations);
//! - everything inside a local function literal with a `Composite` or `Primitive` attribute
//!   (its body is a pattern or a fused kernel and must keep its shape), and nested literals;
//! - global functions with a `Compiler`, `Extern` or `SkipOptimization` attribute;
//! - calls of global or local functions;
//! - calls whose op has no host kernel for those types (a remark records each).
//!
//! A kernel that fails on constant inputs is an error naming the expression.
//!
//! Needs: a verified module (types are inferred here). Holds after: no foldable call is left,
//! every live expression is typed, dead constants are dropped. Idempotent. Cost: linear in the
//! module size plus the kernels' work on the folded values.

use std::sync::Arc;

use byoc_ir::partition::{nonzero, COMPOSITE, PRIMITIVE};
use byoc_ir::{Expr, Function};
use {
    super::{eliminate_dead_code, Pass, PassContext, PassError},
    byoc_ir::infer_types,
    byoc_ir::op::Op,
    byoc_ir::partition::skipped_by_passes,
    byoc_ir::tensor::{Tensor, TensorMut},
    byoc_ir::{rewrite::Rebuild, Call, ExprId, FunctionBuilder, IrError, Module, TensorType, Type},
    byoc_kernels::KernelError,
};

/// The `fold-constant` pass.
#[derive(Clone, Copy, Debug, Default)]
pub struct FoldConstant;

const NAME: &str = "fold-constant";

impl Pass for FoldConstant {
    fn name(&self) -> &'static str {
        NAME
    }

    fn run(&self, module: &mut Module, cx: &mut PassContext) -> Result<(), PassError> {
        infer_types(module)?;
        for (name, f) in module.functions_mut() {
            if !skipped_by_passes(f) {
                *f = fold_function(name, f, cx)?;
            }
        }
        Ok(())
    }
}

/// A compile-time value: a tensor, or a tuple of values.
#[derive(Clone, Debug)]
enum Value {
    Tensor(Arc<Tensor>),
    Tuple(Vec<Value>),
}

impl Value {
    fn flatten<'v>(&'v self, out: &mut Vec<&'v Arc<Tensor>>) {
        match self {
            Value::Tensor(t) => out.push(t),
            Value::Tuple(fields) => fields.iter().for_each(|v| v.flatten(out)),
        }
    }

    /// Rebuilds the nesting of `ty` from flattened tensors (consumed in order).
    fn unflatten(ty: &Type, tensors: &mut impl Iterator<Item = Tensor>) -> Option<Value> {
        match ty {
            Type::Tensor(_) => tensors.next().map(|t| Value::Tensor(Arc::new(t))),
            Type::Tuple(fields) => fields
                .iter()
                .map(|f| Value::unflatten(f, tensors))
                .collect::<Option<_>>()
                .map(Value::Tuple),
            Type::Func(_) => None,
        }
    }

    /// Appends nodes holding this value: a constant, or a tuple of them.
    fn emit(&self, b: &mut FunctionBuilder) -> Result<ExprId, IrError> {
        match self {
            Value::Tensor(t) => Ok(b.constant(Arc::clone(t))),
            Value::Tuple(fields) => {
                let ids = fields
                    .iter()
                    .map(|v| v.emit(b))
                    .collect::<Result<Vec<_>, _>>()?;
                let id = b.tuple(&ids)?;
                let ty = Type::Tuple(ids.iter().filter_map(|&i| b.ty(i).cloned()).collect());
                b.set_ty(id, ty);
                Ok(id)
            }
        }
    }
}

fn fold_function(name: &str, f: &Function, cx: &mut PassContext) -> Result<Function, PassError> {
    let frozen = frozen_nodes(f);
    let mut values: Vec<Option<Value>> = vec![None; f.len()];
    let folded = Rebuild::new(f).run(|rb, id| {
        let value = match f.expr(id) {
            Expr::Constant(t) => {
                values[id.index()] = Some(Value::Tensor(Arc::clone(t)));
                return Ok(None);
            }
            Expr::Tuple(fields) => {
                let fields: Option<Vec<Value>> =
                    fields.iter().map(|x| values[x.index()].clone()).collect();
                values[id.index()] = fields.map(Value::Tuple);
                return Ok(None);
            }
            Expr::TupleGetItem { tuple, index } if !frozen[id.index()] => {
                match &values[tuple.index()] {
                    Some(Value::Tuple(fields)) => fields.get(*index).cloned(),
                    _ => None,
                }
            }
            Expr::Call(call) if !frozen[id.index()] => match call.op() {
                Some(op) if !op.name().starts_with("annotation.") => {
                    evaluate(name, f, id, op, call, &values, cx)?
                }
                _ => None,
            },
            _ => None,
        };
        let Some(value) = value else {
            return Ok(None);
        };
        // A field of a tuple literal is that field's (already rebuilt) node.
        let new = match (f.expr(id), &value) {
            (Expr::TupleGetItem { tuple, index }, _) => match rb.builder.get(rb.get(*tuple)?) {
                Some(Expr::Tuple(fields)) => fields[*index],
                _ => value.emit(&mut rb.builder)?,
            },
            _ => value.emit(&mut rb.builder)?,
        };
        values[id.index()] = Some(value);
        Ok::<_, PassError>(Some(new))
    })?;
    Ok(eliminate_dead_code(&folded)?)
}

/// Runs `call`'s host kernel when all its arguments have values. `None` when an argument is not
/// constant or the op has no host kernel for these types.
fn evaluate(
    function: &str,
    f: &Function,
    id: ExprId,
    op: &Op,
    call: &Call,
    values: &[Option<Value>],
    cx: &mut PassContext,
) -> Result<Option<Value>, PassError> {
    let mut inputs: Vec<&Arc<Tensor>> = Vec::new();
    for a in &call.args {
        match &values[a.index()] {
            Some(v) => v.flatten(&mut inputs),
            None => return Ok(None),
        }
    }
    let Some(ty) = f.ty(id) else {
        return Ok(None);
    };
    let input_types: Vec<TensorType> = inputs.iter().map(|t| t.ty().clone()).collect();
    let output_types: Vec<TensorType> = ty.flatten_tensors().into_iter().cloned().collect();
    let kernel = match byoc_kernels::host_kernel(op, &call.attrs, &input_types, &output_types) {
        Ok(k) => k,
        Err(e) => {
            cx.remark(NAME, format!("@{function} {id}: left unfolded: {e}"));
            return Ok(None);
        }
    };
    let mut outputs = output_types
        .into_iter()
        .map(Tensor::try_zeros)
        .collect::<Result<Vec<Tensor>, _>>()
        .map_err(|e| PassError::Eval {
            function: function.to_string(),
            at: id,
            source: KernelError::new(op.name(), e.to_string()),
        })?;
    let views: Vec<_> = inputs.iter().map(|t| t.view()).collect();
    let mut out_views: Vec<TensorMut<'_>> = outputs.iter_mut().map(Tensor::view_mut).collect();
    kernel
        .run(&views, &mut out_views, 1)
        .map_err(|source| PassError::Eval {
            function: function.to_string(),
            at: id,
            source,
        })?;
    Ok(Value::unflatten(ty, &mut outputs.into_iter()))
}

/// Marks every node inside a local function literal with a `Composite` or `Primitive`
/// attribute (and inside literals nested in one). Each node is marked at most once.
pub(super) fn frozen_nodes(f: &Function) -> Vec<bool> {
    let mut frozen = vec![false; f.len()];
    for (id, node) in f.iter().rev() {
        let Expr::Function(lit) = &node.expr else {
            continue;
        };
        if frozen[id.index()] || !(lit.attrs.contains(COMPOSITE) || nonzero(&lit.attrs, PRIMITIVE))
        {
            continue;
        }
        let mut stack = vec![lit.body];
        while let Some(x) = stack.pop() {
            if !std::mem::replace(&mut frozen[x.index()], true) {
                stack.extend(f.expr(x).operands());
            }
        }
    }
    frozen
}
