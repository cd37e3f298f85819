//! `--host-codegen` and `--strict-host-codegen`: how `run`, `build`, `bench` and `verify`
//! execute what stays on the host. `llvm` (the default) fuses the host's ops into groups
//! (HostFuse) and compiles each group to native code with LLVM (crate `byoc-host-llvm`);
//! `kernels` runs the reference kernels, one op at a time, and stays the numerical reference
//! (`byoc verify` checks the compiled side against it). A group the code generator cannot
//! compile runs on the reference kernels with a note (`--profile` prints it), or fails the
//! command with `--strict-host-codegen`.

use anyhow::{bail, Context, Result};
use byoc_core::exec::ExternalModules;
use byoc_core::sdk::CompileOptions;
use byoc_core::Module;
use byoc_host_llvm::{compile_host, Fallback};
use clap::{Args, ValueEnum};

/// The host code generators.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum HostCodegen {
    /// The reference kernels, one op at a time (the numerical reference).
    Kernels,
    /// Fused loops compiled with LLVM for the host CPU (the default).
    #[default]
    Llvm,
}

/// The host code generation arguments.
#[derive(Clone, Copy, Debug, Default, Args)]
pub struct HostCodegenArgs {
    /// How the host runs what stays on it: `llvm` (fused loops compiled for the host CPU, the
    /// default) or `kernels` (the reference kernels, one op at a time: the numerical reference).
    #[arg(long = "host-codegen", value_enum, value_name = "CODEGEN")]
    pub host_codegen: Option<HostCodegen>,
    /// With `--host-codegen llvm` (the default): fail when a fused host function cannot be
    /// compiled instead of running it on the reference kernels.
    #[arg(long = "strict-host-codegen")]
    pub strict_host_codegen: bool,
}

/// A module ready to run: its compiled partitions (host code included) and the fused host
/// functions that fell back to the reference kernels.
pub struct Compiled {
    /// The module.
    pub module: Module,
    /// Its compiled functions.
    pub externals: ExternalModules,
    /// Host fallbacks (empty with `kernels`).
    pub fallbacks: Vec<Fallback>,
}

impl HostCodegenArgs {
    /// The selected code generator.
    pub fn codegen(&self) -> HostCodegen {
        self.host_codegen.unwrap_or_default()
    }

    /// Refuses the flags where they do not apply (an artifact runs the host code it was
    /// built with).
    pub fn refuse_for(&self, what: &str) -> Result<()> {
        if self.host_codegen.is_some() || self.strict_host_codegen {
            bail!("{what}: --host-codegen / --strict-host-codegen apply to models, not to built artifacts (the artifact runs the host code it was built with)");
        }
        Ok(())
    }

    /// Compiles the host part of `module` (partitioned, with `externals`) with the selected
    /// code generator; `options` carries the executor's thread count.
    pub fn compile(
        &self,
        module: Module,
        mut externals: ExternalModules,
        options: &CompileOptions,
        model: &str,
    ) -> Result<Compiled> {
        if self.strict_host_codegen && self.codegen() != HostCodegen::Llvm {
            bail!("--strict-host-codegen needs --host-codegen llvm");
        }
        if self.codegen() == HostCodegen::Kernels {
            return Ok(Compiled {
                module,
                externals,
                fallbacks: Vec::new(),
            });
        }
        let host =
            crate::progress::while_running(&format!("compiling host code of {model}"), || {
                compile_host(&module, options, self.strict_host_codegen)
            })
            .with_context(|| format!("{model}: host code generation failed"))?;
        for (name, m) in host.externals.iter() {
            externals.insert(name, m.clone());
        }
        Ok(Compiled {
            module: host.module,
            externals,
            fallbacks: host.fallbacks,
        })
    }
}

/// Prints the fallbacks to standard error (for `--profile`).
pub fn print_fallbacks(fallbacks: &[Fallback]) {
    for f in fallbacks {
        eprintln!("host-codegen: {f}");
    }
}
