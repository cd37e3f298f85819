//! Host conv2d throughput on ResNet-50 layer shapes, with 1 and 2 threads: float32 (the `gemm`
//! crate) and int8 × int8 → int32 (the int8 GEMM: AVX512-VNNI, AVX2 or portable, as
//! `BYOC_INT8_GEMM` or the CPU selects), side by side.
//!
//! Run with `cargo bench -p byoc-kernels --bench conv2d`. Prints the median wall time of each
//! layer, the GFLOP/s (GOP/s for int8) it implies (2 × multiply-adds) and the int8 / float32
//! time ratio.

use std::time::Instant;

use byoc_ir::infer_types;
use byoc_ir::op::OpRegistry;
use byoc_ir::Tensor;
use byoc_ir::{AttrValue, Attrs, DType, Expr, FunctionBuilder, Module, TensorType, Type};
use rand::rngs::StdRng;
use rand::SeedableRng;

/// One benchmarked layer: data shape, weight shape, stride, padding.
struct Layer {
    name: &'static str,
    data: [usize; 4],
    weight: [usize; 4],
    stride: i64,
    pad: i64,
}

const LAYERS: [Layer; 4] = [
    Layer {
        name: "1x64x56x56  3x3  64 pad 1",
        data: [1, 64, 56, 56],
        weight: [64, 64, 3, 3],
        stride: 1,
        pad: 1,
    },
    Layer {
        name: "1x256x56x56 1x1  64",
        data: [1, 256, 56, 56],
        weight: [64, 256, 1, 1],
        stride: 1,
        pad: 0,
    },
    Layer {
        name: "1x3x224x224 7x7  64 s2 pad 3",
        data: [1, 3, 224, 224],
        weight: [64, 3, 7, 7],
        stride: 2,
        pad: 3,
    },
    Layer {
        name: "1x512x7x7   3x3 512 pad 1",
        data: [1, 512, 7, 7],
        weight: [512, 512, 3, 3],
        stride: 1,
        pad: 1,
    },
];

/// The median seconds of one conv2d layer on `dtype` data and weights (`out_dtype` int32 for
/// int8), for 1 and 2 threads, and the layer's output shape.
fn time_layer(
    layer: &Layer,
    dtype: DType,
    reps: usize,
) -> Result<([f64; 2], Vec<usize>), Box<dyn std::error::Error>> {
    let op = OpRegistry::lookup("nn.conv2d").ok_or("nn.conv2d is not registered")?;
    let dt = TensorType::new(layer.data, dtype);
    let wt = TensorType::new(layer.weight, dtype);
    let mut attrs = Attrs::new()
        .with("strides", AttrValue::ints([layer.stride, layer.stride]))
        .with("padding", AttrValue::ints([layer.pad, layer.pad]));
    if dtype == DType::Int8 {
        attrs = attrs.with("out_dtype", AttrValue::Str("int32".into()));
    }
    let mut b = FunctionBuilder::new();
    let x = b.param("x", Type::Tensor(dt.clone()));
    let w = b.param("w", Type::Tensor(wt.clone()));
    let call = b.call("nn.conv2d", &[x, w], attrs)?;
    let mut m = Module::from_main(b.finish(vec![x, w], call, Attrs::new())?);
    infer_types(&mut m)?;
    let main = m.main()?;
    let Expr::Call(c) = main.expr(call) else {
        return Err("body is not a call".into());
    };
    let out_ty = main
        .ty(call)
        .and_then(Type::as_tensor)
        .ok_or("conv2d result is not a tensor")?
        .clone();
    let kernel = byoc_kernels::host_kernel(
        &op,
        &c.attrs,
        &[dt.clone(), wt.clone()],
        std::slice::from_ref(&out_ty),
    )?;
    let mut rng = StdRng::seed_from_u64(1);
    let xs = Tensor::random_uniform(dt, &mut rng)?;
    let ws = Tensor::random_uniform(wt, &mut rng)?;
    let mut y = Tensor::zeros(out_ty.clone());
    let mut medians = [0.0; 2];
    for (threads, median) in [1, 2].into_iter().zip(&mut medians) {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()?;
        let mut times = Vec::new();
        for rep in 0..reps {
            let start = Instant::now();
            pool.install(|| kernel.run(&[xs.view(), ws.view()], &mut [y.view_mut()], threads))?;
            if rep > 0 {
                times.push(start.elapsed().as_secs_f64());
            }
        }
        times.sort_by(f64::total_cmp);
        *median = times[times.len() / 2];
    }
    Ok((medians, out_ty.shape))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // `cargo bench` passes `--bench`; under `cargo test --all-targets` one timed run per layer
    // checks that the benchmark still works without spending the time of a measurement.
    let reps = if std::env::args().any(|a| a == "--bench") {
        11
    } else {
        2
    };
    println!(
        "{:<30} {:>7} {:>12} {:>9} {:>11} {:>9} {:>11}",
        "layer", "threads", "f32 ms", "GFLOP/s", "int8 ms", "GOP/s", "int8 / f32"
    );
    for layer in &LAYERS {
        let (float, shape) = time_layer(layer, DType::Float32, reps)?;
        let (int8, _) = time_layer(layer, DType::Int8, reps)?;
        let [o, i, kh, kw] = layer.weight;
        let ops = 2.0 * (o * i * kh * kw) as f64 * (shape[2] * shape[3]) as f64;
        for t in 0..2 {
            println!(
                "{:<30} {:>7} {:>12.2} {:>9.1} {:>11.2} {:>9.1} {:>11.2}",
                layer.name,
                t + 1,
                float[t] * 1e3,
                ops / float[t] / 1e9,
                int8[t] * 1e3,
                ops / int8[t] / 1e9,
                int8[t] / float[t]
            );
        }
    }
    Ok(())
}
