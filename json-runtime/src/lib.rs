//! byoc-json-runtime: TVM's BYOC JSON graph format, the serializer that turns a partitioned
//! function into a JSON graph, and the runtime base that JSON-style plugins build on.
//!
//! - [`format`]: [`JsonGraph`] with a validating reader ([`JsonGraph::parse`]) and a
//!   deterministic writer ([`JsonGraph::to_json`]).
//! - [`serialize`]: a typed partitioned [`byoc_sdk::ir::Function`] → [`Serialized`] (graph +
//!   constants by name), as TVM's `JSONSerializer` does.
//! - [`runtime`]: [`JsonRuntime`], generic over a vendor [`KernelProvider`]: parse once, bind
//!   constants and build kernels once, run many times (from several threads at once).
//! - [`binary`]: a graph and its constants as one versioned byte string
//!   ([`Serialized::to_bytes`] / [`Serialized::from_bytes`]), what compiled modules serialize to.
//! - [`module`]: [`JsonRuntime`] as a plugin SDK `CompiledModule` (zero-copy `run`,
//!   `serialize` to the byte string), and runtime errors as `PluginError`s.
//!
//! A reference provider that runs kernel nodes on byoc's host kernels, to check JSON graphs
//! numerically, is `byoc_exec::json_host::HostProvider`: this crate links no kernels, since a
//! plugin brings its own.

pub mod attr_text;
pub mod binary;
pub mod format;
pub mod module;
pub mod runtime;
pub mod serialize;

pub use binary::BinaryError;
pub use format::{Entry, FormatError, JsonGraph, JsonNode, NodeAttrs, NodeKind};
pub use runtime::{
    ConstantMap, JsonRuntime, KernelProvider, KernelSpec, NodeKernel, ProviderError, RuntimeError,
};
pub use serialize::{serialize, SerializeError, Serialized};
