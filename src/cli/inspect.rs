//! `byoc inspect`: print a model after a stage of the pipeline.

use std::path::PathBuf;

use anyhow::{Context, Result};
use byoc_core::text::{print_module_with, PrintOptions};
use clap::{Args, ValueEnum};

use crate::model::{load_model, parse_input_shapes};

/// Arguments of `byoc inspect`.
#[derive(Debug, Args)]
pub struct InspectArgs {
    /// The model (.relay or .onnx).
    pub model: PathBuf,
    /// Fix an ONNX input's shape (symbolic dimensions): NAME=D0,D1,... (repeatable).
    #[arg(long = "input-shape", value_name = "NAME=DIMS")]
    pub input_shapes: Vec<String>,
    /// The stage after which to print the module.
    #[arg(long, value_enum, default_value_t = Stage::Parse)]
    pub stage: Stage,
    /// Write to this file instead of standard output.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
}

/// Pipeline stages `inspect` can stop after.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Stage {
    /// Parsed and type-checked: the typed module, each binding with its type.
    Parse,
}

/// Runs `byoc inspect`.
pub fn inspect(args: &InspectArgs) -> Result<()> {
    let module = load_model(&args.model, &parse_input_shapes(&args.input_shapes)?)?;
    let text = match args.stage {
        Stage::Parse => print_module_with(&module, &PrintOptions { show_types: true }),
    };
    match &args.output {
        Some(path) => {
            std::fs::write(path, text).with_context(|| format!("cannot write '{}'", path.display()))
        }
        None => {
            print!("{text}");
            Ok(())
        }
    }
}
