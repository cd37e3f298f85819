//! Targets from plugins, and the selection of targets and runtimes for a command.
//!
//! A loaded plugin's [`TargetDescription`] becomes a pipeline [`Target`]: its op rules and
//! predicates (which call into the plugin across the ABI) form the `TargetSupport`, its
//! patterns the `PatternTable` (checks call the plugin with the root call of each match).
//! [`select_targets`] resolves `--target NAME` (a plugin by name, or a target-spec file when
//! NAME is an existing `.json` file) and `--target-spec FILE`, in that order of priority, and
//! pairs each target with its runtime: the plugin itself, or the built-in `reference`
//! runtime (host kernels) for declarative targets.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use byoc_core::ir::{ExprId, Function, Type};
use byoc_core::op::OpRegistry;
use byoc_core::plugin::{PluginRegistry, PluginSearch, RegistryError, Runtimes, REFERENCE_RUNTIME};
use byoc_core::sdk::{CallView, Plugin, TargetDescription};
use byoc_core::target::OpPredicate;
use byoc_patterns::Check;
use thiserror::Error;

use crate::target::{
    check_target_name, pattern_table, Target, TargetSpecError, TargetSpecFileError,
};

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

impl Target {
    /// The pipeline target of a plugin's description; op names and patterns are checked
    /// like a target spec's.
    pub fn from_description(d: &TargetDescription) -> Result<Target, TargetSpecError> {
        check_target_name(&d.target)?;
        for (index, op) in d.ops.iter().enumerate() {
            if OpRegistry::lookup(&op.rule.op).is_none() {
                return Err(TargetSpecError::UnknownOp {
                    place: format!("ops[{index}]"),
                    op: op.rule.op.clone(),
                });
            }
        }
        let patterns = pattern_table(
            &d.target,
            d.patterns.iter().map(|p| {
                (
                    p.name.as_str(),
                    p.pattern.as_str(),
                    p.check.clone().map(root_call_check),
                )
            }),
        )?;
        Ok(Target {
            support: d.support(),
            patterns,
            simplify_inference: d.simplify_inference,
            fold_scale_axis: d.fold_scale_axis,
        })
    }
}

/// A pattern check that hands the typed root call of a match to a plugin predicate.
fn root_call_check(predicate: OpPredicate) -> Check {
    Arc::new(move |f: &Function, root: ExprId| {
        let Some((op, call)) = f.expr(root).as_op_call() else {
            return Err("the match's root is not an op call".to_string());
        };
        let arg_types: Option<Vec<Type>> = call.args.iter().map(|&a| f.ty(a).cloned()).collect();
        let (Some(arg_types), Some(result_type)) = (arg_types, f.ty(root)) else {
            return Err(format!("{} is not typed", op.name()));
        };
        predicate(&CallView {
            op,
            attrs: &call.attrs,
            arg_types: &arg_types,
            result_type,
        })
        .map_err(|reason| reason.0)
    })
}

/// Targets in priority order, the runtime of each, and the plugins they come from.
#[derive(Debug, Default)]
pub struct Selection {
    /// The targets, in priority order.
    pub targets: Vec<Target>,
    /// The runtime compiling each target's partitions.
    pub runtimes: Runtimes,
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
        return Ok(Arc::new(byoc_core::plugin::ReferenceRuntime));
    }
    Ok(registry.get(name)?)
}

/// Resolves `--target NAME` entries, then `--target-spec FILE` entries. The registry is
/// searched (and its plugins loaded) only when a name is not a spec file.
pub fn select_targets(
    names: &[String],
    specs: &[PathBuf],
    plugin_paths: &[PathBuf],
) -> Result<Selection, SelectError> {
    let mut registry: Option<PluginRegistry> = None;
    let mut selection = Selection::default();
    let add_spec = |selection: &mut Selection, path: &Path| -> Result<(), SelectError> {
        let target = Target::from_spec_file(path)?;
        selection.runtimes = std::mem::take(&mut selection.runtimes).with_reference(target.name());
        selection.targets.push(target);
        Ok(())
    };
    for name in names {
        let path = Path::new(name);
        if path.extension().is_some_and(|e| e == "json") && path.is_file() {
            add_spec(&mut selection, path)?;
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
        selection.runtimes = std::mem::take(&mut selection.runtimes).with(target.name(), plugin);
        selection.targets.push(target);
    }
    for path in specs {
        add_spec(&mut selection, path)?;
    }
    Ok(selection)
}
