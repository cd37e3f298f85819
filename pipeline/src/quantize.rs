//! Quantizing a model before partitioning: the quantizer's options (TVM's `qconfig` plus the
//! calibration data), the calibration samples they give for a module, and the quantize pass
//! run over them.
//!
//! The samples come from `.npz` files keyed by the model's input names, or, for the
//! data-aware calibration modes when no files are given, from seeded random inputs (the
//! caller tells the user so with [`QuantizeOptions::random_inputs_warning`]).
//!
//! The options are plain data; the `byoc` driver maps its command-line flags
//! (`--calibrate`, `--calibration-inputs`, ...) onto them.

use std::collections::BTreeMap;
use std::path::PathBuf;

use byoc_ir::memory::{RunTally, SizeError};
use byoc_ir::{Module, Tensor};
use byoc_passes::quantize::CalibrationProgress;
use byoc_passes::{PassContext, PassError, PassManager, Quantize};
use thiserror::Error;

/// The calibration modes and the qconfig, as the quantize pass defines them.
pub use byoc_passes::{CalibrateMode, QConfig};

use crate::inputs::{model_inputs, resolve_inputs, InputsError};

/// Why calibration samples cannot be made or a model cannot be quantized.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum QuantizeError {
    /// The model's inputs cannot be listed, or random samples cannot be made.
    #[error(transparent)]
    Inputs(#[from] InputsError),
    /// A `--calibration-inputs` file does not give the model's inputs.
    #[error("calibration inputs '{}'", path.display())]
    CalibrationInputs {
        /// The file.
        path: PathBuf,
        /// Why (boxed, as it is large).
        #[source]
        source: Box<InputsError>,
    },
    /// The seeded random samples asked for do not fit the memory budget.
    #[error("{samples} calibration samples: {source}; calibrate on fewer samples or raise the memory budget")]
    SampleMemory {
        /// The number of samples asked for.
        samples: u64,
        /// What went over the budget.
        #[source]
        source: SizeError,
    },
    /// The quantize pass failed.
    #[error("{name}: quantization failed")]
    Failed {
        /// The model's name in messages.
        name: String,
        /// Why (boxed, as it is large).
        #[source]
        source: Box<PassError>,
    },
}

/// The quantizer's configuration and calibration data (TVM's `qconfig`).
#[derive(Clone, Debug)]
pub struct QuantizeOptions {
    /// Calibration inputs: one .npz per sample, keyed by the model's input names.
    pub calibration_inputs: Vec<PathBuf>,
    /// How activation scales are chosen: global-scale, percentile or kl.
    pub calibrate: CalibrateMode,
    /// Activation range of the global-scale mode (a power of two).
    pub global_scale: f64,
    /// Indices of the conv2d layers kept in float, in graph order.
    pub skip_conv_layers: Vec<usize>,
    /// Quantize nn.dense layers too (left in float by default, as TVM does).
    pub quantize_dense: bool,
    /// Seeded random samples to calibrate on when no calibration inputs are given.
    pub calibration_samples: u64,
}

impl Default for QuantizeOptions {
    fn default() -> Self {
        let config = QConfig::default();
        QuantizeOptions {
            calibration_inputs: Vec::new(),
            calibrate: config.calibrate_mode,
            global_scale: config.global_scale,
            skip_conv_layers: config.skip_conv_layers,
            quantize_dense: !config.skip_dense_layer,
            calibration_samples: 8,
        }
    }
}

impl QuantizeOptions {
    /// The qconfig these options give.
    pub fn config(&self) -> QConfig {
        QConfig {
            global_scale: self.global_scale,
            skip_conv_layers: self.skip_conv_layers.clone(),
            skip_dense_layer: !self.quantize_dense,
            calibrate_mode: self.calibrate,
        }
    }

    /// What to tell the user when [`samples`](Self::samples) falls back to seeded random
    /// inputs (no calibration inputs, a data-aware mode); `None` otherwise.
    pub fn random_inputs_warning(&self) -> Option<String> {
        (self.calibration_inputs.is_empty() && self.calibrate.needs_data()).then(|| {
            format!(
                "no calibration inputs given: calibrating '{}' on {} seeded random inputs \
                 (seeds 0..{}); scales from real data are better",
                self.calibrate, self.calibration_samples, self.calibration_samples
            )
        })
    }

    /// The calibration samples for `module` (each in `@main` parameter order): the
    /// `--calibration-inputs` files, else (for the data-aware modes) seeded random inputs.
    pub fn samples(&self, module: &Module) -> Result<Vec<Vec<Tensor>>, QuantizeError> {
        let order = model_inputs(module)?;
        let ordered = |mut named: BTreeMap<String, Tensor>| {
            order
                .iter()
                .filter_map(|i| named.remove(&i.param))
                .collect::<Vec<_>>()
        };
        if !self.calibration_inputs.is_empty() {
            return self
                .calibration_inputs
                .iter()
                .map(|path| {
                    resolve_inputs(module, Some(path), None)
                        .map_err(|source| QuantizeError::CalibrationInputs {
                            path: path.clone(),
                            source: Box::new(source),
                        })
                        .map(ordered)
                })
                .collect();
        }
        if !self.calibrate.needs_data() {
            return Ok(Vec::new());
        }
        let n = usize::try_from(self.calibration_samples).unwrap_or(usize::MAX);
        let mut tally = RunTally::new();
        for input in &order {
            tally
                .add_batch(&input.ty, n)
                .map_err(|source| QuantizeError::SampleMemory {
                    samples: self.calibration_samples,
                    source,
                })?;
        }
        (0..self.calibration_samples)
            .map(|seed| {
                resolve_inputs(module, None, Some(seed))
                    .map(ordered)
                    .map_err(QuantizeError::from)
            })
            .collect()
    }

    /// Quantizes `module` (named `name` in messages) with these options' qconfig, calibrating
    /// on `samples`; `progress` hears of each finished calibration run.
    pub fn quantize(
        &self,
        module: &Module,
        name: &str,
        samples: Vec<Vec<Tensor>>,
        progress: Option<CalibrationProgress>,
    ) -> Result<Module, QuantizeError> {
        let pass = Quantize {
            config: self.config(),
            samples,
            progress,
        };
        let mut quantized = module.clone();
        PassManager::new()
            .pass(pass)
            .run(&mut quantized, &mut PassContext::new())
            .map_err(|source| QuantizeError::Failed {
                name: name.to_string(),
                source: Box::new(source),
            })?;
        Ok(quantized)
    }
}
