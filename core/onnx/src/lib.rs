//! The ONNX importer: an ONNX model (opsets 7 to 23) becomes a [`Module`] whose `@main` uses
//! Relay-named ops.
//!
//! - The protobuf is decoded by hand-written `prost` messages ([`proto`]); no `protoc` needed.
//! - Graph inputs that are not initializers become `@main`'s parameters, in order, named as in
//!   ONNX where that is a valid identifier (otherwise sanitized: `input.1` -> `input_1`); the
//!   ONNX names are kept in `@main`'s `input_names` attribute, the graph outputs' names in
//!   `output_names`. Initializers become constants.
//! - Shapes are static: symbolic input dims must be fixed with [`ImportOptions::input_shapes`]
//!   (the CLI's `--input-shape name=1,3,224,224`).
//! - Constant subgraphs are evaluated at import with the ops' host kernels, so `Shape`,
//!   `ConstantOfShape` and shape-arithmetic chains leave only constants behind.
//! - Quantized models (`QuantizeLinear`/`DequantizeLinear`, `QLinearConv`, `QLinearMatMul`,
//!   `ConvInteger`, `MatMulInteger`, and QDQ models, whose dequantize-conv/matmul-quantize
//!   groups [`qdq`] fuses first) become integer arithmetic (`convert/quant.rs`).
//! - `@main` returns the graph outputs in order (a tuple when there are several) and the module
//!   type-checks ([`byoc_ir::infer_types`] has run on it).
//!
//! Errors ([`OnnxError`]) name the node, value, attribute or input concerned; a model with
//! unsupported ops reports every unsupported op type at once, with counts.

// Errors carry the node and the underlying IR/type error by value; they are built once per
// failed import, so their size does not matter.
#![allow(
    clippy::result_large_err,
    reason = "errors are cold and carry structured context"
)]

mod convert;
mod ctx;
mod error;
mod fold;
mod import;
pub mod proto;
mod qdq;
mod tensor_proto;

use std::collections::BTreeMap;
use std::path::Path;

pub use error::{NodeRef, OnnxError, UnsupportedOp};
pub use tensor_proto::read_tensor_file;

use byoc_ir::Module;

/// The lowest default-domain opset the importer accepts.
pub const MIN_OPSET: i64 = 7;
/// The highest default-domain opset the importer accepts.
pub const MAX_OPSET: i64 = 23;

/// Options of the import.
#[derive(Clone, Debug, Default)]
pub struct ImportOptions {
    /// Static shapes for graph inputs, by ONNX input name; required for inputs with symbolic or
    /// unknown dims, and checked against the declared rank and fixed dims.
    pub input_shapes: BTreeMap<String, Vec<usize>>,
}

/// Imports the ONNX model at `path`; external tensor data is read relative to its directory.
pub fn import_file(path: impl AsRef<Path>, opts: &ImportOptions) -> Result<Module, OnnxError> {
    let path = path.as_ref();
    let bytes = byoc_ir::memory::read_file(path).map_err(|source| OnnxError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    import::import(&bytes, path.parent(), opts)
}

/// Imports a serialized ONNX model held in memory (external tensor data is an error: there is
/// no directory to find it in).
pub fn import_bytes(bytes: &[u8], opts: &ImportOptions) -> Result<Module, OnnxError> {
    import::import(bytes, None, opts)
}
