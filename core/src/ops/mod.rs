//! The built-in op library: definitions (schema, type relation, host kernel wiring) of every
//! op byoc knows by name, one file per op family. Numeric loops live in [`crate::kernels`].

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

pub use slice::strided_slice_window;
mod softmax;
mod support;
mod transform;
mod vision;

use crate::op::OpDef;

/// Every built-in op definition (the registry calls this once).
pub(crate) fn builtin_ops() -> Vec<OpDef> {
    let mut ops = Vec::new();
    annotation::register(&mut ops);
    elementwise::register(&mut ops);
    binary::register(&mut ops);
    fixed_point::register(&mut ops);
    compare::register(&mut ops);
    select::register(&mut ops);
    reshape::register(&mut ops);
    transform::register(&mut ops);
    slice::register(&mut ops);
    reduce::register(&mut ops);
    init::register(&mut ops);
    conv::register(&mut ops);
    dense::register(&mut ops);
    pool::register(&mut ops);
    norm::register(&mut ops);
    softmax::register(&mut ops);
    activation::register(&mut ops);
    pad::register(&mut ops);
    resize::register(&mut ops);
    vision::register(&mut ops);
    ops
}
