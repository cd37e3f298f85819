//! Errors of loading plugins, finding them by name, and compiling partitions with them.

use std::path::PathBuf;

use thiserror::Error;

use byoc_kernels::datatypes::DatatypeRegistrationError;
use byoc_sdk::PluginError;

/// Why a file could not be loaded as a plugin. Every variant names the file.
#[derive(Debug, Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum LoadError {
    /// The path does not exist.
    #[error("plugin file '{path}' not found")]
    NotFound {
        /// The path given.
        path: PathBuf,
    },
    /// The system loader refused the file (not a shared library, missing symbols, ...).
    #[error("'{path}' is not a loadable shared library: {message}")]
    Open {
        /// The file.
        path: PathBuf,
        /// The loader's reason.
        message: String,
    },
    /// A shared library without the plugin entry symbol.
    #[error("'{path}' is not a byoc plugin: it does not export the symbol '{symbol}' (plugins export it with byoc_sdk::export_plugin!)")]
    NoEntry {
        /// The file.
        path: PathBuf,
        /// The symbol looked for.
        symbol: &'static str,
    },
    /// The entry symbol returned no table (the plugin's constructor panicked).
    #[error(
        "'{path}': the plugin's entry point failed (its constructor panicked or returned no table)"
    )]
    EntryFailed {
        /// The file.
        path: PathBuf,
    },
    /// The entry symbol returned something that is not a byoc plugin table.
    #[error("'{path}' is not a byoc plugin: its entry point returned a table without the byoc magic number")]
    BadMagic {
        /// The file.
        path: PathBuf,
    },
    /// A plugin built against an SDK whose ABI this host does not speak.
    #[error("'{path}': incompatible SDK version: the plugin was built with byoc SDK {plugin_sdk} (plugin ABI {plugin_major}.{plugin_minor}), this byoc has SDK {host_sdk} (plugin ABI {host_major}.{host_minor}); rebuild the plugin against SDK {host_sdk}")]
    Incompatible {
        /// The file.
        path: PathBuf,
        /// The plugin's SDK version.
        plugin_sdk: String,
        /// The plugin's ABI major version.
        plugin_major: u32,
        /// The plugin's ABI minor version.
        plugin_minor: u32,
        /// This host's SDK version.
        host_sdk: &'static str,
        /// This host's ABI major version.
        host_major: u32,
        /// This host's ABI minor version.
        host_minor: u32,
    },
    /// The plugin's description could not be read.
    #[error("'{path}': plugin '{plugin}' gave an unusable target description: {message}")]
    Description {
        /// The file.
        path: PathBuf,
        /// The plugin's name.
        plugin: String,
        /// What is wrong.
        message: String,
    },
    /// A custom datatype of the plugin is malformed, names a function the library does not
    /// export, or conflicts with one already registered.
    #[error("'{path}': plugin '{plugin}': {error}")]
    Datatype {
        /// The file.
        path: PathBuf,
        /// The plugin's name.
        plugin: String,
        /// The registration error.
        error: Box<DatatypeRegistrationError>,
    },
}

/// Errors of looking up plugins.
#[derive(Debug, Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum RegistryError {
    /// A `--plugin-path` entry that does not exist.
    #[error("plugin path '{path}' does not exist")]
    PathNotFound {
        /// The path.
        path: PathBuf,
    },
    /// A directory that cannot be listed.
    #[error("cannot read plugin directory '{path}': {message}")]
    ReadDir {
        /// The directory.
        path: PathBuf,
        /// The system's reason.
        message: String,
    },
    /// No loaded plugin has this name.
    #[error("no plugin named '{name}' (loaded: {loaded}){refused}")]
    Unknown {
        /// The name asked for.
        name: String,
        /// The names of the loaded plugins, comma-separated.
        loaded: String,
        /// The files that were refused, one per line, prefixed with a newline (or empty).
        refused: String,
    },
    /// Two files claim one plugin name.
    #[error("two plugins claim the name '{name}': '{first}' and '{second}'; remove one or use --plugin-path to choose")]
    Duplicate {
        /// The name.
        name: String,
        /// The first file.
        first: PathBuf,
        /// The second file.
        second: PathBuf,
    },
    /// A file given by name could not be loaded.
    #[error(transparent)]
    Load(#[from] LoadError),
}

/// Errors of compiling a module's external functions.
#[derive(Debug, Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum CodegenError {
    /// No runtime for a target.
    #[error("@{function}: no runtime for target '{target}': {reason}")]
    NoRuntime {
        /// The external function.
        function: String,
        /// Its target.
        target: String,
        /// Why (e.g. the registry's lookup error).
        reason: String,
    },
    /// The plugin failed (an error or a caught panic).
    #[error("plugin '{plugin}' failed during {operation} of @{function}: {error}")]
    Plugin {
        /// The plugin.
        plugin: String,
        /// `optimize`, `compile` or `emit_source`.
        operation: &'static str,
        /// The external function.
        function: String,
        /// The plugin's error.
        error: PluginError,
    },
    /// The optimize hook changed the function's signature.
    #[error(
        "plugin '{plugin}': optimize changed the signature of @{function} from {before} to {after}"
    )]
    Signature {
        /// The plugin.
        plugin: String,
        /// The external function.
        function: String,
        /// The type before.
        before: String,
        /// The type after.
        after: String,
    },
    /// The module does not type-check.
    #[error("{0}")]
    Types(#[from] byoc_ir::TypeInferError),
}
