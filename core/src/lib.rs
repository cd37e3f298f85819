//! byoc-core: the IR, the op registry and op library, the Relay-style text format, the pass
//! infrastructure with the core passes, and the host executor.
//!
//! The flow a model takes through this crate: text or importer → [`ir::Module`] →
//! [`passes`] (type inference, parameter binding, constant folding, ...) → [`exec`] (a planned,
//! storage-reusing host execution).
//!
//! Two features, both on by default, add what only the host needs; plugins depend on this
//! crate without them. `executor` adds the host's runtime: the executor (`exec`), the host
//! kernels behind the built-in ops, the passes that run them (`FoldConstant`, `Quantize`),
//! plugin loading and the reference runtime (`plugin`). `host` adds, on top of it, the
//! host's front end: the ONNX importer (`onnx`), NumPy I/O (`io`) and the `model.byoc`
//! format (`artifact`).

pub mod analysis;
#[cfg(feature = "host")]
pub mod artifact;
pub mod byoc;
pub mod dims;
#[cfg(feature = "executor")]
pub mod exec;
#[cfg(feature = "host")]
pub mod io;
pub mod ir;
mod kernels;
pub mod memory;
#[cfg(feature = "host")]
pub mod onnx;
pub mod op;
mod ops;
pub mod passes;
#[cfg(feature = "executor")]
pub mod plugin;
pub mod sdk;
pub mod target;
pub mod tensor;
pub mod text;

pub use ir::{DType, Module, TensorType, Type};
pub use tensor::Tensor;
