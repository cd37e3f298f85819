//! Running a model in a custom datatype (`--dtype custom[posites2]16`): the datatype
//! plugins are loaded, the module is prepared (constants folded, batch norm and dropout
//! rewritten for inference, dead code dropped) and ChangeDatatype turns every `float32` value
//! into the datatype, keeping `@main`'s interface in `float32` with casts at the boundary.

use std::path::{Path, PathBuf};

use byoc_core::ir::{DType, DTypeError, Module};
use byoc_core::passes::{
    ChangeDatatype, DeadCodeElimination, FoldConstant, PassContext, PassError, PassManager,
    SimplifyInference,
};
use byoc_core::plugin::RegistryError;
use thiserror::Error;

use crate::plugins::discover_plugins;

/// Why a model cannot be converted to a datatype.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum DatatypeError {
    /// Plugin discovery failed.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// The dtype does not parse or is not a registered custom datatype.
    #[error("--dtype '{dtype}': {error}")]
    DType {
        /// The dtype as given.
        dtype: String,
        /// What is wrong.
        error: DTypeError,
    },
    /// `--dtype` names a built-in dtype.
    #[error(
        "--dtype '{0}': not a custom datatype (expected custom[NAME]BITS, e.g. custom[posites2]16)"
    )]
    NotCustom(String),
    /// A pass failed.
    #[error(transparent)]
    Pass(#[from] PassError),
}

/// Loads the plugins of the standard search (`--plugin-path` entries first) so that the
/// datatypes they bring are registered. Plugins that fail to load are skipped here; commands
/// that use them as targets report why.
pub fn load_datatype_plugins(plugin_paths: &[PathBuf]) -> Result<(), RegistryError> {
    discover_plugins(plugin_paths).map(drop)
}

/// True when the text model at `path` names a custom datatype.
pub fn names_custom_dtype(path: &Path) -> bool {
    std::fs::read(path).is_ok_and(|bytes| bytes.windows(7).any(|w| w == b"custom["))
}

/// Parses `--dtype`, loading the datatype plugins first.
pub fn parse_custom_dtype(dtype: &str, plugin_paths: &[PathBuf]) -> Result<DType, DatatypeError> {
    load_datatype_plugins(plugin_paths)?;
    let parsed: DType = dtype.parse().map_err(|error| DatatypeError::DType {
        dtype: dtype.to_string(),
        error,
    })?;
    if !parsed.is_custom() {
        return Err(DatatypeError::NotCustom(dtype.to_string()));
    }
    Ok(parsed)
}

/// `module` prepared and converted from `float32` to `dtype`, its interface kept in `float32`.
pub fn convert_to_datatype(module: &Module, dtype: DType) -> Result<Module, DatatypeError> {
    let mut converted = module.clone();
    PassManager::new()
        .pass(FoldConstant)
        .pass(SimplifyInference::default())
        .pass(FoldConstant)
        .pass(DeadCodeElimination)
        .pass(ChangeDatatype::keeping_interface(DType::Float32, dtype))
        .run(&mut converted, &mut PassContext::default())?;
    Ok(converted)
}
