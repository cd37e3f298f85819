//! ONNX's nine light CNNs with the dnnl target, statically linked: what `byoc inspect
//! resnet50.onnx --target dnnl --format json` reports for ResNet-50 (every conv with its batch
//! norm and relu one `dnnl.conv2d_bias_relu`, every residual add fused as a sum post-op), and
//! every random-weight variant partitioned, compiled by the dnnl plugin and run against
//! onnxruntime's outputs (max relative error 1e-4, the tolerance of `tests/common/compare.rs`).
//!
//! ResNet-50 quantized by byoc's `Quantize` pass (every conv int8) runs on dnnl's int8
//! composites bit for bit as on the host's integer kernels.
//!
//! Data: `BYOC_ONNX_LIGHT_DIR` (see `scripts/fetch_onnx_light.sh`). The tests are ignored
//! without it; `./scripts/dev test` prepares the data and runs them. The committed
//! transformer, vision and speech fixtures (`tests/data/transformers/`) run with the dnnl
//! target against onnxruntime too, every matmul, layer norm, softmax and convolution of them on
//! dnnl; they need no prepared data.

#[path = "../../../tests/common/compare.rs"]
mod common;
#[path = "../../../tests/light/mod.rs"]
mod light;

use std::sync::Arc;

use anyhow::{Context, Result};
use byoc_artifact::io::read_npz;
use byoc_exec::plugin::{compile_externals, Runtimes};
use byoc_exec::{ExecOptions, Executor};
use byoc_ir::infer_types;
use byoc_ir::text::{parse_module, print_module};
use byoc_ir::Module;
use byoc_passes::{Pass, PassContext, QConfig, Quantize};
use byoc_pipeline::model::{load_model, LoadOptions};
use byoc_pipeline::pipeline::{partition, PartitionOptions};
use byoc_pipeline::report::summary::Summary;
use byoc_pipeline::target::Target;
use byoc_plugin_dnnl::dnnl::{effective_cpu_isa, inexact_int8_isa};
use byoc_plugin_dnnl::support::TARGET;
use byoc_plugin_dnnl::{DnnlPlugin, THREADS_OPTION};
use byoc_sdk::{CompileOptions, Plugin};
use light::{check, check_fixture, fixture, light_dir};

fn dnnl() -> Result<Target> {
    Ok(Target::from_description(&DnnlPlugin.describe())?)
}

/// Partitions for dnnl, compiles every partition with the plugin (2 threads) and plans the
/// module around them.
fn dnnl_executor(module: &Module) -> Result<Executor> {
    let result = partition(module, &[dnnl()?], &PartitionOptions::default())?;
    let runtimes = Runtimes::new().with(TARGET, Arc::new(DnnlPlugin));
    let options = CompileOptions::new().with(THREADS_OPTION, "2");
    let externals = compile_externals(&result.module, &runtimes, &options)?;
    Ok(Executor::with_externals(
        &result.module,
        ExecOptions::default(),
        &externals,
    )?)
}

/// What partitioning the random-weight variant of `name` for dnnl gives.
fn summary(name: &str) -> Result<Summary> {
    let model = light_dir()?.join(name).join("random.onnx");
    let module = load_model(&model, &LoadOptions::default())
        .with_context(|| format!("loading {}", model.display()))?;
    Ok(Summary::of(&partition(
        &module,
        &[dnnl()?],
        &PartitionOptions::default(),
    )?))
}

#[test]
#[ignore = "needs the ONNX light models: ./scripts/fetch_onnx_light.sh"]
fn resnet50_fuses_conv_batch_norm_relu_and_residual_adds() -> Result<()> {
    let summary = summary("resnet50")?;
    let composites: Vec<&str> = summary
        .functions
        .iter()
        .flat_map(|f| f.composites.iter().map(String::as_str))
        .collect();
    let count = |name: &str| composites.iter().filter(|c| **c == name).count();
    // ResNet-50: a stem conv, then 16 bottlenecks of three convs (conv + bn + relu twice,
    // conv + bn + residual add + relu once), four of them with a conv + bn shortcut.
    assert_eq!(count("dnnl.conv2d_bias_relu"), 1 + 16 * 2, "{composites:?}");
    assert_eq!(count("dnnl.conv2d_bias_sum_relu"), 16, "{composites:?}");
    assert_eq!(count("dnnl.conv2d_bias"), 4, "{composites:?}");
    // ... and the classifier, a Gemm with bias.
    assert_eq!(count("dnnl.dense_bias"), 1, "{composites:?}");
    assert_eq!(composites.len(), 53 + 1, "{composites:?}");
    for op in ["nn.conv2d", "nn.batch_norm", "add", "nn.relu", "multiply"] {
        assert!(
            !summary.host_ops.iter().any(|h| h == op),
            "{op} left on the host: {:?}",
            summary.host_ops
        );
    }
    Ok(())
}

#[test]
#[ignore = "needs the ONNX light models: ./scripts/fetch_onnx_light.sh"]
fn shufflenet_is_one_partition_with_its_channel_shuffles() -> Result<()> {
    let summary = summary("shufflenet")?;
    let shuffles: usize = summary
        .functions
        .iter()
        .map(|f| {
            f.composites
                .iter()
                .filter(|c| *c == "dnnl.channel_shuffle")
                .count()
        })
        .sum();
    // Three stages of 4, 8 and 4 units, one channel shuffle each.
    assert_eq!(shuffles, 16);
    // Everything, the flatten before the classifier included, is one partition.
    assert_eq!(summary.functions.len(), 1);
    assert!(summary.host_ops.is_empty(), "{:?}", summary.host_ops);
    Ok(())
}

