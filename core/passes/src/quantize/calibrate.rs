//! The calibrate step: a power-of-two scale exponent for every quantization point.
//!
//! - `global-scale`: every point gets `global_scale / 128` (TVM's `_global_scale`).
//! - `percentile` and `kl`: `@main` runs in float on each calibration sample with the points
//!   as extra outputs; each point's threshold is TVM's `_find_scale_by_percentile`
//!   (`|x|` at rank `floor(0.99999 · n)` of the values of all samples) or
//!   [`super::kl_divergence_threshold`], rounded up to a power of two so requantization stays
//!   a shift (TVM would take a fixed-point multiply there; VTA has no multiplier in its ALU).
//!
//! Both data-aware modes keep every value each point takes over all samples (TVM keeps them
//! too: the percentile is exact). Before the first run those values, the samples and the
//! executor's buffers are counted together against the memory budget
//! ([`byoc_ir::memory`]), so a calibration set too large for it is refused up front.

use std::collections::HashMap;

use rayon::prelude::*;

use byoc_exec::{ExecOptions, Executor};
use byoc_ir::memory::{with_budget, RunTally};
use byoc_ir::tensor::Tensor;
use byoc_ir::{DType, ExprId, Module, TensorType, Type};

use super::kl::kl_divergence_threshold;
use super::plan::Plan;
use super::realize::int8_exponent;
use super::{CalibrateMode, QConfig, QuantizeError};

/// TVM's default percentile.
const PERCENTILE: f64 = 0.99999;

/// The exponent `global_scale / 128 = 2^e`, checking that it is a power of two.
fn global_exponent(global_scale: f64) -> Result<i32, QuantizeError> {
    let log = global_scale.log2();
    if !(global_scale > 0.0 && global_scale.is_finite() && log == log.round()) {
        return Err(QuantizeError::GlobalScale(global_scale));
    }
    Ok(log as i32 - 7)
}

/// TVM's `_find_scale_by_percentile`: the element of rank `floor(n · 0.99999)` of `|x|`;
/// `values` become their absolute values, partly reordered.
pub(super) fn percentile_threshold(values: &mut [f32]) -> f32 {
    if values.is_empty() {
        return 0.0;
    }
    values.iter_mut().for_each(|v| *v = v.abs());
    let k = ((values.len() as f64 * PERCENTILE) as usize).min(values.len() - 1);
    let (_, v, _) = values.select_nth_unstable_by(k, f32::total_cmp);
    *v
}

/// Counts what calibration holds at once against the memory budget: the samples, and every
/// value of every point over all samples (`float32`, the executor's buffers come on top, in
/// the budget that is left). Returns that budget.
fn calibration_memory(
    main: &byoc_ir::Function,
    points: &[ExprId],
    samples: &[Vec<Tensor>],
) -> Result<u64, QuantizeError> {
    let mut tally = RunTally::new();
    let refuse = |source| QuantizeError::Memory {
        samples: samples.len(),
        source,
    };
    for t in samples.iter().flatten() {
        tally.add(t.ty(), t.as_bytes().len()).map_err(refuse)?;
    }
    for &point in points {
        if let Some(Type::Tensor(ty)) = main.ty(point) {
            let kept = TensorType::new(ty.shape.clone(), DType::Float32);
            tally.add_batch(&kept, samples.len()).map_err(refuse)?;
        }
    }
    Ok(tally.remaining())
}

/// The float values each point takes over all samples, point by point.
fn collect(
    module: &Module,
    plan: &Plan,
    samples: &[Vec<Tensor>],
    progress: Option<&(dyn Fn(usize, usize) + Send + Sync)>,
) -> Result<Vec<Vec<f32>>, QuantizeError> {
    let main = module.main()?;
    let mut b = main.to_builder();
    let outputs = b.tuple(&plan.points)?;
    let probe = b.finish(main.params.clone(), outputs, main.attrs.clone())?;
    let left = calibration_memory(main, &plan.points, samples)?;
    let mut probe_module = module.clone();
    probe_module.insert("main", probe);
    let exec = with_budget(Some(left), || {
        Executor::new(&probe_module, ExecOptions::default())
    })
    .map_err(|source| QuantizeError::Run {
        sample: 0,
        source: Box::new(source),
    })?;
    let mut values = vec![Vec::new(); plan.points.len()];
    for (i, sample) in samples.iter().enumerate() {
        if sample.len() != main.params.len() {
            return Err(QuantizeError::SampleArity {
                sample: i,
                got: sample.len(),
                want: main.params.len(),
            });
        }
        let outs = exec.run(sample).map_err(|source| QuantizeError::Run {
            sample: i,
            source: Box::new(source),
        })?;
        for (acc, t) in values.iter_mut().zip(outs) {
            match t.as_slice::<f32>() {
                Ok(v) => acc.extend_from_slice(v),
                Err(_) => acc.extend(t.to_f64_vec().into_iter().map(|v| v as f32)),
            }
        }
        if let Some(report) = progress {
            report(i + 1, samples.len());
        }
    }
    Ok(values)
}

/// The exponent of every quantization point of `module`'s `@main` under `plan`.
pub(super) fn scales(
    module: &Module,
    plan: &Plan,
    config: &QConfig,
    samples: &[Vec<Tensor>],
    progress: Option<&(dyn Fn(usize, usize) + Send + Sync)>,
) -> Result<HashMap<ExprId, i32>, QuantizeError> {
    let global = global_exponent(config.global_scale)?;
    if config.calibrate_mode == CalibrateMode::GlobalScale || plan.points.is_empty() {
        return Ok(plan.points.iter().map(|&p| (p, global)).collect());
    }
    let mut values = collect(module, plan, samples, progress)?;
    let thresholds: Vec<f32> = values
        .par_iter_mut()
        .map(|v| match config.calibrate_mode {
            CalibrateMode::Kl => kl_divergence_threshold(v),
            _ => percentile_threshold(v),
        })
        .collect();
    Ok(plan
        .points
        .iter()
        .zip(thresholds)
        .map(|(&p, t)| {
            let e = if t > 0.0 {
                int8_exponent(f64::from(t))
            } else {
                global
            };
            (p, e)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn global_scale_must_be_a_power_of_two() {
        assert_eq!(global_exponent(8.0), Ok(-4));
        assert_eq!(global_exponent(1.0), Ok(-7));
        assert!(global_exponent(6.0).is_err());
        assert!(global_exponent(0.0).is_err());
        assert!(global_exponent(f64::NAN).is_err());
    }

    #[test]
    fn percentile_picks_the_rank_numpy_partition_gives() {
        // 200000 values 1..=200000: rank floor(200000 * 0.99999) = 199998 -> value 199999.
        let mut values: Vec<f32> = (1..=200_000).rev().map(|v| v as f32).collect();
        assert_eq!(percentile_threshold(&mut values), 199_999.0);
        assert_eq!(percentile_threshold(&mut [-3.0]), 3.0);
    }
}
