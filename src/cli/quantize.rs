//! `byoc quantize` and the quantization options of the other commands: the command's
//! arguments, the quantizer's flags ([`QuantizeOptions`], converted into the library's
//! options), and quantizing with a warning when calibrating on random inputs and a progress
//! bar over the calibration runs. The quantization itself is [`byoc_pipeline::quantize`]'s.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};
use byoc_ir::text::print_module;
use byoc_ir::Module;
use byoc_pipeline::quantize::{self, CalibrateMode};
use clap::Args;

use super::targets::load;
use crate::progress;

/// The quantizer's configuration and calibration data (TVM's `qconfig`) as command-line flags;
/// [`quantize::QuantizeOptions`] once converted.
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
    /// The library's defaults ([`quantize::QuantizeOptions::default`]).
    fn default() -> Self {
        quantize::QuantizeOptions::default().into()
    }
}

impl From<QuantizeOptions> for quantize::QuantizeOptions {
    fn from(o: QuantizeOptions) -> Self {
        quantize::QuantizeOptions {
            calibration_inputs: o.calibration_inputs,
            calibrate: o.calibrate,
            global_scale: o.global_scale,
            skip_conv_layers: o.skip_conv_layers,
            quantize_dense: o.quantize_dense,
            calibration_samples: o.calibration_samples,
        }
    }
}

impl From<&QuantizeOptions> for quantize::QuantizeOptions {
    fn from(o: &QuantizeOptions) -> Self {
        o.clone().into()
    }
}

impl From<quantize::QuantizeOptions> for QuantizeOptions {
    fn from(o: quantize::QuantizeOptions) -> Self {
        QuantizeOptions {
            calibration_inputs: o.calibration_inputs,
            calibrate: o.calibrate,
            global_scale: o.global_scale,
            skip_conv_layers: o.skip_conv_layers,
            quantize_dense: o.quantize_dense,
            calibration_samples: o.calibration_samples,
        }
    }
}

/// Quantizes `module` (named `name` in messages) as `options` say, warning on standard error
/// when the calibration samples are seeded random inputs and showing a bar over the
/// calibration runs.
pub fn quantize_module(options: &QuantizeOptions, module: &Module, name: &str) -> Result<Module> {
    let options = quantize::QuantizeOptions::from(options);
    let samples = options.samples(module)?;
    if let Some(warning) = options.random_inputs_warning() {
        eprintln!("warning: {warning} (give them with --calibration-inputs)");
    }
    let bar = progress::bar(samples.len() as u64, "calibrating");
    let tick = bar.clone();
    let result = options.quantize(
        module,
        name,
        samples,
        Some(Arc::new(move |done, _| tick.set_position(done as u64))),
    );
    bar.finish_and_clear();
    Ok(result?)
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
    let quantized = quantize_module(&args.options, &module, &name)?;
    std::fs::write(&args.output, print_module(&quantized))
        .with_context(|| format!("cannot write '{}'", args.output.display()))?;
    println!("wrote {}", args.output.display());
    Ok(())
}
