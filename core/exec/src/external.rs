//! Compiled external functions the executor dispatches to.
//!
//! A global function with a `Compiler` attribute is external: the executor never inlines it.
//! Each call of it becomes one instruction that runs the function's [`CompiledModule`] on
//! views of the executor's own buffers (no copies). [`ExternalModules`] maps the function's
//! name to its compiled module, the target and the plugin that compiled it; a module with an
//! external function missing from the map does not plan (no silent host fallback).

use std::collections::BTreeMap;
use std::sync::Arc;

use byoc_sdk::{CompiledModule, PluginError};

/// One compiled partition.
#[derive(Clone)]
pub struct ExternalModule {
    /// The target (the function's `Compiler` attribute).
    pub target: String,
    /// The plugin that compiled it (`reference` for the built-in reference runtime).
    pub plugin: String,
    /// That plugin's version.
    pub plugin_version: String,
    /// The compiled module.
    pub module: Arc<dyn CompiledModule>,
}

impl std::fmt::Debug for ExternalModule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExternalModule")
            .field("target", &self.target)
            .field("plugin", &self.plugin)
            .field("plugin_version", &self.plugin_version)
            .finish_non_exhaustive()
    }
}

/// Compiled modules by external function name.
#[derive(Clone, Debug, Default)]
pub struct ExternalModules {
    modules: BTreeMap<String, ExternalModule>,
}

impl ExternalModules {
    /// No external modules.
    pub fn new() -> Self {
        ExternalModules::default()
    }

    /// Sets the compiled module of the external function `function`.
    pub fn insert(&mut self, function: impl Into<String>, module: ExternalModule) {
        self.modules.insert(function.into(), module);
    }

    /// The compiled module of `function`.
    pub fn get(&self, function: &str) -> Option<&ExternalModule> {
        self.modules.get(function)
    }

    /// Every entry, by function name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &ExternalModule)> {
        self.modules.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// Number of compiled functions.
    pub fn len(&self) -> usize {
        self.modules.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.modules.is_empty()
    }

    /// The accelerator counters of each module's last run, by function name; modules that
    /// keep none are left out.
    pub fn counters(&self) -> Result<Vec<AcceleratorCounters>, PluginError> {
        let mut all = Vec::new();
        for (function, m) in &self.modules {
            let counters = m.module.counters().map_err(|e| {
                PluginError::new(format!("@{function} ({}): {}", m.target, e.message))
            })?;
            if !counters.is_empty() {
                all.push(AcceleratorCounters {
                    function: function.clone(),
                    target: m.target.clone(),
                    counters,
                });
            }
        }
        Ok(all)
    }
}

/// The accelerator counters one compiled partition reported for its last run.
#[derive(Clone, Debug, PartialEq)]
pub struct AcceleratorCounters {
    /// The external function.
    pub function: String,
    /// Its target.
    pub target: String,
    /// `(name, value)` in the plugin's order.
    pub counters: Vec<(String, f64)>,
}
