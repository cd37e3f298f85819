//! Shared test helpers: partitions written as Relay text, compiled by the dnnl plugin and
//! checked against byoc's host executor (an implementation independent of oneDNN).

#![allow(dead_code, reason = "each test binary uses a subset of the helpers")]

use byoc_exec::{ExecOptions, Executor};
use byoc_ir::tensor::TensorMut;
use byoc_ir::Module;
use byoc_ir::Tensor;
use byoc_plugin_dnnl::DnnlPlugin;
use byoc_sdk::{CompileOptions, CompiledModule, PartitionedFunction, Plugin};

/// Deterministic values in [-1, 1) (a 64-bit LCG).
pub fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

/// A random tensor.
pub fn tensor(shape: &[usize], seed: u64) -> Tensor {
    let n = shape.iter().product();
    Tensor::from_vec(shape.to_vec(), values(n, seed)).unwrap()
}

/// A Relay `const(...)` literal with random values.
pub fn konst(shape: &[usize], seed: u64) -> String {
    let n: usize = shape.iter().product();
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let vals: Vec<String> = values(n, seed).iter().map(|v| format!("{v:?}f")).collect();
    let dims = if shape.len() == 1 {
        format!("({},)", dims[0])
    } else {
        format!("({})", dims.join(", "))
    };
    format!("const({dims}, float32, [{}])", vals.join(", "))
}

/// Wraps a body into a dnnl partition `@dnnl_0(params) { body }`.
pub fn partition(params: &str, body: &str) -> String {
    format!(
        "def @dnnl_0({params}, Compiler=\"dnnl\", global_symbol=\"dnnl_0\", Primitive=1) {{\n{body}\n}}\n"
    )
}

/// max |a - b| / max |b|: the error relative to the reference's magnitude.
pub fn rel_err(got: &Tensor, want: &Tensor) -> f64 {
    let (g, w) = (got.to_f64_vec(), want.to_f64_vec());
    assert_eq!(g.len(), w.len());
    let scale = w.iter().fold(0f64, |m, v| m.max(v.abs())).max(1e-12);
    g.iter()
        .zip(&w)
        .map(|(a, b)| (a - b).abs())
        .fold(0f64, f64::max)
        / scale
}

/// The host executor's outputs of the partition.
pub fn host(f: &PartitionedFunction, inputs: &[Tensor]) -> Vec<Tensor> {
    Executor::new(
        &Module::from_main(f.function.clone()),
        ExecOptions::default(),
    )
    .unwrap()
    .run(inputs)
    .unwrap()
}

/// Runs a compiled module.
pub fn run(module: &dyn CompiledModule, inputs: &[Tensor], like: &[Tensor]) -> Vec<Tensor> {
    let mut outs: Vec<Tensor> = like.iter().map(|t| Tensor::zeros(t.ty().clone())).collect();
    {
        let mut views: Vec<TensorMut<'_>> = outs.iter_mut().map(Tensor::view_mut).collect();
        let ins: Vec<_> = inputs.iter().map(Tensor::view).collect();
        module.run(&ins, &mut views).unwrap();
    }
    outs
}

/// `f` compiled by the dnnl plugin, and the same module after its serialized round trip (an
/// artifact's).
pub fn compiled_and_reloaded(f: &PartitionedFunction) -> [Box<dyn CompiledModule>; 2] {
    let module = DnnlPlugin
        .compile(f, &CompileOptions::new())
        .unwrap_or_else(|e| panic!("{e}"));
    let reloaded = DnnlPlugin
        .deserialize(&module.serialize().unwrap(), &CompileOptions::new())
        .unwrap();
    [module, reloaded]
}

/// Compiles `text` with the dnnl plugin, runs it (and its serialized round trip) on
/// `inputs` and checks every output against the host executor (≤ 1e-4 relative).
pub fn check(text: &str, inputs: &[Tensor]) {
    let f = PartitionedFunction::from_text(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let want = host(&f, inputs);
    for m in compiled_and_reloaded(&f) {
        let got = run(m.as_ref(), inputs, &want);
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            let e = rel_err(g, w);
            assert!(e <= 1e-4, "output {i}: relative error {e:e}\n{text}");
        }
    }
}

/// The compile error of `text`.
pub fn compile_error(text: &str) -> String {
    let f = PartitionedFunction::from_text(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    match DnnlPlugin.compile(&f, &CompileOptions::new()) {
        Ok(_) => panic!("compiled, expected an error:\n{text}"),
        Err(e) => e.to_string(),
    }
}

/// `text` partitioned for dnnl through the pipeline (the plugin's pattern table and
/// predicates), compiled by the plugin and run on `inputs`, checked against the host executor
/// on `text` unpartitioned (relative error at most 1e-4): the number of partitions offloaded,
/// or what failed, with the text.
pub fn offloaded_matches_host(text: &str, inputs: &[Tensor]) -> Result<usize, String> {
    use std::sync::Arc;

    use byoc_exec::plugin::{compile_externals, Runtimes};
    use byoc_pipeline::pipeline::{partition, PartitionOptions};
    use byoc_pipeline::target::Target;
    use byoc_plugin_dnnl::support::description;

    let failed = |stage: &str, e: &dyn std::fmt::Display| format!("{stage}: {e}\n{text}");
    let module = byoc_ir::text::parse_module(text).map_err(|e| failed("parse", &e))?;
    let dnnl = Target::from_description(&description()).map_err(|e| failed("target", &e))?;
    let partitioned = partition(&module, &[dnnl], &PartitionOptions::default())
        .map_err(|e| failed("partition", &e))?
        .module;
    let runtimes = Runtimes::new().with("dnnl", Arc::new(DnnlPlugin));
    let externals = compile_externals(&partitioned, &runtimes, &CompileOptions::new())
        .map_err(|e| failed("dnnl codegen", &e))?;
    let options = ExecOptions {
        threads: 1,
        ..ExecOptions::default()
    };
    let got = Executor::with_externals(&partitioned, options, &externals)
        .and_then(|e| e.run(inputs))
        .map_err(|e| failed("run", &e))?;
    let want = Executor::new(&module, options)
        .and_then(|e| e.run(inputs))
        .map_err(|e| failed("host", &e))?;
    if got.len() != want.len() {
        return Err(failed(
            "outputs",
            &format!("{} against {}", got.len(), want.len()),
        ));
    }
    for (g, w) in got.iter().zip(&want) {
        let err = rel_err(g, w);
        if err > 1e-4 {
            return Err(failed("numerics", &format!("relative error {err}")));
        }
    }
    Ok(externals.len())
}

/// Property-test settings: `cases` per property unless `PROPTEST_CASES` says otherwise, and no
/// failure files.
pub fn proptest_config(cases: u32) -> proptest::test_runner::Config {
    proptest::test_runner::Config {
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(cases),
        failure_persistence: None,
        ..proptest::test_runner::Config::default()
    }
}
