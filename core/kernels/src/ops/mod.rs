//! The kernel halves of the built-in ops, one file per op family (as the op definitions in
//! `byoc_ir::ops`): each [`KernelBuilder`](super::KernelBuilder) checks a call site's types and
//! picks the loops of `crate` that compute it.

mod activation;
mod annotation;
mod binary;
mod compare;
mod conv;
mod dense;
mod elementwise;
mod fixed_point;
mod init;
mod nn_common;
mod norm;
mod pad;
mod pool;
mod reduce;
mod reshape;
mod resize;
mod select;
mod slice;
mod softmax;
mod sort;
mod support;
mod transform;
mod vision;

use super::registry::Builders;

/// Registers the builder of every built-in op implementation.
pub(crate) fn register(builders: &mut Builders) {
    activation::register(builders);
    annotation::register(builders);
    binary::register(builders);
    compare::register(builders);
    conv::register(builders);
    dense::register(builders);
    elementwise::register(builders);
    fixed_point::register(builders);
    init::register(builders);
    norm::register(builders);
    pad::register(builders);
    pool::register(builders);
    reduce::register(builders);
    reshape::register(builders);
    resize::register(builders);
    select::register(builders);
    slice::register(builders);
    softmax::register(builders);
    sort::register(builders);
    transform::register(builders);
    vision::register(builders);
}
