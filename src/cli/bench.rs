//! `byoc bench`: time repeated runs of a model and print one JSON object.
//!
//! The model is planned once; `--warmup` untimed runs fill the executor's scratch pool and
//! caches, then `--iters` timed runs give the median, minimum and maximum wall-clock latency.
//! Each timed run is profiled, and the kernel time is split by the target that ran it
//! (`shares`, summing to 1): `host` for the host executor's kernels, `llvm` for the compiled
//! host functions (`--host-codegen llvm`, the default), and each target chosen with
//! `--target` (or named by an artifact) for the calls of its partitions. Loading and the
//! iterations show progress on a terminal ([`crate::progress`]); piped output stays quiet and
//! holds only the JSON.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use byoc_exec::{AcceleratorCounters, ExecOptions, Profile};
use clap::Args;

use super::flags;
use super::host_codegen::HostCodegenArgs;
use super::run::load_runnable;
use super::targets::TargetArgs;
use super::trust::TrustArgs;
use crate::inputs::resolve_inputs;
use crate::progress;
use crate::target::HOST_TARGET;

/// The target name of kernels the host executor runs itself.
const HOST: &str = "host";

/// Arguments of `byoc bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// The model (.relay or .onnx) or an artifact (.byoc).
    pub model: PathBuf,
    /// Targets and plugins (for a model; an artifact names its own plugins).
    #[command(flatten)]
    pub targets: TargetArgs,
    /// Which artifacts may be loaded.
    #[command(flatten)]
    pub trust: TrustArgs,
    /// Host code generation.
    #[command(flatten)]
    pub host: HostCodegenArgs,
    /// Fix an ONNX input's shape (symbolic dimensions): NAME=D0,D1,... (repeatable).
    #[arg(long = "input-shape", value_name = "NAME=DIMS")]
    pub input_shapes: Vec<String>,
    /// Inputs as an .npz keyed by the model's input names (default: seeded random inputs).
    #[arg(long)]
    pub inputs: Option<PathBuf>,
    /// Seed of the random values for inputs not given in --inputs.
    #[arg(long, value_name = "SEED", default_value_t = 0)]
    pub random_inputs: u64,
    /// Worker threads (0: all cores).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// Timed runs.
    #[arg(long, default_value_t = 20)]
    pub iters: usize,
    /// Untimed runs before the timed ones.
    #[arg(long, default_value_t = 3)]
    pub warmup: usize,
}

/// The result of a benchmark.
#[derive(Clone, Debug, PartialEq)]
pub struct BenchReport {
    /// Median latency of the timed runs.
    pub median: Duration,
    /// Fastest timed run.
    pub min: Duration,
    /// Slowest timed run.
    pub max: Duration,
    /// Number of timed runs.
    pub iters: usize,
    /// Untimed warm-up runs.
    pub warmup: usize,
    /// Worker threads the executor used.
    pub threads: usize,
    /// Fraction of kernel time per target, summing to 1 (empty when no kernel ran).
    pub shares: BTreeMap<String, f64>,
    /// The accelerator counters of the last timed run, per partition that reports any.
    pub accelerators: Vec<AcceleratorCounters>,
}

impl BenchReport {
    /// The report as one JSON object (`median_ms`, `min_ms`, `max_ms`, `iters`, `warmup`,
    /// `threads`, `shares`, and `accelerators`: `[{"function", "target", counters...}]`).
    pub fn to_json(&self) -> String {
        let ms = |d: Duration| format!("{:.4}", d.as_secs_f64() * 1e3);
        let shares: Vec<String> = self
            .shares
            .iter()
            .map(|(t, s)| format!("{}: {s:.4}", json_string(t)))
            .collect();
        let accelerators: Vec<String> = self
            .accelerators
            .iter()
            .map(|a| {
                let mut fields = vec![
                    format!("\"function\": {}", json_string(&a.function)),
                    format!("\"target\": {}", json_string(&a.target)),
                ];
                fields.extend(a.counters.iter().map(|(k, v)| {
                    let v = if v.is_finite() {
                        v.to_string()
                    } else {
                        "null".to_string()
                    };
                    format!("{}: {v}", json_string(k))
                }));
                format!("{{{}}}", fields.join(", "))
            })
            .collect();
        format!(
            "{{\"median_ms\": {}, \"min_ms\": {}, \"max_ms\": {}, \"iters\": {}, \"warmup\": {}, \
             \"threads\": {}, \"shares\": {{{}}}, \"accelerators\": [{}]}}",
            ms(self.median),
            ms(self.min),
            ms(self.max),
            self.iters,
            self.warmup,
            self.threads,
            shares.join(", "),
            accelerators.join(", ")
        )
    }
}

