//! The vta example: `examples/models/quantized_block.relay` (a quantized ResNet-style block
//! in TVM's realized int8 form: two 3x3 convolutions with bias, a 1x1 shortcut convolution,
//! the residual add, relu, requantization, and a dense head) is partitioned for `vta` with the
//! plugin's own pattern table, each vta partition is compiled to VTA instruction streams, and
//! the model runs on the host executor with the partitions on the simulator. The outputs must
//! equal the host-only run's exactly; the report lists each layer's simulated cycles, its ideal
//! (MACs / 256) and its GEMM utilisation, with 1 and 2 virtual threads.

use std::fmt;
use std::sync::Arc;

use anyhow::{anyhow, Context, Result};
use byoc_exec::{ExecOptions, Executor, ExternalModule, ExternalModules};
use byoc_ir::infer_types;
use byoc_ir::text::parse_module;
use byoc_ir::{Tensor, Type};
use byoc_pipeline::pipeline::{partition, PartitionOptions};
use byoc_pipeline::target::Target;
use byoc_plugin_vta::compiler::layer::LayerKind;
use byoc_plugin_vta::{Vta, VtaConfig, VtaModule};
use byoc_sdk::Plugin;
use rand::SeedableRng;

use crate::common::Checked;

/// The model.
pub const MODEL: &str = include_str!("../models/quantized_block.relay");
/// Seed of the random inputs (weights are parameters of the model).
const SEED: u64 = 5;

/// One layer's figures.
#[derive(Clone, Debug)]
pub struct LayerLine {
    /// The partition.
    pub function: String,
    /// The layer's op and shape.
    pub layer: String,
    /// Ideal cycles: MACs / 256.
    pub ideal: u64,
    /// Simulated cycles and GEMM utilisation with 1 and 2 virtual threads.
    pub runs: [(u64, f64); 2],
}

/// What the example found.
#[derive(Clone, Debug)]
pub struct Report {
    /// The vta partitions.
    pub partitions: Vec<String>,
    /// Per layer, in execution order.
    pub layers: Vec<LayerLine>,
    /// Whether both vta runs equal the host run exactly.
    pub identical: bool,
}

impl Checked for Report {
    fn ok(&self) -> bool {
        self.identical && !self.partitions.is_empty()
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "vta partitions: {}", self.partitions.join(", "))?;
        writeln!(
            f,
            "{:<8} {:<34} {:>9} {:>9} {:>7} {:>9} {:>7}",
            "function", "layer", "ideal", "cyc 1vt", "util", "cyc 2vt", "util"
        )?;
        for l in &self.layers {
            writeln!(
                f,
                "{:<8} {:<34} {:>9} {:>9} {:>6.1}% {:>9} {:>6.1}%",
                l.function,
                l.layer,
                l.ideal,
                l.runs[0].0,
                100.0 * l.runs[0].1,
                l.runs[1].0,
                100.0 * l.runs[1].1
            )?;
        }
        writeln!(
            f,
            "outputs {} the host-only run",
            if self.identical {
                "equal"
            } else {
                "DIFFER FROM"
            }
        )
    }
}

/// Runs the example.
pub fn run() -> Result<Report> {
    let mut module = parse_module(MODEL).map_err(|e| anyhow!("quantized_block.relay: {e}"))?;
    infer_types(&mut module).map_err(|e| anyhow!("quantized_block.relay: {e}"))?;
    let plugin = Vta::new();
    let target = Target::from_description(&plugin.describe()).context("the vta target")?;
    let partitioned = partition(&module, &[target], &PartitionOptions::default())
        .context("partitioning failed")?
        .module;
    let mut rng = rand::rngs::StdRng::seed_from_u64(SEED);
    let inputs: Vec<Tensor> = module
        .main()?
        .param_types()
        .into_iter()
        .map(|t| match t {
            Type::Tensor(t) => Ok(Tensor::random_uniform(t, &mut rng)?),
            other => Err(anyhow!("parameter of type {other:?}")),
        })
        .collect::<Result<_>>()?;
    let want = Executor::new(&module, ExecOptions::default())?.run(&inputs)?;
    let config = VtaConfig::default();
    let mut identical = true;
    let mut per_threads = Vec::new();
    for threads in [1, 2] {
        let mut externals = ExternalModules::new();
        let mut compiled = Vec::new();
        for (name, f) in partitioned.functions() {
            if byoc_ir::partition::target_of(f) != Some("vta") {
                continue;
            }
            let m = Arc::new(
                VtaModule::compile(f, &config, threads).map_err(|e| anyhow!("@{name}: {e}"))?,
            );
            externals.insert(
                name,
                ExternalModule {
                    target: "vta".to_string(),
                    plugin: "vta".to_string(),
                    plugin_version: plugin.version().to_string(),
                    module: m.clone(),
                },
            );
            compiled.push((name.to_string(), m));
        }
        let got = Executor::with_externals(&partitioned, ExecOptions::default(), &externals)?
            .run(&inputs)?;
        identical &= got == want;
        per_threads.push(compiled);
    }
    let mut layers = Vec::new();
    for (k, (name, one)) in per_threads[0].iter().enumerate() {
        let two = &per_threads[1][k].1;
        for ((layer, p1), p2) in one
            .layers()
            .iter()
            .zip(one.last_profile())
            .zip(two.last_profile())
        {
            let g = layer.geometry;
            let shape = match layer.kind {
                LayerKind::Conv2d => format!(
                    "conv2d {}x{}x{} -> {} k{}x{}/{}",
                    g.c, g.h, g.w, g.o, g.kh, g.kw, g.sh
                ),
                LayerKind::Dense => format!("dense {}x{} -> {}", g.ow, g.c, g.o),
            };
            layers.push(LayerLine {
                function: name.clone(),
                layer: shape,
                ideal: (g.n * g.oh * g.ow * g.o * g.c * g.kh * g.kw) as u64 / 256,
                runs: [
                    (p1.cycles, p1.gemm_utilization()),
                    (p2.cycles, p2.gemm_utilization()),
                ],
            });
        }
    }
    Ok(Report {
        partitions: per_threads[1].iter().map(|(n, _)| n.clone()).collect(),
        layers,
        identical,
    })
}
