//! Host kernels of the sort ops: the kernel half of [`byoc_ir::ops::sort`].

use std::cmp::Ordering;

use crate::registry::Builders;
use crate::KernelBuilder;
pub(crate) use byoc_ir::ops::sort::*;

use {
    super::support::check_io,
    crate::{HostKernel, KernelError, KernelSpec},
    byoc_ir::tensor::Element,
    byoc_ir::DType,
};

/// The order of `a` and `b` with NaN above every number (and equal to NaN).
#[allow(clippy::eq_op, reason = "NaN test that also compiles for integers")]
fn nan_last<T: PartialOrd>(a: &T, b: &T) -> Ordering {
    a.partial_cmp(b).unwrap_or_else(|| match (a != a, b != b) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        _ => Ordering::Less,
    })
}

/// The kernel of one `topk` call site over `T` values and `I` indices.
fn topk_kernel<T: Element + PartialOrd, I: Element + TryFrom<usize>>(
    spec: &KernelSpec<'_>,
    s: TopKSetup,
) -> Box<dyn HostKernel> {
    let shape = spec.inputs[0].shape.clone();
    let outer: usize = shape[..s.axis].iter().product();
    let len = shape[s.axis];
    let inner: usize = shape[s.axis + 1..].iter().product();
    crate::kernel(spec.op, spec.inputs, spec.outputs, move |ins, outs, _| {
        let x = crate::input::<T>(ins, 0)?;
        let (first, rest) = outs.split_at_mut(1);
        let (mut values, mut indices) = match s.result {
            TopKResult::Both => (
                Some(crate::output::<T>(first, 0)?),
                Some(crate::output::<I>(rest, 0)?),
            ),
            TopKResult::Values => (Some(crate::output::<T>(first, 0)?), None),
            TopKResult::Indices => (None, Some(crate::output::<I>(first, 0)?)),
        };
        let mut order: Vec<usize> = Vec::with_capacity(len);
        for o in 0..outer {
            for i in 0..inner {
                let at = |j: usize| &x[(o * len + j) * inner + i];
                order.clear();
                order.extend(0..len);
                // Stable: equal values keep the lower index first.
                if s.ascending {
                    order.sort_by(|&a, &b| nan_last(at(a), at(b)));
                } else {
                    order.sort_by(|&a, &b| nan_last(at(b), at(a)));
                }
                for (r, &j) in order[..s.k].iter().enumerate() {
                    let out = (o * s.k + r) * inner + i;
                    if let Some(v) = values.as_deref_mut() {
                        v[out] = *at(j);
                    }
                    if let Some(ix) = indices.as_deref_mut() {
                        ix[out] = I::try_from(j).map_err(|_| {
                            KernelError::new("topk", "an index does not fit the index type")
                        })?;
                    }
                }
            }
        }
        Ok(())
    })
}

impl KernelBuilder for TopK {
    fn host_kernel(&self, spec: &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> {
        let input = spec
            .inputs
            .first()
            .ok_or_else(|| KernelError::new(spec.op, "missing input"))?;
        let s = spec.with_type_ctx(|ctx| topk_setup(ctx, input))?;
        let outputs = if s.result == TopKResult::Both { 2 } else { 1 };
        check_io(spec, 1, outputs)?;
        let dtype = input.dtype;
        match s.index_dtype {
            DType::Int64 => crate::with_numeric!(
                dtype,
                |T| Ok(topk_kernel::<T, i64>(spec, s)),
                Err(spec.unsupported(dtype))
            ),
            _ => crate::with_numeric!(
                dtype,
                |T| Ok(topk_kernel::<T, i32>(spec, s)),
                Err(spec.unsupported(dtype))
            ),
        }
    }
}

/// Registers the builders of this family.
pub(crate) fn register(builders: &mut Builders) {
    builders.add::<TopK>();
}
