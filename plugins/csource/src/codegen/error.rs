//! Errors of C code generation. Every variant names the partition, and the op where one is
//! involved.

use byoc_sdk::ir::DType;
use byoc_sdk::ir::TypeInferError;
use thiserror::Error;

/// Why a partition could not be turned into C.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum CodegenError {
    /// The function has no `global_symbol` attribute to name its entry point.
    #[error("partition has no global_symbol attribute to name its C entry point")]
    MissingSymbol,
    /// The `global_symbol` is not a C identifier.
    #[error("partition symbol '{symbol}' is not a C identifier (letters, digits, '_', not starting with a digit)")]
    BadSymbol {
        /// The symbol.
        symbol: String,
    },
    /// The function is not a csource partition.
    #[error("partition {partition}: Compiler attribute is {found}, not \"csource\"")]
    WrongCompiler {
        /// The partition.
        partition: String,
        /// What the attribute says (`none` when absent).
        found: String,
    },
    /// Type inference of the partition failed.
    #[error("partition {partition}: {source}")]
    Type {
        /// The partition.
        partition: String,
        /// The type error.
        source: TypeInferError,
    },
    /// An op the generator does not lower, or an attribute value it does not handle.
    #[error("partition {partition}: {op}: {reason}")]
    UnsupportedOp {
        /// The partition.
        partition: String,
        /// The op name.
        op: String,
        /// What is not supported.
        reason: String,
    },
    /// A tensor of a dtype other than float32.
    #[error(
        "partition {partition}: {what} has dtype {dtype}; csource generates float32 code only"
    )]
    UnsupportedDType {
        /// The partition.
        partition: String,
        /// Which tensor (`nn.dense argument 1`, `parameter %x`, `a constant`).
        what: String,
        /// Its dtype.
        dtype: DType,
    },
    /// An expression form the generator does not lower (a call of a global function, a tuple
    /// parameter, a nested tuple).
    #[error("partition {partition}: {what} is not supported by csource")]
    UnsupportedExpr {
        /// The partition.
        partition: String,
        /// The expression form.
        what: String,
    },
}
