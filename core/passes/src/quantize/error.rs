//! Errors of the quantize pass.

use thiserror::Error;

use byoc_exec::ExecError;
use byoc_ir::memory::SizeError;
use byoc_ir::{ExprId, IrError};

use super::CalibrateMode;

/// Why quantization failed.
#[derive(Debug, Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum QuantizeError {
    /// A calibration mode name that does not exist.
    #[error("unknown calibration mode '{0}' (known: global-scale, percentile, kl)")]
    UnknownMode(String),
    /// A data-aware mode without samples.
    #[error("calibration mode '{0}' needs calibration samples")]
    NoSamples(CalibrateMode),
    /// A `global_scale` that is not a positive power of two.
    #[error(
        "global scale {0} is not a positive power of two (the realized form requantizes by shifts)"
    )]
    GlobalScale(f64),
    /// A calibration sample with the wrong number of tensors.
    #[error("calibration sample {sample} has {got} tensors but @main takes {want}")]
    SampleArity {
        /// The sample's index.
        sample: usize,
        /// Tensors given.
        got: usize,
        /// Parameters of `@main`.
        want: usize,
    },
    /// Running the float model on a calibration sample failed.
    #[error("running the float model on calibration sample {sample}: {source}")]
    Run {
        /// The sample's index.
        sample: usize,
        /// The executor's error.
        #[source]
        source: Box<ExecError>,
    },
    /// The calibration samples and the values kept of every quantization point do not fit
    /// the memory budget.
    #[error(
        "calibration on {samples} samples keeps every value of the quantization points: \
         {source}; calibrate on fewer samples or raise the memory budget"
    )]
    Memory {
        /// The number of samples.
        samples: usize,
        /// What went over the budget.
        #[source]
        source: SizeError,
    },
    /// A constant that cannot be quantized.
    #[error("quantizing a constant: {0}")]
    Constant(String),
    /// A bias_add whose axis is outside its operand's rank.
    #[error("{at}: nn.bias_add axis {axis} is out of range")]
    BiasAxis {
        /// The call.
        at: ExprId,
        /// Its axis.
        axis: i64,
    },
    /// A call planned as integer that has no integer form (an internal inconsistency).
    #[error("{at}: {op} has no integer form")]
    NoIntegerForm {
        /// The call.
        at: ExprId,
        /// Its op.
        op: String,
    },
    /// Building the quantized IR failed.
    #[error(transparent)]
    Ir(#[from] IrError),
}
