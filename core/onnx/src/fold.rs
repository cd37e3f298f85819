//! Constant folding at import: an op call whose arguments are all constants (or tuples of
//! constants) is evaluated with the op's host kernel and replaced by its result.
//!
//! This is what makes ONNX's shape arithmetic disappear: `Shape` already yields a constant
//! (shapes are static after `--input-shape`), so the `Gather`/`Concat`/`Unsqueeze` chains that
//! compute a `Reshape` target, and `ConstantOfShape` weights, become constants as they are
//! built. An op without a host kernel for the dtypes at hand is left as a call; a kernel that
//! fails on the constant data is an error (the model would fail the same way at run time).

use std::sync::Arc;

use byoc_ir::tensor::{Tensor, TensorMut, TensorRef};
use byoc_ir::{Expr, ExprId, FunctionBuilder, TensorType, Type};
use byoc_kernels::KernelError;

/// The constant tensors of `id`'s leaves, when `id` is a constant or a tuple of constants.
fn constant_leaves(b: &FunctionBuilder, id: ExprId) -> Option<Vec<Arc<Tensor>>> {
    match b.get(id)? {
        Expr::Constant(t) => Some(vec![t.clone()]),
        Expr::Tuple(fields) => fields
            .iter()
            .map(|&f| match b.get(f)? {
                Expr::Constant(t) => Some(t.clone()),
                _ => None,
            })
            .collect(),
        _ => None,
    }
}

/// Evaluates the op call `id` (its type already set) if all its arguments are constant and
/// its op has a host kernel for them. Returns the id of the folded value, or `None` when the
/// call stays.
pub(crate) fn fold_call(
    b: &mut FunctionBuilder,
    id: ExprId,
) -> Result<Option<ExprId>, KernelError> {
    let Some((op, call)) = b.get(id).and_then(Expr::as_op_call) else {
        return Ok(None);
    };
    let (op, attrs) = (op.clone(), call.attrs.clone());
    let mut inputs = Vec::new();
    for &arg in &call.args {
        match constant_leaves(b, arg) {
            Some(leaves) => inputs.extend(leaves),
            None => return Ok(None),
        }
    }
    let Some(ty) = b.ty(id).cloned() else {
        return Ok(None);
    };
    if let Type::Tuple(fields) = &ty {
        if fields.iter().any(|f| f.as_tensor().is_none()) {
            return Ok(None);
        }
    }
    let out_types: Vec<TensorType> = ty.flatten_tensors().into_iter().cloned().collect();
    let in_types: Vec<TensorType> = inputs.iter().map(|t| t.ty().clone()).collect();
    let Ok(kernel) = byoc_kernels::host_kernel(&op, &attrs, &in_types, &out_types) else {
        return Ok(None);
    };
    let mut outputs = out_types
        .iter()
        .cloned()
        .map(Tensor::try_zeros)
        .collect::<Result<Vec<Tensor>, _>>()
        .map_err(|e| KernelError::new(op.name(), e.to_string()))?;
    {
        let refs: Vec<TensorRef<'_>> = inputs.iter().map(|t| t.view()).collect();
        let mut muts: Vec<TensorMut<'_>> = outputs.iter_mut().map(Tensor::view_mut).collect();
        kernel.run(&refs, &mut muts, 1)?;
    }
    let folded = match ty {
        Type::Tuple(_) => {
            let fields: Vec<ExprId> = outputs.into_iter().map(|t| b.constant(t)).collect();
            let tuple = b
                .tuple(&fields)
                .map_err(|e| KernelError::new(op.name(), e.to_string()))?;
            b.set_ty(tuple, ty);
            tuple
        }
        _ => match outputs.pop() {
            Some(t) => b.constant(t),
            None => return Ok(None),
        },
    };
    Ok(Some(folded))
}
