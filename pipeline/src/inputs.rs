//! Model inputs from .npz files or a seeded random generator, and output naming.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use byoc_artifact::io::IoError;
use byoc_ir::tensor::TensorError;
use byoc_ir::DType;
use byoc_ir::{IrError, Module, Span, Tensor, TensorType, Type};
use byoc_kernels::datatypes::{convert_tensor, DatatypeCallError};
use rand::rngs::StdRng;
use rand::SeedableRng;
use thiserror::Error;

/// Why a model's inputs cannot be listed or resolved. Each message names the input and, for
/// inputs from a file, the file.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum InputsError {
    /// The module has no usable `@main`.
    #[error(transparent)]
    Ir(#[from] IrError),
    /// An `@main` parameter that is not a variable.
    #[error("@main parameter is not a variable")]
    ParamNotVariable,
    /// An `@main` parameter of a non-tensor type.
    #[error("{}@main parameter %{name} has type {ty}; only tensor inputs are supported", span.map(|s| format!("{s}: ")).unwrap_or_default())]
    NotTensor {
        /// The parameter's name.
        name: String,
        /// Its type.
        ty: Type,
        /// Where the parameter is declared, for models parsed from text.
        span: Option<Span>,
    },
    /// The `.npz` file cannot be read (the source names the file).
    #[error("cannot read inputs")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: Box<IoError>,
    },
    /// The `.npz` file holds an array that is no input of the model.
    #[error("{}: input '{name}' is not an input of the model (inputs: {})", path.display(), inputs.join(", "))]
    UnknownInput {
        /// The file.
        path: PathBuf,
        /// The array's name.
        name: String,
        /// The model's input names.
        inputs: Vec<String>,
    },
    /// An input from the `.npz` file has the wrong shape or dtype.
    #[error("{}: input '{name}' is {given} but the model expects {expected}", path.display())]
    WrongType {
        /// The file.
        path: PathBuf,
        /// The input.
        name: String,
        /// The type in the file.
        given: TensorType,
        /// The type the model expects.
        expected: TensorType,
    },
    /// A custom-typed input not given as its bit patterns.
    #[error(
        "{}: input '{name}' is {given} but the model expects {expected}, given as its bit patterns (uint{bits})",
        path.display()
    )]
    NotBitPatterns {
        /// The file.
        path: PathBuf,
        /// The input.
        name: String,
        /// The type in the file.
        given: TensorType,
        /// The type the model expects.
        expected: TensorType,
        /// The width of the expected datatype.
        bits: u32,
    },
    /// An input neither in the file nor made random.
    #[error("missing input '{name}' of type {ty}{}", path.as_ref().map(|p| format!(": not in '{}'", p.display())).unwrap_or_default())]
    Missing {
        /// The input.
        name: String,
        /// Its type.
        ty: TensorType,
        /// The `.npz` file that was searched, if one was given.
        path: Option<PathBuf>,
    },
    /// Random values for an input cannot be made.
    #[error("input '{name}'")]
    Random {
        /// The input.
        name: String,
        /// Why (boxed, as it is large).
        #[source]
        source: Box<RandomTensorError>,
    },
}

/// Why [`random_tensor`] cannot make random values of a type.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum RandomTensorError {
    /// The tensor of random values (or a chunk of `float32` ones for a custom datatype)
    /// cannot be made.
    #[error("cannot make random values of type {ty}")]
    Tensor {
        /// The type asked for.
        ty: TensorType,
        /// Why.
        #[source]
        source: TensorError,
    },
    /// The custom datatype's cast from `float32` failed.
    #[error("cannot make random values of type {ty}")]
    Convert {
        /// The type asked for.
        ty: TensorType,
        /// Why.
        #[source]
        source: DatatypeCallError,
    },
}

/// One input of a model: the name users give it (the ONNX name for imported models), the
/// @main parameter it binds, and its type.
pub struct ModelInput {
    /// The name in .npz files and messages.
    pub name: String,
    /// The @main parameter name.
    pub param: String,
    /// The tensor type.
    pub ty: TensorType,
}

/// The names an importer recorded in @main's attribute `attr` (`input_names`, `output_names`).
fn recorded_names(module: &Module, attr: &str) -> Option<Vec<String>> {
    let list = module.main().ok()?.attrs.get(attr)?.as_list()?;
    list.iter()
        .map(|v| v.as_str().map(str::to_string))
        .collect()
}

/// The @main parameters of `module` with their user-facing names and tensor types.
pub fn model_inputs(module: &Module) -> Result<Vec<ModelInput>, InputsError> {
    let main = module.main()?;
    let recorded = recorded_names(module, "input_names").filter(|n| n.len() == main.params.len());
    main.params
        .iter()
        .enumerate()
        .map(|(i, &p)| {
            let var = main.var(p).ok_or(InputsError::ParamNotVariable)?;
            let Type::Tensor(ty) = &var.ty else {
                return Err(InputsError::NotTensor {
                    name: var.name.clone(),
                    ty: var.ty.clone(),
                    span: main.node(p).span,
                });
            };
            let name = recorded
                .as_ref()
                .map_or_else(|| var.name.clone(), |n| n[i].clone());
            Ok(ModelInput {
                name,
                param: var.name.clone(),
                ty: ty.clone(),
            })
        })
        .collect()
}

