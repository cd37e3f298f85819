//! Quantized (int8) graphs on dnnl, bit for bit against the host's integer kernels.
//!
//! Float models are quantized by byoc's `Quantize` pass (the realized int8 form, every conv
//! and dense quantized), partitioned for dnnl (the `dnnl.qconv2d…`, `dnnl.qdense…`,
//! `dnnl.requantize`, `dnnl.quantize` composites and `cast`) and run by the plugin; the host
//! executor runs the same quantized module on its own integer kernels. Every model's output
//! is the dequantized int32 result of its last layer (`cast` to float32 times a power of
//! two), so the two runs agree bit for bit exactly when every integer agrees.
//!
//! On a CPU without VNNI oneDNN's int8 kernels are not exact (docs/dnnl.md): there the
//! convolutions and dense layers must be declined at partitioning and refused at compile,
//! which each test checks in place of the results it cannot get.

mod common;

use std::sync::Arc;

use byoc_exec::plugin::{compile_externals, Runtimes};
use byoc_exec::{ExecOptions, Executor};
use byoc_ir::infer_types;
use byoc_ir::text::parse_module;
use byoc_ir::{Module, Tensor};
use byoc_json_runtime::serialize::serialize;
use byoc_passes::{Pass, PassContext, QConfig, Quantize};
use byoc_pipeline::pipeline::{partition, PartitionOptions};
use byoc_pipeline::report::summary::Summary;
use byoc_pipeline::target::Target;
use byoc_plugin_dnnl::dnnl::{effective_cpu_isa, inexact_int8_isa};
use byoc_plugin_dnnl::support::TARGET;
use byoc_plugin_dnnl::{
    DnnlModule, DnnlPlugin, Int8Epilogue, RuntimeOptions, INT8_EPILOGUE_OPTION, THREADS_OPTION,
};
use byoc_sdk::{CompileOptions, PartitionedFunction, Plugin};
use common::{compile_error, partition as dnnl_partition, values};

/// Every conv2d and dense quantized (TVM's qconfig with no skipped layer).
fn all_layers() -> QConfig {
    QConfig {
        skip_conv_layers: Vec::new(),
        skip_dense_layer: false,
        ..QConfig::default()
    }
}

fn quantize(text: &str) -> Module {
    let mut m = parse_module(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    infer_types(&mut m).unwrap();
    let pass = Quantize {
        config: all_layers(),
        samples: Vec::new(),
        progress: None,
    };
    pass.run(&mut m, &mut PassContext::new())
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
    m
}

/// oneDNN's ISA on this CPU where its int8 kernels are not exact there (no VNNI).
fn inexact_isa() -> Option<&'static str> {
    inexact_int8_isa(effective_cpu_isa())
}

/// Whether int8 partition `text` (with a convolution or dense) runs on this CPU; where
/// oneDNN's int8 is inexact, checks instead that compiling it is refused naming the ISA.
fn runs_here(text: &str) -> bool {
    let Some(isa) = inexact_isa() else {
        return true;
    };
    let e = compile_error(text);
    assert!(e.contains("need VNNI") && e.contains(isa), "{e}");
    false
}

/// The placements of `dnnl.int8_epilogue`: both must match the host.
const EPILOGUES: [&str; 2] = ["pass", "postops"];

/// The quantized module partitioned for dnnl (compiled with 2 threads and `epilogue` as
/// `dnnl.int8_epilogue`) and run, with what partitioning gave.
fn run_dnnl(module: &Module, inputs: &[Tensor], epilogue: &str) -> (Vec<Tensor>, Summary) {
    let target = Target::from_description(&DnnlPlugin.describe()).unwrap();
    let result = partition(module, &[target], &PartitionOptions::default()).unwrap();
    let summary = Summary::of(&result);
    let runtimes = Runtimes::new().with(TARGET, Arc::new(DnnlPlugin));
    let options = CompileOptions::new()
        .with(THREADS_OPTION, "2")
        .with(INT8_EPILOGUE_OPTION, epilogue);
    let externals =
        compile_externals(&result.module, &runtimes, &options).unwrap_or_else(|e| panic!("{e:#}"));
    let exec =
        Executor::with_externals(&result.module, ExecOptions::default(), &externals).unwrap();
    (exec.run(inputs).unwrap(), summary)
}