/// A JSON string literal.
fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Kernel time per target over `profiles`, as fractions of the total.
fn target_shares(profiles: &[Profile]) -> BTreeMap<String, f64> {
    let mut per_target: BTreeMap<String, Duration> = BTreeMap::new();
    for call in profiles.iter().flat_map(|p| &p.calls) {
        let target = if call.target == HOST_TARGET {
            HOST
        } else {
            call.target.as_str()
        };
        *per_target.entry(target.to_string()).or_default() += call.time;
    }
    let total: f64 = per_target.values().map(Duration::as_secs_f64).sum();
    per_target
        .into_iter()
        .map(|(t, d)| {
            let share = if total > 0.0 {
                d.as_secs_f64() / total
            } else {
                0.0
            };
            (t, share)
        })
        .collect()
}

/// Runs `byoc bench` and prints the report.
pub fn bench(args: &BenchArgs) -> Result<()> {
    println!("{}", run_bench(args)?.to_json());
    Ok(())
}

/// The most timed (or warm-up) runs one benchmark makes.
const MAX_RUNS: usize = 1_000_000;

/// Loads, plans and times the model as `args` say.
pub fn run_bench(args: &BenchArgs) -> Result<BenchReport> {
    if args.iters == 0 {
        bail!("--iters must be at least 1");
    }
    // The timings of every run are kept: the counts size memory, so they are bounded.
    for (flag, runs) in [("--iters", args.iters), ("--warmup", args.warmup)] {
        if runs > MAX_RUNS {
            bail!("{flag} {runs}: at most {MAX_RUNS} runs");
        }
    }
    let compiled = load_runnable(
        &args.model,
        &args.targets,
        &args.trust,
        &args.input_shapes,
        &args.host,
        ExecOptions {
            threads: args.threads,
            profile: true,
            memory_budget: None,
        },
    )?;
    let executor = compiled
        .executor()
        .with_context(|| format!("{}: cannot build the host plan", args.model.display()))?;
    let inputs = resolve_inputs(
        compiled.module(),
        args.inputs.as_deref(),
        Some(args.random_inputs),
    )
    .map_err(flags::inputs(&args.model.display().to_string()))?;

    let bar = progress::bar((args.warmup + args.iters) as u64, "bench");
    let run = || -> Result<Duration> {
        let start = Instant::now();
        executor
            .run_named(&inputs)
            .with_context(|| format!("{}: execution failed", args.model.display()))?;
        let elapsed = start.elapsed();
        bar.inc(1);
        Ok(elapsed)
    };
    for _ in 0..args.warmup {
        run()?;
    }
    let mut times = Vec::with_capacity(args.iters);
    let mut profiles = Vec::with_capacity(args.iters);
    for _ in 0..args.iters {
        times.push(run()?);
        profiles.extend(executor.last_profile());
    }
    bar.finish_and_clear();
    times.sort();
    let median = if times.len() % 2 == 1 {
        times[times.len() / 2]
    } else {
        (times[times.len() / 2 - 1] + times[times.len() / 2]) / 2
    };
    Ok(BenchReport {
        median,
        min: times[0],
        max: times[times.len() - 1],
        iters: args.iters,
        warmup: args.warmup,
        threads: executor.threads(),
        shares: target_shares(&profiles),
        accelerators: compiled
            .externals()
            .counters()
            .with_context(|| format!("{}: accelerator counters", args.model.display()))?,
    })
}
