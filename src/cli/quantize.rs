//! `byoc quantize` and the quantization options of the other commands: the command's
//! arguments, and quantizing with a warning when calibrating on random inputs and a progress
//! bar over the calibration runs. The options and the quantization itself are
//! [`byoc_pipeline::quantize`]'s.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};
use byoc_core::text::print_module;
use byoc_core::Module;
use byoc_pipeline::quantize::QuantizeOptions;
use clap::Args;

use super::targets::load;
use crate::progress;

/// Quantizes `module` (named `name` in messages) as `options` say, warning on standard error
/// when the calibration samples are seeded random inputs and showing a bar over the
/// calibration runs.
pub fn quantize_module(options: &QuantizeOptions, module: &Module, name: &str) -> Result<Module> {
    let samples = options.samples(module)?;
    if let Some(warning) = options.random_inputs_warning() {
        eprintln!("warning: {warning}");
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
    result
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
