//! The built-in op library: definitions (schema, type relation, host kernel wiring) of every
//! op byoc knows by name, one file per op family. Numeric loops live in [`byoc_kernels`].

pub mod activation;
pub mod annotation;
pub mod binary;
pub mod compare;
pub mod conv;
pub mod dense;
pub mod elementwise;
pub mod fixed_point;
pub mod init;
pub mod nn_common;
pub mod norm;
pub mod pad;
pub mod pool;
pub mod reduce;
pub mod reshape;
pub mod resize;
pub mod select;
pub mod slice;

pub use slice::strided_slice_window;
pub mod softmax;
pub mod sort;
pub mod support;
pub mod transform;
pub mod vision;

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
    sort::register(&mut ops);
    activation::register(&mut ops);
    pad::register(&mut ops);
    resize::register(&mut ops);
    vision::register(&mut ops);
    ops
}