fn run_host(module: &Module, inputs: &[Tensor]) -> Vec<Tensor> {
    Executor::new(module, ExecOptions::default())
        .unwrap()
        .run(inputs)
        .unwrap()
}

/// Runs `text` quantized on dnnl (with each [`EPILOGUES`] placement) and on the host and
/// checks the outputs bit for bit, and that every conv and dense ran on dnnl as an int8
/// composite.
fn check_bit_exact(text: &str, inputs: &[Tensor]) -> Summary {
    let module = quantize(text);
    let want = run_host(&module, inputs);
    let mut summary = None;
    for epilogue in EPILOGUES {
        let (got, s) = run_dnnl(&module, inputs, epilogue);
        check_outputs(
            &got,
            &want,
            &s,
            &format!("dnnl.int8_epilogue={epilogue}\n{}", skeleton(text)),
        );
        summary = Some(s);
    }
    summary.unwrap()
}

/// `got` equals `want` bit for bit, and no conv, dense or shift stayed on the host (where
/// oneDNN's int8 is inexact: every conv and dense int8 composite was declined, naming the ISA).
fn check_outputs(got: &[Tensor], want: &[Tensor], summary: &Summary, what: &str) {
    match inexact_isa() {
        None => {
            for op in ["nn.conv2d", "nn.dense", "right_shift"] {
                assert!(
                    !summary.host_ops.iter().any(|h| h == op),
                    "{op} left on the host: {:?}\n{what}",
                    summary.host_ops,
                );
            }
        }
        Some(isa) => {
            let int8 =
                |name: &str| name.starts_with("dnnl.qconv2d") || name.starts_with("dnnl.qdense");
            assert!(
                summary
                    .functions
                    .iter()
                    .all(|f| !f.composites.iter().any(|c| int8(c))),
                "an int8 conv or dense formed on {isa}\n{what}"
            );
            assert!(
                summary.declined.iter().any(|d| d.reason.contains(isa)),
                "no int8 composite declined naming {isa}: {:?}\n{what}",
                summary.declined
            );
        }
    }
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(g.ty(), w.ty());
        let (gv, wv) = (g.as_slice::<f32>().unwrap(), w.as_slice::<f32>().unwrap());
        let diff = gv
            .iter()
            .zip(wv)
            .position(|(a, b)| a.to_bits() != b.to_bits());
        assert!(
            diff.is_none(),
            "output {i} differs at {diff:?}: dnnl {:?}, host {:?}\n{what}",
            diff.map(|d| gv[d]),
            diff.map(|d| wv[d]),
        );
    }
}

/// The model text without its constants' values, for failure messages.
fn skeleton(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find(", [") {
        out += &rest[..i];
        out += ", [...]";
        rest = rest[i..].split_once(']').map_or("", |(_, r)| r);
    }
    out + rest
}

/// A Relay float constant of `shape` with seeded values in `[-scale, scale)`.
fn konst(shape: &[usize], seed: u64, scale: f32) -> String {
    let n: usize = shape.iter().product();
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let vals: Vec<String> = values(n, seed)
        .iter()
        .map(|v| format!("{:?}f", v * scale))
        .collect();
    let dims = if shape.len() == 1 {
        format!("({},)", dims[0])
    } else {
        format!("({})", dims.join(", "))
    };
    format!("const({dims}, float32, [{}])", vals.join(", "))
}

fn input(shape: &[usize], seed: u64, scale: f32) -> Tensor {
    let n = shape.iter().product();
    let v: Vec<f32> = values(n, seed).iter().map(|v| v * scale).collect();
    Tensor::from_vec(shape.to_vec(), v).unwrap()
}

/// A small deterministic generator of test shapes.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }

    fn pick<T: Copy>(&mut self, from: &[T]) -> T {
        from[self.below(from.len() as u64) as usize]
    }
}

