//! End-to-end runs of ONNX's nine "light" CNNs on the host executor, through the driver's
//! library API (`load_model`, `Executor`): the shipped models against ONNX's expected outputs
//! and the random-weight variants against onnxruntime; and the committed transformer, vision
//! and speech fixtures against onnxruntime. Data and helpers: `tests/light/mod.rs`;
//! tolerance: `tests/common/compare.rs`.

mod common;
mod light;

use anyhow::{Context, Result};
use byoc_exec::{ExecOptions, Executor};
use byoc_ir::Module;
use light::{check, check_fixture, light_dir};

/// The host executor of a module (no external functions).
fn host_executor(module: &Module) -> Result<Executor> {
    Ok(Executor::new(module, ExecOptions::default())?)
}

/// Checks the shipped model and its random-weight variant.
fn light_model(name: &str) -> Result<()> {
    let root = light_dir()?;
    let dir = root.join(name);
    check(
        &dir.join("model.onnx"),
        &dir.join("input.npz"),
        &dir.join("expected.npz"),
        &host_executor,
    )
    .context("shipped weights vs ONNX's expected output")?;
    check(
        &dir.join("random.onnx"),
        &dir.join("random_input.npz"),
        &dir.join("random_expected.npz"),
        &host_executor,
    )
    .context("random weights vs onnxruntime")?;
    Ok(())
}

light::light_model_tests!();

/// A committed fixture on the host executor.
fn fixture_model(name: &str) -> Result<()> {
    check_fixture(name, &host_executor)
}

light::fixture_tests!();
