//! `byoc verify`: run a model host-only and partitioned for targets on the same inputs and
//! report the largest error of every output; exit code 1 when any exceeds the tolerance.
//! Importing, compiling and both runs show progress on a terminal ([`crate::progress`]).

use std::path::PathBuf;

use anyhow::{bail, Result};
use byoc_core::exec::ExecOptions;
use clap::Args;

use super::targets::{load, partition_and_compile, TargetArgs};
use super::CheckFailed;
use crate::inputs::resolve_inputs;
use crate::verify::verify_partitioned;

/// Arguments of `byoc verify`.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The model (.relay or .onnx).
    pub model: PathBuf,
    /// Targets and plugins to verify against the host (at least one).
    #[command(flatten)]
    pub targets: TargetArgs,
    /// Fix an ONNX input's shape (symbolic dimensions): NAME=D0,D1,... (repeatable).
    #[arg(long = "input-shape", value_name = "NAME=DIMS")]
    pub input_shapes: Vec<String>,
    /// Inputs as an .npz keyed by the model's input names.
    #[arg(long)]
    pub inputs: Option<PathBuf>,
    /// Seed for the inputs not given in --inputs.
    #[arg(long, value_name = "SEED", default_value_t = 0)]
    pub random_inputs: u64,
    /// Relative tolerance: |partitioned - host| <= rtol * max(|host|, floor).
    #[arg(long, default_value_t = 1e-4)]
    pub rtol: f64,
    /// Absolute floor of the relative tolerance, as a fraction of the output's largest |value|.
    #[arg(long, default_value_t = 1e-2)]
    pub floor: f64,
    /// Worker threads (0: all cores).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
}

/// Runs `byoc verify`.
pub fn verify(args: &VerifyArgs) -> Result<()> {
    if args.targets.is_empty() {
        bail!("verify compares a partitioned build with the host: give at least one --target or --target-spec");
    }
    let name = args.model.display().to_string();
    let host = load(&args.model, &args.input_shapes)?;
    let targets = args.targets.with_executor_threads(args.threads);
    let (partitioned, externals) = partition_and_compile(&host, &targets, &name)?;
    let inputs = resolve_inputs(&host, args.inputs.as_deref(), Some(args.random_inputs))?;
    let options = ExecOptions {
        threads: args.threads,
        profile: false,
    };
    let checked = verify_partitioned(
        &host,
        &partitioned,
        &externals,
        &inputs,
        options,
        args.floor,
    )?;
    let mut failed = Vec::new();
    for e in checked.errors {
        let ok = e.max_rel <= args.rtol;
        println!(
            "{}: max_abs_err={:.3e} max_rel_err={:.3e} {}",
            e.name,
            e.max_abs,
            e.max_rel,
            if ok { "ok" } else { "FAILED" }
        );
        if !ok {
            failed.push(e.name);
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(CheckFailed(format!(
            "{name}: outputs {} exceed rtol={} (floor {} of each output's peak)",
            failed.join(", "),
            args.rtol,
            args.floor
        ))
        .into())
    }
}
