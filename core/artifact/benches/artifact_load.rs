//! Load time of a ResNet-50-sized artifact (25.6M float32 parameters).
//!
//! Run with `cargo bench -p byoc-artifact --bench artifact_load`. Builds a host-only model of
//! 102 `nn.dense` layers with 500x500 weights (25.5M parameters, 102 MB, about ResNet-50's
//! 25.6M), writes it as an artifact, then times reading it back (file read, both SHA-256
//! checks, parsing the host program, restoring the parameters, type inference) and planning
//! it on the executor. Prints the median of 5 runs.

use std::time::Instant;

use byoc_artifact::Artifact;
use byoc_exec::{ExecOptions, Executor, ExternalModules};
use byoc_ir::Tensor;
use byoc_ir::{Attrs, DType, FunctionBuilder, Module, TensorType, Type};
use byoc_sdk::CompileOptions;

const WIDTH: usize = 500;

/// The full 102 layers under `cargo bench`, 2 layers as a smoke run under `cargo test`.
fn layers() -> usize {
    if std::env::args().any(|a| a == "--bench") {
        102
    } else {
        2
    }
}

fn model(layers: usize) -> Module {
    let mut b = FunctionBuilder::new();
    let x = b.param("x", Type::tensor([1, WIDTH], DType::Float32));
    let mut h = x;
    for l in 0..layers {
        let values: Vec<f32> = (0..WIDTH * WIDTH)
            .map(|i| ((i * 31 + l * 7) % 97) as f32 / 97.0 - 0.5)
            .collect();
        let w = b.constant(
            Tensor::from_vec(vec![WIDTH, WIDTH], values).unwrap_or_else(|e| panic!("{e}")),
        );
        let d = b
            .call("nn.dense", &[h, w], Attrs::new())
            .unwrap_or_else(|e| panic!("{e}"));
        h = b
            .call("nn.relu", &[d], Attrs::new())
            .unwrap_or_else(|e| panic!("{e}"));
    }
    let f = b
        .finish(vec![x], h, Attrs::new())
        .unwrap_or_else(|e| panic!("{e}"));
    Module::from_main(f)
}

fn main() {
    let layers = layers();
    let artifact =
        Artifact::build(&model(layers), &ExternalModules::new()).unwrap_or_else(|e| panic!("{e}"));
    let path = std::env::temp_dir().join(format!("byoc-bench-{}.byoc", std::process::id()));
    artifact.write(&path).unwrap_or_else(|e| panic!("{e}"));
    let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    let mut load = Vec::new();
    let mut plan = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let a = Artifact::read(&path).unwrap_or_else(|e| panic!("{e}"));
        let ext = a
            .load_externals(|p| Err(format!("no plugin {p}")), &CompileOptions::new())
            .unwrap_or_else(|e| panic!("{e}"));
        load.push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        let exec = Executor::with_externals(&a.module, ExecOptions::default(), &ext)
            .unwrap_or_else(|e| panic!("{e}"));
        plan.push(t.elapsed().as_secs_f64() * 1e3);
        assert_eq!(
            exec.inputs()[0].ty,
            TensorType::new(vec![1, WIDTH], DType::Float32)
        );
    }
    let _ = std::fs::remove_file(&path);
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    println!(
        "artifact of {layers} dense layers ({} parameters, {:.1} MB file)",
        layers * WIDTH * WIDTH,
        size as f64 / 1e6
    );
    println!(
        "read + verify + restore: {:.1} ms (median of 5)",
        median(&mut load)
    );
    println!(
        "plan on the executor:    {:.1} ms (median of 5)",
        median(&mut plan)
    );
}