/// The inputs for a run, keyed by @main parameter name: those in `npz` (keyed by the model's
/// input names, checked), the rest random when `seed` is given. A missing input without `seed`
/// is an error naming it.
pub fn resolve_inputs(
    module: &Module,
    npz: Option<&Path>,
    seed: Option<u64>,
) -> Result<BTreeMap<String, Tensor>, InputsError> {
    let expected = model_inputs(module)?;
    // Custom-typed inputs come as their bit patterns.
    let custom: BTreeMap<String, DType> = expected
        .iter()
        .filter(|e| e.ty.dtype.is_custom())
        .map(|e| (e.name.clone(), e.ty.dtype))
        .collect();
    let mut given = match npz {
        Some(path) => {
            byoc_artifact::io::read_npz_as(path, &custom).map_err(|source| InputsError::Read {
                path: path.to_path_buf(),
                source: Box::new(source),
            })?
        }
        None => BTreeMap::new(),
    };
    if let Some(unknown) = given
        .keys()
        .find(|k| !expected.iter().any(|e| &e.name == *k))
    {
        return Err(InputsError::UnknownInput {
            path: npz.map(Path::to_path_buf).unwrap_or_default(),
            name: unknown.clone(),
            inputs: expected.iter().map(|e| e.name.clone()).collect(),
        });
    }
    if let Some(path) = npz {
        for input in &expected {
            match given.get(&input.name) {
                // A custom-typed input comes as its bit patterns: only its shape must match.
                Some(t)
                    if t.shape() != input.ty.shape.as_slice()
                        || (!input.ty.dtype.is_custom() && t.dtype() != input.ty.dtype) =>
                {
                    return Err(InputsError::WrongType {
                        path: path.to_path_buf(),
                        name: input.name.clone(),
                        given: t.ty().clone(),
                        expected: input.ty.clone(),
                    })
                }
                Some(t) if input.ty.dtype.is_custom() && t.dtype() != input.ty.dtype => {
                    return Err(InputsError::NotBitPatterns {
                        path: path.to_path_buf(),
                        name: input.name.clone(),
                        given: t.ty().clone(),
                        expected: input.ty.clone(),
                        bits: input.ty.dtype.bits(),
                    })
                }
                _ => {}
            }
        }
    }
    let mut rng = seed.map(StdRng::seed_from_u64);
    let mut inputs = BTreeMap::new();
    for input in &expected {
        let tensor = match (given.remove(&input.name), rng.as_mut()) {
            (Some(t), _) => t,
            (None, Some(rng)) => {
                random_tensor(&input.ty, rng).map_err(|source| InputsError::Random {
                    name: input.name.clone(),
                    source: Box::new(source),
                })?
            }
            (None, None) => {
                return Err(InputsError::Missing {
                    name: input.name.clone(),
                    ty: input.ty.clone(),
                    path: npz.map(Path::to_path_buf),
                })
            }
        };
        inputs.insert(input.param.clone(), tensor);
    }
    Ok(inputs)
}

/// Elements of a custom-typed random tensor drawn and converted at a time: the `float32`
/// scratch stays small next to the tensor.
const CUSTOM_CHUNK: usize = 1 << 16;

/// A tensor of uniform random values (see [`Tensor::random_uniform`]); a custom-typed one
/// holds random `float32` values converted by the datatype's cast, drawn in the same order
/// and converted [`CUSTOM_CHUNK`] elements at a time.
pub fn random_tensor(ty: &TensorType, rng: &mut StdRng) -> Result<Tensor, RandomTensorError> {
    let tensor_error = |source| RandomTensorError::Tensor {
        ty: ty.clone(),
        source,
    };
    if !ty.dtype.is_custom() {
        return Tensor::random_uniform(ty.clone(), rng).map_err(tensor_error);
    }
    let mut tensor = Tensor::try_zeros(ty.clone()).map_err(tensor_error)?;
    let width = ty.dtype.size_bytes();
    for chunk in tensor.view_mut().bytes.chunks_mut(CUSTOM_CHUNK * width) {
        let floats = TensorType::new(vec![chunk.len() / width], DType::Float32);
        let float = Tensor::random_uniform(floats, rng).map_err(tensor_error)?;
        let bits =
            convert_tensor(&float, ty.dtype).map_err(|source| RandomTensorError::Convert {
                ty: ty.clone(),
                source,
            })?;
        chunk.copy_from_slice(bits.as_bytes());
    }
    Ok(tensor)
}

/// Names outputs by the names an importer recorded (ONNX output names), else `output_0`,
/// `output_1`, ... in order.
pub fn output_map(module: &Module, outputs: Vec<Tensor>) -> BTreeMap<String, Tensor> {
    let recorded = recorded_names(module, "output_names").filter(|n| n.len() == outputs.len());
    outputs
        .into_iter()
        .enumerate()
        .map(|(i, t)| {
            let name = recorded
                .as_ref()
                .map_or_else(|| format!("output_{i}"), |n| n[i].clone());
            (name, t)
        })
        .collect()
}
