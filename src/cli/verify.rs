//! `byoc verify`: run a model host-only and partitioned for targets on the same inputs and
//! report the largest error of every output; exit code 1 when any exceeds the tolerance.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use byoc_core::exec::{ExecOptions, Executor, ExternalModules};
use byoc_core::{Module, Tensor};
use clap::Args;

use super::inputs::{output_map, resolve_inputs};
use super::targets::{partition_and_compile, TargetArgs};
use super::CheckFailed;
use crate::model::{load_model, parse_input_shapes};

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

/// The comparison of one output.
struct OutputError {
    name: String,
    max_abs: f64,
    /// The largest error relative to max(|host|, floor · max|host|).
    max_rel: f64,
}

fn compare(name: &str, host: &Tensor, partitioned: &Tensor, floor: f64) -> Result<OutputError> {
    if host.ty() != partitioned.ty() {
        bail!(
            "output '{name}': partitioned run gives {}, host gives {}",
            partitioned.ty(),
            host.ty()
        );
    }
    let want = host.to_f64_vec();
    let got = partitioned.to_f64_vec();
    let peak = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let (mut max_abs, mut max_rel) = (0.0f64, 0.0f64);
    for (w, g) in want.iter().zip(&got) {
        if w.is_nan() && g.is_nan() {
            continue;
        }
        let abs = (w - g).abs();
        // A NaN on one side only is an infinite error.
        let abs = if abs.is_nan() { f64::INFINITY } else { abs };
        max_abs = max_abs.max(abs);
        max_rel = max_rel.max(abs / w.abs().max(floor * peak).max(f64::MIN_POSITIVE));
    }
    Ok(OutputError {
        name: name.to_string(),
        max_abs,
        max_rel,
    })
}

fn run_once(
    module: &Module,
    externals: &ExternalModules,
    threads: usize,
    inputs: &std::collections::BTreeMap<String, Tensor>,
    what: &str,
) -> Result<Vec<Tensor>> {
    let options = ExecOptions {
        threads,
        profile: false,
    };
    Executor::with_externals(module, options, externals)
        .and_then(|e| e.run_named(inputs))
        .with_context(|| format!("{what} run failed"))
}

/// Runs `byoc verify`.
pub fn verify(args: &VerifyArgs) -> Result<()> {
    if args.targets.is_empty() {
        bail!("verify compares a partitioned build with the host: give at least one --target or --target-spec");
    }
    let name = args.model.display().to_string();
    let host = load_model(&args.model, &parse_input_shapes(&args.input_shapes)?)?;
    let (partitioned, externals) = partition_and_compile(&host, &args.targets, &name)?;
    let inputs = resolve_inputs(&host, args.inputs.as_deref(), Some(args.random_inputs))?;
    let want = run_once(
        &host,
        &ExternalModules::new(),
        args.threads,
        &inputs,
        "host-only",
    )?;
    let got = run_once(
        &partitioned,
        &externals,
        args.threads,
        &inputs,
        "partitioned",
    )?;
    let want = output_map(&host, want);
    let got = output_map(&partitioned, got);
    let mut failed = Vec::new();
    for (out, w) in &want {
        let g = got
            .get(out)
            .with_context(|| format!("the partitioned build has no output '{out}'"))?;
        let e = compare(out, w, g, args.floor)?;
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
