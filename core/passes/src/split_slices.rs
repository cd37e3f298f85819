//! Before HostFuse: the fields of a `split` read as slices. Each field of a `split` over
//! `float32` data whose tuple is used only through `TupleGetItem`s becomes a
//! `strided_slice` of the data along the split's axis (from the sum of the extents of the
//! fields before it, one step at a time), an injective op the fused loops read through with
//! an affine index map, where a tuple field could not be. Both copy the same elements, so the
//! results are identical; the `split` itself is then dead and removed.

use std::collections::HashMap;

use byoc_ir::rewrite::Rebuild;
use byoc_ir::{Attrs, DType, Expr, ExprId, Function, IrError, Type};

use super::eliminate_dead_code;

/// `f` with the fields of its `split`s as slices (see the module docs).
pub(crate) fn split_fields_as_slices(f: &Function) -> Result<Function, IrError> {
    let users = f.users();
    let mut windows: HashMap<ExprId, (usize, Vec<usize>)> = HashMap::new();
    let rewritten = Rebuild::new(f).run(|rb, id| -> Result<Option<ExprId>, IrError> {
        let Expr::TupleGetItem { tuple, index } = f.expr(id) else {
            return Ok(None);
        };
        if !windows.contains_key(tuple) {
            let Some(window) = split_window(f, *tuple, &users[tuple.index()]) else {
                return Ok(None);
            };
            windows.insert(*tuple, window);
        }
        let (axis, extents) = &windows[tuple];
        let Some(&extent) = extents.get(*index) else {
            return Ok(None);
        };
        let begin: usize = extents[..*index].iter().sum();
        let Some((_, call)) = f.expr(*tuple).as_op_call() else {
            return Ok(None);
        };
        let data = rb.get(call.args[0])?;
        let attrs = Attrs::new()
            .with("begin", vec![begin as i64])
            .with("end", vec![(begin + extent) as i64])
            .with("strides", vec![1i64])
            .with("axes", vec![*axis as i64]);
        rb.builder.call("strided_slice", &[data], attrs).map(Some)
    })?;
    eliminate_dead_code(&rewritten)
}

/// The axis of `split` call `id` and its fields' extents along it, when it splits `float32`
/// data and `users` (its users) all read one field.
fn split_window(f: &Function, id: ExprId, users: &[ExprId]) -> Option<(usize, Vec<usize>)> {
    let (op, call) = f.expr(id).as_op_call()?;
    if op.name() != "split" || call.args.len() != 1 {
        return None;
    }
    let data = f.ty(call.args[0])?.as_tensor()?;
    if data.dtype != DType::Float32
        || !users
            .iter()
            .all(|&u| matches!(f.expr(u), Expr::TupleGetItem { .. }))
    {
        return None;
    }
    let rank = data.rank() as i64;
    let axis = call.attrs.get_int("axis")?;
    let axis = usize::try_from(if axis < 0 { axis + rank } else { axis }).ok()?;
    let Some(Type::Tuple(fields)) = f.ty(id) else {
        return None;
    };
    let extents = fields
        .iter()
        .map(|t| t.as_tensor().and_then(|t| t.shape.get(axis).copied()))
        .collect::<Option<Vec<usize>>>()?;
    Some((axis, extents))
}
