//! Custom datatypes through the plugin ABI, end to end: the posit plugin is built as a `.so`
//! and loaded; its `posites2` declaration is validated, every library function of its
//! lowering table is resolved in the library and callable through the host's table,
//! `custom[posites2]N` parses in the text format, unknown names and widths are errors that list
//! what is registered, and `byoc plugins` lists the datatype.

mod plugin_build;
mod posit_plugin;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use byoc_exec::plugin::load_plugin;
use byoc_ir::text::{parse_module, print_module};
use byoc_ir::DType;
use byoc_kernels::datatypes::datatype_library;
use byoc_sdk::{LoweringKey, Plugin};
use posit_plugin::posit_so;

fn loaded() {
    static LOADED: OnceLock<()> = OnceLock::new();
    LOADED.get_or_init(|| {
        let plugin = load_plugin(posit_so()).expect("the posit plugin loads");
        assert_eq!(plugin.describe().datatypes.len(), 1);
    });
}

#[test]
fn the_lowering_table_is_resolved_and_callable() {
    loaded();
    let DType::Custom { code, bits } = "custom[posites2]16".parse::<DType>().unwrap() else {
        panic!("a custom dtype");
    };
    assert_eq!((code, bits), (132, 16));
    let library = datatype_library(code).expect("registered at load");
    assert_eq!(library.plugin, "posit");
    assert_eq!(library.functions.len(), 81);
    let add = library
        .function(&LoweringKey::Op {
            op: "Add".into(),
            bits: 16,
        })
        .expect("Add over 16 bits");
    assert_eq!(add.symbol, "Posit16es2Add");
    // SAFETY: an `Op` lowering of 16 bits has the signature (u16, u16) -> u16.
    let add: extern "C" fn(u16, u16) -> u16 = unsafe { std::mem::transmute(add.address) };
    assert_eq!(add(0x4000, 0x4000), 0x4800, "1 + 1 = 2 in posit16");
    let min = library
        .function(&LoweringKey::MinValue { bits: 32 })
        .expect("min value of 32 bits");
    // SAFETY: a `MinValue` lowering of 32 bits has the signature () -> u32.
    let min: extern "C" fn() -> u32 = unsafe { std::mem::transmute(min.address) };
    assert_eq!(min(), 0x8000_0001, "-maxpos, not TVM's truncated +minpos");
    let to_float = library
        .function(&LoweringKey::Cast {
            src: "posites2".into(),
            dst: "float".into(),
            src_bits: 8,
            dst_bits: 32,
        })
        .expect("posit8 to float32");
    // SAFETY: a cast from an 8-bit custom type to float32 has the signature (u8) -> f32.
    let to_float: extern "C" fn(u8) -> f32 = unsafe { std::mem::transmute(to_float.address) };
    assert_eq!(to_float(0x30), 0.25);
}

#[test]
fn custom_types_parse_in_text_and_bad_names_list_the_registry() {
    loaded();
    let module = parse_module(
        "def @main(%x: Tensor[(4), custom[posites2]8], %y: Tensor[(4), custom[posites2]32]) { %x }",
    )
    .expect("custom types parse once registered");
    let text = print_module(&module);
    assert!(text.contains("custom[posites2]8"), "{text}");
    let err = "custom[posites2]64"
        .parse::<DType>()
        .unwrap_err()
        .to_string();
    assert!(err.contains("does not come in 64 bits"), "{err}");
    assert!(err.contains("custom[posites2]8|16|32 (code 132)"), "{err}");
    let err = parse_module("def @main(%x: Tensor[(4), custom[posit]16]) { %x }")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("'posit' is not registered; registered: custom[posites2]8|16|32 (code 132)"),
        "{err}"
    );
}

#[test]
fn byoc_plugins_lists_the_datatype() {
    let out = Command::new(env!("CARGO_BIN_EXE_byoc"))
        .args(["plugins", "--plugin-path"])
        .arg(posit_so())
        .output()
        .expect("byoc runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("datatype: custom[posites2]8|16|32 (code 132, 81 library functions, exact dot products with posit.quire=true)"),
        "{stdout}"
    );
}

// ---------------------------------------------------------------------------------------------
// Running models in posits: `byoc run M.relay --dtype custom[posites2]N` on single-op models
// gives exactly the correctly rounded result of TVM's op-by-op lowering, checked against the
// exact reference of the posit tests (dyadic rationals; the elementary functions through f64
// and then rounded by that reference).

#[path = "../plugins/posit/tests/reference/mod.rs"]
mod reference;

use std::collections::BTreeMap;

use byoc_artifact::io::{read_npz, write_npz};
use byoc_ir::Tensor;
use reference::Dyadic;

