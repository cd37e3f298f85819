//! Shared helpers: partitions from Relay text, deterministic inputs, and the comparison of a
//! compiled partition against byoc's host executor (the independent reference).

#![allow(dead_code, reason = "each test binary uses a different subset")]

use anyhow::{anyhow, Context, Result};
use byoc_exec::{ExecOptions, Executor};
use byoc_ir::infer_types;
use byoc_ir::text::parse_module;
use byoc_ir::{AttrValue, Attrs, Function, Module, Type};
use byoc_ir::{DType, Tensor, TensorType};
use byoc_passes::{Pass, PassContext};
use byoc_patterns::{MergeComposite, PatternTable};
use byoc_plugin_csource::support::pattern_table_text;
use byoc_plugin_csource::{
    compile, CSourceCodegen, CodegenOptions, CompilerOptions, GeneratedSource, LoadedPartition,
};

/// Partition attributes as PartitionGraph sets them.
pub fn partition_attrs(symbol: &str) -> Attrs {
    Attrs::new()
        .with("Compiler", "csource")
        .with("global_symbol", symbol)
        .with("Primitive", AttrValue::Int(1))
}

/// Parses `text` (a module with `@main`), infers types, and optionally merges the csource
/// composites.
pub fn module(text: &str, composites: bool) -> Result<Module> {
    let mut m = parse_module(text).map_err(|e| anyhow!("{e}"))?;
    infer_types(&mut m).map_err(|e| anyhow!("{e}"))?;
    if composites {
        let table = PatternTable::parse(&pattern_table_text()).map_err(|e| anyhow!("{e}"))?;
        MergeComposite::new(&table)
            .run(&mut m, &mut PassContext::new())
            .map_err(|e| anyhow!("{e}"))?;
    }
    Ok(m)
}

/// `@main` of `m` turned into a csource partition named `symbol`.
pub fn as_partition(m: &Module, symbol: &str) -> Result<Function> {
    let mut f = m.main().map_err(|e| anyhow!("{e}"))?.clone();
    f.attrs = partition_attrs(symbol);
    Ok(f)
}

/// Deterministic values in [-1, 1).
pub fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(1);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 23) as f32) - 1.0
        })
        .collect()
}

/// A float32 tensor of deterministic values.
pub fn random(ty: &TensorType, seed: u64) -> Tensor {
    Tensor::from_vec(ty.shape.clone(), values(ty.num_elements(), seed)).expect("sizes agree")
}

/// Inputs for each parameter of `f`.
pub fn inputs_for(f: &Function, seed: u64) -> Result<Vec<Tensor>> {
    f.param_types()
        .iter()
        .enumerate()
        .map(|(i, t)| match t {
            Type::Tensor(t) => Ok(random(t, seed + i as u64)),
            other => Err(anyhow!("parameter {i} has type {other:?}")),
        })
        .collect()
}

/// Generates, compiles and loads `f`.
pub fn build(f: &Function, options: CodegenOptions) -> Result<(GeneratedSource, LoadedPartition)> {
    let src = CSourceCodegen::new(options).generate(f)?;
    let so = compile(&src, &CompilerOptions::default())?;
    let loaded = LoadedPartition::load(&so)?;
    Ok((src, loaded))
}

/// Runs a loaded partition on `inputs`, returning fresh outputs.
pub fn run(p: &LoadedPartition, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
    let mut outs: Vec<Tensor> = p
        .outputs()
        .iter()
        .map(|t| Tensor::zeros(t.clone()))
        .collect();
    let views: Vec<_> = inputs.iter().map(Tensor::view).collect();
    let mut out_views: Vec<_> = outs.iter_mut().map(Tensor::view_mut).collect();
    p.run(&views, &mut out_views)?;
    Ok(outs)
}

/// Runs `f` (as `@main` of its own module) on the host executor.
pub fn host(f: &Function, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
    let mut f = f.clone();
    f.attrs = Attrs::new();
    let m = Module::from_main(f);
    let exec = Executor::new(&m, ExecOptions::default()).map_err(|e| anyhow!("{e}"))?;
    exec.run(inputs).map_err(|e| anyhow!("{e}"))
}

/// Asserts `got` is close to `want` element-wise (|d| <= 1e-4 + 1e-4 |want|).
pub fn assert_close(got: &[Tensor], want: &[Tensor], what: &str) -> Result<()> {
    if got.len() != want.len() {
        return Err(anyhow!(
            "{what}: {} outputs, host gave {}",
            got.len(),
            want.len()
        ));
    }
    for (k, (g, w)) in got.iter().zip(want).enumerate() {
        if g.shape() != w.shape() || w.dtype() != DType::Float32 {
            return Err(anyhow!(
                "{what}: output {k} is {:?}, host {:?}",
                g.ty(),
                w.ty()
            ));
        }
        let (g, w) = (g.as_slice::<f32>()?, w.as_slice::<f32>()?);
        for (i, (&a, &b)) in g.iter().zip(w).enumerate() {
            let close = (a - b).abs() <= 1e-4 + 1e-4 * b.abs();
            let both_nan = a.is_nan() && b.is_nan();
            if !(close || both_nan) {
                return Err(anyhow!("{what}: output {k}[{i}] = {a}, host {b}"));
            }
        }
    }
    Ok(())
}

/// Generates, compiles, runs `f` and compares with the host; returns the generated source.
pub fn check_function(
    f: &Function,
    options: CodegenOptions,
    what: &str,
) -> Result<GeneratedSource> {
    let (src, p) = build(f, options).with_context(|| what.to_string())?;
    let inputs = inputs_for(f, 7)?;
    let got = run(&p, &inputs)?;
    let want = host(f, &inputs)?;
    assert_close(&got, &want, what).with_context(|| src.code.clone())?;
    Ok(src)
}

/// [`check_function`] on `@main` of `text`, with default options.
pub fn check(text: &str) -> Result<GeneratedSource> {
    let m = module(text, false)?;
    check_function(
        &as_partition(&m, "csource_0")?,
        CodegenOptions::default(),
        text,
    )
}
