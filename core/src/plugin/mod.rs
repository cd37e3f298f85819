//! The host side of plugins: loading `.so` files, the registry of loaded plugins, the
//! built-in reference runtime, and codegen of a partitioned module's external functions.
//!
//! Invariants: a library, once loaded, is never unloaded; every call into a plugin goes
//! through the versioned C table of [`crate::sdk::abi`] and cannot unwind into the host; a
//! failing plugin yields an error naming the plugin and the operation, and the host goes on.

mod codegen;
mod datatype_calls;
mod datatype_options;
mod datatypes;
mod error;
mod loaded;
mod loader;
mod reference;
mod registry;

pub use codegen::{compile_externals, emit_sources, external_functions, PartitionSource, Runtimes};
pub use datatype_calls::{
    convert_tensor, read_bits, write_bits, BinaryCall, CastCall, CompareCall, DatatypeCallError,
    DatatypeCalls, DotProductCall, UnaryCall,
};
pub use datatype_options::{
    apply_datatype_options, datatype_plugins, uses_dot_product, DotProductSetting,
};
pub use datatypes::{
    datatype_libraries, datatype_library, register_datatypes, DatatypeLibrary,
    DatatypeRegistrationError, LibraryFunction,
};
pub use error::{CodegenError, LoadError, RegistryError};
pub use loaded::{LoadedModule, LoadedPlugin};
pub use loader::load_plugin;
pub use reference::{ReferenceRuntime, REFERENCE_RUNTIME};
pub use registry::{
    is_plugin_file_name, PluginRegistry, PluginSearch, PLUGIN_FILE_PREFIX, PLUGIN_PATH_ENV,
};
