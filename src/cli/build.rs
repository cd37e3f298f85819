//! `byoc build`: partition a model for targets, compile the partitions with their plugins,
//! and write one artifact file, signed with the user's key (made on first use).

use std::path::PathBuf;

use anyhow::{Context, Result};
use byoc_artifact::keys::{config_dir, load_or_create_signing_key, SECRET_KEY_FILE};
use byoc_exec::ExecOptions;
use clap::Args;

use super::host_codegen::{print_fallbacks, HostCodegenArgs};
use super::targets::{compile, load_model_for, TargetArgs};

/// Arguments of `byoc build`.
#[derive(Debug, Args)]
pub struct BuildArgs {
    /// The model (.relay or .onnx).
    pub model: PathBuf,
    /// Targets and plugins.
    #[command(flatten)]
    pub targets: TargetArgs,
    /// Host code generation (`llvm` stores the compiled host code in the artifact).
    #[command(flatten)]
    pub host: HostCodegenArgs,
    /// Fix an ONNX input's shape (symbolic dimensions): NAME=D0,D1,... (repeatable).
    #[arg(long = "input-shape", value_name = "NAME=DIMS")]
    pub input_shapes: Vec<String>,
    /// The artifact file to write.
    #[arg(short, long)]
    pub output: PathBuf,
}

/// Runs `byoc build`.
pub fn build(args: &BuildArgs) -> Result<()> {
    let name = args.model.display().to_string();
    let module = load_model_for(&args.model, &args.input_shapes, &args.targets)?;
    let compiled = compile(
        &module,
        &args.targets,
        &args.host,
        ExecOptions::default(),
        &name,
    )?;
    print_fallbacks(compiled.fallbacks());
    let artifact = compiled
        .to_artifact()
        .with_context(|| format!("{name}: cannot build the artifact"))?;
    let dir = config_dir()?;
    let (key, created) = load_or_create_signing_key(&dir).context("cannot sign the artifact")?;
    if created {
        eprintln!(
            "created the signing key {} (public key {})",
            dir.join(SECRET_KEY_FILE).display(),
            key.public_key()
        );
    }
    let bytes = artifact
        .to_signed_bytes(&key)
        .with_context(|| format!("{name}: cannot build the artifact"))?;
    std::fs::write(&args.output, &bytes)
        .with_context(|| format!("cannot write '{}'", args.output.display()))?;
    println!(
        "wrote {} ({} bytes): {} partition(s)",
        args.output.display(),
        bytes.len(),
        artifact.partitions.len()
    );
    println!("  signed by key {}", key.public_key());
    for t in artifact.targets() {
        println!(
            "  target {}: plugin {} {}",
            t.target, t.plugin, t.plugin_version
        );
    }
    Ok(())
}
