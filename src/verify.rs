//! Checking a partitioned build against the host: run a module host-only and partitioned on
//! the same inputs and compare every output ([`verify_partitioned`], [`compare_outputs`]).
//! `byoc verify` and the examples use it; both runs show a spinner on a terminal.

use std::collections::BTreeMap;

use anyhow::{bail, Context, Result};
use byoc_core::exec::{ExecError, ExecOptions, Executor, ExternalModules, Profile};
use byoc_core::{Module, Tensor};

use crate::inputs::output_map;
use crate::progress;

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
