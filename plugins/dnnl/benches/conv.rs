//! Convolution throughput: ResNet-50's convolution layers (batch 1, float32) run
//! (a) as a raw oneDNN primitive: `format_tag::any` layouts, inputs already in them, bias and
//!     relu fused, no reorders (what oneDNN itself reaches), and
//! (b) by the dnnl runtime as a one-node partition `dnnl.conv2d_bias_relu` over plain
//!     host tensors: the convolution step alone (what a layer inside a whole-model partition
//!     costs, activations staying blocked) and the whole run (with the boundary reorders).
//!
//! Prints GFLOP/s (2·N·OC·OH·OW·IC·KH·KW flops) of the medians. Threads: `BENCH_THREADS`
//! (default 2); iterations: `BENCH_ITERS` (default 30).
//!
//!     cargo bench -p byoc-plugin-dnnl --bench conv

use std::sync::Arc;
use std::time::{Duration, Instant};

use byoc_ir::DType;
use byoc_ir::{Tensor, TensorType};
use byoc_json_runtime::ConstantMap;
use byoc_plugin_dnnl::dnnl::{
    ffi, Attr, Engine, Memory, MemoryDesc, OpDesc, PostOp, Primitive, PrimitiveDesc, Query, Stream,
    Window,
};
use byoc_plugin_dnnl::runtime::on_team;
use byoc_plugin_dnnl::DnnlRuntime;

/// (name, in channels, out channels, kernel, stride, input size)
const LAYERS: [(&str, i64, i64, i64, i64, i64); 10] = [
    ("conv1 7x7/2", 3, 64, 7, 2, 224),
    ("res2 1x1 64", 64, 64, 1, 1, 56),
    ("res2 3x3 64", 64, 64, 3, 1, 56),
    ("res2 1x1 256", 64, 256, 1, 1, 56),
    ("res3 3x3 128", 128, 128, 3, 1, 28),
    ("res3 1x1 512", 512, 128, 1, 1, 28),
    ("res4 3x3 256", 256, 256, 3, 1, 14),
    ("res4 1x1 1024", 1024, 256, 1, 1, 14),
    ("res5 3x3 512", 512, 512, 3, 1, 7),
    ("res5 1x1 2048", 2048, 512, 1, 1, 7),
];

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn filled(ty: TensorType) -> Tensor {
    let n = ty.num_elements();
    let vals: Vec<f64> = (0..n)
        .map(|i| ((i * 7919) % 1000) as f64 / 1000.0 - 0.5)
        .collect();
    Tensor::from_f64(ty, &vals).expect("tensor")
}

/// The raw primitive's median time.
fn raw(engine: &Engine, c: i64, oc: i64, k: i64, s: i64, h: i64, iters: usize) -> Duration {
    let p = k / 2;
    let o = (h + 2 * p - k) / s + 1;
    let window = Window {
        strides: &[s, s],
        dilates: &[0, 0],
        pad_l: &[p, p],
        pad_r: &[p, p],
    };
    let op = OpDesc::convolution(
        false,
        &MemoryDesc::any(&[1, c, h, h]).unwrap(),
        &MemoryDesc::any(&[oc, c, k, k]).unwrap(),
        &MemoryDesc::plain(&[oc]).unwrap(),
        &MemoryDesc::any(&[1, oc, o, o]).unwrap(),
        &window,
    )
    .unwrap();
    let relu = PostOp::Eltwise {
        alg: ffi::dnnl_eltwise_relu,
        alpha: 0.0,
        beta: 0.0,
    };
    let pd = PrimitiveDesc::new(engine, &op, &Attr::new(&[relu]).unwrap()).unwrap();
    let prim = Primitive::new(&pd).unwrap();
    let stream = Stream::new(engine).unwrap();
    let descs = [
        (ffi::DNNL_ARG_SRC, pd.query(Query::Src(0))),
        (ffi::DNNL_ARG_WEIGHTS, pd.query(Query::Weights(0))),
        (ffi::DNNL_ARG_BIAS, MemoryDesc::plain(&[oc]).unwrap()),
        (ffi::DNNL_ARG_DST, pd.query(Query::Dst(0))),
        (ffi::DNNL_ARG_SCRATCHPAD, pd.query(Query::Scratchpad)),
    ];
    let mut bufs: Vec<Vec<f32>> = descs
        .iter()
        .map(|(_, d)| vec![0.01f32; d.size() / 4 + 16])
        .collect();
    let mems: Vec<Memory> = descs
        .iter()
        .zip(bufs.iter_mut())
        .map(|((_, d), b)| Memory::new(engine, d, b.as_mut_ptr().cast()).unwrap())
        .collect();
    let args: Vec<ffi::dnnl_exec_arg_t> = descs
        .iter()
        .zip(&mems)
        .filter(|((_, d), _)| d.size() > 0)
        .map(|((arg, _), m)| ffi::dnnl_exec_arg_t {
            arg: *arg,
            memory: m.handle(),
        })
        .collect();
    let mut times = Vec::new();
    for i in 0..iters + 5 {
        let t = Instant::now();
        // SAFETY: every memory points at a live buffer of at least its descriptor's size.
        unsafe { prim.execute(&stream, &args) }.unwrap();
        stream.wait().unwrap();
        if i >= 5 {
            times.push(t.elapsed());
        }
    }
    median(times)
}