/// One random network: conv (random channels, kernel, stride, padding, groups, bias, relu),
/// a second conv (with a residual add or not) or not, and a quantized dense or not.
fn random_case(seed: u64) -> (String, Vec<Tensor>) {
    let mut r = Rng(seed.wrapping_add(17));
    let c = r.pick(&[1usize, 3, 4, 8, 16, 24]);
    let (h, w) = (r.pick(&[5usize, 7, 9, 12]), r.pick(&[6usize, 8, 11]));
    let groups = if c.is_multiple_of(4) {
        r.pick(&[1usize, 1, 4])
    } else {
        1
    };
    let c1 = r.pick(&[4usize, 8, 12, 32]);
    let k = r.pick(&[1usize, 3, 5]);
    let stride = r.pick(&[1usize, 2]);
    let pad = r.below(k as u64 / 2 + 1) as usize;
    let oh = (h + 2 * pad - k) / stride + 1;
    let ow = (w + 2 * pad - k) / stride + 1;
    let input_scale = r.pick(&[1.0f32, 4.0, 12.0]);
    let weight_scale = r.pick(&[0.05f32, 0.3, 1.0]);
    let mut body = format!(
        "  %0 = nn.conv2d(%x, {}, strides=[{stride}, {stride}], padding=[{pad}, {pad}, {pad}, {pad}], \
         channels={c1}, kernel_size=[{k}, {k}], groups={groups});\n",
        konst(&[c1, c / groups, k, k], seed * 7 + 1, weight_scale)
    );
    let mut last = "%0".to_string();
    if r.below(3) > 0 {
        body += &format!(
            "  %1 = nn.bias_add({last}, {});\n",
            konst(&[c1], seed * 7 + 2, 2.0)
        );
        last = "%1".into();
    }
    let relu = r.below(3) > 0;
    if relu {
        body += &format!("  %2 = nn.relu({last});\n");
        last = "%2".into();
    }
    if r.below(2) == 0 {
        body += &format!(
            "  %3 = nn.conv2d({last}, {}, padding=[1, 1, 1, 1], channels={c1}, kernel_size=[3, 3]);\n",
            konst(&[c1, c1, 3, 3], seed * 7 + 3, weight_scale)
        );
        body += &format!(
            "  %4 = nn.bias_add(%3, {});\n",
            konst(&[c1], seed * 7 + 4, 1.0)
        );
        if r.below(2) == 0 {
            body += &format!("  %5 = add(%4, {last});\n  %6 = nn.relu(%5);\n");
        } else {
            body += "  %6 = nn.relu(%4);\n";
        }
        last = "%6".into();
    }
    if r.below(3) == 0 {
        let units = r.pick(&[3usize, 10, 17]);
        body += &format!(
            "  %7 = nn.batch_flatten({last});\n  %8 = nn.dense(%7, {}, units={units});\n  %9 = nn.bias_add(%8, {});\n",
            konst(&[units, c1 * oh * ow], seed * 7 + 5, weight_scale),
            konst(&[units], seed * 7 + 6, 1.0)
        );
        last = "%9".into();
    }
    let text =
        format!("def @main(%x: Tensor[(1, {c}, {h}, {w}), float32]) {{\n{body}  {last}\n}}\n");
    (text, vec![input(&[1, c, h, w], seed, input_scale)])
}

#[test]
fn random_quantized_convs_and_denses_are_bit_exact() {
    let mut formed = std::collections::BTreeSet::new();
    for seed in 0..24 {
        let (text, inputs) = random_case(seed);
        let summary = check_bit_exact(&text, &inputs);
        for f in &summary.functions {
            formed.extend(f.composites.iter().cloned());
        }
    }
    // The sweep reaches the fused forms (where oneDNN's int8 is exact; elsewhere the
    // partitions without a conv or dense are pruned, and nothing forms).
    let fused_forms: &[&str] = if inexact_isa().is_some() {
        &[]
    } else {
        &[
            "dnnl.qconv2d_bias_relu_requant",
            "dnnl.qconv2d_bias_sum_relu",
            "dnnl.qdense_bias",
            "dnnl.quantize",
        ]
    };
    for name in fused_forms {
        assert!(formed.contains(*name), "{name} never formed: {formed:?}");
    }
}

