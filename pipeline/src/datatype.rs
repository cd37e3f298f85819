//! Running a model in a custom datatype (`--dtype custom[posites2]16`): the datatype
//! plugins are loaded, the module is prepared (constants folded, batch norm and dropout
//! rewritten for inference, dead code dropped) and ChangeDatatype turns every `float32` value
//! into the datatype, keeping `@main`'s interface in `float32` with casts at the boundary.
//! [`apply_datatype_options`] hands the datatype plugins' options (`posit.quire=true`) to the
//! host's registry and refuses them for a module that computes in none of their datatypes.

use std::path::{Path, PathBuf};

use byoc_exec::plugin::RegistryError;
use byoc_ir::Type;
use byoc_ir::{DType, DTypeError, Module};
use byoc_kernels::datatypes::DotProductSetting;
use byoc_passes::{
    ChangeDatatype, DeadCodeElimination, FoldConstant, PassContext, PassError, PassManager,
    SimplifyInference,
};
use byoc_sdk::{CompileOptions, OptionsError};
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
    #[error("datatype '{dtype}': {error}")]
    DType {
        /// The dtype as given.
        dtype: String,
        /// What is wrong.
        error: DTypeError,
    },
    /// The datatype is a built-in dtype.
    #[error(
        "datatype '{0}': not a custom datatype (expected custom[NAME]BITS, e.g. custom[posites2]16)"
    )]
    NotCustom(String),
    /// A pass failed.
    #[error(transparent)]
    Pass(#[from] PassError),
    /// A datatype option with a value of the wrong type.
    #[error("datatype option: {0}")]
    Option(#[from] OptionsError),
    /// A datatype option for a datatype the module does not compute in.
    #[error("datatype option {key}=true: the model computes in no custom[{datatype}] type, so there is nothing for it to change (convert the model to custom[{datatype}]{widths})")]
    NotApplicable {
        /// The option.
        key: String,
        /// The datatype it belongs to.
        datatype: String,
        /// Its widths as `8|16|32`.
        widths: String,
    },
}

/// Loads the plugins of the standard search (`--plugin-path` entries first) so that the
/// datatypes they bring are registered. Plugins that fail to load are skipped here; commands
/// that use them as targets report why.
pub fn load_datatype_plugins(plugin_paths: &[PathBuf]) -> Result<(), RegistryError> {
    discover_plugins(plugin_paths).map(drop)
}

/// True when the text model at `path` names a custom datatype.
pub fn names_custom_dtype(path: &Path) -> bool {
    byoc_ir::memory::read_file(path).is_ok_and(|bytes| mentions_custom_dtype(&bytes))
}

/// True when `bytes` (a text model, an artifact) name a custom datatype.
pub fn mentions_custom_dtype(bytes: &[u8]) -> bool {
    bytes.windows(7).any(|w| w == b"custom[")
}

/// Parses a custom datatype (`custom[posites2]16`), loading the datatype plugins first.
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

/// Hands `options` to the registered datatypes ([`byoc_kernels::datatypes::apply_datatype_options`]):
/// each dot-product flag turned on (`posit.quire=true`) must concern a datatype that `module`
/// computes in, or it is refused as a likely mistake. Returns the datatypes whose sums now use
/// their exact dot product.
pub fn apply_datatype_options(
    module: &Module,
    options: &CompileOptions,
) -> Result<Vec<DotProductSetting>, DatatypeError> {
    let on = byoc_kernels::datatypes::apply_datatype_options(options)?;
    if let Some(unused) = on.iter().find(|s| !computes_in(module, s.code)) {
        let err = DatatypeError::NotApplicable {
            key: unused.key.clone(),
            datatype: unused.datatype.clone(),
            widths: unused.widths.clone(),
        };
        // Nothing stays switched on for a refused run.
        byoc_kernels::datatypes::apply_datatype_options(&CompileOptions::new())?;
        return Err(err);
    }
    Ok(on)
}

/// True when a value of `module` (a parameter, a constant or a result of a call) has a type of
/// the custom datatype `code`.
fn computes_in(module: &Module, code: u8) -> bool {
    let has = |ty: &Type| {
        ty.flatten_tensors()
            .iter()
            .any(|t| matches!(t.dtype, DType::Custom { code: c, .. } if c == code))
    };
    module
        .functions()
        .any(|(_, f)| f.ids().any(|id| f.ty(id).is_some_and(has)))
}
