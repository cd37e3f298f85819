//! The `dnnl.fpmath` option: `bf16` reaches oneDNN (bf16 operands, bf16 kernels: AMX where
//! the CPU has it), stays within bf16's accuracy of the host executor's float32, converts
//! weights at build only, keeps float32 at the partition's boundaries, and is refused on CPUs
//! without bf16 support and for unknown values.

mod common;

use byoc_ir::Tensor;
use byoc_json_runtime::serialize::serialize;
use byoc_plugin_dnnl::dnnl::effective_cpu_isa;
use byoc_plugin_dnnl::options::runtime_options;
use byoc_plugin_dnnl::{
    Bf16Support, DnnlModule, DnnlPlugin, FpMath, Int8Epilogue, RuntimeOptions, FPMATH_OPTION,
};
use byoc_sdk::{CompileOptions, PartitionedFunction, Plugin};
use common::{host, konst, partition, rel_err, run, tensor};

const BF16: RuntimeOptions = RuntimeOptions {
    threads: None,
    fpmath: FpMath::Bf16,
    int8_epilogue: Int8Epilogue::PostOps,
};

/// What oneDNN can run bf16 with on this machine, emulation allowed (this test builds
/// runtimes directly, past the plugin's CPU check).
fn support() -> Bf16Support {
    Bf16Support::of_isa(effective_cpu_isa(), true)
}

