//! The built-in op library: definitions (schema, type relation, host kernel wiring) of every
//! op byoc knows by name, one file per op family. Numeric loops live in [`crate::kernels`].

mod annotation;
mod binary;
mod compare;
mod elementwise;
mod init;
mod reduce;
mod reshape;
mod select;
mod slice;
mod support;
mod transform;

use crate::op::OpDef;

/// Every built-in op definition (the registry calls this once).
pub(crate) fn builtin_ops() -> Vec<OpDef> {
    let mut ops = Vec::new();
    annotation::register(&mut ops);
    elementwise::register(&mut ops);
    binary::register(&mut ops);
    compare::register(&mut ops);
    select::register(&mut ops);
    reshape::register(&mut ops);
    transform::register(&mut ops);
    slice::register(&mut ops);
    reduce::register(&mut ops);
    init::register(&mut ops);
    ops
}
