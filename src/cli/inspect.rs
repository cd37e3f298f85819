//! `byoc inspect`: print a model after a stage of the partitioning pipeline.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use byoc_exec::plugin::{emit_sources, PartitionSource};
use byoc_ir::text::{print_module, print_module_with, PrintOptions};
use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::Args;

use super::targets::{load_model_for, TargetArgs};
use crate::pipeline::{
    partition, pass_names, PartitionOptions, Partitioned, Stage as PipelineStage,
};
use crate::report::{render, Format};
use crate::target::{plugin_names, runtimes, Target};

/// Arguments of `byoc inspect`.
#[derive(Debug, Args)]
pub struct InspectArgs {
    /// The model (.relay or .onnx).
    pub model: PathBuf,
    /// Targets and plugins.
    #[command(flatten)]
    pub targets: TargetArgs,
    /// Fix an ONNX input's shape (symbolic dimensions): NAME=D0,D1,... (repeatable).
    #[arg(long = "input-shape", value_name = "NAME=DIMS")]
    pub input_shapes: Vec<String>,
    /// The stage after which to print the module.
    #[arg(long, value_parser = stage_parser(), default_value = "partition")]
    pub stage: InspectStage,
    /// Skip MergeCompilerRegions: every annotated call becomes its own partition.
    #[arg(long)]
    pub no_merge: bool,
    /// Print the module to standard error before this pass of the pipeline (repeatable).
    #[arg(long = "print-before", value_name = "PASS", value_parser = pass_name_parser())]
    pub print_before: Vec<String>,
    /// Print the module to standard error after this pass of the pipeline (repeatable).
    #[arg(long = "print-after", value_name = "PASS", value_parser = pass_name_parser())]
    pub print_after: Vec<String>,
    /// Output format: the module as text, or (after `partition`) the summary as JSON, the
    /// graph as Graphviz DOT, or a self-contained HTML report.
    #[arg(long, value_parser = super::report::format_parser(), default_value_t = Format::Text)]
    pub format: Format,
    /// Write to this file instead of standard output.
    #[arg(short, long)]
    pub output: Option<PathBuf>,
    /// Also write the source each partition's plugin generates (C for csource) into DIR,
    /// one file per partition named after its global symbol (`DIR/csource_0.c`).
    #[arg(long = "emit-source", value_name = "DIR")]
    pub emit_source: Option<PathBuf>,
}

/// Accepts the names of the pipeline's passes (declared in `byoc_ir::stages::PASSES`).
fn pass_name_parser() -> PossibleValuesParser {
    PossibleValuesParser::new(pass_names())
}

/// What `inspect --stage` stops after: `parse` (the typed module, each binding with its
/// type), or a stage of the pipeline (`byoc_ir::stages::Stage`, by its name).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InspectStage(Option<PipelineStage>);

impl InspectStage {
    const PARSE: InspectStage = InspectStage(None);
    const PARTITION: InspectStage = InspectStage(Some(PipelineStage::Partition));

    fn pipeline_stage(self) -> Option<PipelineStage> {
        self.0
    }
}

/// Accepts `parse` and the names of the pipeline's stages.
fn stage_parser() -> impl TypedValueParser<Value = InspectStage> {
    let names = std::iter::once(
        PossibleValue::new("parse").help("parsed and type-checked: each binding with its type"),
    )
    .chain(
        PipelineStage::ALL
            .into_iter()
            .map(|s| PossibleValue::new(s.name()).help(s.summary())),
    );
    PossibleValuesParser::new(names).map(|name| InspectStage(PipelineStage::from_name(&name)))
}

/// Runs `byoc inspect`.
pub fn inspect(args: &InspectArgs) -> Result<()> {
    let targets = &args.targets.select()?;
    if args.emit_source.is_some() && args.stage != InspectStage::PARTITION {
        bail!("--emit-source needs --stage partition (the default)");
    }
    if args.stage == InspectStage::PARSE
        && !(args.print_before.is_empty() && args.print_after.is_empty())
    {
        bail!("--print-before / --print-after need a pipeline stage, not --stage parse");
    }
    let module = load_model_for(&args.model, &args.input_shapes, &args.targets)?;
    let text = match args.stage.pipeline_stage() {
        None if args.format == Format::Text => {
            print_module_with(&module, &PrintOptions { show_types: true })
        }
        None => bail!(
            "--format {} needs a pipeline stage, not --stage parse",
            args.format.name()
        ),
        Some(stop_after) => {
            let options = PartitionOptions {
                stop_after,
                merge: !args.no_merge,
                print_before: args.print_before.iter().cloned().collect(),
                print_after: args.print_after.iter().cloned().collect(),
                ..PartitionOptions::default()
            };
            let result = partition(&module, targets, &options)
                .with_context(|| format!("{}: partitioning failed", args.model.display()))?;
            print_snapshots(&result, &options);
            if let Some(dir) = &args.emit_source {
                let options = args.targets.compile_options_for(&plugin_names(targets))?;
                let sources = emit_sources(&result.module, &runtimes(targets), &options)
                    .with_context(|| format!("{}: codegen failed", args.model.display()))?;
                write_sources(dir, &sources)?;
            }
            let names: Vec<&str> = targets.iter().map(Target::name).collect();
            render(args.format, stop_after, &result, &names).map_err(super::flags::report)?
        }
    };
    match &args.output {
        Some(path) => {
            std::fs::write(path, text).with_context(|| format!("cannot write '{}'", path.display()))
        }
        None => {
            print!("{text}");
            Ok(())
        }
    }
}

/// Prints the modules asked for with `--print-before` / `--print-after` to standard error,
/// each under a `// before|after <pass>` line, and names the asked-for passes that did not run.
fn print_snapshots(result: &Partitioned, options: &PartitionOptions) {
    for s in &result.snapshots {
        eprint!("// {} {}\n{}", s.when, s.pass, print_module(&s.module));
    }
    let asked: BTreeSet<&String> = options.print_before.union(&options.print_after).collect();
    for name in asked {
        if !result.snapshots.iter().any(|s| &s.pass == name) {
            eprintln!(
                "// {name} did not run (a later stage, an option that turns it off, or no selected target asks for it)"
            );
        }
    }
}

/// Writes each partition's source to `dir/<symbol>.<extension>`; partitions whose plugin has
/// no source are named on standard error.
fn write_sources(dir: &Path, sources: &[PartitionSource]) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| {
        format!(
            "--emit-source: cannot create the directory '{}'",
            dir.display()
        )
    })?;
    for p in sources {
        let Some(source) = &p.source else {
            eprintln!(
                "no source for @{}: plugin '{}' (target {}) does not emit source",
                p.function, p.plugin, p.target
            );
            continue;
        };
        if !source.extension.chars().all(|c| c.is_ascii_alphanumeric()) {
            bail!(
                "plugin '{}' gave the file extension '{}' for @{} (letters and digits only)",
                p.plugin,
                source.extension,
                p.function
            );
        }
        let path = dir.join(format!("{}.{}", p.function, source.extension));
        std::fs::write(&path, &source.code)
            .with_context(|| format!("--emit-source: cannot write '{}'", path.display()))?;
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}
