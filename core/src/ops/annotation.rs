//! `annotation.compiler_begin` / `annotation.compiler_end`: region boundaries placed by
//! AnnotateTarget or by hand. Both are identities on their argument; the host kernel copies.

use crate::ir::Type;
use crate::op::{Arity, AttrDef, AttrKind, OpDef, OpImpl, OpPattern, TypeCtx, TypeError};
#[cfg(feature = "executor")]
use {
    crate::op::{HostKernel, KernelError, KernelSpec},
    crate::tensor::{TensorMut, TensorRef},
};

struct CompilerAnnotation;

impl OpImpl for CompilerAnnotation {
    fn infer_type(&self, ctx: &TypeCtx<'_>) -> Result<Type, TypeError> {
        ctx.str("compiler")?;
        Ok(ctx.args[0].clone())
    }

    #[cfg(feature = "executor")]
    fn host_kernel(&self, _spec: &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> {
        Ok(Box::new(Copy))
    }
}

/// Copies every input to the output of the same position.
#[cfg(feature = "executor")]
struct Copy;

#[cfg(feature = "executor")]
impl HostKernel for Copy {
    fn run(
        &self,
        inputs: &[TensorRef<'_>],
        outputs: &mut [TensorMut<'_>],
        _threads: usize,
    ) -> Result<(), KernelError> {
        for (i, o) in inputs.iter().zip(outputs.iter_mut()) {
            o.bytes.copy_from_slice(i.bytes);
        }
        Ok(())
    }
}

pub(super) fn register(ops: &mut Vec<OpDef>) {
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