/// A scratch directory for one test.
fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("byoc-datatypes-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

/// Deterministic values in `[lo, hi)`, exactly representable in float32.
fn values(seed: u64, count: usize, lo: f32, hi: f32) -> Vec<f32> {
    let mut rng = reference::Samples::new(seed);
    (0..count)
        .map(|_| {
            let unit = (rng.next_u64() >> 40) as f32 / (1u64 << 24) as f32;
            lo + (hi - lo) * unit
        })
        .collect()
}

/// The posit value of a pattern as `f64` (exact for these widths); NaR is NaN.
fn value(n: u32, p: u64) -> f64 {
    match reference::decode(n, p) {
        None => f64::NAN,
        Some(d) => {
            let m = i64::try_from(&d.m).expect("posit significands fit i64");
            m as f64 * (d.e as f64).exp2()
        }
    }
}

/// The correctly rounded posit of `x`.
fn round(n: u32, x: f64) -> u64 {
    if x.is_nan() {
        return reference::nar(n);
    }
    reference::round_exact(n, &Dyadic::from_f64(x))
}

/// `f` of a posit, computed in f64 and rounded.
fn apply(n: u32, p: u64, f: impl Fn(f64) -> f64) -> u64 {
    round(n, f(value(n, p)))
}

/// The larger of two posits (by value; NaR propagates as the library's order puts it first).
fn max(n: u32, a: u64, b: u64) -> u64 {
    if value(n, a) >= value(n, b) {
        a
    } else {
        b
    }
}

/// Named float32 tensors of `(name, shape, values)`.
fn float_tensors(inputs: &[(&str, Vec<usize>, Vec<f32>)]) -> BTreeMap<String, Tensor> {
    inputs
        .iter()
        .map(|(name, shape, v)| {
            let t = Tensor::from_vec(shape.clone(), v.clone()).expect("values fill the shape");
            (name.to_string(), t)
        })
        .collect()
}

/// Runs `model` (float32 inputs `inputs`, in order `%x`, `%y`, ...) with `byoc run --dtype
/// custom[posites2]n` and the extra arguments `options`, and returns output 0: once with the
/// default compiled host code and once on the reference kernels (the interpreted loop), which
/// must give the same bit patterns.
fn run_in_posits(
    test: &str,
    model: &str,
    inputs: &[(&str, Vec<usize>, Vec<f32>)],
    n: u32,
    options: &[&str],
) -> Vec<f32> {
    let dir = scratch(test);
    let model_path = dir.join(format!("m{n}.relay"));
    std::fs::write(&model_path, model).unwrap();
    let tensors = float_tensors(inputs);
    let inputs_path = dir.join(format!("in{n}.npz"));
    write_npz(&inputs_path, &tensors).unwrap();
    let run = |codegen: &str| {
        let out_path = dir.join(format!("out{n}_{codegen}.npz"));
        let out = Command::new(env!("CARGO_BIN_EXE_byoc"))
            .arg("run")
            .arg(&model_path)
            .arg("--dtype")
            .arg(format!("custom[posites2]{n}"))
            .arg("--plugin-path")
            .arg(posit_so())
            .arg("--inputs")
            .arg(&inputs_path)
            .arg("-o")
            .arg(&out_path)
            .args(["--host-codegen", codegen])
            .args(options)
            .output()
            .expect("byoc runs");
        assert!(
            out.status.success(),
            "{test} (posit{n}, {codegen}): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let outputs = read_npz(&out_path).unwrap();
        let y = &outputs["output_0"];
        assert_eq!(
            y.dtype(),
            byoc_ir::DType::Float32,
            "outputs leave as float32"
        );
        y.as_slice::<f32>().unwrap().to_vec()
    };
    let (compiled, interpreted) = (run("llvm"), run("kernels"));
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(
        bits(&compiled),
        bits(&interpreted),
        "{test} (posit{n}): compiled host code and the interpreted loop differ"
    );
    compiled
}

/// Checks that the posit run of `model` gives the reference patterns `want(n, inputs as posits)`.
fn check_exact(
    test: &str,
    model: &str,
    inputs: &[(&str, Vec<usize>, Vec<f32>)],
    want: impl Fn(u32, &[Vec<u64>]) -> Vec<u64>,
) {
    check_exact_in(test, model, inputs, &[8, 16], &[], want);
}

/// [`check_exact`] over the posit widths `widths`, with the extra `byoc run` arguments
/// `options`.
fn check_exact_in(
    test: &str,
    model: &str,
    inputs: &[(&str, Vec<usize>, Vec<f32>)],
    widths: &[u32],
    options: &[&str],
    want: impl Fn(u32, &[Vec<u64>]) -> Vec<u64>,
) {
    for &n in widths {
        let posits: Vec<Vec<u64>> = inputs
            .iter()
            .map(|(_, _, v)| v.iter().map(|&x| round(n, f64::from(x))).collect())
            .collect();
        let expected = want(n, &posits);
        let got = run_in_posits(test, model, inputs, n, options);
        assert_eq!(got.len(), expected.len(), "{test} (posit{n}): output size");
        for (i, (&g, &p)) in got.iter().zip(&expected).enumerate() {
            let w = value(n, p) as f32;
            assert!(
                g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()),
                "{test} (posit{n}) element {i}: got {g}, want {w} (pattern {p:#x})"
            );
        }
    }
}

fn unary_model(op: &str) -> String {
    model_of(&format!("{op}(%x)"))
}

/// A model of one `(2, 3, 4)` input `%x` whose body is `body`.
fn model_of(body: &str) -> String {
    format!("def @main(%x: Tensor[(2, 3, 4), float32]) {{ {body} }}")
}

/// An elementwise op, its inputs and its f64 function.
type UnaryCase<'a> = (&'a str, &'a [f32], fn(f64) -> f64);

#[test]
fn unary_ops_in_posits_are_correctly_rounded() {
    loaded();
    let positive = values(1, 24, 0.01, 6.0);
    let signed = values(2, 24, -6.0, 6.0);
    let cases: [UnaryCase<'_>; 5] = [
        ("exp", &signed, f64::exp),
        ("log", &positive, f64::ln),
        ("sqrt", &positive, f64::sqrt),
        ("tanh", &signed, f64::tanh),
        ("sigmoid", &signed, |x| 1.0 / (1.0 + (-x).exp())),
    ];
    for (op, xs, f) in cases {
        check_exact(
            op,
            &unary_model(op),
            &[("x", vec![2, 3, 4], xs.to_vec())],
            |n, p| p[0].iter().map(|&x| apply(n, x, f)).collect(),
        );
    }
    // rsqrt is 1 / sqrt(x), two roundings.
    check_exact(
        "rsqrt",
        &unary_model("rsqrt"),
        &[("x", vec![2, 3, 4], positive.clone())],
        |n, p| {
            let one = round(n, 1.0);
            p[0].iter()
                .map(|&x| reference::binary(n, '/', one, reference::sqrt(n, x)))
                .collect()
        },
    );
    check_exact(
        "relu",
        &unary_model("nn.relu"),
        &[("x", vec![2, 3, 4], signed.clone())],
        |n, p| p[0].iter().map(|&x| max(n, x, 0)).collect(),
    );
    check_exact(
        "negative",
        &unary_model("negative"),
        &[("x", vec![2, 3, 4], signed.clone())],
        |n, p| {
            p[0].iter()
                .map(|&x| reference::binary(n, '-', 0, x))
                .collect()
        },
    );
    // |x| is exact in posits (the plugin's `tir.fabs`).
    check_exact(
        "abs",
        &unary_model("abs"),
        &[("x", vec![2, 3, 4], signed.clone())],
        |n, p| p[0].iter().map(|&x| apply(n, x, f64::abs)).collect(),
    );
    // Both bounds are posits: clipping is exact.
    check_exact(
        "clip",
        &model_of("clip(%x, a_min=-1.5f, a_max=2f)"),
        &[("x", vec![2, 3, 4], signed.clone())],
        |n, p| {
            p[0].iter()
                .map(|&x| apply(n, x, |v| v.clamp(-1.5, 2.0)))
                .collect()
        },
    );
    // The negative side is one rounded product.
    check_exact(
        "leaky_relu",
        &model_of("nn.leaky_relu(%x, alpha=0.3f)"),
        &[("x", vec![2, 3, 4], signed.clone())],
        |n, p| {
            let alpha = round(n, f64::from(0.3f32));
            p[0].iter()
                .map(|&x| {
                    if value(n, x) < 0.0 {
                        reference::binary(n, '*', x, alpha)
                    } else {
                        x
                    }
                })
                .collect()
        },
    );
    check_exact(
        "batch_flatten",
        "def @main(%x: Tensor[(2, 3, 4), float32]) { nn.batch_flatten(%x) }",
        &[("x", vec![2, 3, 4], signed)],
        |_, p| p[0].clone(),
    );
}

#[test]
fn broadcast_binary_ops_in_posits_are_correctly_rounded() {
    loaded();
    let x = values(3, 24, -4.0, 4.0);
    let y = values(4, 4, 0.25, 3.0);
    for (op, symbol) in [
        ("add", '+'),
        ("subtract", '-'),
        ("multiply", '*'),
        ("divide", '/'),
    ] {
        let model = format!(
            "def @main(%x: Tensor[(2, 3, 4), float32], %y: Tensor[(4), float32]) {{ {op}(%x, %y) }}"
        );
        check_exact(
            op,
            &model,
            &[("x", vec![2, 3, 4], x.clone()), ("y", vec![4], y.clone())],
            |n, p| {
                (0..24)
                    .map(|i| reference::binary(n, symbol, p[0][i], p[1][i % 4]))
                    .collect()
            },
        );
    }
}

#[test]
fn comparisons_in_posits_follow_the_posit_order() {
    loaded();
    // Values on a coarse grid, so that equal pairs occur.
    let x: Vec<f32> = values(5, 24, -3.0, 3.0)
        .iter()
        .map(|v| v.round() / 2.0)
        .collect();
    let y: Vec<f32> = values(6, 4, -3.0, 3.0)
        .iter()
        .map(|v| v.round() / 2.0)
        .collect();
    type Holds = fn(f64, f64) -> bool;
    let ops: [(&str, Holds); 6] = [
        ("equal", |a, b| a == b),
        ("not_equal", |a, b| a != b),
        ("less", |a, b| a < b),
        ("less_equal", |a, b| a <= b),
        ("greater", |a, b| a > b),
        ("greater_equal", |a, b| a >= b),
    ];
    for (op, holds) in ops {
        // The comparison selects between the operands, so the output is the datatype's.
        let model = format!(
            "def @main(%x: Tensor[(2, 3, 4), float32], %y: Tensor[(4), float32]) {{ where({op}(%x, %y), %x, %y) }}"
        );
        check_exact(
            op,
            &model,
            &[("x", vec![2, 3, 4], x.clone()), ("y", vec![4], y.clone())],
            |n, p| {
                (0..24)
                    .map(|i| {
                        let (a, b) = (p[0][i], p[1][i % 4]);
                        if holds(value(n, a), value(n, b)) {
                            a
                        } else {
                            b
                        }
                    })
                    .collect()
            },
        );
    }
}

/// The sum of `terms` from zero, one rounding per addition (TVM's sequential reduction).
fn sum(n: u32, terms: impl IntoIterator<Item = u64>) -> u64 {
    terms
        .into_iter()
        .fold(0, |acc, t| reference::binary(n, '+', acc, t))
}

#[test]
fn softmax_dense_and_bias_add_in_posits_are_correctly_rounded() {
    loaded();
    let x = values(5, 10, -3.0, 3.0);
    check_exact(
        "softmax",
        "def @main(%x: Tensor[(2, 5), float32]) { nn.softmax(%x) }",
        &[("x", vec![2, 5], x)],
        |n, p| {
            let lowest = (1u64 << (n - 1)) + 1; // -maxpos
            p[0].chunks(5)
                .flat_map(|row| {
                    let m = row.iter().fold(lowest, |m, &v| max(n, m, v));
                    let e: Vec<u64> = row
                        .iter()
                        .map(|&v| apply(n, reference::binary(n, '-', v, m), f64::exp))
                        .collect();
                    let s = sum(n, e.iter().copied());
                    e.into_iter()
                        .map(|v| reference::binary(n, '/', v, s))
                        .collect::<Vec<_>>()
                })
                .collect()
        },
    );
    let (d, w) = (values(6, 12, -2.0, 2.0), values(7, 18, -1.0, 1.0));
    check_exact(
        "dense",
        "def @main(%x: Tensor[(2, 6), float32], %w: Tensor[(3, 6), float32]) { nn.dense(%x, %w) }",
        &[("x", vec![2, 6], d), ("w", vec![3, 6], w)],
        |n, p| {
            (0..6)
                .map(|o| {
                    let (i, j) = (o / 3, o % 3);
                    sum(
                        n,
                        (0..6).map(|k| reference::binary(n, '*', p[0][i * 6 + k], p[1][j * 6 + k])),
                    )
                })
                .collect()
        },
    );
    let (x, b) = (values(8, 12, -2.0, 2.0), values(9, 3, -1.0, 1.0));
    check_exact(
        "bias_add",
        "def @main(%x: Tensor[(1, 3, 2, 2), float32], %b: Tensor[(3), float32]) { nn.bias_add(%x, %b) }",
        &[("x", vec![1, 3, 2, 2], x), ("b", vec![3], b)],
        |n, p| (0..12).map(|i| reference::binary(n, '+', p[0][i], p[1][i / 4])).collect(),
    );
}

/// Σ x[i]·y[i] as the host sums without the quire: each product rounded, then added one at a
/// time from zero.
fn sequential_dot(n: u32, x: &[u64], y: &[u64]) -> u64 {
    sum(
        n,
        x.iter()
            .zip(y)
            .map(|(&a, &b)| reference::binary(n, '*', a, b)),
    )
}

/// Σ x[i]·y[i] in exact rational arithmetic, rounded once (what the quire gives).
fn exact_dot(n: u32, x: &[u64], y: &[u64]) -> u64 {
    let mut total = Dyadic::zero();
    for (&a, &b) in x.iter().zip(y) {
        let (Some(a), Some(b)) = (reference::decode(n, a), reference::decode(n, b)) else {
            return reference::nar(n);
        };
        total = total.add(&a.mul(&b));
    }
    reference::round_exact(n, &total)
}

/// Σ x[i] in exact rational arithmetic, rounded once.
fn exact_sum(n: u32, x: &[u64]) -> u64 {
    exact_dot(n, x, &vec![round(n, 1.0); x.len()])
}

/// A dot product of posit patterns: [`sequential_dot`] or [`exact_dot`].
type Dot = fn(u32, &[u64], &[u64]) -> u64;

/// Reference NCHW convolution: per output, `dot` of the taps of x and w in the order (input
/// channel, kernel row, kernel column), padding taps skipped (they add an exact zero).
#[allow(clippy::too_many_arguments, reason = "the convolution's geometry")]
fn conv_ref(
    dot: Dot,
    n: u32,
    x: &[u64],
    [_, h, wd]: [usize; 3],
    w: &[u64],
    [o, i, kh, kw]: [usize; 4],
    groups: usize,
    pad: usize,
    stride: usize,
    dilation: usize,
) -> Vec<u64> {
    let out_h = (h + 2 * pad - dilation * (kh - 1) - 1) / stride + 1;
    let out_w = (wd + 2 * pad - dilation * (kw - 1) - 1) / stride + 1;
    let mut out = Vec::new();
    for oc in 0..o {
        let g = oc / (o / groups);
        for oy in 0..out_h {
            for ox in 0..out_w {
                let (mut xs, mut ws) = (Vec::new(), Vec::new());
                for ic in 0..i {
                    for ky in 0..kh {
                        for kx in 0..kw {
                            let iy = (oy * stride + ky * dilation) as isize - pad as isize;
                            let ix = (ox * stride + kx * dilation) as isize - pad as isize;
                            if iy < 0 || ix < 0 || iy >= h as isize || ix >= wd as isize {
                                continue;
                            }
                            xs.push(x[((g * i + ic) * h + iy as usize) * wd + ix as usize]);
                            ws.push(w[((oc * i + ic) * kh + ky) * kw + kx]);
                        }
                    }
                }
                out.push(dot(n, &xs, &ws));
            }
        }
    }
    out
}

/// (name, data [c, h, w], weight [o, i, kh, kw], groups, padding, strides, dilation)
type ConvCase = (
    &'static str,
    [usize; 3],
    [usize; 4],
    usize,
    usize,
    usize,
    usize,
);

/// The convolutions of the tests: plain, depthwise, grouped, dilated, strided.
const CONV_CASES: [ConvCase; 5] = [
    ("conv2d", [3, 5, 5], [4, 3, 3, 3], 1, 1, 1, 1),
    ("depthwise", [4, 5, 5], [4, 1, 3, 3], 4, 1, 1, 1),
    ("grouped", [4, 5, 5], [4, 2, 3, 3], 2, 1, 1, 1),
    ("dilated", [2, 7, 7], [3, 2, 3, 3], 1, 1, 1, 2),
    ("strided", [2, 6, 6], [2, 2, 3, 3], 1, 0, 2, 1),
];

/// Checks every convolution of [`CONV_CASES`] in the posit widths `widths` with the extra
/// `byoc run` arguments `options` against the reference convolution summing with `dot`.
fn check_convolutions(widths: &[u32], options: &[&str], dot: Dot) {
    for (i, (name, d, w, groups, pad, stride, dilation)) in CONV_CASES.into_iter().enumerate() {
        let model = format!(
            "def @main(%x: Tensor[(1, {}, {}, {}), float32], %w: Tensor[({}, {}, {}, {}), float32]) {{\n  \
             nn.conv2d(%x, %w, groups={groups}, padding=[{pad}, {pad}, {pad}, {pad}], strides=[{stride}, {stride}], dilation=[{dilation}, {dilation}])\n}}",
            d[0], d[1], d[2], w[0], w[1], w[2], w[3]
        );
        let xs = values(10 + i as u64, d.iter().product(), -1.0, 1.0);
        let ws = values(20 + i as u64, w.iter().product(), -1.0, 1.0);
        let test = format!("{name}{}", if options.is_empty() { "" } else { "_quire" });
        check_exact_in(
            &test,
            &model,
            &[
                ("x", [vec![1], d.to_vec()].concat(), xs),
                ("w", w.to_vec(), ws),
            ],
            widths,
            options,
            |n, p| conv_ref(dot, n, &p[0], d, &p[1], w, groups, pad, stride, dilation),
        );
    }
}

#[test]
fn conv2d_in_posits_is_correctly_rounded() {
    loaded();
    check_convolutions(&[8, 16], &[], sequential_dot);
}

/// Applies `f(taps, window size)` to every `k × k` window (stride `s`, padding `pad`) of the
/// two 5 × 5 channels of `p`, the taps inside the input in row-major order.
fn pool_windows(
    p: &[u64],
    k: usize,
    s: usize,
    pad: usize,
    f: &dyn Fn(Vec<u64>, usize) -> u64,
) -> Vec<u64> {
    let out = (5 + 2 * pad - k) / s + 1;
    let mut y = Vec::new();
    for c in 0..2 {
        for oy in 0..out {
            for ox in 0..out {
                let mut taps = Vec::new();
                for ky in 0..k {
                    for kx in 0..k {
                        let (iy, ix) = (
                            (oy * s + ky) as isize - pad as isize,
                            (ox * s + kx) as isize - pad as isize,
                        );
                        if (0..5).contains(&iy) && (0..5).contains(&ix) {
                            taps.push(p[(c * 5 + iy as usize) * 5 + ix as usize]);
                        }
                    }
                }
                y.push(f(taps, k * k));
            }
        }
    }
    y
}

#[test]
fn pooling_in_posits_is_correctly_rounded() {
    loaded();
    let xs = values(30, 50, -3.0, 3.0);
    let x = [("x", vec![1, 2, 5, 5], xs)];
    check_exact(
        "max_pool2d",
        "def @main(%x: Tensor[(1, 2, 5, 5), float32]) { nn.max_pool2d(%x, pool_size=[2, 2], strides=[2, 2], padding=[1, 1, 1, 1]) }",
        &x,
        |n, p| {
            let lowest = (1u64 << (n - 1)) + 1;
            pool_windows(&p[0], 2, 2, 1, &|taps, _| taps.into_iter().fold(lowest, |m, v| max(n, m, v)))
        },
    );
    for (include, flag) in [(false, "False"), (true, "True")] {
        check_exact(
            "avg_pool2d",
            &format!("def @main(%x: Tensor[(1, 2, 5, 5), float32]) {{ nn.avg_pool2d(%x, pool_size=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1], count_include_pad={flag}) }}"),
            &x,
            |n, p| {
                pool_windows(&p[0], 3, 2, 1, &|taps, full| {
                    let count = if include { full } else { taps.len() };
                    reference::binary(n, '/', sum(n, taps), round(n, count as f64))
                })
            },
        );
    }
    check_exact(
        "global_avg_pool2d",
        "def @main(%x: Tensor[(1, 2, 5, 5), float32]) { nn.global_avg_pool2d(%x) }",
        &x,
        |n, p| {
            p[0].chunks(25)
                .map(|c| reference::binary(n, '/', sum(n, c.iter().copied()), round(n, 25.0)))
                .collect()
        },
    );
}

// ---------------------------------------------------------------------------------------------
// Sums in the quire: with `--plugin-option posit.quire=true` the products of conv2d (every
// variant), dense, batch_matmul and the taps of average pooling are summed exactly and each
// output is rounded once, checked against the exact rational sum of the reference.

/// The `byoc run` arguments that turn the quire on.
const QUIRE: [&str; 2] = ["--plugin-option", "posit.quire=true"];

#[test]
fn conv2d_in_the_quire_rounds_each_output_once() {
    loaded();
    check_convolutions(&[8, 16, 32], &QUIRE, exact_dot);
}

#[test]
fn dense_batch_matmul_and_pooling_in_the_quire_round_each_output_once() {
    loaded();
    let (d, w) = (values(40, 24, -2.0, 2.0), values(41, 36, -1.0, 1.0));
    check_exact_in(
        "dense_quire",
        "def @main(%x: Tensor[(2, 12), float32], %w: Tensor[(3, 12), float32]) { nn.dense(%x, %w) }",
        &[("x", vec![2, 12], d), ("w", vec![3, 12], w)],
        &[8, 16, 32],
        &QUIRE,
        |n, p| {
            (0..6)
                .map(|o| {
                    let (i, j) = (o / 3, o % 3);
                    exact_dot(n, &p[0][i * 12..][..12], &p[1][j * 12..][..12])
                })
                .collect()
        },
    );
    let (a, b) = (values(42, 24, -2.0, 2.0), values(43, 40, -1.0, 1.0));
    check_exact_in(
        "batch_matmul_quire",
        "def @main(%x: Tensor[(2, 3, 4), float32], %y: Tensor[(2, 5, 4), float32]) { nn.batch_matmul(%x, %y) }",
        &[("x", vec![2, 3, 4], a), ("y", vec![2, 5, 4], b)],
        &[8, 16, 32],
        &QUIRE,
        |n, p| {
            (0..30)
                .map(|o| {
                    let (batch, i, j) = (o / 15, o / 5 % 3, o % 5);
                    exact_dot(n, &p[0][(batch * 3 + i) * 4..][..4], &p[1][(batch * 5 + j) * 4..][..4])
                })
                .collect()
        },
    );
    let x = [("x", vec![1, 2, 5, 5], values(44, 50, -3.0, 3.0))];
    check_exact_in(
        "avg_pool2d_quire",
        "def @main(%x: Tensor[(1, 2, 5, 5), float32]) { nn.avg_pool2d(%x, pool_size=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1], count_include_pad=True) }",
        &x,
        &[8, 16, 32],
        &QUIRE,
        |n, p| {
            pool_windows(&p[0], 3, 2, 1, &|taps, full| {
                reference::binary(n, '/', exact_sum(n, &taps), round(n, full as f64))
            })
        },
    );
    check_exact_in(
        "global_avg_pool2d_quire",
        "def @main(%x: Tensor[(1, 2, 5, 5), float32]) { nn.global_avg_pool2d(%x) }",
        &x,
        &[8, 16, 32],
        &QUIRE,
        |n, p| {
            p[0].chunks(25)
                .map(|c| reference::binary(n, '/', exact_sum(n, c), round(n, 25.0)))
                .collect()
        },
    );
}

/// Where sequential rounding loses: `1 + s` rounds back to 1 in every width (s = 2^-40), so
/// `1 + s + s + s + s - 1` is 0 summed one term at a time, and `4s` (rounded once) in the quire.
#[test]
fn the_quire_keeps_what_sequential_sums_round_away() {
    loaded();
    let s = (-40f32).exp2();
    let dense =
        "def @main(%x: Tensor[(1, 6), float32], %w: Tensor[(1, 6), float32]) { nn.dense(%x, %w) }";
    let inputs = [
        ("x", vec![1, 6], vec![1.0, s, s, s, s, -1.0]),
        ("w", vec![1, 6], vec![1.0; 6]),
    ];
    let pool = "def @main(%x: Tensor[(1, 1, 2, 2), float32]) { nn.global_avg_pool2d(%x) }";
    let taps = [("x", vec![1, 1, 2, 2], vec![1.0, s, s, -1.0])];
    for n in [8, 16, 32] {
        let p: Vec<u64> = inputs[0]
            .2
            .iter()
            .map(|&v| round(n, f64::from(v)))
            .collect();
        let ones = vec![round(n, 1.0); 6];
        let (sequential, exact) = (sequential_dot(n, &p, &ones), exact_dot(n, &p, &ones));
        assert_eq!(sequential, 0, "posit{n}: the small terms are rounded away");
        assert!(value(n, exact) > 0.0, "posit{n}: the quire keeps them");
        let plain = run_in_posits("lossy_dense", dense, &inputs, n, &[]);
        let quire = run_in_posits("lossy_dense_quire", dense, &inputs, n, &QUIRE);
        assert_eq!(plain, [0.0], "posit{n}: sequential dense");
        assert_eq!(
            quire,
            [value(n, exact) as f32],
            "posit{n}: dense in the quire"
        );

        let p: Vec<u64> = taps[0].2.iter().map(|&v| round(n, f64::from(v))).collect();
        let four = round(n, 4.0);
        let exact = reference::binary(n, '/', exact_sum(n, &p), four);
        assert_eq!(
            reference::binary(n, '/', sum(n, p.iter().copied()), four),
            0
        );
        let plain = run_in_posits("lossy_pool", pool, &taps, n, &[]);
        let quire = run_in_posits("lossy_pool_quire", pool, &taps, n, &QUIRE);
        assert_eq!(plain, [0.0], "posit{n}: sequential average");
        assert_eq!(
            quire,
            [value(n, exact) as f32],
            "posit{n}: average in the quire"
        );
        assert!(quire[0] > 0.0);
    }
}

/// `posit.quire` is a flag, and only for models that compute in posits.
#[test]
fn the_quire_option_is_refused_where_it_cannot_apply() {
    loaded();
    let dir = scratch("quire_refused");
    let model = dir.join("float.relay");
    std::fs::write(
        &model,
        "def @main(%x: Tensor[(1, 4), float32], %w: Tensor[(2, 4), float32]) { nn.dense(%x, %w) }",
    )
    .unwrap();
    let model = model.to_str().unwrap();
    let (code, _, err) = byoc_with_posit(&[
        "run",
        model,
        "--random-inputs",
        "1",
        "--plugin-option",
        "posit.quire=true",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(
            "--plugin-option posit.quire=true: the model computes in no custom[posites2] type"
        ) && err.contains("--dtype custom[posites2]8|16|32"),
        "{err}"
    );
    let (code, _, err) = byoc_with_posit(&[
        "run",
        model,
        "--random-inputs",
        "1",
        "--dtype",
        "custom[posites2]16",
        "--plugin-option",
        "posit.quire=yes",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("option 'posit.quire=yes': expected true or false"),
        "{err}"
    );
    // Off, the option is accepted for any model.
    let (code, _, err) = byoc_with_posit(&[
        "run",
        model,
        "--random-inputs",
        "1",
        "--plugin-option",
        "posit.quire=false",
    ]);
    assert_eq!(code, 0, "{err}");
}

#[test]
fn batch_norm_in_posits_follows_simplify_inference() {
    loaded();
    let xs = values(40, 12, -2.0, 2.0);
    let (gamma, beta, mean) = (
        values(41, 3, 0.5, 1.5),
        values(42, 3, -0.5, 0.5),
        values(43, 3, -0.5, 0.5),
    );
    let var = values(44, 3, 0.5, 2.0);
    let model = "def @main(%x: Tensor[(1, 3, 2, 2), float32], %g: Tensor[(3), float32], %b: Tensor[(3), float32], %m: Tensor[(3), float32], %v: Tensor[(3), float32]) {\n  \
                 %0 = nn.batch_norm(%x, %g, %b, %m, %v, epsilon=0.25f);\n  %0.0\n}";
    check_exact(
        "batch_norm",
        model,
        &[
            ("x", vec![1, 3, 2, 2], xs),
            ("g", vec![3], gamma),
            ("b", vec![3], beta),
            ("m", vec![3], mean),
            ("v", vec![3], var),
        ],
        |n, p| {
            // scale = 1 / sqrt(var + eps) * gamma; shift = -mean * scale + beta;
            // out = x * scale + shift.
            let (one, eps) = (round(n, 1.0), round(n, 0.25));
            (0..12)
                .map(|i| {
                    let c = i / 4;
                    let sd = reference::sqrt(n, reference::binary(n, '+', p[4][c], eps));
                    let scale =
                        reference::binary(n, '*', reference::binary(n, '/', one, sd), p[1][c]);
                    let neg_mean = reference::binary(n, '-', 0, p[3][c]);
                    let shift = reference::binary(
                        n,
                        '+',
                        reference::binary(n, '*', neg_mean, scale),
                        p[2][c],
                    );
                    reference::binary(n, '+', reference::binary(n, '*', p[0][i], scale), shift)
                })
                .collect()
        },
    );
}

// ---------------------------------------------------------------------------------------------
// TVM's posit test set (tests/python/relay/test_custom_datatypes.py) with its tolerances: each
// model in posits against the same model in float32, through the CLI and through the library.

/// TVM's tolerance classes.
#[derive(Clone, Copy)]
enum Tolerance {
    Ops,
    Conv,
    BatchNorm,
}

impl Tolerance {
    /// `(rtol, atol)` of `np.testing.assert_allclose` for posit`n`.
    fn of(self, n: u32) -> (f64, f64) {
        match (n, self) {
            (8, _) => (1.0, 1.0),
            (16, _) => (0.01, 1.0),
            (_, Tolerance::Ops) => (1e-6, 1e-6),
            (_, Tolerance::Conv) => (1e-7, 1e-4),
            (_, Tolerance::BatchNorm) => (1e-4, 1e-4),
        }
    }
}

/// One case: a model and its inputs `(name, shape, lo, hi)`.
struct TvmCase {
    name: String,
    model: String,
    inputs: Vec<(&'static str, Vec<usize>, f32, f32)>,
    tolerance: Tolerance,
}

fn tvm_cases() -> Vec<TvmCase> {
    let mut cases = Vec::new();
    let x = "%x: Tensor[(5, 10, 5), float32]";
    for op in [
        "nn.softmax",
        "log",
        "exp",
        "sqrt",
        "rsqrt",
        "sigmoid",
        "tanh",
        "nn.relu",
        "nn.batch_flatten",
    ] {
        cases.push(TvmCase {
            name: op.to_string(),
            model: format!("def @main({x}) {{ {op}(%x) }}"),
            inputs: vec![("x", vec![5, 10, 5], 0.0, 1.0)],
            tolerance: Tolerance::Ops,
        });
    }
    for op in [
        "nn.max_pool2d(%x, pool_size=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1])",
        "nn.avg_pool2d(%x, pool_size=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1])",
        "nn.global_avg_pool2d(%x)",
    ] {
        cases.push(TvmCase {
            name: op.split('(').next().unwrap_or(op).to_string(),
            model: format!("def @main(%x: Tensor[(3, 32, 32, 32), float32]) {{ {op} }}"),
            inputs: vec![("x", vec![3, 32, 32, 32], 0.0, 1.0)],
            tolerance: Tolerance::Ops,
        });
    }
    for op in ["add", "subtract", "divide", "multiply"] {
        cases.push(TvmCase {
            name: op.to_string(),
            model: format!("def @main({x}, %y: Tensor[(5), float32]) {{ {op}(%x, %y) }}"),
            inputs: vec![("x", vec![5, 10, 5], 0.0, 1.0), ("y", vec![5], 0.0, 1.0)],
            tolerance: Tolerance::Ops,
        });
    }
    // (data, weight, groups, dilation), all with padding 1.
    for (d, w, groups, dilation) in [
        ([1, 32, 18, 18], [32, 1, 3, 3], 32, 1),
        ([1, 32, 18, 18], [32, 4, 3, 3], 8, 1),
        ([1, 32, 18, 18], [64, 1, 3, 3], 32, 1),
        ([1, 3, 224, 224], [10, 3, 3, 3], 1, 1),
        ([1, 3, 18, 18], [10, 3, 3, 3], 1, 3),
    ] {
        let shape = |s: [usize; 4]| format!("({}, {}, {}, {})", s[0], s[1], s[2], s[3]);
        cases.push(TvmCase {
            name: format!("conv2d {d:?} x {w:?} groups={groups} dilation={dilation}"),
            model: format!(
                "def @main(%x: Tensor[{}, float32], %w: Tensor[{}, float32]) {{ nn.conv2d(%x, %w, padding=[1, 1, 1, 1], groups={groups}, dilation=[{dilation}, {dilation}]) }}",
                shape(d),
                shape(w)
            ),
            inputs: vec![("x", d.to_vec(), -1.0, 1.0), ("w", w.to_vec(), -1.0, 1.0)],
            tolerance: Tolerance::Conv,
        });
    }
    let p = "Tensor[(32), float32]";
    cases.push(TvmCase {
        name: "batch_norm".into(),
        model: format!(
            "def @main(%x: Tensor[(3, 32, 32), float32], %g: {p}, %b: {p}, %m: {p}, %v: {p}) {{\n  \
             %0 = nn.batch_norm(%x, %g, %b, %m, %v, axis=1, epsilon=2e-05f, scale=False);\n  %0.0\n}}"
        ),
        inputs: vec![
            ("x", vec![3, 32, 32], 0.0, 1.0),
            ("g", vec![32], 0.0, 0.0),
            ("b", vec![32], 0.0, 0.0),
            ("m", vec![32], 0.0, 0.0),
            ("v", vec![32], 0.0, 0.0),
        ],
        tolerance: Tolerance::BatchNorm,
    });
    cases
}

/// `np.testing.assert_allclose(got, want, rtol, atol)`.
fn assert_allclose(what: &str, got: &[f32], want: &[f32], (rtol, atol): (f64, f64)) {
    assert_eq!(got.len(), want.len(), "{what}: output size");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let (g, w) = (f64::from(g), f64::from(w));
        assert!(
            (g - w).abs() <= atol + rtol * w.abs(),
            "{what} element {i}: got {g}, float32 gives {w} (rtol {rtol}, atol {atol})"
        );
    }
}

#[test]
fn tvm_posit_test_set_within_tvm_tolerances() {
    use byoc_exec::{ExecOptions, Executor};
    use byoc_pipeline::datatype::convert_to_datatype;
    loaded();
    for (c, case) in tvm_cases().into_iter().enumerate() {
        let inputs: Vec<(&str, Vec<usize>, Vec<f32>)> = case
            .inputs
            .iter()
            .enumerate()
            .map(|(i, (name, shape, lo, hi))| {
                let count = shape.iter().product();
                let v = if lo == hi {
                    vec![*lo; count]
                } else {
                    values((c * 8 + i) as u64, count, *lo, *hi)
                };
                (*name, shape.clone(), v)
            })
            .collect();
        let tensors = float_tensors(&inputs);
        let module = parse_module(&case.model).unwrap();
        let run = |m: &byoc_ir::Module| -> Vec<f32> {
            let out = Executor::new(m, ExecOptions::default())
                .and_then(|e| e.run_named(&tensors))
                .unwrap_or_else(|e| panic!("{}: {e}", case.name));
            out[0].as_slice::<f32>().unwrap().to_vec()
        };
        let want = run(&module);
        for n in [8, 16, 32] {
            let tolerance = case.tolerance.of(n);
            let dtype: DType = format!("custom[posites2]{n}").parse().unwrap();
            let converted = convert_to_datatype(&module, dtype).unwrap();
            assert_allclose(
                &format!("{} (posit{n}, library)", case.name),
                &run(&converted),
                &want,
                tolerance,
            );
            let got = run_in_posits(&format!("tvm{c}"), &case.model, &inputs, n, &[]);
            assert_allclose(
                &format!("{} (posit{n}, byoc run)", case.name),
                &got,
                &want,
                tolerance,
            );
        }
    }
}

/// Runs `byoc` with `args` and the posit plugin; returns (exit code, stdout, stderr).
fn byoc_with_posit(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_byoc"))
        .args(args)
        .arg("--plugin-path")
        .arg(posit_so())
        .output()
        .expect("byoc runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn custom_typed_parameters_take_and_give_bit_patterns() {
    use byoc_artifact::io::read_npz_as;
    loaded();
    let dir = scratch("bits");
    let model = dir.join("bits.relay");
    std::fs::write(
        &model,
        "def @main(%x: Tensor[(3), custom[posites2]16], %y: Tensor[(3), custom[posites2]16]) { multiply(%x, %y) }",
    )
    .unwrap();
    let dtype: DType = "custom[posites2]16".parse().unwrap();
    let ty = byoc_ir::TensorType::new([3], dtype);
    let (x, y) = ([0x4000u16, 0x3000, 0xC800], [0x4800u16, 0x4800, 0x3000]);
    let bits = |v: &[u16]| {
        let bytes: Vec<u8> = v.iter().flat_map(|b| b.to_ne_bytes()).collect();
        Tensor::from_bytes(ty.clone(), &bytes).unwrap()
    };
    let inputs: BTreeMap<String, Tensor> =
        [("x".to_string(), bits(&x)), ("y".to_string(), bits(&y))].into();
    let (in_path, out_path) = (dir.join("in.npz"), dir.join("out.npz"));
    write_npz(&in_path, &inputs).unwrap();
    let (code, _, err) = byoc_with_posit(&[
        "run",
        model.to_str().unwrap(),
        "--inputs",
        in_path.to_str().unwrap(),
        "-o",
        out_path.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let custom: BTreeMap<String, DType> = [("output_0".to_string(), dtype)].into();
    let out = read_npz_as(&out_path, &custom).unwrap();
    let got = &out["output_0"];
    assert_eq!(
        got.dtype(),
        dtype,
        "the output is stored as uint16 bit patterns"
    );
    let want: Vec<u8> = (0..3)
        .flat_map(|i| {
            (reference::binary(16, '*', u64::from(x[i]), u64::from(y[i])) as u16).to_ne_bytes()
        })
        .collect();
    assert_eq!(got.as_bytes(), want.as_slice());
    // The archive holds a uint16 array, which a plain read (no datatype named) refuses.
    let err = read_npz(&out_path).unwrap_err().to_string();
    assert!(err.contains("'<u2'"), "{err}");

    // float32 values where bit patterns are expected: a clear error.
    let floats: BTreeMap<String, Tensor> = [
        (
            "x".to_string(),
            Tensor::from_vec([3], vec![1.0f32; 3]).unwrap(),
        ),
        (
            "y".to_string(),
            Tensor::from_vec([3], vec![1.0f32; 3]).unwrap(),
        ),
    ]
    .into();
    write_npz(&in_path, &floats).unwrap();
    let (code, _, err) = byoc_with_posit(&[
        "run",
        model.to_str().unwrap(),
        "--inputs",
        in_path.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("input 'x' is Tensor[(3), float32] but the model expects Tensor[(3), custom[posites2]16], given as its bit patterns (uint16)"), "{err}");
}

#[test]
fn bad_datatype_input_gives_clear_errors() {
    let dir = scratch("bad");
    let model = dir.join("m.relay");
    std::fs::write(&model, "def @main(%x: Tensor[(4), float32]) { exp(%x) }").unwrap();
    let model = model.to_str().unwrap();
    // An unregistered datatype on the command line lists what is registered.
    let (code, _, err) = byoc_with_posit(&[
        "run",
        model,
        "--random-inputs",
        "1",
        "--dtype",
        "custom[posit]16",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--dtype 'custom[posit]16': custom datatype 'posit' is not registered; registered: custom[posites2]8|16|32 (code 132)"),
        "{err}"
    );
    let (code, _, err) = byoc_with_posit(&[
        "run",
        model,
        "--random-inputs",
        "1",
        "--dtype",
        "custom[posites2]64",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("does not come in 64 bits"), "{err}");
    let (code, _, err) =
        byoc_with_posit(&["run", model, "--random-inputs", "1", "--dtype", "float16"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not a custom datatype"), "{err}");
    // An unregistered datatype in a model file.
    let unknown = dir.join("unknown.relay");
    std::fs::write(
        &unknown,
        "def @main(%x: Tensor[(4), custom[myfloat]32]) { %x }",
    )
    .unwrap();
    let (code, _, err) =
        byoc_with_posit(&["run", unknown.to_str().unwrap(), "--random-inputs", "1"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("'myfloat' is not registered; registered: custom[posites2]8|16|32"),
        "{err}"
    );
    // An op the datatype has no lowering for is refused when the plan is built; an op whose
    // key the table lacks names the key and the plugin.
    for (name, body, message) in [
        (
            "power",
            "power(%x, %x)",
            "power: custom[posites2]16 has no lowering: a lowering table has no key for this op",
        ),
        (
            "erf",
            "erf(%x)",
            "erf: custom[posites2]16 has no lowering for Call.intrin.tir.erf (16 bits) (plugin 'posit')",
        ),
    ] {
        let path = dir.join(format!("{name}.relay"));
        std::fs::write(
            &path,
            format!("def @main(%x: Tensor[(4), float32]) {{ {body} }}"),
        )
        .unwrap();
        let (code, _, err) = byoc_with_posit(&[
            "run",
            path.to_str().unwrap(),
            "--random-inputs",
            "1",
            "--dtype",
            "custom[posites2]16",
        ]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains(message), "{err}");
    }
}

/// SqueezeNet (ONNX's light model with seeded random weights) in posit32 and posit16 against
/// float32 on the model's input: posit32 within 1e-5 of the output's peak, posit16 within
/// 5e-2 (about 3e-2 measured), both with the same top-1 class; posit16 with the quire
/// (`byoc run --plugin-option posit.quire=true`) within the same bound and with the same top-1
/// class (both errors are printed).
#[test]
#[ignore = "needs the ONNX light models: ./scripts/fetch_onnx_light.sh"]
fn squeezenet_in_posit32_and_posit16_tracks_float32() {
    use byoc_exec::{ExecOptions, Executor};
    use byoc_pipeline::datatype::convert_to_datatype;
    use byoc_pipeline::inputs::resolve_inputs;
    use byoc_pipeline::model::{load_model, LoadOptions};
    use byoc_pipeline::verify::Accuracy;
    loaded();
    let dir = PathBuf::from(
        std::env::var_os("BYOC_ONNX_LIGHT_DIR")
            .expect("BYOC_ONNX_LIGHT_DIR names the light models"),
    )
    .join("squeezenet");
    let module = load_model(&dir.join("random.onnx"), &LoadOptions::default()).unwrap();
    let inputs = resolve_inputs(&module, Some(&dir.join("random_input.npz")), None).unwrap();
    let run = |m: &byoc_ir::Module| {
        Executor::new(m, ExecOptions::default())
            .and_then(|e| e.run_named(&inputs))
            .unwrap()[0]
            .to_f64_vec()
    };
    let want = run(&module);
    let peak = want.iter().fold(0f64, |m, v| m.max(v.abs()));
    let mut sequential16 = None;
    for (bits, bound) in [(32, 1e-5), (16, 5e-2)] {
        let dtype: DType = format!("custom[posites2]{bits}").parse().unwrap();
        let got = run(&convert_to_datatype(&module, dtype).unwrap());
        let mut accuracy = Accuracy::default();
        accuracy.add(&want, &got, want.len());
        assert!(
            accuracy.max_abs <= bound * peak,
            "posit{bits}: max |err| {} vs peak {peak}",
            accuracy.max_abs
        );
        assert_eq!(accuracy.top1_agree, 1, "posit{bits}: top-1 class");
        if bits == 16 {
            sequential16 = Some(accuracy);
        }
    }
    // The quire through the CLI: the option is process-wide, and the other tests of this
    // binary run posit sums in process.
    let out_path = scratch("squeezenet_quire").join("out.npz");
    let (code, _, err) = byoc_with_posit(&[
        "run",
        dir.join("random.onnx").to_str().unwrap(),
        "--inputs",
        dir.join("random_input.npz").to_str().unwrap(),
        "--dtype",
        "custom[posites2]16",
        "--plugin-option",
        "posit.quire=true",
        "-o",
        out_path.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let got = read_npz(&out_path)
        .unwrap()
        .into_values()
        .next()
        .expect("the model's one output")
        .to_f64_vec();
    let mut quire = Accuracy::default();
    quire.add(&want, &got, want.len());
    let sequential = sequential16.expect("posit16 ran");
    eprintln!(
        "posit16: sequential max {:.3e} mean {:.3e}; quire max {:.3e} mean {:.3e}; peak {peak:.3}",
        sequential.max_abs,
        sequential.mean_abs(),
        quire.max_abs,
        quire.mean_abs()
    );
    assert!(
        quire.max_abs <= 5e-2 * peak,
        "posit16 quire: max |err| {}",
        quire.max_abs
    );
    assert_eq!(quire.top1_agree, 1, "posit16 quire: top-1 class");
}

#[test]
fn verify_build_and_artifacts_take_dtype() {
    loaded();
    let dir = scratch("verify");
    let model = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/models/small_cnn.relay");
    let model = model.to_str().unwrap();
    let (code, out, err) = byoc_with_posit(&[
        "verify",
        model,
        "--dtype",
        "custom[posites2]32",
        "--samples",
        "2",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("output_0: max_abs_err="), "{out}");
    assert!(
        out.contains(" mean_abs_err=") && out.contains("top1_agreement=2/2 ok"),
        "{out}"
    );
    // The converted side runs compiled by default; on the interpreted loop the errors are the
    // same to the last digit (the compiled code gives the same bit patterns).
    let (code, interpreted, err) = byoc_with_posit(&[
        "verify",
        model,
        "--dtype",
        "custom[posites2]32",
        "--samples",
        "2",
        "--host-codegen",
        "kernels",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(interpreted, out);
    // An artifact built with --dtype holds the converted module and runs as it was built.
    let artifact = dir.join("small16.byoc");
    let artifact = artifact.to_str().unwrap();
    let (code, _, err) = byoc_with_posit(&[
        "build",
        model,
        "--dtype",
        "custom[posites2]16",
        "-o",
        artifact,
    ]);
    assert_eq!(code, 0, "{err}");
    let (from_model, from_artifact) = (dir.join("m.npz"), dir.join("a.npz"));
    let run = |what: &str, extra: &[&str], out: &Path| {
        let mut args = vec![
            "run",
            what,
            "--random-inputs",
            "3",
            "-o",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let (code, _, err) = byoc_with_posit(&args);
        assert_eq!(code, 0, "{err}");
        read_npz(out).unwrap()
    };
    let want = run(model, &["--dtype", "custom[posites2]16"], &from_model);
    let got = run(artifact, &[], &from_artifact);
    assert_eq!(got["output_0"].as_bytes(), want["output_0"].as_bytes());
    let (code, _, err) = byoc_with_posit(&[
        "run",
        artifact,
        "--random-inputs",
        "3",
        "--dtype",
        "custom[posites2]16",
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--quantize and --dtype apply to models, not to built artifacts"),
        "{err}"
    );
}

// ---------------------------------------------------------------------------------------------
// TVM's `myfloat`: a datatype whose library is float32 arithmetic on the bit patterns,
// registered in-process, with no plugin file. A model run in it gives float32's results up to
// the order of the sums (TVM's tutorial compares with `assert_array_equal`; the host's float32
// kernels sum in another order).

extern "C" fn myfloat_from_float(x: f32) -> u32 {
    x.to_bits()
}
extern "C" fn myfloat_to_float(x: u32) -> f32 {
    f32::from_bits(x)
}
extern "C" fn myfloat_add(a: u32, b: u32) -> u32 {
    (f32::from_bits(a) + f32::from_bits(b)).to_bits()
}
extern "C" fn myfloat_mul(a: u32, b: u32) -> u32 {
    (f32::from_bits(a) * f32::from_bits(b)).to_bits()
}
extern "C" fn myfloat_sub(a: u32, b: u32) -> u32 {
    (f32::from_bits(a) - f32::from_bits(b)).to_bits()
}
extern "C" fn myfloat_max(a: u32, b: u32) -> u32 {
    f32::from_bits(a).max(f32::from_bits(b)).to_bits()
}
extern "C" fn myfloat_min_value() -> u32 {
    f32::MIN.to_bits()
}

/// Registers `myfloat` (code 131, TVM's test code) with the functions above; `table` edits
/// the declaration first.
fn register_myfloat(
    table: impl Fn(&mut byoc_sdk::CustomDatatype),
) -> Result<(), byoc_kernels::datatypes::DatatypeRegistrationError> {
    use byoc_sdk::{CustomDatatype, DatatypeLowering};
    let mut d = CustomDatatype {
        name: "myfloat".into(),
        code: 131,
        widths: vec![32],
        lowerings: Vec::new(),
        dot_product_option: None,
    };
    let [from, to] = d.float_casts(32);
    let op = |op: &str| LoweringKey::Op {
        op: op.into(),
        bits: 32,
    };
    for (key, function) in [
        (from, "FloatToCustom32"),
        (to, "Custom32ToFloat"),
        (op("Add"), "Custom32Add"),
        (op("Mul"), "Custom32Mul"),
        (op("Max"), "Custom32Max"),
        (LoweringKey::MinValue { bits: 32 }, "MinCustom32"),
    ] {
        d.lowerings.push(DatatypeLowering {
            key,
            function: function.into(),
        });
    }
    table(&mut d);
    type Binary = extern "C" fn(u32, u32) -> u32;
    let symbols: [(&str, usize); 7] = [
        (
            "FloatToCustom32",
            myfloat_from_float as extern "C" fn(f32) -> u32 as usize,
        ),
        (
            "Custom32ToFloat",
            myfloat_to_float as extern "C" fn(u32) -> f32 as usize,
        ),
        ("Custom32Add", myfloat_add as Binary as usize),
        ("Custom32Mul", myfloat_mul as Binary as usize),
        ("Custom32Sub", myfloat_sub as Binary as usize),
        ("Custom32Max", myfloat_max as Binary as usize),
        (
            "MinCustom32",
            myfloat_min_value as extern "C" fn() -> u32 as usize,
        ),
    ];
    byoc_kernels::datatypes::register_datatypes("myfloat", &[d], |s| {
        symbols.iter().find(|(n, _)| *n == s).map(|(_, a)| *a)
    })
}

#[test]
fn myfloat_registered_in_process_runs_a_model_as_float32() {
    use byoc_exec::{ExecOptions, Executor};
    use byoc_passes::{ChangeDatatype, Pass, PassContext};
    loaded();
    // A taken code and a missing symbol are refused, naming the conflict and the symbol.
    let err = register_myfloat(|d| d.code = 132).unwrap_err().to_string();
    assert!(err.contains("custom[posites2]8|16|32 (code 132)"), "{err}");
    let err = register_myfloat(|d| d.lowerings[2].function = "Custom32Plus".into())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("'Custom32Plus', which the library does not export"),
        "{err}"
    );
    register_myfloat(|_| {}).unwrap();

    let text =
        "def @main(%x: Tensor[(1, 2, 4, 4), float32], %w: Tensor[(3, 2, 3, 3), float32]) {\n  \
                %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1]);\n  \
                %1 = nn.bias_add(%0, const((3), float32, [0.5, -0.25, 1.0]));\n  \
                %2 = nn.relu(%1);\n  nn.max_pool2d(%2, pool_size=[2, 2], strides=[2, 2])\n}";
    let module = parse_module(text).unwrap();
    let myfloat: DType = "custom[myfloat]32".parse().unwrap();
    // TVM's ChangeDatatype: parameters, constants and calls all change.
    let mut converted = module.clone();
    ChangeDatatype::new(DType::Float32, myfloat)
        .run(&mut converted, &mut PassContext::default())
        .unwrap();
    let printed = print_module(&converted);
    assert!(!printed.contains("float32"), "{printed}");
    assert!(
        printed.contains("Tensor[(1, 2, 4, 4), custom[myfloat]32]"),
        "{printed}"
    );

    let x = values(50, 32, -1.0, 1.0);
    let w = values(51, 54, -1.0, 1.0);
    let float_inputs: BTreeMap<String, Tensor> = [
        ("x".to_string(), Tensor::from_vec([1, 2, 4, 4], x).unwrap()),
        ("w".to_string(), Tensor::from_vec([3, 2, 3, 3], w).unwrap()),
    ]
    .into();
    let want = Executor::new(&module, ExecOptions::default())
        .unwrap()
        .run_named(&float_inputs)
        .unwrap();
    // The inputs as myfloat bit patterns: the float32 bits under the custom dtype.
    let custom_inputs: BTreeMap<String, Tensor> = float_inputs
        .iter()
        .map(|(k, t)| {
            let ty = byoc_ir::TensorType::new(t.shape().to_vec(), myfloat);
            (k.clone(), Tensor::from_bytes(ty, t.as_bytes()).unwrap())
        })
        .collect();
    let got = Executor::new(&converted, ExecOptions::default())
        .unwrap()
        .run_named(&custom_inputs)
        .unwrap();
    assert_eq!(got[0].dtype(), myfloat);
    // Equal up to the rounding of sums taken in another order.
    let (want, got): (Vec<f32>, Vec<f32>) = (
        want[0].as_slice::<f32>().unwrap().to_vec(),
        got[0]
            .as_bytes()
            .chunks_exact(4)
            .map(|c| f32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
    );
    assert_eq!(want.len(), got.len());
    for (i, (w, g)) in want.iter().zip(&got).enumerate() {
        assert!(
            (w - g).abs() <= 1e-5 * w.abs().max(1.0),
            "element {i}: myfloat {g}, float32 {w}"
        );
    }
}

/// `myfloat`'s table under another name and code, with `Sub` when `sub`.
fn register_myfloat_as(name: &str, code: u8, sub: bool) -> DType {
    register_myfloat(|d| {
        d.name = name.into();
        d.code = code;
        for l in &mut d.lowerings {
            if let LoweringKey::Cast { src, dst, .. } = &mut l.key {
                for side in [src, dst] {
                    if side == "myfloat" {
                        *side = name.into();
                    }
                }
            }
        }
        if sub {
            d.lowerings.push(byoc_sdk::DatatypeLowering {
                key: LoweringKey::Op {
                    op: "Sub".into(),
                    bits: 32,
                },
                function: "Custom32Sub".into(),
            });
        }
    })
    .unwrap();
    format!("custom[{name}]32").parse().unwrap()
}

#[test]
fn elementwise_ops_compose_from_the_keys_a_table_has_or_name_the_missing_one() {
    use byoc_exec::{ExecOptions, Executor};
    let with_sub = register_myfloat_as("myabs", 133, true);
    let without = register_myfloat_as("mynosub", 134, false);
    let model = |dtype: DType, body: &str| {
        parse_module(&format!(
            "def @main(%x: Tensor[(6), {dtype}], %y: Tensor[(6), {dtype}]) {{ {body} }}"
        ))
        .unwrap()
    };
    // Without `tir.fabs`, abs is `Max(x, Sub(0, x))`: exact in float32 arithmetic.
    let x = [-2.5f32, -0.0, 0.0, 1.25, -7.0, 3.0];
    let bits = |v: &[f32]| {
        let ty = byoc_ir::TensorType::new(vec![v.len()], with_sub);
        let bytes: Vec<u8> = v.iter().flat_map(|f| f.to_bits().to_ne_bytes()).collect();
        Tensor::from_bytes(ty, &bytes).unwrap()
    };
    let inputs: BTreeMap<String, Tensor> =
        [("x".to_string(), bits(&x)), ("y".to_string(), bits(&x))].into();
    let got = Executor::new(&model(with_sub, "abs(%x)"), ExecOptions::default())
        .unwrap()
        .run_named(&inputs)
        .unwrap();
    let got: Vec<f32> = got[0]
        .as_bytes()
        .chunks_exact(4)
        .map(|c| f32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    assert_eq!(got, [2.5, 0.0, 0.0, 1.25, 7.0, 3.0]);
    // Without `Sub` either, and for ops with one way only, the plan names the missing key.
    for (body, key) in [
        ("abs(%x)", "Call.intrin.tir.fabs (32 bits)"),
        ("negative(%x)", "Sub (32 bits)"),
        ("erf(%x)", "Call.intrin.tir.erf (32 bits)"),
        ("floor(%x)", "Call.intrin.tir.floor (32 bits)"),
        ("less(%x, %y)", "LT (32 bits)"),
        ("clip(%x, a_min=0f, a_max=1f)", "Min (32 bits)"),
        ("nn.leaky_relu(%x, alpha=0.1f)", "LT (32 bits)"),
    ] {
        let err = Executor::new(&model(without, body), ExecOptions::default())
            .err()
            .unwrap_or_else(|| panic!("{body} planned without its lowering"))
            .to_string();
        let op = body.split('(').next().unwrap();
        assert!(
            err.contains(&format!(
                "{op}: custom[mynosub]32 has no lowering for {key} (plugin 'myfloat')"
            )),
            "{body}: {err}"
        );
    }
}
