//! `--host-codegen` and `--strict-host-codegen`: how `run`, `build`, `bench` and `verify`
//! execute what stays on the host. `llvm` (the default) fuses the host's ops into groups
//! (HostFuse) and compiles each group to native code with LLVM (crate `byoc-host-llvm`);
//! `kernels` runs the reference kernels, one op at a time, and stays the numerical reference
//! (`byoc verify` checks the compiled side against it). A group the code generator cannot
//! compile runs on the reference kernels with a note (`--profile` prints it), or fails the
//! command with `--strict-host-codegen`.

use anyhow::{bail, Result};
use byoc_host_llvm::Fallback;
use byoc_pipeline::HostCodegen;
use clap::{Args, ValueEnum};

/// The host code generators, as `--host-codegen` names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum HostCodegenArg {
    /// The reference kernels, one op at a time (the numerical reference).
    Kernels,
    /// Fused loops compiled with LLVM for the host CPU (the default).
    Llvm,
}

impl From<HostCodegenArg> for HostCodegen {
    fn from(arg: HostCodegenArg) -> Self {
        match arg {
            HostCodegenArg::Kernels => HostCodegen::Kernels,
            HostCodegenArg::Llvm => HostCodegen::Llvm,
        }
    }
}

/// The host code generation arguments.
#[derive(Clone, Copy, Debug, Default, Args)]
pub struct HostCodegenArgs {
    /// How the host runs what stays on it: `llvm` (fused loops compiled for the host CPU, the
    /// default) or `kernels` (the reference kernels, one op at a time: the numerical reference).
    #[arg(long = "host-codegen", value_enum, value_name = "CODEGEN")]
    pub host_codegen: Option<HostCodegenArg>,
    /// With `--host-codegen llvm` (the default): fail when a fused host function cannot be
    /// compiled instead of running it on the reference kernels.
    #[arg(long = "strict-host-codegen")]
    pub strict_host_codegen: bool,
}

impl HostCodegenArgs {
    /// The selected code generator.
    pub fn codegen(&self) -> HostCodegen {
        self.host_codegen.map(HostCodegen::from).unwrap_or_default()
    }

    /// Refuses the flags where they do not apply (an artifact runs the host code it was
    /// built with).
    pub fn refuse_for(&self, what: &str) -> Result<()> {
        if self.host_codegen.is_some() || self.strict_host_codegen {
            bail!("{what}: --host-codegen / --strict-host-codegen apply to models, not to built artifacts (the artifact runs the host code it was built with)");
        }
        Ok(())
    }
}

/// Prints the fallbacks to standard error (for `--profile`).
pub fn print_fallbacks(fallbacks: &[Fallback]) {
    for f in fallbacks {
        eprintln!("host-codegen: {f}");
    }
}