/// The module of `text` built with `options`.
fn module(text: &str, options: RuntimeOptions) -> Result<DnnlModule, String> {
    let f = PartitionedFunction::from_text(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let s = serialize(&f.function, "dnnl_0").unwrap();
    DnnlModule::new(s, options).map_err(|e| e.to_string())
}

/// The host executor's float32 outputs and the dnnl module's, built with `options`.
fn outputs(text: &str, inputs: &[Tensor], options: RuntimeOptions) -> (Vec<Tensor>, Vec<Tensor>) {
    let f = PartitionedFunction::from_text(text).unwrap();
    let want = host(&f, inputs);
    let m = module(text, options).unwrap();
    let got = run(&m, inputs, &want);
    (want, got)
}

/// A ResNet-like block: a 3x3 conv + bias + relu, a 1x1 conv + bias with the residual sum
/// and relu, then a dense classifier over the flattened result.
fn block() -> String {
    let c = 32;
    let composite = |name: &str, params: &str, body: &str, args: &str, out: &str| {
        format!("  %{out}f = fn ({params}, Composite=\"{name}\") {{\n{body}\n  }};\n  %{out} = %{out}f({args});\n")
    };
    let t = |s: &str| format!("Tensor[({s}), float32]");
    let mut body = composite(
        "dnnl.conv2d_bias_relu",
        &format!("%a0: {}, %a1: {}, %a2: Tensor[({c},), float32]", t("1, 32, 8, 8"), t("32, 32, 3, 3")),
        "    nn.relu(nn.bias_add(nn.conv2d(%a0, %a1, padding=[1, 1, 1, 1], channels=32, kernel_size=[3, 3]), %a2))",
        &format!("%x, {}, {}", konst(&[c, c, 3, 3], 1), konst(&[c], 2)),
        "c1",
    );
    body += &composite(
        "dnnl.conv2d_bias_sum_relu",
        &format!(
            "%b0: {}, %b1: {}, %b2: Tensor[({c},), float32], %b3: {}",
            t("1, 32, 8, 8"),
            t("32, 32, 1, 1"),
            t("1, 32, 8, 8")
        ),
        "    nn.relu(add(nn.bias_add(nn.conv2d(%b0, %b1, padding=[0, 0, 0, 0], channels=32, kernel_size=[1, 1]), %b2), %b3))",
        &format!("%c1, {}, {}, %x", konst(&[c, c, 1, 1], 3), konst(&[c], 4)),
        "c2",
    );
    body += "  %f = nn.batch_flatten(%c2);\n";
    body += &composite(
        "dnnl.dense_bias",
        "%d0: Tensor[(1, 2048), float32], %d1: Tensor[(10, 2048), float32], %d2: Tensor[(10,), float32]",
        "    nn.bias_add(nn.dense(%d0, %d1, units=10), %d2)",
        &format!("%f, {}, {}", konst(&[10, 2048], 5), konst(&[10], 6)),
        "d",
    );
    body += "  %d";
    partition(&format!("%x: {}", t("1, 32, 8, 8")), &body)
}

#[test]
fn bf16_runs_within_bf16_accuracy_of_float32() {
    if let Bf16Support::Missing { isa } = support() {
        // No AVX-512: oneDNN has no bf16 kernels here, and the build says so.
        let e = module(&block(), BF16).unwrap_err();
        assert!(e.contains("dnnl_unimplemented"), "{isa}: {e}");
        return;
    }
    let cases = [
        (block(), vec![tensor(&[1, 32, 8, 8], 7)]),
        (
            partition(
                "%x: Tensor[(1, 4, 5, 6), float32]",
                &format!("  nn.conv2d_transpose(%x, {}, channels=3, kernel_size=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1], output_padding=[1, 1])", konst(&[4, 3, 3, 3], 8)),
            ),
            vec![tensor(&[1, 4, 5, 6], 9)],
        ),
        (
            partition(
                "%a: Tensor[(1, 40, 3), float32], %b: Tensor[(2, 40, 4), float32]",
                "  nn.batch_matmul(%a, %b, transpose_a=True, transpose_b=False)",
            ),
            vec![tensor(&[1, 40, 3], 10), tensor(&[2, 40, 4], 11)],
        ),
        (
            partition(
                "%a: Tensor[(2, 3, 50), float32], %b: Tensor[(2, 4, 50), float32]",
                "  nn.batch_matmul(%a, %b)",
            ),
            vec![tensor(&[2, 3, 50], 12), tensor(&[2, 4, 50], 13)],
        ),
    ];
    for (text, inputs) in &cases {
        let (want, got) = outputs(text, inputs, BF16);
        let (_, strict) = outputs(text, inputs, RuntimeOptions::default());
        for ((g, w), s) in got.iter().zip(&want).zip(&strict) {
            // bf16 keeps 8 significant bits (relative rounding 2^-9 per operand); sums of
            // products with random signs stay well below 1% of the output's magnitude.
            let e = rel_err(g, w);
            assert!(e <= 1e-2, "bf16 relative error {e:e}\n{text}");
            // ... and the mode took effect: float32 is closer by orders of magnitude.
            let e32 = rel_err(s, w);
            assert!(e > 1e-4 && e32 < 1e-5, "bf16 {e:e}, f32 {e32:e}\n{text}");
        }
    }
}

#[test]
fn bf16_reaches_onednn_and_weights_are_converted_at_build() {
    let expected = match support() {
        Bf16Support::Missing { .. } => return, // covered by the accuracy test's refusal
        Bf16Support::Amx => "avx512_core_amx",
        Bf16Support::Avx512Bf16 => "avx512_core_bf16",
        Bf16Support::Emulated => "bf16",
    };
    let m = module(&block(), BF16).unwrap();
    let steps: Vec<String> = m.runtime().steps().into_iter().map(|s| s.label).collect();
    let report = steps.join("\n");
    // The two convolutions and the dense matmul read bf16 (their source descriptor as
    // oneDNN's primitive descriptor reports it) in the implementations oneDNN chose (its
    // impl info string): bf16 kernels for the convolutions, AMX where the CPU has it.
    let compute: Vec<&String> = steps
        .iter()
        .filter(|l| l.starts_with("convolution") || l.starts_with("matmul"))
        .collect();
    assert_eq!(compute.len(), 3, "{report}");
    assert!(compute.iter().all(|l| l.contains(" on bf16 [")), "{report}");
    let convs = || compute.iter().filter(|l| l.starts_with("convolution"));
    if expected == "avx512_core_amx" {
        assert!(convs().any(|l| l.contains(expected)), "{report}");
    } else {
        assert!(convs().all(|l| l.contains(expected)), "{report}");
    }
    // Activations are converted to bf16 at run time (the input, and the first conv's
    // float32 result for the second conv, and the flattened block for the dense): three
    // reorders. The three weights were converted when the module was built: no step.
    let to_bf16 = steps
        .iter()
        .filter(|l| l.starts_with("reorder") && l.contains("-> bf16"))
        .count();
    assert_eq!(to_bf16, 3, "{report}");
    // Float32 at the boundary: the partition's input and output types are unchanged.
    assert_eq!(m.runtime().input_types()[0].dtype.to_string(), "float32");
    assert_eq!(m.runtime().output_types()[0].dtype.to_string(), "float32");
    // The default stays float32: no bf16 anywhere.
    let strict = module(&block(), RuntimeOptions::default()).unwrap();
    assert!(strict
        .runtime()
        .steps()
        .iter()
        .all(|s| !s.label.contains("bf16")));
}

fn with(key: &str, value: &str) -> CompileOptions {
    CompileOptions::new().with(key, value)
}

#[test]
fn bf16_is_refused_on_a_cpu_without_amx_or_avx512_bf16() {
    let options = with(FPMATH_OPTION, "bf16");
    let e = runtime_options(&options, || Bf16Support::Missing {
        isa: "avx512_core_vnni",
    })
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("option dnnl.fpmath=bf16 needs a CPU with AMX (avx512_core_amx) or AVX512-BF16 (avx512_core_bf16), and oneDNN finds avx512_core_vnni on this one"),
        "{e}"
    );
    for ok in [
        Bf16Support::Amx,
        Bf16Support::Avx512Bf16,
        Bf16Support::Emulated,
    ] {
        let o = runtime_options(&options, || ok).unwrap();
        assert_eq!(o.fpmath, FpMath::Bf16);
    }
    // The probe is asked only when bf16 is requested.
    let o = runtime_options(&with("threads", "3"), || unreachable!()).unwrap();
    assert_eq!(
        o,
        RuntimeOptions {
            threads: Some(3),
            fpmath: FpMath::Strict,
            int8_epilogue: Int8Epilogue::PostOps,
        }
    );

    // Through the plugin, on this machine: refused exactly when its probe finds no support.
    let f = PartitionedFunction::from_text(&block()).unwrap();
    let compiled = DnnlPlugin.compile(&f, &options);
    match Bf16Support::probe() {
        Bf16Support::Missing { isa } => {
            let e = compiled.err().unwrap().to_string();
            assert!(
                e.contains(&format!("oneDNN finds {isa} on this one")),
                "{e}"
            );
        }
        _ => assert!(compiled.is_ok()),
    }
}

#[test]
fn unknown_fpmath_values_and_dnnl_options_are_refused() {
    let probe = || Bf16Support::Amx;
    let e = runtime_options(&with(FPMATH_OPTION, "fp16"), probe)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("option dnnl.fpmath='fp16' is not a float math mode (strict: float32, the default; bf16:"),
        "{e}"
    );
    let e = runtime_options(&with("dnnl.fp_math", "bf16"), probe)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(
            "unknown dnnl option 'dnnl.fp_math' (declared: dnnl.fpmath, dnnl.int8_epilogue)"
        ),
        "{e}"
    );
    let e = runtime_options(&with("threads", "two"), probe)
        .unwrap_err()
        .to_string();
    assert!(e.contains("option 'threads=two': expected"), "{e}");
    let o = runtime_options(&with(FPMATH_OPTION, "strict"), probe).unwrap();
    assert_eq!(o.fpmath, FpMath::Strict);
    // The option's values reach the plugin's load path too (artifacts).
    assert!(DnnlPlugin
        .deserialize(b"not a module", &with(FPMATH_OPTION, "fp16"))
        .err()
        .unwrap()
        .to_string()
        .contains("is not a float math mode"));
}
