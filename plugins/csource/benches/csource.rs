//! csource on ResNet-style conv2d + bias_add + relu partitions: C generation and compile time
//! per partition, and the latency of the compiled module against the host executor (1 and 2
//! threads) on the same function.
//!
//! Run with `cargo bench -p byoc-plugin-csource --bench csource`. Under `cargo test
//! --all-targets` one timed run per layer checks that the benchmark still works.

use std::time::{Duration, Instant};

use byoc_exec::{ExecOptions, Executor};
use byoc_ir::infer_types;
use byoc_ir::Tensor;
use byoc_ir::{AttrValue, Attrs, DType, FunctionBuilder, Module, TensorType, Type};
use byoc_plugin_csource::{
    compile, CSourceCodegen, CodegenOptions, CompilerOptions, LoadedPartition,
};
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
        name: "1x128x56x56 3x3 128 s2 pad 1",
        data: [1, 128, 56, 56],
        weight: [128, 128, 3, 3],
        stride: 2,
        pad: 1,
    },
    Layer {
        name: "1x512x7x7   3x3 512 pad 1",
        data: [1, 512, 7, 7],
        weight: [512, 512, 3, 3],
        stride: 1,
        pad: 1,
    },
];

/// conv2d + bias_add + relu with data, weight and bias as parameters, typed; `@main` is also
/// the csource partition.
fn layer_module(layer: &Layer) -> Result<Module, Box<dyn std::error::Error>> {
    let mut b = FunctionBuilder::new();
    let x = b.param("x", Type::tensor(layer.data, DType::Float32));
    let w = b.param("w", Type::tensor(layer.weight, DType::Float32));
    let bias = b.param("b", Type::tensor([layer.weight[0]], DType::Float32));
    let attrs = Attrs::new()
        .with("strides", AttrValue::ints([layer.stride, layer.stride]))
        .with("padding", AttrValue::ints([layer.pad, layer.pad]));
    let conv = b.call("nn.conv2d", &[x, w], attrs)?;
    let biased = b.call("nn.bias_add", &[conv, bias], Attrs::new())?;
    let relu = b.call("nn.relu", &[biased], Attrs::new())?;
    let attrs = Attrs::new()
        .with("Compiler", "csource")
        .with("global_symbol", "csource_0")
        .with("Primitive", AttrValue::Int(1));
    let mut m = Module::from_main(b.finish(vec![x, w, bias], relu, attrs)?);
    infer_types(&mut m)?;
    Ok(m)
}

fn median(mut times: Vec<Duration>) -> f64 {
    times.sort();
    times[times.len() / 2].as_secs_f64() * 1e3
}

fn time(
    reps: usize,
    mut f: impl FnMut() -> Result<(), Box<dyn std::error::Error>>,
) -> Result<f64, Box<dyn std::error::Error>> {
    f()?; // warm-up
    let mut times = Vec::with_capacity(reps);
    for _ in 0..reps {
        let t = Instant::now();
        f()?;
        times.push(t.elapsed());
    }
    Ok(median(times))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let reps = if std::env::args().any(|a| a == "--bench") {
        7
    } else {
        1
    };
    println!(
        "{:<30} {:>7} {:>7} {:>11} {:>10} {:>10} {:>10} {:>8}",
        "layer", "gen ms", "cc ms", "csource ms", "-O3 native", "host1 ms", "host2 ms", "GFLOP/s"
    );
    for layer in &LAYERS {
        let m = layer_module(layer)?;
        let f = m.main()?;
        let t = Instant::now();
        let src = CSourceCodegen::new(CodegenOptions::default()).generate(f)?;
        let gen_ms = t.elapsed().as_secs_f64() * 1e3;
        let t = Instant::now();
        let so = compile(&src, &CompilerOptions::default())?;
        let cc_ms = t.elapsed().as_secs_f64() * 1e3;
        let part = LoadedPartition::load(&so)?;
        let tuned = CompilerOptions {
            flags: ["-O3", "-fPIC", "-shared"].map(String::from).to_vec(),
            march_native: true,
            ..CompilerOptions::default()
        };
        let part_native = LoadedPartition::load(&compile(&src, &tuned)?)?;

        let inputs: Vec<Tensor> = f
            .param_types()
            .iter()
            .enumerate()
            .map(|(i, ty)| {
                let ty = ty.as_tensor().ok_or("tensor parameter")?;
                let mut rng = StdRng::seed_from_u64(i as u64 + 1);
                Ok(Tensor::random_uniform(ty.clone(), &mut rng)?)
            })
            .collect::<Result<_, Box<dyn std::error::Error>>>()?;
        let out_ty: TensorType = part.outputs()[0].clone();
        let mut out = Tensor::zeros(out_ty);
        let views: Vec<_> = inputs.iter().map(Tensor::view).collect();
        let c_ms = time(reps, || Ok(part.run(&views, &mut [out.view_mut()])?))?;
        let native_ms = time(reps, || Ok(part_native.run(&views, &mut [out.view_mut()])?))?;

        let mut host_m = m.clone();
        if let Some(main) = host_m.get_mut("main") {
            main.attrs = Attrs::new();
        }
        let mut host_ms = [0.0; 2];
        for (slot, threads) in host_ms.iter_mut().zip([1, 2]) {
            let exec = Executor::new(
                &host_m,
                ExecOptions {
                    threads,
                    profile: false,
                    memory_budget: None,
                },
            )?;
            *slot = time(reps, || {
                exec.run(&inputs)?;
                Ok(())
            })?;
        }
        let [n, _, _, _] = layer.data;
        let [oc, icg, kh, kw] = layer.weight;
        let out_hw: usize = part.outputs()[0].shape[2..].iter().product();
        let flops = 2.0 * (n * oc * out_hw * icg * kh * kw) as f64;
        println!(
            "{:<30} {:>7.1} {:>7.0} {:>11.2} {:>10.2} {:>10.2} {:>10.2} {:>8.2}",
            layer.name,
            gen_ms,
            cc_ms,
            c_ms,
            native_ms,
            host_ms[0],
            host_ms[1],
            flops / (c_ms * 1e6)
        );
    }
    Ok(())
}
