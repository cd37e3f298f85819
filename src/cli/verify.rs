//! `byoc verify`: run a model host-only on the reference kernels and as built (partitioned
//! for targets, its host part compiled with `--host-codegen`, `llvm` by default) on the same
//! inputs and report the largest error of every output; exit code 1 when any exceeds the
//! tolerance. Without a target it checks the compiled host code alone.
//! With `--samples N` it checks N input samples and also reports each output's top-1
//! agreement (for reduced-precision modes such as dnnl's `dnnl.fpmath=bf16`).
//! Importing, compiling and both runs show progress on a terminal ([`crate::progress`]).

use std::path::PathBuf;

use std::collections::BTreeMap;

use anyhow::{bail, Context, Result};
use byoc_exec::{ExecOptions, ExternalModules};
use byoc_ir::{Module, Tensor};
use byoc_pipeline::verify::{
    top1_agreement, verify_partitioned_observed, Accuracy, OutputError, Verification, VerifyStep,
};
use byoc_pipeline::HostCodegen;
use clap::Args;
use indicatif::ProgressBar;

use super::flags;
use super::host_codegen::{print_fallbacks, HostCodegenArgs};
use super::targets::{compile, load, TargetArgs};
use super::{quantize_module, CheckFailed, QuantizeOptions};
use crate::inputs::resolve_inputs;
use crate::progress;

/// Arguments of `byoc verify`.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The model (.relay or .onnx).
    pub model: PathBuf,
    /// Targets and plugins to verify against the host's reference kernels (none: the compiled
    /// host code of the default `--host-codegen llvm` is checked against them; at least one
    /// with `--host-codegen kernels`).
    #[command(flatten)]
    pub targets: TargetArgs,
    /// Host code generation of the checked side (the reference side always runs the
    /// reference kernels).
    #[command(flatten)]
    pub host: HostCodegenArgs,
    /// Fix an ONNX input's shape (symbolic dimensions): NAME=D0,D1,... (repeatable).
    #[arg(long = "input-shape", value_name = "NAME=DIMS")]
    pub input_shapes: Vec<String>,
    /// Inputs as an .npz keyed by the model's input names.
    #[arg(long)]
    pub inputs: Option<PathBuf>,
    /// Seed for the inputs not given in --inputs.
    #[arg(long, value_name = "SEED", default_value_t = 0)]
    pub random_inputs: u64,
    /// Input samples to compare on (--inputs or seed --random-inputs, then the following
    /// seeds): the largest errors over all, and (N > 1, or with --quantize) each output's top-1
    /// agreement over its rows (last axis as classes).
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub samples: u64,
    /// Relative tolerance: |partitioned - host| <= rtol * max(|host|, floor).
    #[arg(long, default_value_t = 1e-4, value_parser = tolerance)]
    pub rtol: f64,
    /// Absolute floor of the relative tolerance, as a fraction of the output's largest |value|.
    #[arg(long, default_value_t = 1e-2, value_parser = tolerance)]
    pub floor: f64,
    /// Worker threads (0: all cores).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// With --quantize: the quantizer's configuration and calibration data.
    #[command(flatten)]
    pub quantizer: QuantizeOptions,
    /// With --quantize or --dtype: the smallest cosine similarity accepted for each output.
    #[arg(long, default_value_t = 0.99, value_parser = cosine)]
    pub min_cosine: f64,
}

/// A tolerance: a finite number, at least 0 (NaN would make every comparison pass).
fn tolerance(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!("'{text}' is not a finite number of at least 0")),
    }
}

/// A cosine similarity bound: a number from -1 to 1 (NaN would make every check pass, above 1
/// none).
fn cosine(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(v) if (-1.0..=1.0).contains(&v) => Ok(v),
        _ => Err(format!("'{text}' is not a number from -1 to 1")),
    }
}

/// [`byoc_pipeline::verify::verify_partitioned`] with a spinner over each run.
fn verify_partitioned(
    host: &Module,
    partitioned: &Module,
    externals: &ExternalModules,
    inputs: &BTreeMap<String, Tensor>,
    options: ExecOptions,
    floor: f64,
) -> Result<Verification> {
    let mut shown = ProgressBar::hidden();
    let checked = verify_partitioned_observed(
        host,
        partitioned,
        externals,
        inputs,
        options,
        floor,
        &mut |step| {
            shown.finish_and_clear();
            shown = progress::spinner(match step {
                VerifyStep::HostOnly => "running host-only",
                VerifyStep::Partitioned => "running partitioned",
                _ => "verifying",
            });
        },
    );
    shown.finish_and_clear();
    Ok(checked?)
}

