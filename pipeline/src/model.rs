//! Loading a model file into a typed [`Module`], chosen by the file extension.

use std::collections::BTreeMap;
use std::num::ParseIntError;
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
    /// `--input-shape` given for a `.relay` model.
    #[error("--input-shape applies to .onnx models; a .relay model declares its input types")]
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

/// A bad `--input-shape` value; each message names it.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum InputShapeError {
    /// The value is not `NAME=D0,D1,...`.
    #[error("--input-shape '{value}': expected NAME=D0,D1,... (e.g. data=1,3,224,224)")]
    Syntax {
        /// The value as given.
        value: String,
    },
    /// A dimension is not a non-negative integer.
    #[error("--input-shape '{value}': dimensions must be non-negative integers")]
    Dimension {
        /// The value as given.
        value: String,
        /// Why the dimension does not parse.
        #[source]
        source: ParseIntError,
    },
    /// The same input is given twice.
    #[error("--input-shape gives '{name}' twice")]
    Duplicate {
        /// The input's name.
        name: String,
    },
}

/// Reads a `.relay` or `.onnx` model and infers its types. `input_shapes` fixes symbolic
/// dimensions of ONNX inputs (`--input-shape name=1,3,224,224`). Errors name the file and, for
/// text, the line and column.
pub fn load_model(
    path: &Path,
    input_shapes: &BTreeMap<String, Vec<usize>>,
) -> Result<Module, ModelError> {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    match ext {
        "relay" => {
            if !input_shapes.is_empty() {
                return Err(ModelError::InputShapesForRelay);
            }
            let src = std::fs::read_to_string(path).map_err(|source| ModelError::Read {
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

/// Parses `--input-shape` values `name=d0,d1,...` into a map; errors name the bad value.
pub fn parse_input_shapes(
    values: &[String],
) -> Result<BTreeMap<String, Vec<usize>>, InputShapeError> {
    let mut shapes = BTreeMap::new();
    for v in values {
        let Some((name, dims)) = v.split_once('=') else {
            return Err(InputShapeError::Syntax { value: v.clone() });
        };
        let dims = dims
            .split(',')
            .map(|d| d.trim().parse::<usize>())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|source| InputShapeError::Dimension {
                value: v.clone(),
                source,
            })?;
        if shapes.insert(name.to_string(), dims).is_some() {
            return Err(InputShapeError::Duplicate {
                name: name.to_string(),
            });
        }
    }
    Ok(shapes)
}