/// A conv with 2304 products per output and weights of full int8 range: `128 · Σ|w|`
/// exceeds 2^24, so the runtime splits the weight (`16 · hi + lo`); the accumulator still
/// agrees with the host's.
#[test]
fn a_large_reduction_splits_the_weight_and_stays_exact() {
    let text = format!(
        "def @main(%x: Tensor[(1, 256, 4, 4), float32]) {{\n  %0 = nn.conv2d(%x, {}, padding=[1, 1, 1, 1], \
         channels=8, kernel_size=[3, 3]);\n  %0\n}}\n",
        konst(&[8, 256, 3, 3], 5, 1.0)
    );
    // Inputs at the clip bound: every int8 data value is -127 or 127.
    let x: Vec<f32> = values(256 * 16, 9)
        .iter()
        .map(|v| if *v < 0.0 { -20.0 } else { 20.0 })
        .collect();
    let x = Tensor::from_vec(vec![1, 256, 4, 4], x).unwrap();
    check_bit_exact(&text, &[x]);
    if inexact_isa().is_some() {
        return;
    }
    // The conv ran as the two halves of the split weight.
    let module = quantize(&text);
    let target = Target::from_description(&DnnlPlugin.describe()).unwrap();
    let result = partition(&module, &[target], &PartitionOptions::default()).unwrap();
    let (_, f) = result
        .module
        .functions()
        .find(|(name, _)| *name != "main")
        .unwrap();
    let m = DnnlModule::new(serialize(f, "dnnl_0").unwrap(), RuntimeOptions::default()).unwrap();
    let steps: Vec<String> = m.runtime().steps().into_iter().map(|s| s.label).collect();
    for part in ["(weight high part)", "(weight low part)"] {
        assert!(steps.iter().any(|s| s.contains(part)), "{steps:#?}");
    }
}

/// Seeded int8 or int32 values in `[-lim, lim]` as a Relay constant or a tensor.
fn ints(n: usize, seed: u64, lim: i64) -> Vec<i64> {
    let mut r = Rng(seed);
    (0..n)
        .map(|_| r.below(2 * lim as u64 + 1) as i64 - lim)
        .collect()
}

