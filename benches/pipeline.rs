//! The whole partitioning pipeline (prepare, MergeComposite, AnnotateTarget,
//! MergeCompilerRegions, PartitionGraph, Prune) on synthetic CNN-like graphs of about 1k, 10k
//! and 100k ops with two targets, each with a pattern table.
//!
//! `cargo bench --bench pipeline` measures (best of several runs per size) and prints the
//! cumulative time after each stage, so the difference between columns is that stage's cost,
//! and the time of the whole `byoc_pipeline::build` (the partitions compiled by the reference
//! runtime, the host part on the reference kernels).
//! Under `cargo test --all-targets` it runs the 1k graph once, to check it still works.
//! Sizes given as arguments replace the defaults: `cargo bench --bench pipeline -- 100000`.
//! It uses the `byoc` binary's global allocator (mimalloc), so it measures what the tool does.

use std::time::Instant;

use byoc_ir::{Attrs, ExprId, FunctionBuilder, Module};
use byoc_ir::{DType, TensorType};
use byoc_pipeline::pipeline::{partition, PartitionOptions, Stage};
use byoc_pipeline::report::summary::Summary;
use byoc_pipeline::target::Target;
use byoc_pipeline::{build, BuildOptions, HostCodegen};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `dnn`: convolutions and their epilogues, with composites; `vec`: elementwise math, whose
/// 4-op regions are below its `min_ops` and are pruned, so Prune's inlining is measured too.
const DNN: &str = r#"{
  "target": "dnn",
  "ops": ["nn.conv2d", "nn.bias_add", "nn.relu", "add"],
  "patterns": [
    {"name": "dnn.conv2d_bias_relu", "pattern": "nn.relu(nn.bias_add(nn.conv2d(*, *), *))"},
    {"name": "dnn.conv2d_bias", "pattern": "nn.bias_add(nn.conv2d(*, *), *)"},
    {"name": "dnn.add_relu", "pattern": "nn.relu(add(*, *))"}
  ],
  "prune": {"min_ops": 2, "require_any": ["nn.conv2d"]}
}"#;
const VEC: &str = r#"{
  "target": "vec",
  "ops": ["tanh", "sigmoid", "multiply", "abs", "add"],
  "patterns": [
    {"name": "vec.mul_abs", "pattern": "abs(multiply(*, *))"}
  ],
  "prune": {"min_ops": 5}
}"#;

/// A residual CNN-like chain of about `n` ops from six kinds of blocks; `exp` is on neither
/// target, so the host splits the chain into many regions.
fn network(n: usize) -> Result<Module, Box<dyn std::error::Error>> {
    let ty = TensorType::new([1, 4, 4, 4], DType::Float32);
    let mut b = FunctionBuilder::new();
    let x = b.param("x", ty.clone().into());
    let w = b.param("w", TensorType::new([4, 4, 1, 1], DType::Float32).into());
    let bias = b.param("bias", TensorType::new([4], DType::Float32).into());
    let call = |b: &mut FunctionBuilder, op: &str, args: &[ExprId]| b.call(op, args, Attrs::new());
    let mut h = x;
    let (mut count, mut block) = (0, 0);
    while count < n {
        let (out, ops) = match block % 6 {
            0 => {
                let c = call(&mut b, "nn.conv2d", &[h, w])?;
                let a = call(&mut b, "nn.bias_add", &[c, bias])?;
                (call(&mut b, "nn.relu", &[a])?, 3)
            }
            1 => {
                let c = call(&mut b, "nn.conv2d", &[h, w])?;
                let a = call(&mut b, "nn.bias_add", &[c, bias])?;
                let s = call(&mut b, "add", &[a, h])?;
                (call(&mut b, "nn.relu", &[s])?, 4)
            }
            2 => {
                let c = call(&mut b, "nn.conv2d", &[h, w])?;
                (call(&mut b, "tanh", &[c])?, 2)
            }
            3 => {
                let m = call(&mut b, "multiply", &[h, h])?;
                let a = call(&mut b, "abs", &[m])?;
                (call(&mut b, "sigmoid", &[a])?, 3)
            }
            4 => (call(&mut b, "exp", &[h])?, 1),
            _ => {
                let s = call(&mut b, "add", &[h, x])?;
                (call(&mut b, "nn.relu", &[s])?, 2)
            }
        };
        h = out;
        count += ops;
        block += 1;
    }
    Ok(Module::from_main(b.finish(
        vec![x, w, bias],
        h,
        Attrs::new(),
    )?))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let targets = [Target::from_spec_json(DNN)?, Target::from_spec_json(VEC)?];
    let measuring = std::env::args().any(|a| a == "--bench");
    // Sizes given as arguments (`cargo bench --bench pipeline -- 100000`) replace the defaults.
    let given: Vec<usize> = std::env::args().filter_map(|a| a.parse().ok()).collect();
    let sizes: &[usize] = match (given.is_empty(), measuring) {
        (false, _) => &given,
        (true, true) => &[1_000, 10_000, 100_000],
        (true, false) => &[1_000],
    };
    println!(
        "{:>8} {:>12} {:>12} {:>12} {:>12} {:>10} {:>7} {:>10}",
        "ops",
        "composite ms",
        "annotate ms",
        "merge ms",
        "partition ms",
        "partitions",
        "pruned",
        "build ms"
    );
    for &n in sizes {
        let module = network(n)?;
        let reps = match (measuring, n) {
            (false, _) => 1,
            (true, n) if n >= 100_000 => 3,
            _ => 7,
        };
        let mut best = [f64::INFINITY; 4];
        let mut counts = (0, 0);
        for (i, stage) in [
            Stage::Composite,
            Stage::Annotate,
            Stage::Merge,
            Stage::Partition,
        ]
        .into_iter()
        .enumerate()
        {
            let options = PartitionOptions {
                stop_after: stage,
                ..PartitionOptions::default()
            };
            for _ in 0..reps {
                let start = Instant::now();
                let result = partition(&module, &targets, &options)?;
                best[i] = best[i].min(start.elapsed().as_secs_f64() * 1e3);
                if stage == Stage::Partition {
                    counts = (Summary::of(&result).functions.len(), result.pruned.len());
                }
            }
        }
        // The whole build: partitioning, every partition compiled by the reference runtime,
        // the host part left to the reference kernels (no LLVM), no plan.
        let build_options = BuildOptions {
            host_codegen: HostCodegen::Kernels,
            ..BuildOptions::default()
        };
        let mut build_ms = f64::INFINITY;
        for _ in 0..reps {
            let start = Instant::now();
            build(&module, &targets, &build_options)?;
            build_ms = build_ms.min(start.elapsed().as_secs_f64() * 1e3);
        }
        println!(
            "{n:>8} {:>12.1} {:>12.1} {:>12.1} {:>12.1} {:>10} {:>7} {build_ms:>10.1}",
            best[0], best[1], best[2], best[3], counts.0, counts.1
        );
    }
    Ok(())
}
