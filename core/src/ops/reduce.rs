//! Reductions: `sum`, `mean`, `max`, `min`, `prod`, and the index reductions `argmax`,
//! `argmin` (int32 result).
//!
//! `axis` is None (every axis), an int or a list (negative counts from the end); `exclude`
//! reduces every axis NOT listed; `keepdims` keeps reduced axes as size 1. Integer `sum`/`prod`
//! wrap and `mean` truncates (sum / count). `max`/`min` over an empty axis give the dtype's
//! lowest/highest value (-inf/+inf for floats). `argmax`/`argmin` over several axes return the
//! row-major position within the reduced axes; ties go to the first occurrence, or the last with
//! `select_last_index`.

use crate::ir::{DType, TensorType, Type};
use crate::op::{Arity, AttrDef, AttrKind, OpDef, OpImpl, OpPattern, TypeCtx, TypeError};

use super::support::normalize_axes;
#[cfg(feature = "executor")]
use {
    super::support::{check_io, with_type_ctx},
    crate::kernels::{self, reduce::reduce, Scalar, Wide},
    crate::op::{HostKernel, KernelError, KernelSpec},
    crate::tensor::Element,
};

/// The reduced axes (sorted) and the output shape.
fn reduce_axes(ctx: &TypeCtx<'_>, t: &TensorType) -> Result<(Vec<usize>, Vec<usize>), TypeError> {
    let mut axes = match ctx.opt_ints("axis")? {
        None => (0..t.rank()).collect(),
        Some(list) => {
            let listed = normalize_axes(ctx, &list, t.rank())?;
            if ctx.bool("exclude")? {
                (0..t.rank()).filter(|a| !listed.contains(a)).collect()
            } else {
                listed
            }
        }
    };
    axes.sort_unstable();
    let keepdims = ctx.bool("keepdims")?;
    let shape = t
        .shape
        .iter()
        .enumerate()
        .filter_map(|(i, &d)| match (axes.contains(&i), keepdims) {
            (false, _) => Some(d),
            (true, true) => Some(1),
            (true, false) => None,
        })
        .collect();
    Ok((axes, shape))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ReduceOp {
    Sum,
    Mean,
    Max,
    Min,
    Prod,
    ArgMax,
    ArgMin,
}

impl ReduceOp {
    fn is_arg(self) -> bool {
        matches!(self, ReduceOp::ArgMax | ReduceOp::ArgMin)
    }
}

struct Reduce(ReduceOp);

/// A kernel folding each reduced row with `f`.
#[cfg(feature = "executor")]
fn rows_kernel<T: Element, U: Element>(
    spec: &KernelSpec<'_>,
    axes: Vec<usize>,
    f: impl Fn(&[T]) -> U + Send + Sync + 'static,
) -> Box<dyn HostKernel> {
    let shape = spec.inputs[0].shape.clone();
    kernels::kernel(
        spec.op,
        spec.inputs,
        spec.outputs,
        move |ins, outs, threads| {
            let x = kernels::input::<T>(ins, 0)?;
            let y = kernels::output::<U>(outs, 0)?;
            reduce(x, &shape, &axes, y, threads, &f);
            Ok(())
        },
    )
}

/// Position of the extreme element of `row` under `better(candidate, best)`.
#[cfg(feature = "executor")]
fn arg_extreme<T: Scalar>(row: &[T], better: impl Fn(T, T) -> bool) -> i32 {
    let mut best = 0usize;
    for (i, &v) in row.iter().enumerate().skip(1) {
        if better(v, row[best]) {
            best = i;
        }
    }
    i32::try_from(best).unwrap_or(i32::MAX)
}

#[cfg(feature = "executor")]
fn reduce_kernel<T: Scalar>(
    spec: &KernelSpec<'_>,
    op: ReduceOp,
    axes: Vec<usize>,
    last: bool,
) -> Box<dyn HostKernel> {
    let count: usize = axes.iter().map(|&a| spec.inputs[0].shape[a]).product();
    match op {
        ReduceOp::Sum => rows_kernel(spec, axes, |r: &[T]| {
            r.iter().fold(T::ZERO, |a, &b| a.add(b))
        }),
        ReduceOp::Prod => rows_kernel(spec, axes, |r: &[T]| {
            r.iter().fold(T::ONE, |a, &b| a.mul(b))
        }),
        ReduceOp::Mean => {
            let n = T::from_wide(Wide::Int(count as i64));
            rows_kernel(spec, axes, move |r: &[T]| {
                r.iter().fold(T::ZERO, |a, &b| a.add(b)).div(n)
            })
        }
        ReduceOp::Max => rows_kernel(spec, axes, |r: &[T]| {
            r.iter().fold(T::LOWEST, |a, &b| if b > a { b } else { a })
        }),
        ReduceOp::Min => rows_kernel(spec, axes, |r: &[T]| {
            r.iter().fold(T::HIGHEST, |a, &b| if b < a { b } else { a })
        }),
        ReduceOp::ArgMax if last => {
            rows_kernel(spec, axes, |r: &[T]| arg_extreme(r, |v, b| v >= b))
        }
        ReduceOp::ArgMax => rows_kernel(spec, axes, |r: &[T]| arg_extreme(r, |v, b| v > b)),
        ReduceOp::ArgMin if last => {
            rows_kernel(spec, axes, |r: &[T]| arg_extreme(r, |v, b| v <= b))
        }
        ReduceOp::ArgMin => rows_kernel(spec, axes, |r: &[T]| arg_extreme(r, |v, b| v < b)),
    }
}

impl OpImpl for Reduce {
    fn infer_type(&self, ctx: &TypeCtx<'_>) -> Result<Type, TypeError> {
        let t = ctx.tensor(0)?;
        let (_, shape) = reduce_axes(ctx, t)?;
        let dtype = if self.0.is_arg() {
            DType::Int32
        } else {
            t.dtype
        };
        Ok(Type::tensor(shape, dtype))
    }

    #[cfg(feature = "executor")]
    fn host_kernel(&self, spec: &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> {
        check_io(spec, 1, 1)?;
        let input = &spec.inputs[0];
        let (axes, _) = with_type_ctx(spec, |ctx| reduce_axes(ctx, input))?;
        let last = self.0.is_arg() && spec.bool("select_last_index")?;
        let dtype = input.dtype;
        kernels::with_numeric!(
            dtype,
            |T| Ok(reduce_kernel::<T>(spec, self.0, axes, last)),
            Err(spec.unsupported(dtype))
        )
    }
}

pub(super) fn register(ops: &mut Vec<OpDef>) {
    use ReduceOp::*;
    let common = || {
        vec![
            AttrDef::optional("axis", AttrKind::OptInts),
            AttrDef::new("keepdims", AttrKind::Bool, false),
            AttrDef::new("exclude", AttrKind::Bool, false),
        ]
    };
    let reductions: [(&str, &'static str, ReduceOp); 7] = [
        ("sum", "sum over axes", Sum),
        ("mean", "mean over axes", Mean),
        ("max", "maximum over axes", Max),
        ("min", "minimum over axes", Min),
        ("prod", "product over axes", Prod),
        ("argmax", "index of the maximum over axes (int32)", ArgMax),
        ("argmin", "index of the minimum over axes (int32)", ArgMin),
    ];
    for (name, summary, op) in reductions {
        let mut attrs = common();
        if op.is_arg() {
            attrs.push(AttrDef::new("select_last_index", AttrKind::Bool, false));
        }
        ops.push(
            OpDef::new(
                name,
                summary,
                Arity::Exact(1),
                OpPattern::CommReduce,
                Reduce(op),
            )
            .with_attrs(attrs),
        );
    }
}
