//! Errors of the JSON runtime.

use byoc_sdk::ir::TensorType;
use thiserror::Error;

use super::ProviderError;
use crate::binary::BinaryError;
use crate::format::FormatError;

/// Why a JSON runtime could not be created, initialized or run.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum RuntimeError {
    /// The graph is malformed.
    #[error(transparent)]
    Format(#[from] FormatError),
    /// The bytes of a serialized graph are malformed.
    #[error(transparent)]
    Binary(#[from] BinaryError),
    /// A `const` node's name is not among the given constants.
    #[error("{symbol}: constant '{name}' (node {node}) was not provided")]
    MissingConstant {
        /// The graph symbol.
        symbol: String,
        /// The node id.
        node: usize,
        /// The constant name.
        name: String,
    },
    /// A provided constant's type differs from its node's.
    #[error(
        "{symbol}: constant '{name}' (node {node}) is {got} but the graph declares {expected}"
    )]
    ConstantType {
        /// The graph symbol.
        symbol: String,
        /// The node id.
        node: usize,
        /// The constant name.
        name: String,
        /// The graph's type.
        expected: TensorType,
        /// The provided type.
        got: TensorType,
    },
    /// `run` before `init`.
    #[error("{symbol}: run before init (constants are bound and kernels built by init)")]
    NotInitialized {
        /// The graph symbol.
        symbol: String,
    },
    /// Wrong number of input or output tensors.
    #[error("{symbol}: expected {expected} {what} tensors, got {got}")]
    Count {
        /// The graph symbol.
        symbol: String,
        /// `input` or `output`.
        what: &'static str,
        /// The graph's count.
        expected: usize,
        /// The given count.
        got: usize,
    },
    /// A bound tensor's type differs from the graph's, or its byte length from its type's.
    #[error("{symbol}: {what} {index} ('{name}') {problem}")]
    Binding {
        /// The graph symbol.
        symbol: String,
        /// `input` or `output`.
        what: &'static str,
        /// The position.
        index: usize,
        /// The input node name, or the producing node name for an output.
        name: String,
        /// What is wrong.
        problem: String,
    },
    /// The scratch arena of a run could not be allocated.
    #[error("{symbol}: the scratch arena of this run ({bytes} bytes) cannot be allocated")]
    Memory {
        /// The graph symbol.
        symbol: String,
        /// The bytes of the arena slot that failed.
        bytes: usize,
    },
    /// The provider could not build a node's kernel.
    #[error("{symbol}: node {node} ('{name}'): building the kernel failed: {source}")]
    Build {
        /// The graph symbol.
        symbol: String,
        /// The node id.
        node: usize,
        /// The node name.
        name: String,
        /// The provider's error.
        source: ProviderError,
    },
    /// A kernel failed at run time.
    #[error("{symbol}: node {node} ('{name}'): {source}")]
    Kernel {
        /// The graph symbol.
        symbol: String,
        /// The node id.
        node: usize,
        /// The node name.
        name: String,
        /// The provider's error.
        source: ProviderError,
    },
}
