//! `byoc verify`: run a model host-only and partitioned for targets on the same inputs and
//! report the largest error of every output; exit code 1 when any exceeds the tolerance.
//! Importing, compiling and both runs show progress on a terminal ([`super::progress`]).

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use byoc_core::exec::{ExecError, ExecOptions, Executor, ExternalModules, Profile};
use byoc_core::{Module, Tensor};
use clap::Args;

use super::inputs::{output_map, resolve_inputs};
use super::progress;
use super::targets::{load, partition_and_compile, TargetArgs};
use super::{CheckFailed, QuantizeOptions};

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
    /// With --quantize: the quantizer's configuration and calibration data.
    #[command(flatten)]
    pub quantizer: QuantizeOptions,
    /// With --quantize: input samples to compare on (--inputs or seed --random-inputs, then
    /// the following seeds).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub samples: u64,
    /// With --quantize: the smallest cosine similarity accepted for each output.
    #[arg(long, default_value_t = 0.99)]
    pub min_cosine: f64,
}

/// How close a quantized model's output is to the float model's over several samples.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Accuracy {
    /// The largest absolute error.
    pub max_abs: f64,
    /// Σ float · quantized.
    dot: f64,
    /// Σ float².
    float_sq: f64,
    /// Σ quantized².
    quant_sq: f64,
    /// Rows (the last axis is the class axis) whose arg-max agrees.
    pub top1_agree: usize,
    /// Rows compared for top-1 (0 when the last axis has fewer than two classes).
    pub top1_rows: usize,
}

impl Accuracy {
    /// Adds one sample's float and quantized values of an output of `classes` classes.
    pub fn add(&mut self, float: &[f64], quantized: &[f64], classes: usize) {
        for (&f, &q) in float.iter().zip(quantized) {
            let err = (f - q).abs();
            self.max_abs = self
                .max_abs
                .max(if err.is_nan() { f64::INFINITY } else { err });
            self.dot += f * q;
            self.float_sq += f * f;
            self.quant_sq += q * q;
        }
        if classes < 2 {
            return;
        }
        let argmax = |row: &[f64]| {
            row.iter()
                .enumerate()
                .fold((0, f64::NEG_INFINITY), |best, (i, &v)| {
                    if v > best.1 {
                        (i, v)
                    } else {
                        best
                    }
                })
                .0
        };
        for (f, q) in float.chunks(classes).zip(quantized.chunks(classes)) {
            self.top1_rows += 1;
            self.top1_agree += usize::from(argmax(f) == argmax(q));
        }
    }

    /// The cosine similarity of all float and quantized values (1 when both are all zero).
    pub fn cosine(&self) -> f64 {
        if self.float_sq == 0.0 && self.quant_sq == 0.0 {
            return 1.0;
        }
        self.dot / (self.float_sq.sqrt() * self.quant_sq.sqrt()).max(f64::MIN_POSITIVE)
    }
}

/// The comparison of one output of a partitioned run with the host-only run.
#[derive(Clone, Debug, PartialEq)]
pub struct OutputError {
    /// The output's name.
    pub name: String,
    /// The largest absolute error.
    pub max_abs: f64,
    /// The largest error relative to max(|host|, floor · max|host|).
    pub max_rel: f64,
}

/// Compares every output of a partitioned run (`partitioned`) with the host-only run
/// (`host`), both keyed by output name. Errors are relative to max(|host|, `floor` · the
/// output's largest |host| value); a NaN on one side only is an infinite error. Fails when an
/// output is missing or its type differs.
pub fn compare_outputs(
    host: &BTreeMap<String, Tensor>,
    partitioned: &BTreeMap<String, Tensor>,
    floor: f64,
) -> Result<Vec<OutputError>> {
    host.iter()
        .map(|(name, want)| {
            let got = partitioned
                .get(name)
                .with_context(|| format!("the partitioned build has no output '{name}'"))?;
            compare(name, want, got, floor)
        })
        .collect()
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

/// A partitioned run checked against the host-only run on the same inputs.
#[derive(Clone, Debug)]
pub struct Verification {
    /// The host-only outputs, by output name.
    pub host: BTreeMap<String, Tensor>,
    /// The partitioned outputs, by output name.
    pub partitioned: BTreeMap<String, Tensor>,
    /// Each output's largest error (see [`compare_outputs`]).
    pub errors: Vec<OutputError>,
    /// The partitioned run's profile, when `options.profile` asked for it.
    pub profile: Option<Profile>,
}

/// Runs `host` on the host executor alone and `partitioned` with its compiled partitions
/// (`externals`) on the same `inputs`, then compares every output with `floor` (see
/// [`compare_outputs`]). Both runs show a spinner on a terminal.
pub fn verify_partitioned(
    host: &Module,
    partitioned: &Module,
    externals: &ExternalModules,
    inputs: &BTreeMap<String, Tensor>,
    options: ExecOptions,
    floor: f64,
) -> Result<Verification> {
    let host_only = ExecOptions {
        profile: false,
        ..options
    };
    let want = progress::while_running("running host-only", || {
        Executor::new(host, host_only)
            .and_then(|e| e.run_named(inputs))
            .context("host-only run failed")
    })?;
    let (got, profile) = progress::while_running("running partitioned", || {
        let executor = Executor::with_externals(partitioned, options, externals)?;
        let outputs = executor.run_named(inputs)?;
        Ok::<_, ExecError>((outputs, executor.last_profile()))
    })
    .context("partitioned run failed")?;
    let host_outputs = output_map(host, want);
    let partitioned_outputs = output_map(partitioned, got);
    let errors = compare_outputs(&host_outputs, &partitioned_outputs, floor)?;
    Ok(Verification {
        host: host_outputs,
        partitioned: partitioned_outputs,
        errors,
        profile,
    })
}

/// `byoc verify --quantize`: the float model on the host against the quantized model (on the
/// host, or partitioned when targets are given) over `--samples` inputs.
fn verify_quantized(args: &VerifyArgs) -> Result<()> {
    let name = args.model.display().to_string();
    let float = load(&args.model, &args.input_shapes)?;
    let quantized = args.quantizer.quantize(&float, &name)?;
    let (quantized, externals) = if args.targets.is_empty() {
        (quantized, ExternalModules::new())
    } else {
        let targets = args.targets.with_executor_threads(args.threads);
        partition_and_compile(&quantized, &targets, &name)?
    };
    let options = ExecOptions {
        threads: args.threads,
        profile: false,
    };
    let mut accuracy: BTreeMap<String, Accuracy> = BTreeMap::new();
    for i in 0..args.samples.max(1) {
        let npz = if i == 0 { args.inputs.as_deref() } else { None };
        let seed = args.random_inputs.wrapping_add(i);
        let inputs = resolve_inputs(&float, npz, Some(seed))?;
        let checked =
            verify_partitioned(&float, &quantized, &externals, &inputs, options, args.floor)?;
        for (out, want) in &checked.host {
            let got = checked
                .partitioned
                .get(out)
                .with_context(|| format!("the quantized model has no output '{out}'"))?;
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
        println!(
            "{out}: max_abs_err={:.3e} cosine={:.5} top1_agreement={top1} {}",
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
            "{name}: quantized outputs {} have cosine similarity below {}",
            failed.join(", "),
            args.min_cosine
        ))
        .into())
    }
}

/// Runs `byoc verify`.
pub fn verify(args: &VerifyArgs) -> Result<()> {
    if args.targets.quantize {
        return verify_quantized(args);
    }
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
