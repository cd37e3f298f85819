//! Comparing byoc's outputs with reference outputs (onnxruntime, ONNX's reference evaluator),
//! shared by the integration tests through `tests/common/mod.rs` and included alone by
//! `plugins/dnnl`'s light-model tests.
//!
//! Tolerance: every element `a` of byoc's output and `b` of the reference must satisfy
//! `|a - b| <= RTOL * max(|b|, FLOOR_FRACTION * max|reference|)`: a relative error of at most
//! 1e-4, where elements smaller than a hundredth of the output's largest magnitude (near-zero
//! softmax probabilities, cancelled sums) are held to that absolute floor instead.

use std::path::Path;

use anyhow::{bail, ensure, Result};
use byoc_ir::Tensor;

/// Largest relative error allowed.
pub const RTOL: f64 = 1e-4;
/// The absolute floor, as a fraction of the reference output's largest magnitude.
pub const FLOOR_FRACTION: f64 = 1e-2;

/// Checks one output against its reference with the tolerance in the module doc.
pub fn compare(model: &Path, name: &str, got: &Tensor, reference: &Tensor) -> Result<()> {
    ensure!(
        got.shape() == reference.shape(),
        "{}: output '{name}' has shape {:?}, expected {:?}",
        model.display(),
        got.shape(),
        reference.shape()
    );
    let (a, b) = (got.to_f64_vec(), reference.to_f64_vec());
    let peak = b.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let floor = FLOOR_FRACTION * peak;
    let mut worst = (0.0f64, 0usize);
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        let diff = (x - y).abs();
        // Equal values (zeros included) have no error; a NaN on either side an unbounded one.
        let err = if diff == 0.0 {
            0.0
        } else if diff.is_nan() {
            f64::INFINITY
        } else {
            diff / y.abs().max(floor)
        };
        if err > worst.0 {
            worst = (err, i);
        }
    }
    let (err, i) = worst;
    if err > RTOL {
        bail!(
            "{}: output '{name}' element {i}: got {}, expected {} (relative error {err:.3e} > {RTOL:e}, floor {floor:.3e})",
            model.display(),
            a[i],
            b[i]
        );
    }
    eprintln!(
        "{}: output '{name}': max relative error {err:.3e}",
        model.display()
    );
    Ok(())
}
