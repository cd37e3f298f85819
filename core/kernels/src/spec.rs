//! What a host kernel is: [`HostKernel`] (built once per call site, run many times), what its
//! builder sees ([`KernelSpec`]), its error ([`KernelError`]) and the fused elementwise
//! epilogue a blockwise kernel applies ([`OutputEpilogue`]).

use std::fmt;

use thiserror::Error;

use byoc_ir::op::{TypeCtx, TypeError};
use byoc_ir::tensor::{TensorMut, TensorRef};
use byoc_ir::{Attrs, TensorType, Type};

/// A host-kernel error: creating or running a kernel failed.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[error("{op}: {message}")]
pub struct KernelError {
    /// The op.
    pub op: String,
    /// What is wrong.
    pub message: String,
}

impl KernelError {
    /// A kernel error of `op`.
    pub fn new(op: impl Into<String>, message: impl Into<String>) -> Self {
        KernelError {
            op: op.into(),
            message: message.into(),
        }
    }
}

impl From<TypeError> for KernelError {
    fn from(e: TypeError) -> Self {
        KernelError {
            op: e.op,
            message: e.message,
        }
    }
}

/// What a kernel builder sees: the op, its attributes, and the types of the flattened inputs
/// (tuple arguments expanded in order) and outputs.
pub struct KernelSpec<'a> {
    /// The op name.
    pub op: &'a str,
    /// Normalized attributes.
    pub attrs: &'a Attrs,
    /// Input tensor types, tuples flattened.
    pub inputs: &'a [TensorType],
    /// Output tensor types, tuples flattened.
    pub outputs: &'a [TensorType],
}

impl<'a> KernelSpec<'a> {
    byoc_ir::attr_accessors!();

    /// A "no host kernel for this dtype" error.
    pub fn unsupported(&self, what: impl fmt::Display) -> KernelError {
        KernelError::new(self.op, format!("host kernel does not support {what}"))
    }

    /// Runs `f` on a type context rebuilt from the spec's inputs, so a kernel builder shares
    /// its op's attribute, axis and geometry code with the type relation.
    pub fn with_type_ctx<R>(
        &self,
        f: impl FnOnce(&TypeCtx<'_>) -> Result<R, TypeError>,
    ) -> Result<R, KernelError> {
        let args: Vec<Type> = self.inputs.iter().cloned().map(Type::Tensor).collect();
        let ctx = TypeCtx {
            op: self.op,
            attrs: self.attrs,
            args: &args,
        };
        f(&ctx).map_err(KernelError::from)
    }
}

/// A host kernel, built once per call site and run many times.
pub trait HostKernel: Send + Sync {
    /// Computes `outputs` from `inputs` (both flattened, shapes as in the [`KernelSpec`]).
    /// `threads` is the executor's thread budget; the executor runs kernels inside a rayon pool
    /// of that size.
    fn run(
        &self,
        inputs: &[TensorRef<'_>],
        outputs: &mut [TensorMut<'_>],
        threads: usize,
    ) -> Result<(), KernelError>;

    /// Like [`HostKernel::run`], then `epilogue` over output 0. Kernels that produce their
    /// output in blocks (conv2d) apply it to each block as soon as the block is final, while it
    /// is in cache; the default applies it once to the whole output.
    fn run_with_epilogue(
        &self,
        inputs: &[TensorRef<'_>],
        outputs: &mut [TensorMut<'_>],
        threads: usize,
        epilogue: &dyn OutputEpilogue,
    ) -> Result<(), KernelError> {
        self.run(inputs, outputs, threads)?;
        apply_to_output(outputs, epilogue);
        Ok(())
    }
}

/// An elementwise function of a kernel's output 0, applied in place to blocks of it by
/// [`HostKernel::run_with_epilogue`]: the fused elementwise consumers of a conv2d or dense.
pub trait OutputEpilogue: Sync {
    /// Applies the epilogue to output elements `offset..offset + n`, whose bytes (n elements of
    /// the output's dtype) are `block`. `block` may be a scratch copy of those elements that
    /// the kernel moves into the output afterwards.
    fn apply(&self, offset: usize, block: &mut [u8]);
}

/// Applies `epilogue` to the whole of output 0 (kernels without a blockwise hook).
pub(crate) fn apply_to_output(outputs: &mut [TensorMut<'_>], epilogue: &dyn OutputEpilogue) {
    if let Some(out) = outputs.first_mut() {
        epilogue.apply(0, out.bytes);
    }
}
