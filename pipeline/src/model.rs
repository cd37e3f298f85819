//! Loading a model file into a typed [`Module`], chosen by the file extension.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use byoc_ir::text::ParseError;
use byoc_ir::Module;
use byoc_ir::{infer_types, TypeInferError};
use byoc_onnx::{import_file, ImportOptions, OnnxError};
use thiserror::Error;

/// Why a model file cannot be loaded; each message names the file.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ModelError {
    /// Input shapes given for a `.relay` model.
    #[error("input shapes apply to .onnx models; a .relay model declares its input types")]
    InputShapesForRelay,
    /// The file cannot be read.
    #[error("cannot read model '{}'", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The Relay text does not parse (the source names the line and column).
    #[error("{}: parse error", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: Box<ParseError>,
    },
    /// The Relay module does not type-check.
    #[error("{}: type error", path.display())]
    Type {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: Box<TypeInferError>,
    },
    /// The ONNX model cannot be imported.
    #[error("{}: cannot import", path.display())]
    Import {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: Box<OnnxError>,
    },
    /// The file extension is neither `.relay` nor `.onnx`.
    #[error("'{}': unsupported model format '.{extension}' (expected .relay or .onnx)", path.display())]
    UnsupportedFormat {
        /// The file.
        path: PathBuf,
        /// Its extension (empty when it has none).
        extension: String,
    },
}

/// Options of [`load_model`].
#[derive(Clone, Debug, Default)]
pub struct LoadOptions {
    /// Shapes of ONNX inputs by name, fixing their symbolic dimensions (`data` ->
    /// `[1, 3, 224, 224]`).
    pub input_shapes: BTreeMap<String, Vec<usize>>,
    /// The memory budget in bytes that every tensor of the model must fit (`byoc_ir::memory`);
    /// `None`: the caller's.
    pub memory_budget: Option<u64>,
}

/// Reads a `.relay` or `.onnx` model and infers its types, as `options` say. Errors name the
/// file and, for text, the line and column.
pub fn load_model(path: &Path, options: &LoadOptions) -> Result<Module, ModelError> {
    byoc_ir::memory::with_budget(options.memory_budget, || {
        load_under_budget(path, &options.input_shapes)
    })
}

/// [`load_model`] under the budget in force.
fn load_under_budget(
    path: &Path,
    input_shapes: &BTreeMap<String, Vec<usize>>,
) -> Result<Module, ModelError> {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    match ext {
        "relay" => {
            if !input_shapes.is_empty() {
                return Err(ModelError::InputShapesForRelay);
            }
            let src =
                byoc_ir::memory::read_file_to_string(path).map_err(|source| ModelError::Read {
                    path: path.to_path_buf(),
                    source,
                })?;
            let mut module =
                byoc_ir::text::parse_module(&src).map_err(|source| ModelError::Parse {
                    path: path.to_path_buf(),
                    source: Box::new(source),
                })?;
            infer_types(&mut module).map_err(|source| ModelError::Type {
                path: path.to_path_buf(),
                source: Box::new(source),
            })?;
            Ok(module)
        }
        "onnx" => {
            let opts = ImportOptions {
                input_shapes: input_shapes.clone(),
            };
            import_file(path, &opts).map_err(|source| ModelError::Import {
                path: path.to_path_buf(),
                source: Box::new(source),
            })
        }
        _ => Err(ModelError::UnsupportedFormat {
            path: path.to_path_buf(),
            extension: ext.to_string(),
        }),
    }
}
