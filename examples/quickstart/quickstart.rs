//! The quick start on a real model: import ResNet-50 from ONNX, partition it for a CNN
//! accelerator described by a target spec (`examples/targets/cnnacc.json`, whose partitions
//! run on the reference runtime), build one artifact file, load it back and run it, and
//! compare with host-only execution of the imported model.
//!
//! The model is ONNX's "light" ResNet-50 with seeded random weights (`resnet50/random.onnx`
//! and its input `random_input.npz`), prepared by `scripts/fetch_onnx_light.sh`. [`locate`]
//! finds it from a command-line path, `BYOC_ONNX_LIGHT_DIR`, or `target/onnx-light`.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use byoc_artifact::Artifact;
use byoc_exec::plugin::PluginRegistry;
use byoc_exec::ExecOptions;
use byoc_ir::Tensor;
use byoc_pipeline::inputs::resolve_inputs;
use byoc_pipeline::model::{load_model, LoadOptions};
use byoc_pipeline::plugins::find_plugin;
use byoc_pipeline::report::summary::Summary;
use byoc_pipeline::target::Target;
use byoc_pipeline::verify::{verify_partitioned, OutputError};
use byoc_pipeline::Compiled;
use byoc_sdk::CompileOptions;

use crate::common::{all_within, build, errors_text, summary_text, Checked, FLOOR};

/// The accelerator's target spec.
pub const TARGET_SPEC: &str = include_str!("../targets/cnnacc.json");
/// The model file inside the light-models directory.
pub const MODEL_IN_DIR: &str = "resnet50/random.onnx";

/// Where the model is and where the artifact goes.
pub struct Options {
    /// The ONNX model.
    pub model: PathBuf,
    /// The artifact file to write.
    pub artifact: PathBuf,
}

/// The model named on the command line (a file, or a light-models directory), else the one
/// in `BYOC_ONNX_LIGHT_DIR`, else the one in `target/onnx-light`; an error that says how to
/// fetch it when none exists.
pub fn locate(arg: Option<PathBuf>) -> Result<PathBuf> {
    let candidates: Vec<PathBuf> = match arg {
        Some(p) if p.is_dir() => vec![p.join(MODEL_IN_DIR)],
        Some(p) => vec![p],
        None => std::env::var_os("BYOC_ONNX_LIGHT_DIR")
            .map(PathBuf::from)
            .into_iter()
            .chain([Path::new(env!("CARGO_MANIFEST_DIR")).join("target/onnx-light")])
            .map(|d| d.join(MODEL_IN_DIR))
            .collect(),
    };
    if let Some(found) = candidates.iter().find(|p| p.is_file()) {
        return Ok(found.clone());
    }
    let looked: Vec<String> = candidates.iter().map(|p| p.display().to_string()).collect();
    bail!(
        "ResNet-50 not found (looked for {}).\n\
         Fetch ONNX's light models first (needs Python 3 with pip):\n    \
         ./scripts/fetch_onnx_light.sh target/onnx-light\n\
         or pass a model: cargo run --release --example quickstart -- PATH/model.onnx",
        looked.join(", ")
    )
}

/// A timed step.
pub struct Step {
    /// What was done.
    pub what: String,
    /// How long it took.
    pub time: Duration,
}

/// What the quick start did and found.
pub struct Report {
    /// The steps, in order.
    pub steps: Vec<Step>,
    /// What went where.
    pub summary: Summary,
    /// The five highest-scoring classes of the artifact's run and of the host-only run.
    pub top5: [Vec<usize>; 2],
    /// Each output of the artifact's run against the host-only run.
    pub errors: Vec<OutputError>,
}

impl Checked for Report {
    /// True when the artifact's run matches the host-only run.
    fn ok(&self) -> bool {
        all_within(&self.errors)
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for s in &self.steps {
            writeln!(f, "{:<64} {:>8.2} s", s.what, s.time.as_secs_f64())?;
        }
        writeln!(f, "== partitions for cnnacc (examples/targets/cnnacc.json)")?;
        write!(f, "{}", summary_text(&self.summary))?;
        writeln!(f, "== top-5 classes")?;
        writeln!(f, "  artifact:  {:?}", self.top5[0])?;
        writeln!(f, "  host-only: {:?}", self.top5[1])?;
        writeln!(f, "== artifact against host-only execution")?;
        write!(f, "{}", errors_text(&self.errors))
    }
}

/// The indices of the five largest values.
fn top5(t: &Tensor) -> Vec<usize> {
    let v = t.to_f64_vec();
    let mut order: Vec<usize> = (0..v.len()).collect();
    order.sort_by(|&a, &b| v[b].total_cmp(&v[a]));
    order.truncate(5);
    order
}

/// Runs `step`, recording its time under `what`.
fn timed<T>(steps: &mut Vec<Step>, what: String, step: impl FnOnce() -> Result<T>) -> Result<T> {
    let start = Instant::now();
    let out = step()?;
    steps.push(Step {
        what,
        time: start.elapsed(),
    });
    Ok(out)
}

/// Imports, partitions, builds, reloads, runs and checks the model.
pub fn run(options: &Options) -> Result<Report> {
    let mut steps = Vec::new();
    let model = &options.model;
    let module = timed(&mut steps, format!("import {}", model.display()), || {
        Ok(load_model(model, &LoadOptions::default())?)
    })?;
    let target =
        Target::from_spec_json(TARGET_SPEC).context("examples/targets/cnnacc.json: bad spec")?;
    let compiled = timed(&mut steps, "partition and compile".to_string(), || {
        build(&module, &[target])
    })?;
    let artifact = &options.artifact;
    timed(&mut steps, format!("build {}", artifact.display()), || {
        if let Some(dir) = artifact.parent() {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create '{}'", dir.display()))?;
        }
        compiled.to_artifact()?.write(artifact)?;
        Ok(())
    })?;
    let loaded = timed(&mut steps, "load the artifact".to_string(), || {
        let a = Artifact::read(artifact)?;
        let registry = PluginRegistry::new();
        let externals = a.load_externals(
            |plugin| find_plugin(&registry, plugin),
            &CompileOptions::new(),
        )?;
        Ok(Compiled::from_artifact(
            a.module,
            externals,
            ExecOptions::default(),
        ))
    })?;
    let input_file = model.with_file_name("random_input.npz");
    let inputs = resolve_inputs(
        &module,
        input_file.is_file().then_some(input_file.as_path()),
        Some(0),
    )?;
    let checked = timed(
        &mut steps,
        "run the artifact and host-only".to_string(),
        || {
            Ok(verify_partitioned(
                &module,
                loaded.module(),
                loaded.externals(),
                &inputs,
                ExecOptions::default(),
                FLOOR,
            )?)
        },
    )?;
    let first =
        |outputs: &BTreeMap<String, Tensor>| outputs.values().next().map(top5).unwrap_or_default();
    Ok(Report {
        steps,
        summary: compiled.summary(),
        top5: [first(&checked.partitioned), first(&checked.host)],
        errors: checked.errors,
    })
}
