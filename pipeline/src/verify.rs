//! Checking a partitioned build against the host: run a module host-only and partitioned on
//! the same inputs and compare every output ([`verify_partitioned`], [`compare_outputs`]),
//! with the top-1 agreement of classifier outputs ([`top1_agreement`]) and the accuracy of a
//! quantized or converted model over several samples ([`Accuracy`]). `byoc verify` and the
//! examples use it; [`verify_partitioned_observed`] tells a caller each run as it starts (the
//! driver shows a spinner over each).

use std::collections::BTreeMap;

use byoc_exec::{ConcatParts, ExecError, ExecOptions, Executor, ExternalModules, Profile};
use byoc_ir::{Module, Tensor, TensorType};
use thiserror::Error;

use crate::inputs::output_map;

/// Errors of [`verify_partitioned`] and [`compare_outputs`].
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum VerifyError {
    /// The host-only (reference) run failed.
    #[error("host-only run failed")]
    HostRun(#[source] ExecError),
    /// The partitioned run failed.
    #[error("partitioned run failed")]
    PartitionedRun(#[source] ExecError),
    /// An output of the host-only run is missing from the partitioned run.
    #[error("the partitioned build has no output '{name}'")]
    MissingOutput {
        /// The output's name.
        name: String,
    },
    /// An output has another type in the partitioned run than in the host-only run.
    #[error("output '{name}': partitioned run gives {partitioned}, host gives {host}")]
    TypeMismatch {
        /// The output's name.
        name: String,
        /// Its type in the partitioned run.
        partitioned: TensorType,
        /// Its type in the host-only run.
        host: TensorType,
    },
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
) -> Result<Vec<OutputError>, VerifyError> {
    host.iter()
        .map(|(name, want)| {
            let got = partitioned
                .get(name)
                .ok_or_else(|| VerifyError::MissingOutput { name: name.clone() })?;
            compare(name, want, got, floor)
        })
        .collect()
}

fn compare(
    name: &str,
    host: &Tensor,
    partitioned: &Tensor,
    floor: f64,
) -> Result<OutputError, VerifyError> {
    if host.ty() != partitioned.ty() {
        return Err(VerifyError::TypeMismatch {
            name: name.to_string(),
            partitioned: partitioned.ty().clone(),
            host: host.ty().clone(),
        });
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

/// How many rows of `partitioned` have their largest value at the same index as `host`'s,
/// and how many rows there are. The classes are the last axis of more than one value (a
/// classifier's `(1, 1000, 1, 1)` has 1000 classes in one row), the rows all axes before it.
/// `None` when no axis has more than one value. A row with a NaN on either side disagrees.
pub fn top1_agreement(host: &Tensor, partitioned: &Tensor) -> Option<(usize, usize)> {
    let classes = host.shape().iter().rev().copied().find(|&d| d != 1)?;
    if classes < 2 || host.ty() != partitioned.ty() {
        return None;
    }
    let argmax = |row: &[f64]| -> Option<usize> {
        let mut best = 0;
        for (i, v) in row.iter().enumerate() {
            if v.is_nan() {
                return None;
            }
            if *v > row[best] {
                best = i;
            }
        }
        Some(best)
    };
    let (want, got) = (host.to_f64_vec(), partitioned.to_f64_vec());
    let rows = want.len() / classes;
    let agree = want
        .chunks_exact(classes)
        .zip(got.chunks_exact(classes))
        .filter(|(w, g)| argmax(w).is_some_and(|i| argmax(g) == Some(i)))
        .count();
    Some((agree, rows))
}

/// How close a quantized model's output is to the float model's over several samples.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Accuracy {
    /// The largest absolute error.
    pub max_abs: f64,
    /// Σ |float - quantized|.
    sum_abs: f64,
    /// Values compared.
    count: usize,
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
            let err = if err.is_nan() { f64::INFINITY } else { err };
            self.max_abs = self.max_abs.max(err);
            self.sum_abs += err;
            self.count += 1;
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

    /// The mean absolute error (0 before any value).
    pub fn mean_abs(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum_abs / self.count as f64
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

/// A step of [`verify_partitioned_observed`], for progress display.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum VerifyStep {
    /// The host-only run starts.
    HostOnly,
    /// The partitioned run starts.
    Partitioned,
}

/// Runs `host` on the host executor alone and `partitioned` with its compiled partitions
/// (`externals`) on the same `inputs`, then compares every output with `floor` (see
/// [`compare_outputs`]). The host-only run is the reference: the reference kernels, each
/// concatenation copying its parts ([`ConcatParts::Copied`]).
pub fn verify_partitioned(
    host: &Module,
    partitioned: &Module,
    externals: &ExternalModules,
    inputs: &BTreeMap<String, Tensor>,
    options: ExecOptions,
    floor: f64,
) -> Result<Verification, VerifyError> {
    verify_partitioned_observed(
        host,
        partitioned,
        externals,
        inputs,
        options,
        floor,
        &mut |_| {},
    )
}

/// [`verify_partitioned`], telling `observe` each [`VerifyStep`] as it starts.
pub fn verify_partitioned_observed(
    host: &Module,
    partitioned: &Module,
    externals: &ExternalModules,
    inputs: &BTreeMap<String, Tensor>,
    options: ExecOptions,
    floor: f64,
    observe: &mut dyn FnMut(VerifyStep),
) -> Result<Verification, VerifyError> {
    let host_only = ExecOptions {
        profile: false,
        ..options
    };
    observe(VerifyStep::HostOnly);
    let want = Executor::with_concat_parts(
        host,
        host_only,
        &ExternalModules::new(),
        ConcatParts::Copied,
    )
    .and_then(|e| e.run_named(inputs))
    .map_err(VerifyError::HostRun)?;
    observe(VerifyStep::Partitioned);
    let (got, profile) = Executor::with_externals(partitioned, options, externals)
        .and_then(|executor| {
            let outputs = executor.run_named(inputs)?;
            Ok((outputs, executor.last_profile()))
        })
        .map_err(VerifyError::PartitionedRun)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn t(shape: &[usize], v: &[f32]) -> Tensor {
        Tensor::from_vec(shape.to_vec(), v.to_vec()).unwrap()
    }

    #[test]
    fn top1_agreement_counts_rows_with_the_same_largest_class() {
        let host = t(&[3, 3], &[0.1, 0.7, 0.2, 0.5, 0.4, 0.1, 0.0, 0.0, 1.0]);
        // Row 0 agrees, row 1 moves its top class, row 2 has a NaN (disagrees).
        let got = t(&[3, 3], &[0.2, 0.6, 0.2, 0.4, 0.5, 0.1, f32::NAN, 0.0, 1.0]);
        assert_eq!(top1_agreement(&host, &got), Some((1, 3)));
        assert_eq!(top1_agreement(&host, &host), Some((3, 3)));
        // Trailing axes of one value are not the classes.
        let col = |v: &[f32]| t(&[1, 3, 1, 1], v);
        assert_eq!(
            top1_agreement(&col(&[0.0, 2.0, 1.0]), &col(&[0.0, 1.0, 2.0])),
            Some((0, 1))
        );
        // No classes: no axis of more than one value.
        assert_eq!(
            top1_agreement(&t(&[1, 1], &[1.0]), &t(&[1, 1], &[2.0])),
            None
        );
        // A type mismatch is not compared.
        assert_eq!(top1_agreement(&host, &t(&[9], &[0.0; 9])), None);
    }

    #[test]
    fn compare_outputs_names_a_missing_output_and_a_type_mismatch() {
        let host = BTreeMap::from([("out".to_string(), t(&[2], &[1.0, 2.0]))]);
        let err = compare_outputs(&host, &BTreeMap::new(), 1e-2).unwrap_err();
        assert_eq!(err.to_string(), "the partitioned build has no output 'out'");
        let other = BTreeMap::from([("out".to_string(), t(&[3], &[1.0, 2.0, 3.0]))]);
        let err = compare_outputs(&host, &other, 1e-2).unwrap_err();
        assert!(
            matches!(&err, VerifyError::TypeMismatch { name, .. } if name == "out"),
            "{err}"
        );
        assert!(err
            .to_string()
            .starts_with("output 'out': partitioned run gives "));
        let same = compare_outputs(&host, &host, 1e-2).unwrap();
        assert_eq!((same[0].max_abs, same[0].max_rel), (0.0, 0.0));
    }
}