/// `byoc verify --quantize` and `byoc verify --dtype D`: the float model on the reference
/// kernels against the quantized model, or the model converted to the datatype, (on the host,
/// or partitioned when targets are given, its host part compiled as `--host-codegen` says)
/// over `--samples` inputs.
fn verify_converted(args: &VerifyArgs) -> Result<()> {
    let name = args.model.display().to_string();
    let float = load(&args.model, &args.input_shapes, &args.targets.plugin_paths)?;
    let (converted, what) = if args.targets.quantize {
        if args.targets.dtype.is_some() {
            bail!("{name}: --quantize and --dtype exclude each other");
        }
        (
            quantize_module(&args.quantizer, &float, &name)?,
            "quantized",
        )
    } else {
        (args.targets.in_datatype(float.clone(), &name)?, "converted")
    };
    let options = ExecOptions {
        threads: args.threads,
        profile: false,
        memory_budget: None,
    };
    let compiled = compile(&converted, &args.targets, &args.host, options, &name)?;
    print_fallbacks(compiled.fallbacks());
    let (converted, externals) = (compiled.module(), compiled.externals());
    let mut accuracy: BTreeMap<String, Accuracy> = BTreeMap::new();
    for i in 0..args.samples.max(1) {
        let npz = if i == 0 { args.inputs.as_deref() } else { None };
        let seed = args.random_inputs.wrapping_add(i);
        let inputs = resolve_inputs(&float, npz, Some(seed)).map_err(flags::inputs(&name))?;
        let checked =
            verify_partitioned(&float, converted, externals, &inputs, options, args.floor)?;
        for (out, want) in &checked.host {
            let got = checked
                .partitioned
                .get(out)
                .with_context(|| format!("the {what} model has no output '{out}'"))?;
            // The class axis is the last one longer than 1 ((1, 1000, 1, 1) as much as (1, 1000)).
            let classes = want
                .shape()
                .iter()
                .rev()
                .find(|&&d| d > 1)
                .copied()
                .unwrap_or(1);
            accuracy.entry(out.clone()).or_default().add(
                &want.to_f64_vec(),
                &got.to_f64_vec(),
                classes,
            );
        }
    }
    let mut failed = Vec::new();
    for (out, a) in &accuracy {
        let ok = a.cosine() >= args.min_cosine;
        let top1 = if a.top1_rows > 0 {
            format!("{}/{}", a.top1_agree, a.top1_rows)
        } else {
            "n/a".to_string()
        };
        // The datatype report adds the mean error; the quantized one keeps its format.
        let mean = if args.targets.dtype.is_some() {
            format!(" mean_abs_err={:.3e}", a.mean_abs())
        } else {
            String::new()
        };
        println!(
            "{out}: max_abs_err={:.3e}{mean} cosine={:.5} top1_agreement={top1} {}",
            a.max_abs,
            a.cosine(),
            if ok { "ok" } else { "FAILED" }
        );
        if !ok {
            failed.push(out.clone());
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(CheckFailed(format!(
            "{name}: {what} outputs {} have cosine similarity below {}",
            failed.join(", "),
            args.min_cosine
        ))
        .into())
    }
}

/// Runs `byoc verify`.
pub fn verify(args: &VerifyArgs) -> Result<()> {
    if args.targets.quantize || args.targets.dtype.is_some() {
        return verify_converted(args);
    }
    if args.targets.is_empty() && args.host.codegen() != HostCodegen::Llvm {
        bail!("verify --host-codegen kernels compares a partitioned build with the reference kernels: give at least one --target or --target-spec (without one, the default --host-codegen llvm checks the compiled host code)");
    }
    let name = args.model.display().to_string();
    let host = load(&args.model, &args.input_shapes, &args.targets.plugin_paths)?;
    let options = ExecOptions {
        threads: args.threads,
        profile: false,
        memory_budget: None,
    };
    let compiled = compile(&host, &args.targets, &args.host, options, &name)?;
    print_fallbacks(compiled.fallbacks());
    let (partitioned, externals) = (compiled.module(), compiled.externals());
    // Per output: the largest errors over the samples and the top-1 (agreeing, rows) sums.
    let mut worst: Vec<(OutputError, Option<(usize, usize)>)> = Vec::new();
    for seed in args.random_inputs..args.random_inputs.saturating_add(args.samples) {
        let inputs = resolve_inputs(&host, args.inputs.as_deref(), Some(seed))
            .map_err(flags::inputs(&name))?;
        let checked =
            verify_partitioned(&host, partitioned, externals, &inputs, options, args.floor)?;
        for (i, e) in checked.errors.into_iter().enumerate() {
            let top1 = top1_agreement(&checked.host[&e.name], &checked.partitioned[&e.name]);
            match worst.get_mut(i) {
                None => worst.push((e, top1)),
                Some((w, sum)) => {
                    w.max_abs = w.max_abs.max(e.max_abs);
                    w.max_rel = w.max_rel.max(e.max_rel);
                    *sum = sum.zip(top1).map(|((a, r), (b, s))| (a + b, r + s));
                }
            }
        }
    }
    let mut failed = Vec::new();
    for (e, top1) in worst {
        let ok = e.max_rel <= args.rtol;
        let over = match top1 {
            Some((agree, rows)) if args.samples > 1 => {
                format!(" top1_agree={agree}/{rows} over {} samples", args.samples)
            }
            _ if args.samples > 1 => format!(" over {} samples", args.samples),
            _ => String::new(),
        };
        println!(
            "{}: max_abs_err={:.3e} max_rel_err={:.3e}{over} {}",
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
