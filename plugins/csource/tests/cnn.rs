//! A small CNN (conv+bias+relu, pool, a host-only op, conv+bias+relu, global pool, dense+bias,
//! softmax) partitioned with byoc's passes (MergeComposite with the csource pattern table,
//! AnnotateTarget with the csource support, MergeCompilerRegions, PartitionGraph); each csource
//! partition is generated, compiled, loaded and compared with the host executor.

mod common;

use anyhow::{anyhow, Result};
use byoc_ir::infer_types;
use byoc_ir::{Attrs, ExprId, FunctionBuilder, Module};
use byoc_ir::{DType, TensorType, Type};
use byoc_passes::annotate_target::AnnotateTarget;
use byoc_passes::merge_compiler_regions::MergeCompilerRegions;
use byoc_passes::partition_graph::PartitionGraph;
use byoc_passes::prune::op_names;
use byoc_passes::{PassContext, PassManager};
use byoc_patterns::{MergeComposite, PatternTable};
use byoc_plugin_csource::support::pattern_table_text;
use byoc_plugin_csource::{CSource, CodegenOptions};
use byoc_sdk::Plugin;
use common::{check_function, random};

fn conv_block(
    b: &mut FunctionBuilder,
    x: ExprId,
    out_c: usize,
    in_c: usize,
    seed: u64,
) -> Result<ExprId> {
    let w = b.constant(random(
        &TensorType::new([out_c, in_c, 3, 3], DType::Float32),
        seed,
    ));
    let bias = b.constant(random(&TensorType::new([out_c], DType::Float32), seed + 1));
    let conv = b.call(
        "nn.conv2d",
        &[x, w],
        Attrs::new().with("padding", vec![1i64]),
    )?;
    let biased = b.call("nn.bias_add", &[conv, bias], Attrs::new())?;
    Ok(b.call("nn.relu", &[biased], Attrs::new())?)
}

fn cnn() -> Result<Module> {
    let mut b = FunctionBuilder::new();
    let x = b.param("x", Type::tensor([1, 3, 15, 17], DType::Float32));
    let c1 = conv_block(&mut b, x, 8, 3, 10)?;
    let pool_attrs = Attrs::new()
        .with("pool_size", vec![2i64, 2])
        .with("strides", vec![2i64, 2])
        .with("ceil_mode", true);
    let p1 = b.call("nn.max_pool2d", &[c1], pool_attrs)?;
    // Not a csource op: it splits the network into two csource partitions.
    let leaky = b.call("nn.leaky_relu", &[p1], Attrs::new().with("alpha", 0.1))?;
    let c2 = conv_block(&mut b, leaky, 12, 8, 20)?;
    let gap = b.call("nn.global_avg_pool2d", &[c2], Attrs::new())?;
    let flat = b.call("nn.batch_flatten", &[gap], Attrs::new())?;
    let dw = b.constant(random(&TensorType::new([10, 12], DType::Float32), 30));
    let db = b.constant(random(&TensorType::new([10], DType::Float32), 31));
    let dense = b.call("nn.dense", &[flat, dw], Attrs::new())?;
    let logits = b.call("nn.bias_add", &[dense, db], Attrs::new())?;
    let probs = b.call("nn.softmax", &[logits], Attrs::new())?;
    let mut m = Module::from_main(b.finish(vec![x], probs, Attrs::new())?);
    infer_types(&mut m).map_err(|e| anyhow!("{e}"))?;
    Ok(m)
}

fn partition(m: &Module, bind_constants: bool) -> Result<Module> {
    let mut m = m.clone();
    let table = PatternTable::parse(&pattern_table_text()).map_err(|e| anyhow!("{e}"))?;
    let targets = [CSource::new().describe().support()];
    let mut cx = PassContext::new();
    PassManager::new()
        .pass(MergeComposite::new(&table))
        .pass(AnnotateTarget::new(&targets))
        .pass(MergeCompilerRegions::new())
        .pass(PartitionGraph::new().bind_constants(bind_constants))
        .run(&mut m, &mut cx)?;
    let rejected: Vec<&str> = cx.rejected.iter().map(|r| r.op.as_str()).collect();
    assert_eq!(rejected, ["nn.leaky_relu"]);
    let mut parts = m;
    infer_types(&mut parts).map_err(|e| anyhow!("{e}"))?;
    Ok(parts)
}

fn check_partitions(bind_constants: bool) -> Result<()> {
    let parts = partition(&cnn()?, bind_constants)?;
    let mut checked = Vec::new();
    for (name, f) in parts.functions() {
        if f.attrs.get_str("Compiler") != Some("csource") {
            continue;
        }
        let src = check_function(f, CodegenOptions::default(), name)?;
        checked.push((name.to_string(), src.code.matches("/* %").count()));
    }
    let host_ops: Vec<&str> = op_names(parts.main().map_err(|e| anyhow!("{e}"))?);
    assert_eq!(host_ops, ["nn.leaky_relu"]);
    // conv block + pool; conv block + global pool + dense/bias + softmax (flatten is a view).
    let steps: Vec<usize> = checked.iter().map(|(_, s)| *s).collect();
    assert_eq!(steps, [2, 4], "{checked:?}");
    Ok(())
}

#[test]
fn cnn_partitions_match_host_constants_bound() -> Result<()> {
    check_partitions(true)
}

#[test]
fn cnn_partitions_match_host_constants_as_parameters() -> Result<()> {
    check_partitions(false)
}