/// The runtime's medians: (convolution step, whole run).
fn runtime(
    c: i64,
    oc: i64,
    k: i64,
    s: i64,
    h: i64,
    iters: usize,
    threads: usize,
) -> (Duration, Duration) {
    let p = k / 2;
    let o = (h + 2 * p - k) / s + 1;
    let json = format!(
        r#"{{"symbol": "dnnl_bench", "nodes": [
  {{"op": "input", "name": "x", "attrs": {{"shape": [[[1, {c}, {h}, {h}]]], "dtype": [["float32"]]}}}},
  {{"op": "const", "name": "w", "attrs": {{"shape": [[[{oc}, {c}, {k}, {k}]]], "dtype": [["float32"]]}}}},
  {{"op": "const", "name": "b", "attrs": {{"shape": [[[{oc}, 1, 1]]], "dtype": [["float32"]]}}}},
  {{"op": "kernel", "name": "dnnl.conv2d_bias_relu", "inputs": [[0, 0, 0], [1, 0, 0], [2, 0, 0]],
   "attrs": {{"num_inputs": "3", "num_outputs": "1", "strides": [["{s}", "{s}"]],
             "padding": [["{p}", "{p}", "{p}", "{p}"]], "dilation": [["1", "1"]], "groups": [["1"]],
             "shape": [[[1, {oc}, {o}, {o}]]], "dtype": [["float32"]]}}}}],
 "arg_nodes": [0, 1, 2], "heads": [[3, 0, 0]], "node_row_ptr": [0, 1, 2, 3, 4]}}"#
    );
    let u = |v: i64| v as usize;
    let mut constants = ConstantMap::new();
    constants.insert(
        "w".to_string(),
        Arc::new(filled(TensorType::new(
            vec![u(oc), u(c), u(k), u(k)],
            DType::Float32,
        ))),
    );
    constants.insert(
        "b".to_string(),
        Arc::new(filled(TensorType::new(vec![u(oc), 1, 1], DType::Float32))),
    );
    let rt = DnnlRuntime::new(&json, &constants, Some(threads)).unwrap();
    let conv_step = rt
        .steps()
        .iter()
        .position(|s| s.label.starts_with("convolution"))
        .unwrap();
    let x = filled(TensorType::new(vec![1, u(c), u(h), u(h)], DType::Float32));
    let mut y = Tensor::zeros(TensorType::new(vec![1, u(oc), u(o), u(o)], DType::Float32));
    let (mut conv, mut whole) = (Vec::new(), Vec::new());
    for i in 0..iters + 5 {
        let t = Instant::now();
        rt.run(&[x.view()], &mut [y.view_mut()]).unwrap();
        let w = t.elapsed();
        let steps = rt.run_profiled(&[x.view()], &mut [y.view_mut()]).unwrap();
        if i >= 5 {
            whole.push(w);
            conv.push(steps[conv_step]);
        }
    }
    (median(conv), median(whole))
}

fn main() {
    let threads = env("BENCH_THREADS", 2);
    let iters = env("BENCH_ITERS", 30);
    // The raw primitives run on the runtime's driver thread too: one OpenMP team in the process.
    let engine = on_team(Some(threads), || Engine::cpu().unwrap());
    println!(
        "oneDNN {} conv2d+bias+relu, batch 1, {threads} thread(s), median of {iters}",
        byoc_plugin_dnnl::dnnl::version()
    );
    println!(
        "{:<15} {:>7} {:>10} {:>10} {:>12} {:>10} {:>12} {:>10}",
        "layer", "GFLOP", "raw ms", "raw GF/s", "step ms", "step GF/s", "run ms", "run GF/s"
    );
    let (mut raw_total, mut step_total, mut flop_total) = (0.0, 0.0, 0.0);
    for (name, c, oc, k, s, h) in LAYERS {
        let o = (h + 2 * (k / 2) - k) / s + 1;
        let gflop = 2.0 * (oc * o * o * c * k * k) as f64 / 1e9;
        let r = on_team(Some(threads), || raw(&engine, c, oc, k, s, h, iters)).as_secs_f64();
        let (st, whole) = runtime(c, oc, k, s, h, iters, threads);
        let (st, whole) = (st.as_secs_f64(), whole.as_secs_f64());
        raw_total += r;
        step_total += st;
        flop_total += gflop;
        println!(
            "{name:<15} {gflop:>7.3} {:>10.3} {:>10.1} {:>12.3} {:>10.1} {:>12.3} {:>10.1}",
            r * 1e3,
            gflop / r,
            st * 1e3,
            gflop / st,
            whole * 1e3,
            gflop / whole
        );
    }
    println!(
        "all layers: raw {:.1} GFLOP/s, runtime step {:.1} GFLOP/s ({:.0}% of raw)",
        flop_total / raw_total,
        flop_total / step_total,
        100.0 * raw_total / step_total
    );
}
