//! The host side of plugins: loading `.so` files, the registry of loaded plugins, the
//! built-in reference runtime, and codegen of a partitioned module's external functions.
//!
//! Invariants: a library, once loaded, is never unloaded; every call into a plugin goes
//! through the versioned C table of [`byoc_sdk::abi`] and cannot unwind into the host; a
//! failing plugin yields an error naming the plugin and the operation, and the host goes on.

#[cfg(test)]
mod abi_tests;
mod codegen;
mod error;
mod loaded;
mod loader;
mod reference;
mod registry;

pub use codegen::{
    compile_external, compile_externals, emit_sources, external_functions, PartitionSource,
    Runtimes,
};
pub use error::{CodegenError, LoadError, RegistryError};
pub use loaded::{LoadedModule, LoadedPlugin};
pub use loader::load_plugin;
pub use reference::{ReferenceRuntime, REFERENCE_RUNTIME};
pub use registry::{
    is_plugin_file_name, PluginRegistry, PluginSearch, PLUGIN_FILE_PREFIX, PLUGIN_PATH_ENV,
};