/// Integers as the values of a Relay constant: `1, -2, 3`.
fn list(v: Vec<i64>) -> String {
    v.iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Every stage of the epilogue, with operands the quantize pass would not give (the int8
/// minimum -128 in the data, wrapping int32 sums, a residual as a partition input, shifts of
/// 31 and beyond), against the host executor on the same partition, bit for bit.
#[test]
fn every_epilogue_stage_matches_the_host_on_edge_values() {
    // (left shift, right shift, round constant, magnitude of bias and residual)
    let cases = [
        (2, 9, 256, 1 << 12),
        (0, 31, 1 << 30, i64::from(i32::MAX)),
        (33, 3, -5, 1 << 20),
        (-1, -2, 0, i64::from(i32::MAX)),
    ];
    for (case, (lshift, shift, round, lim)) in cases.into_iter().enumerate() {
        let seed = case as u64;
        let text = dnnl_partition(
            "%x: Tensor[(1, 5, 6, 7), int8], %r: Tensor[(1, 4, 6, 7), int32]",
            &format!(
                "  %f = fn (%a: Tensor[(1, 5, 6, 7), int8], %w: Tensor[(4, 5, 3, 3), int8], \
                 %b: Tensor[(4, 1, 1), int32], %l: Tensor[(), int32], %s: Tensor[(1, 4, 6, 7), int32], \
                 %q: Tensor[(), int32], %k: Tensor[(), int32], \
                 Composite=\"dnnl.qconv2d_bias_lshift_sum_relu_requant\") {{\n    \
                 %0 = nn.conv2d(%a, %w, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3], out_dtype=\"int32\");\n    \
                 %1 = add(%0, %b);\n    %2 = left_shift(%1, %l);\n    %3 = add(%2, %s);\n    \
                 %4 = nn.relu(%3);\n    cast(clip(right_shift(add(%4, %q), %k), a_min=-127f, a_max=127f), dtype=\"int8\")\n  }};\n  \
                 %f(%x, const((4, 5, 3, 3), int8, [{}]), const((4, 1, 1), int32, [{}]), {lshift}, %r, {round}, {shift})",
                list(ints(4 * 5 * 9, seed + 10, 128).into_iter().map(|v| v.min(127)).collect()),
                list(ints(4, seed + 11, lim)),
            ),
        );
        let x: Vec<i8> = ints(5 * 42, seed + 12, 128)
            .iter()
            .map(|&v| v.min(127) as i8)
            .collect();
        let r: Vec<i32> = ints(4 * 42, seed + 13, lim)
            .iter()
            .map(|&v| v as i32)
            .collect();
        let inputs = [
            Tensor::from_vec(vec![1, 5, 6, 7], x).unwrap(),
            Tensor::from_vec(vec![1, 4, 6, 7], r).unwrap(),
        ];
        if !runs_here(&text) {
            continue;
        }
        let f = PartitionedFunction::from_text(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        let want = common::host(&f, &inputs);
        // The module and its serialized round trip (an artifact's).
        for m in common::compiled_and_reloaded(&f) {
            let got = common::run(m.as_ref(), &inputs, &want);
            assert_eq!(got[0].as_bytes(), want[0].as_bytes(), "case {case}");
        }
        if case == 0 {
            let distinct: std::collections::BTreeSet<u8> =
                want[0].as_bytes().iter().copied().collect();
            assert!(distinct.len() > 8, "a near-constant output checks little");
        }
    }
}

/// What the runtime refuses rather than compute inexactly or wrongly.
#[test]
fn int8_composites_refuse_what_they_cannot_run_exactly() {
    let conv = |k: usize| {
        dnnl_partition(
            &format!("%x: Tensor[(1, {k}, 4, 4), int8], %w: Tensor[(4, {k}, 1, 1), int8]"),
            &format!(
                "  %f = fn (%a: Tensor[(1, {k}, 4, 4), int8], %b: Tensor[(4, {k}, 1, 1), int8], \
                 Composite=\"dnnl.qconv2d_relu\") {{\n    nn.relu(nn.conv2d(%a, %b, channels=4, \
                 kernel_size=[1, 1], out_dtype=\"int32\"))\n  }};\n  %f(%x, %w)"
            ),
        )
    };
    if runs_here(&conv(2048)) {
        let e = compile_error(&conv(2048));
        assert!(
            e.contains("is not a constant and its 2048 products per output may exceed 2^24"),
            "{e}"
        );
    }
    let requantize = dnnl_partition(
        "%x: Tensor[(1, 4, 4, 4), int32], %s: Tensor[(), int32]",
        "  %f = fn (%a: Tensor[(1, 4, 4, 4), int32], %r: Tensor[(), int32], %t: Tensor[(), int32], \
         Composite=\"dnnl.requantize\") {\n    cast(clip(right_shift(add(%a, %r), %t), \
         a_min=-127f, a_max=127f), dtype=\"int8\")\n  };\n  %f(%x, 2, %s)",
    );
    let e = compile_error(&requantize);
    assert!(
        e.contains("the shift amount (input 2, Tensor[(), int32]) must be a constant int32 scalar"),
        "{e}"
    );
}

/// The step labels of partition `text` built with `epilogue`.
fn step_labels(text: &str, epilogue: Int8Epilogue) -> Vec<String> {
    let f = PartitionedFunction::from_text(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let options = RuntimeOptions {
        int8_epilogue: epilogue,
        ..RuntimeOptions::default()
    };
    let m = DnnlModule::new(serialize(&f.function, "dnnl_0").unwrap(), options).unwrap();
    m.runtime().steps().into_iter().map(|s| s.label).collect()
}

/// Runs partition `text` on dnnl (both placements, and the serialized round trip) and on
/// the host, and compares bit for bit.
fn check_partition_bit_exact(text: &str, inputs: &[Tensor]) {
    if !runs_here(text) {
        return;
    }
    let f = PartitionedFunction::from_text(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let want = common::host(&f, inputs);
    for epilogue in EPILOGUES {
        let options = CompileOptions::new().with(INT8_EPILOGUE_OPTION, epilogue);
        let module = DnnlPlugin.compile(&f, &options).unwrap();
        let reloaded = DnnlPlugin
            .deserialize(&module.serialize().unwrap(), &options)
            .unwrap();
        for m in [module, reloaded] {
            let got = common::run(m.as_ref(), inputs, &want);
            for (g, w) in got.iter().zip(&want) {
                let (gb, wb) = (g.as_bytes(), w.as_bytes());
                let diff = gb.iter().zip(wb).position(|(a, b)| a != b);
                assert!(
                    diff.is_none(),
                    "{epilogue}: byte {diff:?} differs: dnnl {:?}, host {:?}\n{text}",
                    diff.map(|d| gb[d]),
                    diff.map(|d| wb[d]),
                );
            }
        }
    }
}

const FUSED: &str = "with its epilogue as post-ops";
const PASS: &str = "[byoc:int]";

/// A conv whose requantization sits at the edge of what the post-op proof accepts: channel
/// 0's weights are all 127, so data at -128 reaches the accumulator's bound `-128 · 127 · 45
/// = -731520`; with the bias `-7657088` the value is `-2^23`, and twice the value before
/// rounding (`2y + 2r - 2^s + 1`, here `2y + 1`) is `-(2^24 - 1)`: exact. One less in the
/// bias passes the bound, and the node keeps the integer pass. With `s = 17` the extreme
/// value is not clipped (`floor(-63.5) = -64`), so an inexact rounding would show in the
/// output. A `left_shift` by 1 with the bias `-3462784` reaches the same bound through the
/// output scale, which must apply to the accumulator plus bias: a bias added after the
/// scale would be off by 3462784.
#[test]
fn post_op_epilogues_are_exact_at_the_bound_of_their_proof() {
    let text = |bias0: i64, lshift: bool| {
        let w: Vec<String> = (0..90)
            .map(|i| if i < 45 { "127" } else { "-128" }.to_string())
            .collect();
        let (name, shifted, shift_param, shift_arg) = if lshift {
            (
                "lshift_",
                "left_shift(%1, %l)",
                "%l: Tensor[(), int32], ",
                "1, ",
            )
        } else {
            ("", "%1", "", "")
        };
        dnnl_partition(
            "%x: Tensor[(1, 5, 6, 7), int8]",
            &format!(
                "  %f = fn (%a: Tensor[(1, 5, 6, 7), int8], %w: Tensor[(2, 5, 3, 3), int8], \
                 %b: Tensor[(2, 1, 1), int32], {shift_param}%q: Tensor[(), int32], \
                 %k: Tensor[(), int32], Composite=\"dnnl.qconv2d_bias_{name}requant\") {{\n    \
                 %0 = nn.conv2d(%a, %w, padding=[1, 1, 1, 1], channels=2, kernel_size=[3, 3], out_dtype=\"int32\");\n    \
                 %1 = add(%0, %b);\n    %2 = {shifted};\n    \
                 cast(clip(right_shift(add(%2, %q), %k), a_min=-127f, a_max=127f), dtype=\"int8\")\n  }};\n  \
                 %f(%x, const((2, 5, 3, 3), int8, [{}]), const((2, 1, 1), int32, [{bias0}, 0]), {shift_arg}65536, 17)",
                w.join(", ")
            ),
        )
    };
    let data = |f: &dyn Fn(usize) -> i8| {
        Tensor::from_vec(vec![1, 5, 6, 7], (0..210).map(f).collect::<Vec<i8>>()).unwrap()
    };
    let inputs = [
        data(&|_| -128),
        data(&|_| 127),
        data(&|i| ints(210, 3, 128)[i].min(127) as i8),
    ];
    let cases = [
        (-7_657_088, false, FUSED),
        (-7_657_089, false, PASS),
        // Shifted by 1 (the output scale 2): within the proof's bound.
        (-3_462_784, true, FUSED),
    ];
    for (bias0, lshift, placement) in cases {
        let text = text(bias0, lshift);
        if !runs_here(&text) {
            continue;
        }
        let labels = step_labels(&text, Int8Epilogue::PostOps);
        assert!(
            labels.iter().any(|l| l.contains(placement)),
            "{bias0}: {labels:#?}"
        );
        for x in &inputs {
            check_partition_bit_exact(&text, std::slice::from_ref(x));
        }
    }
    // The extreme value itself: -64 in channel 0's interior.
    let f = PartitionedFunction::from_text(&text(-7_657_088, false)).unwrap();
    let out = common::host(&f, &inputs[..1]);
    assert_eq!(out[0].as_slice::<i8>().unwrap()[8], -64);
}

/// A residual block inside one partition: a conv with its bias (int32 result, its range
/// proven from the weights) is the residual of a second conv with bias, left shift, sum,
/// relu and requantization. Both epilogues become post-ops (the residual as a binary add of an
/// `s32` operand), `dnnl.int8_epilogue=pass` keeps both as passes, and the results agree
/// with the host bit for bit, also where rounding to nearest meets ties (`s = 2`).
#[test]
fn a_residual_block_runs_its_epilogues_as_post_ops() {
    let conv = "nn.conv2d(%a, %w, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3], out_dtype=\"int32\")";
    let text = dnnl_partition(
        "%x: Tensor[(1, 6, 5, 5), int8]",
        &format!(
            "  %f = fn (%a: Tensor[(1, 6, 5, 5), int8], %w: Tensor[(4, 6, 3, 3), int8], \
             %b: Tensor[(4, 1, 1), int32], Composite=\"dnnl.qconv2d_bias\") {{\n    add({conv}, %b)\n  }};\n  \
             %0 = %f(%x, const((4, 6, 3, 3), int8, [{}]), const((4, 1, 1), int32, [{}]));\n  \
             %g = fn (%a: Tensor[(1, 6, 5, 5), int8], %w: Tensor[(4, 6, 3, 3), int8], \
             %b: Tensor[(4, 1, 1), int32], %l: Tensor[(), int32], %s: Tensor[(1, 4, 5, 5), int32], \
             %q: Tensor[(), int32], %k: Tensor[(), int32], \
             Composite=\"dnnl.qconv2d_bias_lshift_sum_relu_requant\") {{\n    \
             %1 = add({conv}, %b);\n    %2 = add(left_shift(%1, %l), %s);\n    %3 = nn.relu(%2);\n    \
             cast(clip(right_shift(add(%3, %q), %k), a_min=-127f, a_max=127f), dtype=\"int8\")\n  }};\n  \
             %g(%x, const((4, 6, 3, 3), int8, [{}]), const((4, 1, 1), int32, [{}]), 1, %0, 2, 2)",
            list(ints(216, 21, 3)),
            list(ints(4, 22, 50)),
            list(ints(216, 23, 2)),
            list(ints(4, 24, 50)),
        ),
    );
    if !runs_here(&text) {
        return;
    }
    let fused = step_labels(&text, Int8Epilogue::PostOps);
    assert_eq!(
        fused.iter().filter(|l| l.contains(FUSED)).count(),
        2,
        "{fused:#?}"
    );
    assert!(!fused.iter().any(|l| l.contains(PASS)), "{fused:#?}");
    let passes = step_labels(&text, Int8Epilogue::Pass);
    assert_eq!(
        passes.iter().filter(|l| l.contains(PASS)).count(),
        2,
        "{passes:#?}"
    );
    let x: Vec<i8> = ints(150, 25, 128)
        .iter()
        .map(|&v| v.min(127) as i8)
        .collect();
    check_partition_bit_exact(&text, &[Tensor::from_vec(vec![1, 6, 5, 5], x).unwrap()]);
}

#[test]
fn an_unknown_epilogue_placement_is_refused() {
    let f = PartitionedFunction::from_text(&dnnl_partition("%x: Tensor[(1, 4), int32]", "  %x"))
        .unwrap();
    let options = CompileOptions::new().with(INT8_EPILOGUE_OPTION, "fast");
    let e = DnnlPlugin.compile(&f, &options).err().unwrap().to_string();
    assert!(
        e.contains("option dnnl.int8_epilogue='fast' is not an epilogue placement"),
        "{e}"
    );
}
