//! Errors of planning and running a module on the host executor.

use thiserror::Error;

use byoc_ir::memory::SizeError;
use byoc_ir::TypeInferError;
use byoc_ir::{IrError, TensorType};
use byoc_kernels::KernelError;
use byoc_sdk::PluginError;

/// Why a module could not be planned or run. Every variant names what failed and where: the
/// input by name, or the call site (`@main:%7 > @f:%2`, the chain of inlined calls).
#[derive(Debug, Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum ExecError {
    /// The module is malformed (no `@main`, ...).
    #[error(transparent)]
    Ir(#[from] IrError),
    /// Type inference of the module failed.
    #[error("type inference failed: {0}")]
    Types(#[from] TypeInferError),
    /// A call of a global function the module does not hold.
    #[error("{site}: call of unknown global function @{name}")]
    UnknownGlobal {
        /// The call site.
        site: String,
        /// The global's name.
        name: String,
    },
    /// A global function calls itself, directly or through others.
    #[error("{site}: recursive call of @{name} cannot be inlined")]
    Recursive {
        /// The call site.
        site: String,
        /// The global's name.
        name: String,
    },
    /// A construct the executor cannot lower (a free variable, a function value where a tensor
    /// is needed, a call of something that is not a function, ...).
    #[error("{site}: {message}")]
    Lowering {
        /// Where.
        site: String,
        /// What is wrong.
        message: String,
    },
    /// A host kernel could not be built or failed while running.
    #[error("{site}: {source}")]
    Kernel {
        /// The op.
        op: String,
        /// The call site.
        site: String,
        /// The kernel's error.
        source: KernelError,
    },
    /// A call of an external function that no compiled module was given for.
    #[error("{site}: @{function} is an external function for target '{target}' but no runtime was given for it (load the target's plugin, or compile it with the reference runtime)")]
    NoRuntime {
        /// The call site.
        site: String,
        /// The external function.
        function: String,
        /// Its target.
        target: String,
    },
    /// An external function's compiled module failed.
    #[error("{site}: plugin '{plugin}' failed running @{function} (target '{target}'): {error}")]
    External {
        /// The call site.
        site: String,
        /// The external function.
        function: String,
        /// Its target.
        target: String,
        /// The plugin that compiled it.
        plugin: String,
        /// The plugin's error (its message; not an error source, so chains print it once).
        error: PluginError,
    },
    /// The wrong number of inputs was given.
    #[error("expected {expected} input(s) but got {got}")]
    InputCount {
        /// Inputs `@main` takes (tuple parameters flattened).
        expected: usize,
        /// Inputs given.
        got: usize,
    },
    /// An input of the wrong shape or dtype.
    #[error("input '{name}': expected {expected} but got {got}")]
    InputType {
        /// The input's name.
        name: String,
        /// The parameter's type.
        expected: TensorType,
        /// The given tensor's type.
        got: TensorType,
    },
    /// A named input that `@main` needs was not given.
    #[error("missing input '{name}'")]
    MissingInput {
        /// The input's name.
        name: String,
    },
    /// A named input that `@main` does not take.
    #[error("unknown input '{name}' (inputs are: {known})")]
    UnknownInput {
        /// The name given.
        name: String,
        /// The input names, comma-separated.
        known: String,
    },
    /// A run buffer does not fit the memory budget, or the system refused its memory.
    #[error("{site}: {error}")]
    Memory {
        /// The call site that writes the tensor the buffer is sized for.
        site: String,
        /// The tensor, its size and the budget (its message; not an error source, so chains
        /// print it once).
        error: SizeError,
    },
    /// More worker threads than `byoc_sdk::max_threads` allows.
    #[error(transparent)]
    Threads(#[from] byoc_sdk::TooManyThreads),
    /// The worker thread pool could not be started.
    #[error("cannot start {threads} worker thread(s): {message}")]
    ThreadPool {
        /// Threads asked for.
        threads: usize,
        /// The system's reason.
        message: String,
    },
}
