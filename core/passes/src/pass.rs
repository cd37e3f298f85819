//! The [`Pass`] trait every module transformation implements and [`PassError`], the error
//! type of passes and of the pass manager.
//!
//! A pass takes a module and leaves it well-formed ([`Module::verify`] holds) with every live
//! expression typed, so the next pass may rely on types without re-inferring them.

use thiserror::Error;

use byoc_ir::partition::skipped_by_passes;
use byoc_ir::{ExprId, Function, IrError, Module, Type, VerifyError};
use byoc_kernels::KernelError;

use super::PartitionError;
use super::PassContext;
use byoc_ir::TypeInferError;

/// A module-to-module transformation (rustc's `MirPass`).
pub trait Pass {
    /// The pass's kebab-case name, used on the command line and in messages
    /// (`infer-type`, `fold-constant`).
    fn name(&self) -> &'static str;

    /// Transforms `module` in place. On error the module may be partly transformed; callers
    /// that need the old module keep a copy.
    fn run(&self, module: &mut Module, cx: &mut PassContext) -> Result<(), PassError>;
}

/// A borrowed pass is a pass, so a [`crate::PassManager`] can run one its caller keeps.
impl<P: Pass + ?Sized> Pass for &P {
    fn name(&self) -> &'static str {
        (**self).name()
    }

    fn run(&self, module: &mut Module, cx: &mut PassContext) -> Result<(), PassError> {
        (**self).run(module, cx)
    }
}

/// An error of a pass or of the pass manager.
#[derive(Debug, Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum PassError {
    /// An error raised while running the named pass (or verifying its result).
    #[error("in pass {pass}: {source}")]
    InPass {
        /// The pass.
        pass: &'static str,
        /// What went wrong.
        #[source]
        source: Box<PassError>,
    },
    /// The IR a pass built is malformed.
    #[error(transparent)]
    Ir(#[from] IrError),
    /// Type inference failed.
    #[error(transparent)]
    Type(#[from] TypeInferError),
    /// The module does not verify after a pass (the error names the function and uses the
    /// ids of the printed text).
    #[error("the module does not verify: {0}")]
    Verify(VerifyError),
    /// A live expression whose recorded type is missing or differs from what inference gives.
    #[error("in @{function}, at {at}: recorded type {recorded} but inference gives {inferred}")]
    StaleType {
        /// The global function.
        function: String,
        /// The expression, by its id in the printed text (`%3`, `%x`;
        /// [`byoc_ir::text::printed_ids`]).
        at: String,
        /// The type the pass left (`none` when missing).
        recorded: String,
        /// The inferred type.
        inferred: String,
    },
    /// Evaluating a constant expression failed.
    #[error("in @{function}, at {at}: evaluating a constant expression failed: {source}")]
    Eval {
        /// The global function.
        function: String,
        /// The expression.
        at: ExprId,
        /// The kernel's error.
        #[source]
        source: KernelError,
    },
    /// A name given to bind a parameter that `@main` does not have.
    #[error("@main has no parameter named '{name}' (parameters: {known})")]
    UnknownParam {
        /// The name given.
        name: String,
        /// The parameter names of `@main`, comma-separated.
        known: String,
    },
    /// A parameter name that `@main` uses more than once, so binding by name is ambiguous.
    #[error("@main has {count} parameters named '{name}'; binding by name is ambiguous")]
    AmbiguousParam {
        /// The name.
        name: String,
        /// How many parameters carry it.
        count: usize,
    },
    /// A bound value whose type differs from the parameter's declared type.
    #[error(
        "parameter %{name} of @main has type {expected} but the value bound to it has type {got}"
    )]
    ParamType {
        /// The parameter.
        name: String,
        /// Its declared type.
        expected: Type,
        /// The bound tensor's type.
        got: Type,
    },
    /// A pass name no pass carries.
    #[error("unknown pass '{name}' (known: {known})")]
    UnknownPass {
        /// The name asked for.
        name: String,
        /// The names that exist, comma-separated.
        known: String,
    },
    /// Quantization failed (bad configuration, calibration data or a calibration run).
    #[error(transparent)]
    Quantize(Box<super::quantize::QuantizeError>),
    /// A BYOC partitioning pass failed (malformed annotations, IR it cannot build).
    #[error(transparent)]
    Partition(#[from] PartitionError),
    /// A pattern rewrite failed in one function (MergeComposite of `byoc-patterns`).
    #[error("in @{function}: {message}")]
    Rewrite {
        /// The global function.
        function: String,
        /// What failed.
        message: String,
    },
    /// A registered pass that cannot be built from its name alone.
    #[error("pass '{0}' needs arguments and cannot be created by name")]
    NeedsArguments(&'static str),
}

impl PassError {
    /// Wraps `self` as raised in `pass` (an error already wrapped is left as is).
    pub fn in_pass(self, pass: &'static str) -> PassError {
        match self {
            e @ PassError::InPass { .. } => e,
            e => PassError::InPass {
                pass,
                source: Box::new(e),
            },
        }
    }
}

/// Runs `rewrite` on every function of `module` that is not [`skipped_by_passes`], with types inferred
/// before and after: the body of function-at-a-time rewrites such as
/// SimplifyInference and FoldScaleAxis.
pub(crate) fn rewrite_host_functions(
    module: &mut Module,
    rewrite: impl Fn(&Function) -> Result<Function, PassError>,
) -> Result<(), PassError> {
    byoc_ir::infer_types(module)?;
    for (_, f) in module.functions_mut() {
        if !skipped_by_passes(f) {
            *f = rewrite(f)?;
        }
    }
    byoc_ir::infer_types(module)?;
    Ok(())
}
