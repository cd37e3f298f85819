//! Targets from plugins, and the selection of targets and runtimes for a command.
//!
//! A loaded plugin's description becomes a pipeline [`Target`] through
//! [`Target::from_description`], the path target-spec files take too: its op rules and
//! predicates (which call into the plugin across the ABI) form the `TargetSupport`, its
//! patterns the `PatternTable` (checks call the plugin with the root call of each match).
//! [`select_targets`] resolves `--target NAME` (a plugin by name, or a target-spec file when
//! NAME is an existing `.json` file) and `--target-spec FILE`, in that order of priority; each
//! target carries its runtime: the plugin itself, or the built-in `reference` runtime (host
//! kernels) for declarative targets.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use byoc_exec::plugin::{PluginRegistry, PluginSearch, RegistryError, REFERENCE_RUNTIME};
use byoc_sdk::Plugin;
use thiserror::Error;

use crate::target::{Target, TargetSpecError, TargetSpecFileError};

/// Errors of selecting targets.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum SelectError {
    /// Plugin discovery or lookup failed.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// A target spec file is bad.
    #[error(transparent)]
    Spec(#[from] TargetSpecFileError),
    /// A plugin's description does not form a valid target.
    #[error("plugin '{plugin}': {source}")]
    Description {
        /// The plugin.
        plugin: String,
        /// What is wrong.
        source: TargetSpecError,
    },
}

/// Loads the plugin registry with the standard search (see [`PluginSearch::standard`]).
pub fn discover_plugins(plugin_paths: &[PathBuf]) -> Result<PluginRegistry, RegistryError> {
    PluginRegistry::discover(&PluginSearch::standard(plugin_paths))
}

/// A plugin by name: the built-in `reference` runtime, or a loaded plugin.
pub fn find_plugin(
    registry: &PluginRegistry,
    name: &str,
) -> Result<Arc<dyn Plugin>, RegistryError> {
    if name == REFERENCE_RUNTIME {
        return Ok(Arc::new(byoc_exec::plugin::ReferenceRuntime));
    }
    Ok(registry.get(name)?)
}

/// Resolves `--target NAME` entries, then `--target-spec FILE` entries, into targets in
/// priority order. The registry is searched (and its plugins loaded) only when a name is not a
/// spec file.
pub fn select_targets(
    names: &[String],
    specs: &[PathBuf],
    plugin_paths: &[PathBuf],
) -> Result<Vec<Target>, SelectError> {
    let mut registry: Option<PluginRegistry> = None;
    let mut selection = Vec::new();
    let spec = |path: &Path| -> Result<Target, SelectError> { Ok(Target::from_spec_file(path)?) };
    for name in names {
        let path = Path::new(name);
        if path.extension().is_some_and(|e| e == "json") && path.is_file() {
            selection.push(spec(path)?);
            continue;
        }
        let reg = match &mut registry {
            Some(r) => r,
            None => registry.insert(discover_plugins(plugin_paths)?),
        };
        let plugin = reg.get(name)?;
        let description = plugin.describe();
        let target =
            Target::from_description(&description).map_err(|source| SelectError::Description {
                plugin: name.clone(),
                source,
            })?;
        selection.push(target.with_runtime(plugin));
    }
    for path in specs {
        selection.push(spec(path)?);
    }
    Ok(selection)
}
