//! TVM's `kl_divergence` calibration: the clipping threshold whose 8-bit quantization of a
//! value histogram loses the least information (KL divergence), as
//! `relay.quantize.kl_divergence_scale` computes it (TVM's `MinimizeKL` in `calibrate.cc`,
//! after MXNet): a histogram of 8001 bins over `[-max|x|, max|x|]`, candidate thresholds from
//! 127 bins either side of zero outwards, outliers folded into the edge bins, 255 quantized
//! bins expanded back over the non-empty source bins, both distributions smoothed with
//! `eps = 1e-4`.
//!
//! Cost: `O(bins^2 / 2)` per call (about 32 million steps for 8001 bins).

/// Histogram bins (TVM's `num_bins`).
const NUM_BINS: usize = 8001;
/// Quantized bins for signed int8 (TVM's `num_quantized_bins`).
const NUM_QUANTIZED_BINS: usize = 255;

/// numpy's `np.histogram(values, bins, range=(-thres, thres))` counts.
fn histogram(values: &[f32], thres: f32, bins: usize) -> Vec<u64> {
    let mut hist = vec![0u64; bins];
    let (lo, width) = (-f64::from(thres), 2.0 * f64::from(thres));
    for &v in values {
        let v = f64::from(v);
        if !(lo..=-lo).contains(&v) {
            continue;
        }
        let i = (((v - lo) / width) * bins as f64) as usize;
        hist[i.min(bins - 1)] += 1;
    }
    hist
}

/// TVM's `SmoothDistribution`: moves `eps` of mass onto every zero entry, taken evenly from the
/// non-zero ones; `None` when all are zero or the non-zero ones cannot give that much.
fn smooth(p: &[f32]) -> Option<Vec<f32>> {
    const EPS: f32 = 1e-4;
    let zeros = p.iter().filter(|&&v| v == 0.0).count();
    let nonzeros = p.len() - zeros;
    if nonzeros == 0 {
        return None;
    }
    let eps1 = EPS * zeros as f32 / nonzeros as f32;
    if eps1 >= 1.0 {
        return None;
    }
    Some(
        p.iter()
            .map(|&v| if v == 0.0 { v + EPS } else { v - eps1 })
            .collect(),
    )
}

/// TVM's `ComputeEntropy`: `KL(p || q)` of the normalized distributions.
fn kl(p: &[f32], q: &[f32]) -> f32 {
    let (ps, qs) = (p.iter().sum::<f32>(), q.iter().sum::<f32>());
    p.iter()
        .zip(q)
        .map(|(&a, &b)| (a / ps, b / qs))
        .filter(|&(a, b)| a != 0.0 && b != 0.0)
        .map(|(a, b)| a * (a / b).ln())
        .sum()
}

/// The KL-minimizing threshold of `values` (0 when they are all 0 or there are none).
pub fn kl_divergence_threshold(values: &[f32]) -> f32 {
    let thres = values
        .iter()
        .filter(|v| v.is_finite())
        .fold(0f32, |m, v| m.max(v.abs()));
    if thres == 0.0 {
        return 0.0;
    }
    let hist = histogram(values, thres, NUM_BINS);
    let edge = |i: usize| -thres + 2.0 * thres * i as f32 / NUM_BINS as f32;
    let zero = NUM_BINS / 2;
    let half_q = NUM_QUANTIZED_BINS / 2;
    let mut best = (f32::INFINITY, edge(NUM_BINS));
    for i in half_q..=zero {
        let (start, stop) = (zero - i, zero + i + 1);
        let threshold = edge(stop);
        // As in TVM, the sliced histogram leaves its first bin empty (that bin's count goes
        // to the outlier sum) while `p` folds everything outside into its edge bins.
        let mut sliced: Vec<f32> = hist[start..stop].iter().map(|&c| c as f32).collect();
        sliced[0] = 0.0;
        let mut p = sliced.clone();
        let last = p.len() - 1;
        p[0] = hist[..=start].iter().sum::<u64>() as f32;
        p[last] = hist[stop - 1..].iter().sum::<u64>() as f32;
        let merged = sliced.len() / NUM_QUANTIZED_BINS;
        let mut quantized: Vec<f32> = (0..NUM_QUANTIZED_BINS)
            .map(|j| sliced[j * merged..(j + 1) * merged].iter().sum())
            .collect();
        quantized[NUM_QUANTIZED_BINS - 1] +=
            sliced[NUM_QUANTIZED_BINS * merged..].iter().sum::<f32>();
        let mut q = vec![0f32; sliced.len()];
        for (j, &mass) in quantized.iter().enumerate() {
            let lo = j * merged;
            let hi = if j == NUM_QUANTIZED_BINS - 1 {
                q.len()
            } else {
                (j + 1) * merged
            };
            let norm = sliced[lo..hi].iter().filter(|&&c| c != 0.0).count();
            if norm != 0 {
                for k in lo..hi {
                    if p[k] != 0.0 {
                        q[k] = mass / norm as f32;
                    }
                }
            }
        }
        let divergence = match (smooth(&p), smooth(&q)) {
            (Some(p), Some(q)) => kl(&p, &q),
            _ => f32::INFINITY,
        };
        if divergence < best.0 {
            best = (divergence, threshold);
        }
    }
    best.1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_matches_numpy_edges() {
        // np.histogram([-1, -0.5, 0, 0.5, 1], bins=4, range=(-1, 1)) -> [1, 1, 1, 2]
        assert_eq!(
            histogram(&[-1.0, -0.5, 0.0, 0.5, 1.0], 1.0, 4),
            [1, 1, 1, 2]
        );
    }

    #[test]
    fn uniform_values_keep_the_whole_range() {
        // With no outliers to drop, clipping only adds error: the widest threshold wins.
        let values: Vec<f32> = (0..20_001)
            .map(|i| (i as f32 - 10_000.0) / 10_000.0)
            .collect();
        let t = kl_divergence_threshold(&values);
        assert!(t > 0.95 && t <= 1.0, "{t}");
    }

    #[test]
    fn a_far_outlier_is_clipped() {
        let mut values: Vec<f32> = (0..20_001)
            .map(|i| (i as f32 - 10_000.0) / 10_000.0)
            .collect();
        values.push(100.0);
        let t = kl_divergence_threshold(&values);
        assert!(t < 5.0, "{t}");
    }

    #[test]
    fn all_zero_gives_zero() {
        assert_eq!(kl_divergence_threshold(&[0.0; 10]), 0.0);
        assert_eq!(kl_divergence_threshold(&[]), 0.0);
    }
}
