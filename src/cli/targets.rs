//! The target-selection arguments shared by the commands, and the steps they share: load a
//! model, and compile it for the selected targets ([`byoc_pipeline::build`]). Loading and
//! compiling show a spinner (see [`crate::progress`]).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use byoc_exec::ExecOptions;
use byoc_ir::Module;
use byoc_pipeline::target::{plugin_names, Target};
use byoc_pipeline::{build_observed, BuildError, BuildOptions, BuildStep, Compiled};
use byoc_sdk::{check_scopes, CompileOptions};
use clap::Args;

use super::flags::{self, parse_input_shapes};
use super::host_codegen::HostCodegenArgs;
use super::{quantize_module, CheckFailed, QuantizeOptions};
use crate::datatype::{
    apply_datatype_options, convert_to_datatype, load_datatype_plugins, names_custom_dtype,
    parse_custom_dtype,
};
use crate::model::{load_model, LoadOptions};
use crate::pipeline::PartitionOptions;
use crate::plugins::select_targets;
use crate::progress;

/// Which targets to use and where their plugins are.
#[derive(Clone, Debug, Default, Args)]
pub struct TargetArgs {
    /// A target: the name of a plugin, or a target-spec .json file (repeatable, in priority
    /// order, before the --target-spec targets).
    #[arg(long = "target", value_name = "NAME")]
    pub targets: Vec<String>,
    /// A declarative target (JSON target spec, docs/partitioning.md), run by the reference runtime;
    /// repeat for several targets, in priority order.
    #[arg(long = "target-spec", value_name = "FILE")]
    pub target_specs: Vec<PathBuf>,
    /// A directory to search for plugins, or a plugin file (repeatable; searched before
    /// BYOC_PLUGIN_PATH and the directory of the byoc executable).
    #[arg(long = "plugin-path", value_name = "DIR")]
    pub plugin_paths: Vec<PathBuf>,
    /// An option passed to the plugins' compile: KEY=VALUE (repeatable).
    #[arg(long = "plugin-option", value_name = "KEY=VALUE")]
    pub plugin_options: Vec<String>,
    /// No host fallback: refuse (exit code 1) when any op of the model would stay on the host,
    /// listing those ops with the reasons the targets gave.
    #[arg(long)]
    pub strict: bool,
    /// Quantize the model to int8 first (TVM's default qconfig: global scale 8.0, first conv
    /// and dense layers in float); see `byoc quantize` for the options.
    #[arg(long)]
    pub quantize: bool,
    /// Run the model in a custom datatype a plugin brings (custom[posites2]16): every float32
    /// value becomes the datatype; inputs and outputs stay float32.
    #[arg(long, value_name = "DTYPE")]
    pub dtype: Option<String>,
}

impl TargetArgs {
    /// True when no target was selected.
    pub fn is_empty(&self) -> bool {
        self.targets.is_empty() && self.target_specs.is_empty()
    }

    /// Resolves the targets (each with its runtime), in priority order.
    pub fn select(&self) -> Result<Vec<Target>> {
        Ok(select_targets(
            &self.targets,
            &self.target_specs,
            &self.plugin_paths,
        )?)
    }

    /// The `--plugin-option` values, each of which must belong to one of `plugins` (the
    /// plugins in use), to a plugin that brings a datatype, or be `threads` ([`check_scopes`]).
    pub fn compile_options_for(&self, plugins: &[&str]) -> Result<CompileOptions> {
        let options = self.compile_options()?;
        let datatype_plugins = byoc_kernels::datatypes::datatype_plugins();
        let mut claimed = plugins.to_vec();
        claimed.extend(datatype_plugins.iter().map(String::as_str));
        check_scopes(&options, &claimed).context("--plugin-option")?;
        Ok(options)
    }

