//! `byoc run`: execute a model (on the host, or partitioned for targets) or an artifact.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use byoc_artifact::Artifact;
use byoc_exec::plugin::{PluginRegistry, REFERENCE_RUNTIME};
use byoc_exec::{ExecOptions, ExternalModules};
use byoc_host_llvm::PLUGIN_NAME as HOST_PLUGIN;
use byoc_ir::{Module, Tensor, TensorType};
use byoc_pipeline::Compiled;
use clap::Args;

use super::flags;
use super::host_codegen::{print_fallbacks, HostCodegenArgs};
use super::targets::{compile, load_model_for, TargetArgs};
use super::trust::TrustArgs;
use crate::datatype::{apply_datatype_options, load_datatype_plugins, mentions_custom_dtype};
use crate::inputs::{output_map, resolve_inputs};
use crate::plugins::{discover_plugins, find_plugin};

/// Arguments of `byoc run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The model (.relay or .onnx) or an artifact (.byoc) from `byoc build`.
    pub model: PathBuf,
    /// Targets and plugins (for a model; an artifact names its own plugins).
    #[command(flatten)]
    pub targets: TargetArgs,
    /// Which artifacts may be loaded.
    #[command(flatten)]
    pub trust: TrustArgs,
    /// Fix an ONNX input's shape (symbolic dimensions): NAME=D0,D1,... (repeatable).
    #[arg(long = "input-shape", value_name = "NAME=DIMS")]
    pub input_shapes: Vec<String>,
    /// Inputs as an .npz keyed by the model's input names.
    #[arg(long)]
    pub inputs: Option<PathBuf>,
    /// Fill inputs not given in --inputs with seeded random values.
    #[arg(long, value_name = "SEED")]
    pub random_inputs: Option<u64>,
    /// Write the outputs to this .npz, keyed by the model's output names (output_0, ... when it has none).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Worker threads (0: all cores).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// Print the time per target and per partition to standard error (and the fused host
    /// functions that fell back to the reference kernels).
    #[arg(long)]
    pub profile: bool,
    /// Host code generation.
    #[command(flatten)]
    pub host: HostCodegenArgs,
}

/// True when `path` names an artifact (by extension).
fn is_artifact(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "byoc")
}

/// Loads an artifact and its partitions, resolving plugins by name, after checking its
/// signature (before any plugin or native section is loaded).
fn load_artifact(
    path: &Path,
    args: &TargetArgs,
    trust: &TrustArgs,
    threads: usize,
) -> Result<(Module, ExternalModules)> {
    let name = path.display();
    let (body, _) = Artifact::read_checked(path, &trust.policy()?)
        .with_context(|| format!("{name}: cannot load"))?;
    // Custom datatypes in the module parse once their plugins are loaded: only now that the
    // signature holds (loading a plugin runs its code).
    if mentions_custom_dtype(&body) {
        load_datatype_plugins(&args.plugin_paths)?;
    }
    let artifact = Artifact::from_bytes(&body).with_context(|| format!("{name}: cannot load"))?;
    let needs_registry = artifact
        .partitions
        .iter()
        .any(|p| p.target.plugin != REFERENCE_RUNTIME && p.target.plugin != HOST_PLUGIN);
    let registry = if needs_registry {
        discover_plugins(&args.plugin_paths)?
    } else {
        PluginRegistry::new()
    };
    let plugins: Vec<String> = artifact.targets().into_iter().map(|t| t.plugin).collect();
    let plugins: Vec<&str> = plugins.iter().map(String::as_str).collect();
    let externals = artifact
        .load_externals(
            |plugin| match plugin {
                HOST_PLUGIN => Ok(byoc_host_llvm::plugin()),
                _ => find_plugin(&registry, plugin),
            },
            &args.compile_options_for(&plugins)?.or_threads(threads),
        )
        .with_context(|| format!("{name}: cannot load"))?;
    apply_datatype_options(&artifact.module, &args.compile_options()?)
        .map_err(flags::datatype)
        .with_context(|| name.to_string())?;
    Ok((artifact.module, externals))
}

