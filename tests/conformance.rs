//! The conformance kit run on every shipped plugin, each loaded from its `.so` as byoc loads
//! it (so the checks cross the C ABI): `tinyacc` (the template), `csource`, `dnnl` and `vta`. A new
//! plugin adopts the kit with one function like these: its cases, then `check()`. A broken
//! plugin (the `faulty` test plugin) fails the kit, naming the checks.

mod plugin_build;

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use byoc_exec::plugin::load_plugin;
use byoc_pipeline::conformance::Conformance;
use byoc_sdk::Plugin;
use plugin_build::build_next_to_byoc;

fn plugin_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        build_next_to_byoc(
            Path::new(env!("CARGO_MANIFEST_DIR")),
            &[
                "byoc-plugin-tinyacc",
                "byoc-plugin-csource",
                "byoc-plugin-dnnl",
                "byoc-plugin-vta",
                "byoc-testplugin-faulty",
            ],
        )
    })
}

fn load(crate_name: &str) -> Arc<dyn Plugin> {
    let so = plugin_dir().join(format!(
        "{}{crate_name}{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    ));
    Arc::new(load_plugin(&so).unwrap_or_else(|e| panic!("{e}")))
}

const CONV_BIAS_RELU: &str = r#"
def @main(%x: Tensor[(1, 3, 6, 6), float32], %w: Tensor[(4, 3, 3, 3), float32], %b: Tensor[(4), float32]) {
  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3]);
  %1 = nn.bias_add(%0, %b);
  nn.relu(%1)
}
"#;

const DENSE_SOFTMAX: &str = r#"
def @main(%x: Tensor[(2, 8), float32], %w: Tensor[(5, 8), float32]) {
  %0 = nn.dense(%x, %w, units=5);
  nn.softmax(%0)
}
"#;

#[test]
fn tinyacc_conforms() {
    Conformance::new(load("byoc_plugin_tinyacc"))
        .case(
            "add_relu",
            "def @main(%a: Tensor[(2, 3), float32], %b: Tensor[(2, 3), float32]) {\n  %0 = add(%a, %b);\n  nn.relu(%0)\n}\n",
        )
        .case(
            "multiply_clip",
            "def @main(%a: Tensor[(4), float32], %b: Tensor[(4), float32]) {\n  %0 = multiply(%a, %b);\n  clip(%0, a_min=0.1f, a_max=0.5f)\n}\n",
        )
        .check()
        .unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn csource_conforms() {
    Conformance::new(load("byoc_plugin_csource"))
        // Weights as parameters: single-op kernels on random weights.
        .case("conv2d_bias_relu", CONV_BIAS_RELU)
        .case("dense_softmax", DENSE_SOFTMAX)
        // Constant weights: the fused composite.
        .case(
            "composite",
            "def @main(%x: Tensor[(1, 2, 5, 5), float32]) {\n  %0 = nn.conv2d(%x, const((3, 2, 3, 3), float32, [0.1f, -0.2f, 0.3f, 0.4f, -0.5f, 0.6f, 0.7f, -0.8f, 0.9f, 1f, -1.1f, 1.2f, 0.1f, 0.2f, -0.3f, 0.4f, 0.5f, -0.6f, 0.7f, 0.8f, -0.9f, 1f, 1.1f, -1.2f, -0.1f, 0.2f, 0.3f, -0.4f, 0.5f, 0.6f, -0.7f, 0.8f, 0.9f, -1f, 1.1f, 1.2f, 0.1f, -0.2f, 0.3f, 0.4f, -0.5f, 0.6f, 0.7f, -0.8f, 0.9f, 1f, -1.1f, 1.2f, 0.1f, 0.2f, -0.3f, 0.4f, 0.5f, -0.6f]), channels=3, kernel_size=[3, 3]);\n  %1 = nn.bias_add(%0, const((3), float32, [0.5f, -0.25f, 0f]));\n  nn.relu(%1)\n}\n",
        )
        .check()
        .unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn dnnl_conforms() {
    Conformance::new(load("byoc_plugin_dnnl"))
        .case("conv2d_bias_relu", CONV_BIAS_RELU)
        .case("dense_softmax", DENSE_SOFTMAX)
        // oneDNN reorders the accumulation of the convolution.
        .tolerance(1e-4)
        .check()
        .unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn vta_conforms() {
    // A quantized ResNet-style block (int8 convs with bias, residual, requantization, an
    // int32 shortcut conv, and a dense head), weights as inputs; vta is bit-exact.
    let block = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/models/quantized_block.relay"),
    )
    .expect("examples/models/quantized_block.relay");
    Conformance::new(load("byoc_plugin_vta"))
        .case("quantized_block", &block)
        .tolerance(0.0)
        .check()
        .unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn a_plugin_that_ignores_bad_input_fails_the_kit() {
    // `faulty` takes every op, computes nothing useful and accepts any module bytes.
    let err = Conformance::new(load("byoc_testplugin_faulty"))
        .case(
            "relu",
            "def @main(%a: Tensor[(4), float32]) {\n  nn.relu(%a)\n}\n",
        )
        .check()
        .unwrap_err();
    let text = err.to_string();
    assert!(text.starts_with("plugin 'faulty' fails"), "{text}");
    // It accepts empty module bytes. (Its options are typed: `faulty.fault` is declared and an
    // undeclared key of its scope is refused, so the options check passes.)
    assert!(
        err.failures
            .iter()
            .any(|f| f.check == "bad input is an error" && f.case.as_deref() == Some("relu")),
        "{text}"
    );
    assert!(!err.failures.iter().any(|f| f.check == "options"), "{text}");
}