    /// `module` converted to the `--dtype` datatype (unchanged without `--dtype`), with the
    /// datatype plugins' options (`posit.quire=true`) applied to the host's datatypes; such an
    /// option is refused when the module computes in none of its plugin's datatypes.
    pub fn in_datatype(&self, module: Module, model: &str) -> Result<Module> {
        let converted = match &self.dtype {
            Some(dtype) => {
                let dtype =
                    parse_custom_dtype(dtype, &self.plugin_paths).map_err(flags::datatype)?;
                convert_to_datatype(&module, dtype)
                    .map_err(flags::datatype)
                    .with_context(|| format!("{model}: cannot convert to {dtype}"))?
            }
            None => {
                // A datatype option for a float model is refused by the plugin that reads it.
                if !self.plugin_options.is_empty() {
                    load_datatype_plugins(&self.plugin_paths)?;
                }
                module
            }
        };
        apply_datatype_options(&converted, &self.compile_options()?)
            .map_err(flags::datatype)
            .with_context(|| model.to_string())?;
        Ok(converted)
    }

    /// The `--plugin-option` values.
    pub fn compile_options(&self) -> Result<CompileOptions> {
        let mut options = CompileOptions::new();
        for kv in &self.plugin_options {
            let Some((k, v)) = kv.split_once('=') else {
                bail!("--plugin-option '{kv}': expected KEY=VALUE");
            };
            options = options.with(k.trim(), v.trim());
        }
        Ok(options)
    }
}

/// Loads a model (`.relay` or `.onnx`, see [`load_model`]) with the `--input-shape` values,
/// under a spinner: importing a large ONNX model takes seconds. A text model that names a
/// custom datatype has the plugins of `plugin_paths` (and the standard search) loaded first,
/// so the datatypes they bring parse.
pub fn load(model: &Path, input_shapes: &[String], plugin_paths: &[PathBuf]) -> Result<Module> {
    let options = LoadOptions {
        input_shapes: parse_input_shapes(input_shapes)?,
        memory_budget: None,
    };
    if model.extension().is_some_and(|e| e == "relay") && names_custom_dtype(model) {
        load_datatype_plugins(plugin_paths)?;
    }
    progress::while_running(&format!("importing {}", model.display()), || {
        load_model(model, &options).map_err(flags::model)
    })
}

/// Loads a model as [`load`] does, then quantizes it with the default configuration when
/// `--quantize` is given, or converts it to the `--dtype` datatype.
pub fn load_model_for(model: &Path, input_shapes: &[String], args: &TargetArgs) -> Result<Module> {
    let module = load(model, input_shapes, &args.plugin_paths)?;
    let name = model.display().to_string();
    if args.quantize && args.dtype.is_some() {
        bail!("{name}: --quantize and --dtype exclude each other");
    }
    if args.quantize {
        return quantize_module(&QuantizeOptions::default(), &module, &name);
    }
    args.in_datatype(module, &name)
}

/// Compiles `module` for the selected targets ([`byoc_pipeline::build`]: partition, codegen of
/// each partition, host codegen as `host` says), to run on `exec`, showing progress. `--strict`
/// failing is a failed check (exit code 1).
pub fn compile(
    module: &Module,
    args: &TargetArgs,
    host: &HostCodegenArgs,
    exec: ExecOptions,
    model: &str,
) -> Result<Compiled> {
    let targets = args.select()?;
    let options = BuildOptions {
        partition: PartitionOptions::default(),
        compile: args.compile_options_for(&plugin_names(&targets))?,
        host_codegen: host.codegen(),
        strict_host_codegen: host.strict_host_codegen,
        no_host_fallback: args.strict,
        exec,
    };
    // A spinner while partitioning, a bar over the partitions, a spinner for the host code.
    let mut shown = progress::spinner(&format!("partitioning {model}"));
    let built = build_observed(module, &targets, &options, &mut |step| match step {
        BuildStep::Partitioned { partitions } => {
            shown.finish_and_clear();
            shown = progress::bar(partitions as u64, "compiling partitions");
        }
        BuildStep::Compiled { .. } => shown.inc(1),
        BuildStep::HostCodegen => {
            shown.finish_and_clear();
            shown = progress::spinner(&format!("compiling host code of {model}"));
        }
        _ => {}
    });
    shown.finish_and_clear();
    built.map_err(|e| match e {
        BuildError::HostFallback { .. } => CheckFailed(format!("{model}: --strict: {e}")).into(),
        BuildError::StrictNeedsLlvm => {
            anyhow::anyhow!("--strict-host-codegen needs --host-codegen llvm")
        }
        e => anyhow::Error::new(e).context(model.to_string()),
    })
}
