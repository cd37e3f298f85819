//! `annotation.compiler_begin` / `annotation.compiler_end`: region boundaries placed by
//! AnnotateTarget or by hand. Both are identities on their argument; the host kernel copies.

use crate::op::{Arity, AttrDef, AttrKind, OpDef, OpImpl, OpPattern, TypeCtx, TypeError};
use crate::Type;

/// `annotation.compiler_begin` / `annotation.compiler_end`: the identity, bounding a region.
pub struct CompilerAnnotation;

impl OpImpl for CompilerAnnotation {
    fn infer_type(&self, ctx: &TypeCtx<'_>) -> Result<Type, TypeError> {
        ctx.str("compiler")?;
        Ok(ctx.args[0].clone())
    }
}

pub(crate) fn register(ops: &mut Vec<OpDef>) {
    for (name, summary) in [
        (
            "annotation.compiler_begin",
            "start of a region offloaded to `compiler`",
        ),
        (
            "annotation.compiler_end",
            "end of a region offloaded to `compiler`",
        ),
    ] {
        ops.push(
            OpDef::new(
                name,
                summary,
                Arity::Exact(1),
                OpPattern::Opaque,
                CompilerAnnotation,
            )
            .with_attrs(vec![AttrDef::new("compiler", AttrKind::Str, "default")]),
        );
    }
}