/// The model to run on `exec`, compiled: an artifact as built, or a model run on the host or
/// partitioned for the selected targets, its host part compiled as `host` says.
pub fn load_runnable(
    model: &Path,
    targets: &TargetArgs,
    trust: &TrustArgs,
    input_shapes: &[String],
    host: &HostCodegenArgs,
    exec: ExecOptions,
) -> Result<Compiled> {
    if is_artifact(model) {
        if targets.quantize || targets.dtype.is_some() {
            bail!(
                "{}: --quantize and --dtype apply to models, not to built artifacts",
                model.display()
            );
        }
        host.refuse_for(&model.display().to_string())?;
        let (module, externals) = load_artifact(model, targets, trust, exec.threads)?;
        return Ok(Compiled::from_artifact(module, externals, exec));
    }
    let name = model.display().to_string();
    let module = load_model_for(model, input_shapes, targets)?;
    compile(&module, targets, host, exec, &name)
}

/// The first values of `t`, converted without copying the rest.
fn preview(t: &Tensor) -> String {
    const SHOWN: usize = 6;
    let n = t.ty().num_elements();
    let width = t.dtype().size_bytes();
    let head = TensorType::new(vec![n.min(SHOWN)], t.dtype());
    let values = Tensor::from_bytes(head, &t.as_bytes()[..n.min(SHOWN) * width])
        .map(|h| h.to_f64_vec())
        .unwrap_or_default();
    let mut shown: Vec<String> = values.iter().map(|v| format!("{v:.6}")).collect();
    if n > SHOWN {
        shown.push("...".to_string());
    }
    shown.join(", ")
}

/// Runs `byoc run`.
pub fn run(args: &RunArgs) -> Result<()> {
    let name = args.model.display().to_string();
    let compiled = load_runnable(
        &args.model,
        &args.targets,
        &args.trust,
        &args.input_shapes,
        &args.host,
        ExecOptions {
            threads: args.threads,
            profile: args.profile,
            memory_budget: None,
        },
    )?;
    compiled
        .executor()
        .with_context(|| format!("{name}: cannot build the host plan"))?;
    let module = compiled.module();
    let inputs = resolve_inputs(module, args.inputs.as_deref(), args.random_inputs)
        .map_err(flags::inputs(&name))?;
    let outputs = compiled
        .run(&inputs)
        .with_context(|| format!("{name}: execution failed"))?;
    if let Some(profile) = compiled.profile() {
        print_fallbacks(compiled.fallbacks());
        for t in &profile.targets {
            eprintln!("target {}: {} call(s), {:?}", t.target, t.calls, t.total);
        }
        let in_place: Vec<_> = profile.calls.iter().filter_map(|c| c.in_place).collect();
        if !in_place.is_empty() {
            eprintln!(
                "concatenate in place: {} call(s), {} of {} part(s) written by their producers",
                in_place.len(),
                in_place.iter().map(|p| p.written).sum::<usize>(),
                in_place.iter().map(|p| p.parts).sum::<usize>()
            );
        }
        for op in profile.ops.iter().filter(|o| o.op.starts_with('@')) {
            eprintln!("partition {}: {} call(s), {:?}", op.op, op.calls, op.total);
        }
        for a in compiled
            .externals()
            .counters()
            .with_context(|| format!("{name}: accelerator counters"))?
        {
            let values: Vec<String> = a.counters.iter().map(|(k, v)| format!("{k} {v}")).collect();
            eprintln!(
                "accelerator @{} ({}): {}",
                a.function,
                a.target,
                values.join(", ")
            );
        }
    }
    let named = output_map(module, outputs);
    for (name, t) in &named {
        println!("{name}: {} [{}]", t.ty(), preview(t));
    }
    if let Some(path) = &args.output {
        byoc_artifact::io::write_npz(path, &named).context("cannot write outputs")?;
    }
    Ok(())
}
