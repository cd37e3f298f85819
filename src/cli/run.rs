//! `byoc run`: execute a model (on the host, or partitioned for targets) or an artifact.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use byoc_core::artifact::Artifact;
use byoc_core::exec::{ExecOptions, Executor, ExternalModules};
use byoc_core::plugin::{PluginRegistry, REFERENCE_RUNTIME};
use byoc_core::Module;
use byoc_host_llvm::PLUGIN_NAME as HOST_PLUGIN;
use clap::Args;

use super::host_codegen::{print_fallbacks, Compiled, HostCodegenArgs};
use super::targets::{load_model_for, partition_and_compile, TargetArgs};
use super::trust::TrustArgs;
use crate::datatype::{apply_datatype_options, load_datatype_plugins, names_custom_dtype};
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
) -> Result<(Module, ExternalModules)> {
    let name = path.display();
    // Custom datatypes in the module parse once their plugins are loaded.
    if names_custom_dtype(path) {
        load_datatype_plugins(&args.plugin_paths)?;
    }
    let (artifact, _) = Artifact::read_trusted(path, &trust.policy()?)
        .with_context(|| format!("{name}: cannot load"))?;
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
            &args.compile_options_for(&plugins)?,
        )
        .with_context(|| format!("{name}: cannot load"))?;
    apply_datatype_options(&artifact.module, &args.compile_options()?)
        .with_context(|| name.to_string())?;
    Ok((artifact.module, externals))
}

/// The module to run and its compiled partitions: an artifact as built, or a model run on
/// the host or partitioned for the selected targets, its host part compiled as `host` says.
pub fn load_runnable(
    model: &Path,
    targets: &TargetArgs,
    trust: &TrustArgs,
    input_shapes: &[String],
    host: &HostCodegenArgs,
) -> Result<Compiled> {
    if is_artifact(model) {
        if targets.quantize || targets.dtype.is_some() {
            bail!(
                "{}: --quantize and --dtype apply to models, not to built artifacts",
                model.display()
            );
        }
        host.refuse_for(&model.display().to_string())?;
        let (module, externals) = load_artifact(model, targets, trust)?;
        return Ok(Compiled {
            module,
            externals,
            fallbacks: Vec::new(),
        });
    }
    let name = model.display().to_string();
    let module = load_model_for(model, input_shapes, targets)?;
    let (module, externals) = if targets.is_empty() {
        (module, ExternalModules::new())
    } else {
        partition_and_compile(&module, targets, &name)?
    };
    host.compile(module, externals, &targets.compile_options()?, &name)
}

/// Runs `byoc run`.
pub fn run(args: &RunArgs) -> Result<()> {
    let name = args.model.display().to_string();
    let targets = args.targets.with_executor_threads(args.threads);
    let Compiled {
        module,
        externals,
        fallbacks,
    } = load_runnable(
        &args.model,
        &targets,
        &args.trust,
        &args.input_shapes,
        &args.host,
    )?;
    let executor = Executor::with_externals(
        &module,
        ExecOptions {
            threads: args.threads,
            profile: args.profile,
        },
        &externals,
    )
    .with_context(|| format!("{name}: cannot build the host plan"))?;
    let inputs = resolve_inputs(&module, args.inputs.as_deref(), args.random_inputs)?;
    let outputs = executor
        .run_named(&inputs)
        .with_context(|| format!("{name}: execution failed"))?;
    if let Some(profile) = executor.last_profile() {
        print_fallbacks(&fallbacks);
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
        for a in externals
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
    let named = output_map(&module, outputs);
    for (name, t) in &named {
        let values = t.to_f64_vec();
        let preview: Vec<String> = values.iter().take(6).map(|v| format!("{v:.6}")).collect();
        println!(
            "{name}: {} [{}{}]",
            t.ty(),
            preview.join(", "),
            if values.len() > 6 { ", ..." } else { "" }
        );
    }
    if let Some(path) = &args.output {
        byoc_core::io::write_npz(path, &named)
            .with_context(|| format!("cannot write outputs to '{}'", path.display()))?;
    }
    Ok(())
}