/// ResNet-50 up to its global pool (the last integer layer, dequantized), with every conv
/// quantized (the stem too, so that everything before the pool is integer arithmetic or
/// exact float32 steps: max pooling, scaling by powers of two), through dnnl's int8
/// composites against the host's integer kernels, bit for bit.
#[test]
#[ignore = "needs the ONNX light models: ./scripts/fetch_onnx_light.sh"]
fn resnet50_quantized_is_bit_exact_with_the_host() -> Result<()> {
    let model = light_dir()?.join("resnet50").join("random.onnx");
    let module = load_model(&model, &LoadOptions::default())
        .with_context(|| format!("loading {}", model.display()))?;
    // Cut the float model before its global pool: its input becomes the output.
    let text = print_module(&module);
    let pool = text
        .lines()
        .find(|l| l.contains("avg_pool2d("))
        .context("ResNet-50 has a global pool")?;
    let (_, arg) = pool.split_once("pool2d(").context("pool call")?;
    let arg = arg.split([',', ')']).next().context("pool argument")?;
    let define = format!("  {arg} = ");
    let keep = text
        .find(&define)
        .and_then(|at| text[at..].find('\n').map(|end| at + end + 1))
        .context("the pool argument's definition")?;
    let mut cut = parse_module(&format!("{}  {arg}\n}}\n", &text[..keep]))?;
    infer_types(&mut cut)?;
    let config = QConfig {
        skip_conv_layers: Vec::new(),
        ..QConfig::default()
    };
    Quantize {
        config,
        samples: Vec::new(),
        progress: None,
    }
    .run(&mut cut, &mut PassContext::new())?;
    let input = read_npz(light_dir()?.join("resnet50").join("random_input.npz"))?
        .into_values()
        .collect::<Vec<_>>();
    let want = Executor::new(&cut, ExecOptions::default())?.run(&input)?;
    let result = partition(&cut, &[dnnl()?], &PartitionOptions::default())?;
    let summary = Summary::of(&result);
    let composites: Vec<&str> = summary
        .functions
        .iter()
        .flat_map(|f| f.composites.iter().map(String::as_str))
        .collect();
    let int8 = composites
        .iter()
        .filter(|c| c.starts_with("dnnl.qconv2d"))
        .count();
    match inexact_int8_isa(effective_cpu_isa()) {
        None => {
            assert_eq!(int8, 53, "{composites:?}");
            assert_eq!(summary.functions.len(), 1, "{composites:?}");
            assert!(summary.host_ops.is_empty(), "{:?}", summary.host_ops);
        }
        // Below VNNI oneDNN's int8 is not exact: every int8 conv is declined, naming the ISA,
        // and runs on the host (the comparison below then checks the rest of the partition).
        Some(isa) => {
            assert_eq!(int8, 0, "{composites:?}");
            assert!(
                summary.declined.iter().any(|d| d.reason.contains(isa)),
                "{:?}",
                summary.declined
            );
            assert!(summary.host_ops.iter().any(|op| op == "nn.conv2d"));
        }
    }
    let got = dnnl_executor(&cut)?.run(&input)?;
    let (g, w) = (got[0].as_slice::<f32>()?, want[0].as_slice::<f32>()?);
    let differ = g
        .iter()
        .zip(w)
        .filter(|(a, b)| a.to_bits() != b.to_bits())
        .count();
    assert_eq!(differ, 0, "{differ} of {} values differ", w.len());
    assert!(
        w.iter().any(|v| *v != 0.0),
        "an all-zero output checks little"
    );
    Ok(())
}

/// The random-weight variant of `name` through dnnl against onnxruntime.
fn light_model(name: &str) -> Result<()> {
    let root = light_dir()?;
    let dir = root.join(name);
    check(
        &dir.join("random.onnx"),
        &dir.join("random_input.npz"),
        &dir.join("random_expected.npz"),
        &dnnl_executor,
    )
    .context("random weights with --target dnnl vs onnxruntime")
}

light::light_model_tests!();

/// The ops that carry a transformer's or a CNN's work: none may stay on the host.
const COMPUTE_OPS: [&str; 5] = [
    "nn.dense",
    "nn.batch_matmul",
    "nn.layer_norm",
    "nn.softmax",
    "nn.conv2d",
];

/// A committed fixture with the dnnl target: every matmul, layer norm, softmax and
/// convolution on dnnl, and the outputs against onnxruntime's.
fn fixture_model(name: &str) -> Result<()> {
    let model = fixture(name)?.join("model.onnx");
    let module = load_model(&model, &LoadOptions::default())?;
    let placed = Summary::of(&partition(
        &module,
        &[dnnl()?],
        &PartitionOptions::default(),
    )?);
    let left: Vec<&String> = placed
        .host_ops
        .iter()
        .filter(|op| COMPUTE_OPS.contains(&op.as_str()))
        .collect();
    anyhow::ensure!(left.is_empty(), "{name}: left on the host: {left:?}");
    check_fixture(name, &dnnl_executor)
}

light::fixture_tests!();
