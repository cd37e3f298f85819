//! The quantize pass against independent references: a conv-bn-relu chain with a residual
//! add, quantized and run on the host's integer kernels, matches bit for bit the numpy integer
//! pipeline of `scripts/gen_quantize_reference.py` (data in `tests/data/quantize/`); the
//! calibration modes give the scales computed by hand on a model with known ranges; bad
//! configurations fail with messages.

use std::path::PathBuf;

use byoc_artifact::io::read_npz;
use byoc_exec::{ExecOptions, Executor};
use byoc_ir::infer_types;
use byoc_ir::text::{parse_module, print_module};
use byoc_ir::{Module, Tensor};
use byoc_passes::{CalibrateMode, Pass, PassContext, QConfig, Quantize};

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/quantize")
        .join(name)
}

fn parse(text: &str) -> Module {
    let mut m = parse_module(text).expect("test module parses");
    infer_types(&mut m).expect("test module types");
    m
}

fn quantize(module: &Module, config: QConfig, samples: Vec<Vec<Tensor>>) -> Module {
    let mut m = module.clone();
    let pass = Quantize {
        config,
        samples,
        progress: None,
    };
    pass.run(&mut m, &mut PassContext::new())
        .expect("quantization succeeds");
    m
}

#[test]
fn conv_bn_relu_chain_is_bit_exact_with_the_numpy_integer_reference() {
    let text = std::fs::read_to_string(data("conv_bn_relu.relay")).expect("reference model");
    let float = parse(&text);
    let config = QConfig {
        skip_conv_layers: vec![],
        ..QConfig::default()
    };
    let q = quantize(&float, config, vec![]);
    let printed = print_module(&q);
    // Three integer convs, their requantizations by shifts, and no batch norm left.
    assert_eq!(
        printed.matches("out_dtype=\"int32\"").count(),
        3,
        "{printed}"
    );
    assert_eq!(printed.matches("right_shift(").count(), 2, "{printed}");
    assert!(!printed.contains("nn.batch_norm"), "{printed}");
    let x = read_npz(data("input.npz")).expect("input")["x"].clone();
    let want = read_npz(data("expected.npz")).expect("expected")["output_0"].clone();
    let got = Executor::new(&q, ExecOptions::default())
        .and_then(|e| e.run(&[x]))
        .expect("quantized model runs");
    assert_eq!(got[0].ty(), want.ty());
    let (g, w) = (got[0].to_f64_vec(), want.to_f64_vec());
    let differing = g.iter().zip(&w).filter(|(a, b)| a != b).count();
    assert_eq!(differing, 0, "{differing} of {} values differ", w.len());
    assert!(w.iter().any(|&v| v != 0.0), "the reference is not all zero");
}

/// One 1x1 conv over `%x`: the quantization point is `%x` itself, so its scale is the one
/// calibration chose, printed as the multiplier of the float-to-int8 quantization.
const ONE_CONV: &str = r#"
def @main(%x: Tensor[(1, 1, 4, 4), float32]) {
  nn.conv2d(%x, const((1, 1, 1, 1), float32, [0.5]), channels=1, kernel_size=[1, 1])
}
"#;

fn sample(values: &[f32]) -> Vec<Tensor> {
    vec![Tensor::from_slice(vec![1, 1, 4, 4], values).expect("sample")]
}

fn multiplier(mode: CalibrateMode, global_scale: f64, samples: Vec<Vec<Tensor>>) -> String {
    let config = QConfig {
        skip_conv_layers: vec![],
        global_scale,
        calibrate_mode: mode,
        ..QConfig::default()
    };
    let printed = print_module(&quantize(&parse(ONE_CONV), config, samples));
    // `%k = 16.0f; ... multiply(%x, %k)`: the value bound to the multiply's second operand.
    let operand = printed
        .split("multiply(%x, ")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .expect("a quantization of %x");
    let binding = format!("{operand} = ");
    printed
        .lines()
        .find_map(|l| l.trim().strip_prefix(binding.as_str()))
        .expect("the multiplier's binding")
        .trim_end_matches(';')
        .to_string()
}

#[test]
fn calibration_modes_give_the_hand_computed_scales() {
    // global-scale 8.0: dom_scale 8 / 128 = 2^-4, so x is multiplied by 16.
    assert_eq!(multiplier(CalibrateMode::GlobalScale, 8.0, vec![]), "16.0f");
    assert_eq!(
        multiplier(CalibrateMode::GlobalScale, 1.0, vec![]),
        "128.0f"
    );
    // percentile: 16 values per sample, two samples: rank floor(32 * 0.99999) = 31, the
    // largest |x| = 3.0; 2^ceil(log2 3) = 4, scale 4 / 128, multiplier 32.
    let mut a = [0.25f32; 16];
    a[3] = -3.0;
    let b = [0.5f32; 16];
    assert_eq!(
        multiplier(CalibrateMode::Percentile, 8.0, vec![sample(&a), sample(&b)]),
        "32.0f"
    );
    // kl on values spread over [-1, 1]: the threshold stays near 1 -> 2^0 / 128, multiplier 128.
    let spread: Vec<f32> = (0..16).map(|i| (i as f32 - 7.5) / 7.5).collect();
    assert_eq!(
        multiplier(CalibrateMode::Kl, 8.0, vec![sample(&spread)]),
        "128.0f"
    );
}

#[test]
fn bad_configurations_are_reported() {
    let m = parse(ONE_CONV);
    let run = |config: QConfig, samples: Vec<Vec<Tensor>>| {
        let mut m = m.clone();
        let pass = Quantize {
            config,
            samples,
            progress: None,
        };
        pass.run(&mut m, &mut PassContext::new())
            .expect_err("must fail")
            .to_string()
    };
    let e = run(
        QConfig {
            global_scale: 6.0,
            ..QConfig::default()
        },
        vec![],
    );
    assert!(
        e.contains("global scale 6 is not a positive power of two"),
        "{e}"
    );
    let percentile = QConfig {
        calibrate_mode: CalibrateMode::Percentile,
        skip_conv_layers: vec![],
        ..QConfig::default()
    };
    let e = run(percentile.clone(), vec![]);
    assert!(e.contains("needs calibration samples"), "{e}");
    let e = run(percentile, vec![vec![]]);
    assert!(
        e.contains("calibration sample 0 has 0 tensors but @main takes 1"),
        "{e}"
    );
}
