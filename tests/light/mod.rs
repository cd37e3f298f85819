//! Shared by the end-to-end tests of ONNX's nine "light" CNNs (ResNet-50, DenseNet-121,
//! Inception v1/v2, ShuffleNet, SqueezeNet, VGG-19, AlexNet, ZFNet-512): where the data is,
//! running a model with an executor the caller builds, and comparing with the references.
//! Included by `tests/onnx_light.rs` (host executor) and by plugin tests (`#[path]`), each of
//! which also declares `mod common` (`tests/common/mod.rs`, or its `compare.rs` alone) at its
//! root.
//!
//! The data comes from `scripts/fetch_onnx_light.sh` (run by `./scripts/dev test`), which
//! writes one folder per model under the directory named by `BYOC_ONNX_LIGHT_DIR`:
//! - `model.onnx` with `input.npz` / `expected.npz`: the shipped model (weights built by
//!   `ConstantOfShape`) and the expected output shipped with it (ONNX's reference evaluator);
//! - `random.onnx` with `random_input.npz` / `random_expected.npz`: the same graph with seeded
//!   random weights, and onnxruntime's outputs.
//!
//! The tests are `#[ignore]`d, so a bare `cargo test` works without Python; `./scripts/dev
//! test` prepares the data and runs them with `--ignored`. Run that way, every model must be
//! there and match, and an unset `BYOC_ONNX_LIGHT_DIR` fails the tests.
//!
//! The same files also run the committed transformer, vision and speech fixtures
//! (`scripts/fixtures/gen_transformers.py`: BERT, DistilBERT, GPT-2, ViT, a Whisper-style
//! encoder, ConvNeXt and EfficientNet in small configs with seeded random weights, from both of
//! PyTorch's exporters, and BERT and ViT as onnxruntime's transformer optimizer fuses them into
//! `com.microsoft` ops): one folder each under `tests/data/transformers/` with `model.onnx`,
//! `input.npz` and onnxruntime's `expected.npz`. Those are in the repository, so their tests
//! are not ignored.
//!
//! Tolerance: `tests/common/compare.rs` (`compare`): a relative error of at most 1e-4.

use std::path::{Path, PathBuf};

use anyhow::{ensure, Context, Result};
use byoc_artifact::io::read_npz;
use byoc_exec::Executor;
use byoc_ir::Module;
use byoc_pipeline::inputs::{output_map, resolve_inputs};
use byoc_pipeline::model::{load_model, LoadOptions};

use crate::common::compare;

/// The data directory named by `BYOC_ONNX_LIGHT_DIR`; an error when it is unset or missing.
pub fn light_dir() -> Result<PathBuf> {
    let dir = std::env::var_os("BYOC_ONNX_LIGHT_DIR")
        .map(PathBuf::from)
        .context(
            "BYOC_ONNX_LIGHT_DIR is not set: this test needs the ONNX light models \
         (./scripts/fetch_onnx_light.sh prepares them; ./scripts/dev test runs it)",
        )?;
    ensure!(
        dir.is_dir(),
        "BYOC_ONNX_LIGHT_DIR names '{}', which is not a directory",
        dir.display()
    );
    Ok(dir)
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
    let module = load_model(model, &LoadOptions::default())?;
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

/// The folder of the committed fixture `name` (`tests/data/transformers/<name>`), found from
/// the including package's directory (the repository root or a plugin's).
pub fn fixture(name: &str) -> Result<PathBuf> {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest
        .ancestors()
        .map(|dir| dir.join("tests/data/transformers").join(name))
        .find(|dir| dir.is_dir())
        .with_context(|| format!("no fixture '{name}' under tests/data/transformers"))
}

/// Runs the committed fixture `name` with the executor `make` builds and compares every output
/// with onnxruntime's.
pub fn check_fixture(name: &str, make: &dyn Fn(&Module) -> Result<Executor>) -> Result<()> {
    let dir = fixture(name)?;
    check(
        &dir.join("model.onnx"),
        &dir.join("input.npz"),
        &dir.join("expected.npz"),
        make,
    )
    .with_context(|| format!("{name} vs onnxruntime"))
}

/// Declares one `#[test]` per committed fixture, named after it, each calling the including
/// file's `fixture_model(name: &str) -> anyhow::Result<()>`.
macro_rules! fixture_tests {
    () => {
        light::fixture_tests!(
            bert_dyn,
            bert_ort,
            bert_ts,
            convnext_dyn,
            convnext_ts,
            distilbert_dyn,
            distilbert_ts,
            efficientnet_dyn,
            efficientnet_ts,
            gpt2_dyn,
            vit_dyn,
            vit_ort,
            vit_ts,
            whisper_encoder_dyn,
            whisper_encoder_ts
        );
    };
    ($($model:ident),*) => {$(
        #[test]
        fn $model() -> anyhow::Result<()> {
            fixture_model(stringify!($model))
        }
    )*};
}
pub(crate) use fixture_tests;

/// Declares one `#[test]` per light model, named after it, each calling the including file's
/// `light_model(name: &str) -> anyhow::Result<()>`.
macro_rules! light_model_tests {
    () => {
        light::light_model_tests!(
            bvlc_alexnet,
            densenet121,
            inception_v1,
            inception_v2,
            resnet50,
            shufflenet,
            squeezenet,
            vgg19,
            zfnet512
        );
    };
    ($($model:ident),*) => {$(
        #[test]
        #[ignore = "needs the ONNX light models: ./scripts/fetch_onnx_light.sh"]
        fn $model() -> anyhow::Result<()> {
            light_model(stringify!($model))
        }
    )*};
}
pub(crate) use light_model_tests;
