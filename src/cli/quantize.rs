//! `byoc quantize` and the quantization options of the other commands: the qconfig on the
//! command line, calibration samples from `.npz` files (or seeded random inputs, with a
//! warning), a progress bar over the calibration runs, and writing the realized module.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};
use byoc_core::passes::{CalibrateMode, Pass, PassContext, QConfig, Quantize};
use byoc_core::text::print_module;
use byoc_core::{Module, Tensor};
use clap::Args;

use super::targets::load;
use crate::inputs::{model_inputs, resolve_inputs};
use crate::progress;

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

    /// The calibration samples for `module` (each in `@main` parameter order): the
    /// `--calibration-inputs` files, else (for the data-aware modes) seeded random inputs with
    /// a warning on standard error.
    pub fn samples(&self, module: &Module) -> Result<Vec<Vec<Tensor>>> {
        let order = model_inputs(module)?;
        let ordered = |mut named: std::collections::BTreeMap<String, Tensor>| {
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
        eprintln!(
            "warning: no --calibration-inputs given: calibrating '{}' on {} seeded random inputs \
             (seeds 0..{}); scales from real data are better",
            self.calibrate, self.calibration_samples, self.calibration_samples
        );
        (0..self.calibration_samples)
            .map(|seed| resolve_inputs(module, None, Some(seed)).map(ordered))
            .collect()
    }

    /// Quantizes `module` (named `name` in messages), showing a bar over the calibration runs.
    pub fn quantize(&self, module: &Module, name: &str) -> Result<Module> {
        let samples = self.samples(module)?;
        let bar = progress::bar(samples.len() as u64, "calibrating");
        let tick = bar.clone();
        let pass = Quantize {
            config: self.config(),
            samples,
            progress: Some(Arc::new(move |done, _| tick.set_position(done as u64))),
        };
        let mut quantized = module.clone();
        let result = pass.run(&mut quantized, &mut PassContext::new());
        bar.finish_and_clear();
        result.with_context(|| format!("{name}: quantization failed"))?;
        Ok(quantized)
    }
}

/// Arguments of `byoc quantize`.
#[derive(Debug, Args)]
pub struct QuantizeArgs {
    /// The model (.relay or .onnx).
    pub model: PathBuf,
    /// The quantizer's configuration.
    #[command(flatten)]
    pub options: QuantizeOptions,
    /// Fix an ONNX input's shape (symbolic dimensions): NAME=D0,D1,... (repeatable).
    #[arg(long = "input-shape", value_name = "NAME=DIMS")]
    pub input_shapes: Vec<String>,
    /// Where to write the quantized module (Relay text).
    #[arg(short, long, value_name = "OUT.relay")]
    pub output: PathBuf,
}

/// Runs `byoc quantize`.
pub fn quantize(args: &QuantizeArgs) -> Result<()> {
    let name = args.model.display().to_string();
    let module = load(&args.model, &args.input_shapes, &[])?;
    let quantized = args.options.quantize(&module, &name)?;
    std::fs::write(&args.output, print_module(&quantized))
        .with_context(|| format!("cannot write '{}'", args.output.display()))?;
    println!("wrote {}", args.output.display());
    Ok(())
}
