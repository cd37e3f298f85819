//! End-to-end runs of ONNX's nine "light" CNNs (ResNet-50, DenseNet-121, Inception v1/v2,
//! ShuffleNet, SqueezeNet, VGG-19, AlexNet, ZFNet-512) on the host executor, through the
//! driver's library API (`load_model`, `Executor`).
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
//! Tolerance: a relative error of at most 1e-4 (see `common::compare`).

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{ensure, Context, Result};
use byoc::cli::inputs::{output_map, resolve_inputs};
use byoc::core::exec::{ExecOptions, Executor};
use byoc::core::io::read_npz;
use byoc::model::load_model;
use common::compare;

/// The data directory, or `None` (after saying so) when the tests are not configured.
fn light_dir() -> Option<PathBuf> {
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

/// Runs `model` on `inputs` and compares every output with `expected`.
fn check(model: &Path, inputs: &Path, expected: &Path) -> Result<()> {
    for file in [model, inputs, expected] {
        ensure!(
            file.is_file(),
            "missing test data file '{}'",
            file.display()
        );
    }
    let module = load_model(model, &BTreeMap::new())?;
    let executor = Executor::new(&module, ExecOptions::default())
        .with_context(|| format!("{}: cannot plan", model.display()))?;
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

/// Checks the shipped model and its random-weight variant.
fn light_model(name: &str) -> Result<()> {
    let Some(root) = light_dir() else {
        return Ok(());
    };
    let dir = root.join(name);
    check(
        &dir.join("model.onnx"),
        &dir.join("input.npz"),
        &dir.join("expected.npz"),
    )
    .context("shipped weights vs ONNX's expected output")?;
    check(
        &dir.join("random.onnx"),
        &dir.join("random_input.npz"),
        &dir.join("random_expected.npz"),
    )
    .context("random weights vs onnxruntime")?;
    Ok(())
}

macro_rules! light_tests {
    ($($test:ident => $name:literal,)*) => {$(
        #[test]
        fn $test() -> Result<()> {
            light_model($name)
        }
    )*};
}

light_tests! {
    bvlc_alexnet => "bvlc_alexnet",
    densenet121 => "densenet121",
    inception_v1 => "inception_v1",
    inception_v2 => "inception_v2",
    resnet50 => "resnet50",
    shufflenet => "shufflenet",
    squeezenet => "squeezenet",
    vgg19 => "vgg19",
    zfnet512 => "zfnet512",
}
