//! Quantizing a model before partitioning: the quantizer's options (TVM's `qconfig` plus the
//! calibration data), the calibration samples they give for a module, and the quantize pass
//! run over them.
//!
//! The samples come from `.npz` files keyed by the model's input names, or, for the
//! data-aware calibration modes when no files are given, from seeded random inputs (the
//! caller tells the user so with [`QuantizeOptions::random_inputs_warning`]).

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{Context, Result};
use byoc_core::passes::quantize::CalibrationProgress;
use byoc_core::passes::{CalibrateMode, Pass, PassContext, QConfig, Quantize};
use byoc_core::{Module, Tensor};
use clap::Args;

use crate::inputs::{model_inputs, resolve_inputs};

/// The quantizer's configuration and calibration data (TVM's `qconfig`).
#[derive(Clone, Debug, Args)]
pub struct QuantizeOptions {
    /// Calibration inputs: one .npz per sample, keyed by the model's input names (repeatable).
    #[arg(long = "calibration-inputs", value_name = "FILE.npz")]
    pub calibration_inputs: Vec<PathBuf>,
    /// How activation scales are chosen: global-scale, percentile or kl.
    #[arg(long, value_name = "MODE", default_value = "global-scale")]
    pub calibrate: CalibrateMode,
    /// Activation range of the global-scale mode (a power of two).
    #[arg(long, default_value_t = 8.0)]
    pub global_scale: f64,
    /// Indices of the conv2d layers kept in float, in graph order (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "0")]
    pub skip_conv_layers: Vec<usize>,
    /// Quantize nn.dense layers too (left in float by default, as TVM does).
    #[arg(long)]
    pub quantize_dense: bool,
    /// Seeded random samples to calibrate on when no --calibration-inputs are given.
    #[arg(long, value_name = "N", default_value_t = 8)]
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
    /// inputs (no `--calibration-inputs`, a data-aware mode); `None` otherwise.
    pub fn random_inputs_warning(&self) -> Option<String> {
        (self.calibration_inputs.is_empty() && self.calibrate.needs_data()).then(|| {
            format!(
                "no --calibration-inputs given: calibrating '{}' on {} seeded random inputs \
                 (seeds 0..{}); scales from real data are better",
                self.calibrate, self.calibration_samples, self.calibration_samples
            )
        })
    }

    /// The calibration samples for `module` (each in `@main` parameter order): the
    /// `--calibration-inputs` files, else (for the data-aware modes) seeded random inputs.
    pub fn samples(&self, module: &Module) -> Result<Vec<Vec<Tensor>>> {
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
                        .with_context(|| format!("calibration inputs '{}'", path.display()))
                        .map(ordered)
                })
                .collect();
        }
        if !self.calibrate.needs_data() {
            return Ok(Vec::new());
        }
        (0..self.calibration_samples)
            .map(|seed| resolve_inputs(module, None, Some(seed)).map(ordered))
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
    ) -> Result<Module> {
        let pass = Quantize {
            config: self.config(),
            samples,
            progress,
        };
        let mut quantized = module.clone();
        pass.run(&mut quantized, &mut PassContext::new())
            .with_context(|| format!("{name}: quantization failed"))?;
        Ok(quantized)
    }
}
