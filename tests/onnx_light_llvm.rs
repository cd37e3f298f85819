//! The nine ONNX light CNNs host-only with compiled host code (`--host-codegen llvm`): HostFuse
//! and the LLVM code generator on every model, checked against onnxruntime's outputs (random
//! weights) and ONNX's expected outputs (shipped weights), like `tests/onnx_light.rs` does for
//! the reference kernels. Each model must compile at least one fused function, so the test
//! cannot pass by falling back everywhere. The committed transformer, vision and speech
//! fixtures run the same way. Data and helpers: `tests/light/mod.rs`.

mod common;
mod light;

use anyhow::{ensure, Context, Result};
use byoc_exec::{ExecOptions, Executor};
use byoc_host_llvm::compile_host;
use byoc_ir::Module;
use byoc_sdk::CompileOptions;
use light::{check, check_fixture, light_dir};

/// The executor of `module` with its host code compiled.
fn llvm_executor(module: &Module) -> Result<Executor> {
    let host = compile_host(module, &CompileOptions::new(), false)?;
    ensure!(
        !host.externals.is_empty(),
        "no fused function compiled; fallbacks: {:?}",
        host.fallbacks
    );
    Ok(Executor::with_externals(
        &host.module,
        ExecOptions::default(),
        &host.externals,
    )?)
}

/// Checks the shipped model and its random-weight variant.
fn light_model(name: &str) -> Result<()> {
    let dir = light_dir()?.join(name);
    check(
        &dir.join("random.onnx"),
        &dir.join("random_input.npz"),
        &dir.join("random_expected.npz"),
        &llvm_executor,
    )
    .context("random weights vs onnxruntime")?;
    check(
        &dir.join("model.onnx"),
        &dir.join("input.npz"),
        &dir.join("expected.npz"),
        &llvm_executor,
    )
    .context("shipped weights vs ONNX's expected output")?;
    Ok(())
}

light::light_model_tests!();

/// A committed fixture with its host code compiled.
fn fixture_model(name: &str) -> Result<()> {
    check_fixture(name, &llvm_executor)
}

light::fixture_tests!();
