//! The `byoc` command line: argument definitions and one module per command.
//!
//! Exit codes: 0 ok, 1 a check failed ([`CheckFailed`]), 2 bad usage or bad input.

mod bench;
mod build;
mod flags;
mod host_codegen;
pub mod inspect;
mod plugins;
mod quantize;
mod report;
mod run;
mod targets;
mod trust;
mod verify;

use std::fmt;

use anyhow::Result;
use clap::{Parser, Subcommand};

pub use bench::{BenchArgs, BenchReport};
pub use build::BuildArgs;
pub use host_codegen::{HostCodegenArg, HostCodegenArgs};
pub use inspect::InspectArgs;
pub use plugins::PluginsArgs;
pub use quantize::{quantize_module, QuantizeArgs, QuantizeOptions};
pub use run::RunArgs;
pub use targets::TargetArgs;
pub use trust::{KeygenArgs, TrustArgs};
pub use verify::VerifyArgs;

/// byoc: partition deep-learning models across accelerator backends, inspect and run them.
#[derive(Debug, Parser)]
#[command(name = "byoc", version, about)]
pub struct Cli {
    /// The command.
    #[command(subcommand)]
    pub command: Command,
    /// The most bytes one tensor may take (e.g. 512M, 8G); larger shapes are refused with their
    /// size. Default: the machine's available memory.
    #[arg(long, global = true, value_name = "BYTES", value_parser = byoc_ir::memory::parse_bytes)]
    pub max_memory: Option<u64>,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print the module after a stage of the pipeline.
    Inspect(InspectArgs),
    /// Run a model or an artifact on inputs from an .npz file (or random inputs) and write the outputs.
    Run(RunArgs),
    /// Partition a model for targets, compile the partitions and write one artifact file.
    Build(BuildArgs),
    /// List the plugins byoc can load.
    Plugins(PluginsArgs),
    /// Time repeated runs of a model and print median/min/max latency and per-target shares as JSON.
    Bench(BenchArgs),
    /// Run a model host-only and partitioned on the same inputs; report each output's largest error.
    Verify(VerifyArgs),
    /// Quantize a float model to TVM's realized int8 form and write it as Relay text.
    Quantize(QuantizeArgs),
    /// Make the signing key `byoc build` signs artifacts with (made on first build otherwise).
    Keygen(KeygenArgs),
}

/// A check (numerical comparison, strict mode) that failed: exit code 1.
#[derive(Debug)]
pub struct CheckFailed(pub String);

impl fmt::Display for CheckFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CheckFailed {}

/// Runs a parsed command line, writing results to standard output.
///
/// `--max-memory` is the memory budget of everything the command does: the command runs
/// inside [`byoc_ir::memory::with_budget`], so the library calls it makes, given no budget of
/// their own, check against it.
pub fn execute(cli: Cli) -> Result<()> {
    byoc_ir::memory::with_budget(cli.max_memory, || run_command(cli.command))
}

fn run_command(command: Command) -> Result<()> {
    match command {
        Command::Inspect(args) => inspect::inspect(&args),
        Command::Run(args) => run::run(&args),
        Command::Build(args) => build::build(&args),
        Command::Plugins(args) => plugins::plugins(&args),
        Command::Bench(args) => bench::bench(&args),
        Command::Verify(args) => verify::verify(&args),
        Command::Quantize(args) => quantize::quantize(&args),
        Command::Keygen(args) => trust::keygen(&args),
    }
}
