//! QDQ models written by onnxruntime's `quantize_static` (ResNet-50 and SqueezeNet light
//! models, per-tensor weights with uint8 activations and per-channel weights with int8
//! activations): byoc imports each into integer arithmetic (the dequantize-conv-quantize groups
//! fused, scales as fixed-point multiplies), runs it on the host, and compares with
//! onnxruntime's own execution of the same model on the same input.
//!
//! Both sides requantize every conv, so the check is on quantization steps: the quantized
//! logits (`logits_q`, the integer tensor the softmax reads) must agree to within a few steps
//! (each layer may round one step apart, see `docs/quantization.md`), and the top-1 class must
//! agree.
//!
//! The models come from `scripts/fixtures/gen_qdq_models.py` (generated under `target/` by
//! `./scripts/dev test`, which sets `BYOC_ONNX_QDQ_DIR` and runs this test with
//! `--include-ignored`).

use std::path::{Path, PathBuf};

use byoc_artifact::io::read_npz;
use byoc_exec::{ExecOptions, Executor};
use byoc_ir::tensor::Tensor;
use byoc_onnx::{import_file, ImportOptions};

/// The largest difference, in quantization steps, allowed between byoc's quantized logits and
/// onnxruntime's.
const MAX_STEPS: f64 = 3.0;

fn case_dir(name: &str) -> PathBuf {
    let root = std::env::var_os("BYOC_ONNX_QDQ_DIR")
        .expect("BYOC_ONNX_QDQ_DIR must name the folder gen_qdq_models.py wrote");
    PathBuf::from(root).join(name)
}

fn argmax(v: &[f64]) -> usize {
    (0..v.len())
        .max_by(|&a, &b| v[a].total_cmp(&v[b]))
        .unwrap_or(0)
}

fn check(name: &str) {
    let dir = case_dir(name);
    let model = import_file(dir.join("model.onnx"), &ImportOptions::default())
        .unwrap_or_else(|e| panic!("{name}: import: {e}"));
    let text = byoc_ir::text::print_module(&model);
    assert!(
        text.contains("fixed_point_multiply") && text.contains("out_dtype=\"int32\""),
        "{name}: the convolutions were not imported as integer arithmetic"
    );
    let exec = Executor::new(
        &model,
        ExecOptions {
            threads: 2,
            profile: false,
            memory_budget: None,
        },
    )
    .unwrap_or_else(|e| panic!("{name}: executor: {e}"));
    let inputs: Vec<Tensor> = read_npz(dir.join("input.npz"))
        .unwrap_or_else(|e| panic!("{name}: input.npz: {e}"))
        .into_values()
        .collect();
    let expected =
        read_npz(dir.join("expected.npz")).unwrap_or_else(|e| panic!("{name}: expected.npz: {e}"));
    let got = exec
        .run(&inputs)
        .unwrap_or_else(|e| panic!("{name}: run: {e}"));
    let want = expected
        .get("logits_q")
        .unwrap_or_else(|| panic!("{name}: expected.npz has no logits_q"));
    let logits = got
        .iter()
        .find(|t| t.shape().iter().product::<usize>() == 1000 && t.dtype().is_int())
        .unwrap_or_else(|| panic!("{name}: no integer logits among the outputs"));
    assert_eq!(logits.dtype(), want.dtype(), "{name}: logits dtype");
    let (g, w) = (logits.to_f64_vec(), want.to_f64_vec());
    let diffs: Vec<f64> = g.iter().zip(&w).map(|(a, b)| (a - b).abs()).collect();
    let worst = diffs.iter().copied().fold(0.0, f64::max);
    let exact = diffs.iter().filter(|&&d| d == 0.0).count();
    eprintln!(
        "{name}: logits_q: {exact}/{} equal, largest difference {worst} steps, top-1 {} vs {}",
        diffs.len(),
        argmax(&g),
        argmax(&w)
    );
    assert!(
        worst <= MAX_STEPS,
        "{name}: quantized logits differ from onnxruntime's by {worst} steps (at most {MAX_STEPS})"
    );
    assert_eq!(argmax(&g), argmax(&w), "{name}: top-1 differs");
}

fn exists(name: &str) -> bool {
    Path::new(&case_dir(name)).join("model.onnx").is_file()
}

macro_rules! qdq_test {
    ($test:ident, $name:literal) => {
        #[test]
        #[ignore = "needs the QDQ models of scripts/fixtures/gen_qdq_models.py (./scripts/dev test generates them)"]
        fn $test() {
            assert!(exists($name), "{} is missing; run gen_qdq_models.py", $name);
            check($name);
        }
    };
}

qdq_test!(
    resnet50_per_tensor_matches_onnxruntime,
    "resnet50_per_tensor"
);
qdq_test!(
    resnet50_per_channel_matches_onnxruntime,
    "resnet50_per_channel"
);
qdq_test!(
    squeezenet_per_tensor_matches_onnxruntime,
    "squeezenet_per_tensor"
);
qdq_test!(
    squeezenet_per_channel_matches_onnxruntime,
    "squeezenet_per_channel"
);
