//! The traits a vendor implements: [`Plugin`] (capabilities, compile, deserialize, and
//! optionally the source it generates, [`EmittedSource`]) and [`CompiledModule`] (run,
//! serialize).
//!
//! The same traits are what the host sees of every backend: a plugin linked into the process,
//! a plugin loaded from a `.so` (the loader implements [`Plugin`] over the C ABI), and the
//! built-in reference runtime. Both traits are object safe; the host holds `Arc<dyn Plugin>`
//! and `Arc<dyn CompiledModule>`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use super::describe::TargetDescription;
use super::function::PartitionedFunction;
use super::options::OptionSchema;
use byoc_ir::tensor::{TensorMut, TensorRef};

/// An error a plugin reports from compile, run, serialize or a hook. The message is the
/// plugin's own; the host adds the plugin's name and the operation when it reports it.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[error("{message}")]
pub struct PluginError {
    /// What went wrong, in the plugin's words.
    pub message: String,
}

impl PluginError {
    /// An error with this message.
    pub fn new(message: impl Into<String>) -> Self {
        PluginError {
            message: message.into(),
        }
    }
}

/// `?` turns the SDK's own errors, and the I/O and JSON errors plugins meet, into a
/// [`PluginError`] carrying their message.
macro_rules! plugin_error_from {
    ($($error:ty),* $(,)?) => {$(
        impl From<$error> for PluginError {
            fn from(e: $error) -> Self {
                PluginError::new(e.to_string())
            }
        }
    )*};
}

plugin_error_from!(
    byoc_ir::tensor::TensorError,
    super::view::ViewError,
    super::target_json::DescriptionError,
    super::record::RecordError,
    super::function::CrossingError,
    super::placeholders::PlaceholderError,
    super::options::OptionsError,
    byoc_ir::target::RejectReason,
    std::io::Error,
    serde_json::Error,
);

/// The compile option the host sets to its executor's worker-thread count
/// ([`CompileOptions::or_threads`]: the executor's `threads`, unless the options give one):
/// plugins that run their own thread pools use it so both sides share the cores as the user
/// asked.
pub const THREADS_OPTION: &str = "threads";

/// Options of one compilation: key/value strings (`--plugin-option KEY=VALUE` on the command
/// line, artifact build settings), passed through to the plugin unchanged.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CompileOptions {
    /// The options, sorted by key.
    pub values: BTreeMap<String, String>,
}

impl CompileOptions {
    /// No options.
    pub fn new() -> Self {
        CompileOptions::default()
    }

    /// Adds or replaces an option.
    pub fn with(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.values.insert(key.into(), value.into());
        self
    }

    /// The value of `key`, if set.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.values.get(key).map(String::as_str)
    }

    /// These options with [`THREADS_OPTION`] set to `threads`, the executor's worker count,
    /// unless they already give it or `threads` is 0 (all cores: nothing to pass on).
    pub fn or_threads(&self, threads: usize) -> CompileOptions {
        let mut options = self.clone();
        if threads > 0 && !options.values.contains_key(THREADS_OPTION) {
            options
                .values
                .insert(THREADS_OPTION.to_string(), threads.to_string());
        }
        options
    }
}

/// The source code a plugin generates for one partition, for inspection (`byoc inspect
/// --emit-source DIR` writes it to `DIR/<symbol>.<extension>`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EmittedSource {
    /// The file name extension, without the dot (`c`, `cpp`, `s`).
    pub extension: String,
    /// The source text, exactly what the plugin's compile builds.
    pub code: String,
}

/// A codegen backend: what it offloads, and how it turns a partitioned function into a
/// [`CompiledModule`].
pub trait Plugin: Send + Sync {
    /// The plugin's name; it is also the target name (the `Compiler` attribute of its
    /// partitions) unless the description says otherwise.
    fn name(&self) -> &str;

    /// The plugin's own version (semver text, e.g. `0.3.1`), recorded in artifacts.
    fn version(&self) -> &str;

    /// What the target supports: ops with predicates, patterns, prune settings, datatypes.
    fn describe(&self) -> TargetDescription;

    /// The options the plugin reads, under its scope `<name>.` (see [`OptionSchema`]); the
    /// plugin parses [`CompileOptions`] with it in `compile`, `deserialize` and `emit_source`,
    /// so an undeclared key of its scope is refused there. The default declares none.
    fn options(&self) -> OptionSchema {
        OptionSchema::new(self.name())
    }

    /// Rewrites one partition before it is compiled (the description's `optimize` flag says
    /// whether the host calls it). The default returns the function unchanged.
    fn optimize(&self, function: PartitionedFunction) -> Result<PartitionedFunction, PluginError> {
        Ok(function)
    }

    /// Compiles one partitioned function.
    fn compile(
        &self,
        function: &PartitionedFunction,
        options: &CompileOptions,
    ) -> Result<Box<dyn CompiledModule>, PluginError>;

    /// Rebuilds a compiled module from the bytes of [`CompiledModule::serialize`], with the
    /// options of the process that loads it (the executor's thread count as
    /// [`THREADS_OPTION`], and the user's plugin options), so a module from an artifact runs
    /// as one compiled here would.
    fn deserialize(
        &self,
        bytes: &[u8],
        options: &CompileOptions,
    ) -> Result<Box<dyn CompiledModule>, PluginError>;

    /// The source code [`Plugin::compile`] would build for `function` with `options`, for
    /// inspection. Plugins that generate source (C, assembly) answer it; the default, `None`,
    /// says the plugin has no source to show.
    fn emit_source(
        &self,
        _function: &PartitionedFunction,
        _options: &CompileOptions,
    ) -> Result<Option<EmittedSource>, PluginError> {
        Ok(None)
    }
}

/// One compiled partition, ready to run. `run` takes `&self` and may be called from several
/// threads at once; a module with mutable state guards it itself.
pub trait CompiledModule: Send + Sync {
    /// Computes `outputs` from `inputs`. Both are the partition's flattened parameters and
    /// results, in order, with exactly the partition's types; the views borrow the caller's
    /// buffers (no copies). Every output element must be written.
    fn run(
        &self,
        inputs: &[TensorRef<'_>],
        outputs: &mut [TensorMut<'_>],
    ) -> Result<(), PluginError>;

    /// The module as bytes, for artifacts; [`Plugin::deserialize`] reads them back.
    fn serialize(&self) -> Result<Vec<u8>, PluginError>;

    /// Accelerator counters of the last [`CompiledModule::run`] (simulated cycles,
    /// utilisation, bytes moved, ...) as `(name, value)` pairs in the plugin's order, for
    /// `byoc run --profile` and `byoc bench`. The default, for modules that keep none, is
    /// empty.
    fn counters(&self) -> Result<Vec<(String, f64)>, PluginError> {
        Ok(Vec::new())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_executor_threads_reach_the_plugins_unless_given() {
        let options = CompileOptions::new().or_threads(3);
        assert_eq!(options.get(THREADS_OPTION), Some("3"));
        assert_eq!(
            CompileOptions::new().or_threads(0).get(THREADS_OPTION),
            None
        );
        let explicit = CompileOptions::new()
            .with(THREADS_OPTION, "1")
            .with("csource.cc", "gcc")
            .or_threads(2);
        assert_eq!(explicit.get(THREADS_OPTION), Some("1"));
        assert_eq!(explicit.get("csource.cc"), Some("gcc"));
    }
}
