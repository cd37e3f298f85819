//! The built-in op library: definitions (schema, type relation, host kernel wiring) of every
//! op byoc knows by name, one file per op family. Numeric loops live in [`crate::kernels`].

mod annotation;
mod elementwise;

use crate::op::OpDef;

/// Every built-in op definition (the registry calls this once).
pub(crate) fn builtin_ops() -> Vec<OpDef> {
    let mut ops = Vec::new();
    annotation::register(&mut ops);
    elementwise::register(&mut ops);
    ops
}
