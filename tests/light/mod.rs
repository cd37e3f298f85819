//! Shared by the end-to-end tests of ONNX's nine "light" CNNs (ResNet-50, DenseNet-121,
//! Inception v1/v2, ShuffleNet, SqueezeNet, VGG-19, AlexNet, ZFNet-512): where the data is,
//! running a model with an executor the caller builds, and comparing with the references.
//! Included by `tests/onnx_light.rs` (host executor) and by plugin tests (`#[path]`).
//!
//! The data comes from `scripts/fetch_onnx_light.sh` (run by `./scripts/dev test`), which
//! writes one folder per model under the directory named by `BYOC_ONNX_LIGHT_DIR`:
//! - `model.onnx` with `input.npz` / `expected.npz`: the shipped model (weights built by
//!   `ConstantOfShape`) and the expected output shipped with it (ONNX's reference evaluator);
//! - `random.onnx` with `random_input.npz` / `random_expected.npz`: the same graph with seeded
//!   random weights, and onnxruntime's outputs.
//!
//! When `BYOC_ONNX_LIGHT_DIR` is set, every model must be there and match; when it is unset
//! the tests say so and pass, so a bare `cargo test` works without Python.
//!
//! Tolerance: every element `a` of byoc's output and `b` of the reference must satisfy
//! `|a - b| <= RTOL * max(|b|, FLOOR_FRACTION * max|reference|)`: a relative error of at most
//! 1e-4, where elements smaller than a hundredth of the output's largest magnitude (near-zero
//! softmax probabilities, cancelled sums) are held to that absolute floor instead.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, ensure, Context, Result};
use byoc::cli::inputs::{output_map, resolve_inputs};
use byoc::core::exec::Executor;
use byoc::core::io::read_npz;
use byoc::core::Module;
use byoc::core::Tensor;
use byoc::model::load_model;

/// Largest relative error allowed.
const RTOL: f64 = 1e-4;
/// The absolute floor, as a fraction of the reference output's largest magnitude.
const FLOOR_FRACTION: f64 = 1e-2;

/// The data directory, or `None` (after saying so) when the tests are not configured.
pub fn light_dir() -> Option<PathBuf> {
    match std::env::var_os("BYOC_ONNX_LIGHT_DIR") {
        Some(dir) => Some(PathBuf::from(dir)),
        None => {
            eprintln!(
                "BYOC_ONNX_LIGHT_DIR is not set: ONNX light-model tests not configured \
                 (./scripts/dev test prepares them with scripts/fetch_onnx_light.sh)"
            );
            None
        }
    }
}

/// Runs `model` on `inputs` with the executor `make` builds for the loaded module and compares
/// every output with `expected`.
pub fn check(
    model: &Path,
    inputs: &Path,
    expected: &Path,
    make: &dyn Fn(&Module) -> Result<Executor>,
) -> Result<()> {
    for file in [model, inputs, expected] {
        ensure!(
            file.is_file(),
            "missing test data file '{}'",
            file.display()
        );
    }
    let module = load_model(model, &BTreeMap::new())?;
    let executor = make(&module).with_context(|| format!("{}: cannot plan", model.display()))?;
    let feeds = resolve_inputs(&module, Some(inputs), None)?;
    let outputs = executor
        .run_named(&feeds)
        .with_context(|| format!("{}: run failed", model.display()))?;
    let got = output_map(&module, outputs);
    let want = read_npz(expected)?;
    ensure!(
        got.keys().eq(want.keys()),
        "{}: outputs {:?}, expected {:?}",
        model.display(),
        got.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>()
    );
    for (name, reference) in &want {
        compare(model, name, &got[name], reference)?;
    }
    Ok(())
}

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
