//! `byoc run`: execute a model on the host executor.

use std::path::PathBuf;

use anyhow::{Context, Result};
use byoc_core::exec::{ExecOptions, Executor};
use clap::Args;

use super::inputs::{output_map, resolve_inputs};
use crate::model::{load_model, parse_input_shapes};

/// Arguments of `byoc run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The model (.relay or .onnx).
    pub model: PathBuf,
    /// Fix an ONNX input's shape (symbolic dimensions): NAME=D0,D1,... (repeatable).
    #[arg(long = "input-shape", value_name = "NAME=DIMS")]
    pub input_shapes: Vec<String>,
    /// Inputs as an .npz keyed by the model's input names.
    #[arg(long)]
    pub inputs: Option<PathBuf>,
    /// Fill inputs not given in --inputs with seeded random values.
    #[arg(long, value_name = "SEED")]
    pub random_inputs: Option<u64>,
    /// Write the outputs to this .npz, keyed by the model's output names (output_0, ... when it has none).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Worker threads (0: all cores).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
}

/// Runs `byoc run`.
pub fn run(args: &RunArgs) -> Result<()> {
    let module = load_model(&args.model, &parse_input_shapes(&args.input_shapes)?)?;
    let executor = Executor::new(
        &module,
        ExecOptions {
            threads: args.threads,
            ..ExecOptions::default()
        },
    )
    .with_context(|| format!("{}: cannot build the host plan", args.model.display()))?;
    let inputs = resolve_inputs(&module, args.inputs.as_deref(), args.random_inputs)?;
    let outputs = executor
        .run_named(&inputs)
        .with_context(|| format!("{}: execution failed", args.model.display()))?;
    let named = output_map(&module, outputs);
    for (name, t) in &named {
        let values = t.to_f64_vec();
        let preview: Vec<String> = values.iter().take(6).map(|v| format!("{v:.6}")).collect();
        println!(
            "{name}: {} [{}{}]",
            t.ty(),
            preview.join(", "),
            if values.len() > 6 { ", ..." } else { "" }
        );
    }
    if let Some(path) = &args.output {
        byoc_core::io::write_npz(path, &named)
            .with_context(|| format!("cannot write outputs to '{}'", path.display()))?;
    }
    Ok(())
}
