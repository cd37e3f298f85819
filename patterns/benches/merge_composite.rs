//! MergeComposite throughput: a 20-entry DNNL-like pattern table over synthetic residual
//! networks of 1k, 10k and 100k ops. Prints one line per size; `cargo bench -p byoc-patterns`.
//! Numbers given after `--` replace the default sizes.

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::Instant;

use byoc_ir::Module;
use byoc_ir::{ExprId, FunctionBuilder};
use byoc_passes::{Pass, PassContext};
use byoc_patterns::{MergeComposite, PatternTable};
use common::{call, finish, t};

const TABLE: &[(&str, &str)] = &[
    (
        "dnnl.conv2d_bias_sum_relu",
        "nn.relu(add(nn.bias_add(nn.conv2d(*, *), *), *))",
    ),
    (
        "dnnl.conv2d_bias_sum",
        "add(nn.bias_add(nn.conv2d(*, *), *), *)",
    ),
    (
        "dnnl.conv2d_bias_relu",
        "nn.relu(nn.bias_add(nn.conv2d(*, *), *))",
    ),
    (
        "dnnl.conv2d_bias_tanh",
        "tanh(nn.bias_add(nn.conv2d(*, *), *))",
    ),
    (
        "dnnl.conv2d_bias_sigmoid",
        "sigmoid(nn.bias_add(nn.conv2d(*, *), *))",
    ),
    ("dnnl.conv2d_bias", "nn.bias_add(nn.conv2d(*, *), *)"),
    ("dnnl.conv2d_sum_relu", "nn.relu(add(nn.conv2d(*, *), *))"),
    ("dnnl.conv2d_relu", "nn.relu(nn.conv2d(*, *))"),
    ("dnnl.conv2d_tanh", "tanh(nn.conv2d(*, *))"),
    ("dnnl.conv2d_sigmoid", "sigmoid(nn.conv2d(*, *))"),
    (
        "dnnl.conv2d_const",
        "nn.relu?(nn.bias_add?(nn.conv2d(*, const), const))",
    ),
    ("dnnl.conv2d_nhwc", "nn.conv2d(*, *){data_layout=\"NHWC\"}"),
    ("dnnl.bn_relu", "nn.relu(nn.batch_norm(*, *, *, *, *).0)"),
    ("dnnl.add_relu", "nn.relu(add(*, *))"),
    ("dnnl.multiply_add", "add(multiply(*, *), *)"),
    (
        "dnnl.add_sub_mul",
        "multiply(add(?x, ?y), subtract(?x, ?y))",
    ),
    ("dnnl.abs_relu", "nn.relu(abs(*))"),
    ("dnnl.exp_sum", "add(exp(*), *)"),
    ("dnnl.clip", "clip(*) : float32"),
    ("dnnl.leaky_relu", "nn.leaky_relu(*)"),
];

/// A residual network of about `n` ops built from five kinds of blocks.
fn network(n: usize) -> Module {
    let ty = t(&[1, 4, 4, 4]);
    let mut b = FunctionBuilder::new();
    let x = b.param("x", ty.clone());
    let w = b.param("w", t(&[4, 4, 1, 1]));
    let bias = b.param("bias", t(&[4]));
    let mut h: ExprId = x;
    let mut count = 0;
    let mut block = 0;
    while count < n {
        let (out, ops) = match block % 5 {
            0 => {
                let c = call(&mut b, "nn.conv2d", &[h, w]);
                let ba = call(&mut b, "nn.bias_add", &[c, bias]);
                (call(&mut b, "nn.relu", &[ba]), 3)
            }
            1 => {
                let c = call(&mut b, "nn.conv2d", &[h, w]);
                let ba = call(&mut b, "nn.bias_add", &[c, bias]);
                let s = call(&mut b, "add", &[ba, h]);
                (call(&mut b, "nn.relu", &[s]), 4)
            }
            2 => {
                let c = call(&mut b, "nn.conv2d", &[h, w]);
                (call(&mut b, "tanh", &[c]), 2)
            }
            3 => {
                let s = call(&mut b, "add", &[h, x]);
                (call(&mut b, "nn.relu", &[s]), 2)
            }
            _ => {
                let m = call(&mut b, "multiply", &[h, h]);
                let a = call(&mut b, "abs", &[m]);
                (call(&mut b, "add", &[a, h]), 3)
            }
        };
        h = out;
        count += ops;
        block += 1;
    }
    Module::from_main(finish(b, vec![x, w, bias], h))
}

fn main() {
    let mut table = PatternTable::new();
    for (name, pat) in TABLE {
        let pattern = pat.parse().unwrap_or_else(|e| panic!("{name}: {e}"));
        table.add(*name, pattern).unwrap_or_else(|e| panic!("{e}"));
    }
    let mut sizes: Vec<usize> = std::env::args().filter_map(|a| a.parse().ok()).collect();
    if sizes.is_empty() {
        sizes = vec![1_000, 10_000, 100_000];
    }
    for n in sizes {
        let module = network(n);
        let mut best = f64::INFINITY;
        let reps = if n >= 100_000 { 3 } else { 10 };
        let mut composites = 0;
        for _ in 0..reps {
            let mut m = module.clone();
            let start = Instant::now();
            MergeComposite::new(&table)
                .run(&mut m, &mut PassContext::new())
                .expect("merge composite succeeds");
            best = best.min(start.elapsed().as_secs_f64());
            let main = m.main().expect("main");
            composites = main
                .live_ids()
                .into_iter()
                .filter(|&id| main.expr(id).as_function().is_some())
                .count();
        }
        println!(
            "merge_composite/{n:>6} ops: {:>9.2} ms  ({:.0} ns/op, {composites} composites, 20 entries)",
            best * 1e3,
            best * 1e9 / n as f64
        );
    }
}
