//! Host kernels of the reduce ops: the kernel half of [`byoc_ir::ops::reduce`].

use crate::registry::Builders;
use crate::KernelBuilder;
pub(crate) use byoc_ir::ops::reduce::*;

use {
    super::support::check_io,
    crate::{reduce::reduce, Scalar, Wide},
    crate::{HostKernel, KernelError, KernelSpec},
    byoc_ir::tensor::Element,
};

/// A kernel folding each reduced row with `f`.
fn rows_kernel<T: Element, U: Element>(
    spec: &KernelSpec<'_>,
    axes: Vec<usize>,
    f: impl Fn(&[T]) -> U + Send + Sync + 'static,
) -> Box<dyn HostKernel> {
    let shape = spec.inputs[0].shape.clone();
    crate::kernel(
        spec.op,
        spec.inputs,
        spec.outputs,
        move |ins, outs, threads| {
            let x = crate::input::<T>(ins, 0)?;
            let y = crate::output::<U>(outs, 0)?;
            reduce(x, &shape, &axes, y, threads, &f);
            Ok(())
        },
    )
}

/// Position of the extreme element of `row` under `better(candidate, best)`.
fn arg_extreme<T: Scalar>(row: &[T], better: impl Fn(T, T) -> bool) -> i32 {
    let mut best = 0usize;
    for (i, &v) in row.iter().enumerate().skip(1) {
        if better(v, row[best]) {
            best = i;
        }
    }
    i32::try_from(best).unwrap_or(i32::MAX)
}

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

impl KernelBuilder for Reduce {
    fn host_kernel(&self, spec: &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> {
        check_io(spec, 1, 1)?;
        let input = &spec.inputs[0];
        let (axes, _) = spec.with_type_ctx(|ctx| reduce_axes(ctx, input))?;
        let last = self.0.is_arg() && spec.bool("select_last_index")?;
        let dtype = input.dtype;
        crate::with_numeric!(
            dtype,
            |T| Ok(reduce_kernel::<T>(spec, self.0, axes, last)),
            Err(spec.unsupported(dtype))
        )
    }
}

/// Registers the builders of this family.
pub(crate) fn register(builders: &mut Builders) {
    builders.add::<Reduce>();
}
