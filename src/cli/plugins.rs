//! `byoc plugins`: list the plugins byoc can load, with version, ABI version, ops and
//! patterns, and the files it refused with the reason.

use std::path::PathBuf;

use anyhow::Result;
use byoc_exec::plugin::REFERENCE_RUNTIME;
use byoc_sdk::Plugin;
use clap::Args;

use crate::plugins::discover_plugins;

/// Arguments of `byoc plugins`.
#[derive(Debug, Args)]
pub struct PluginsArgs {
    /// A directory to search for plugins, or a plugin file (repeatable).
    #[arg(long = "plugin-path", value_name = "DIR")]
    pub plugin_paths: Vec<PathBuf>,
}

/// Runs `byoc plugins`.
pub fn plugins(args: &PluginsArgs) -> Result<()> {
    let registry = discover_plugins(&args.plugin_paths)?;
    for p in registry.plugins() {
        let (major, minor) = p.abi_version();
        let d = p.describe();
        println!(
            "{} {} (ABI {major}.{minor}, SDK {}) {}",
            p.name(),
            p.version(),
            p.sdk_version(),
            p.path().display()
        );
        println!("  target: {}", d.target);
        println!("  ops: {}", d.op_names().join(", "));
        for pat in &d.patterns {
            println!("  pattern: {} = {}", pat.name, pat.pattern);
        }
        for dt in &d.datatypes {
            let dot = dt.dot_product_option.as_ref().map_or(String::new(), |o| {
                format!(", exact dot products with {}.{o}=true", p.name())
            });
            println!(
                "  datatype: custom[{}]{} (code {}, {} library functions{dot})",
                dt.name,
                dt.widths_text(),
                dt.code,
                dt.lowerings.len()
            );
        }
    }
    println!(
        "{REFERENCE_RUNTIME} (built-in) reference/test runtime: runs partitions of declarative targets with the host kernels"
    );
    for (name, first, second) in registry.conflicts() {
        println!(
            "conflict: '{name}' is claimed by '{}' and '{}'",
            first.display(),
            second.display()
        );
    }
    for e in registry.refused() {
        println!("refused: {e}");
    }
    Ok(())
}
