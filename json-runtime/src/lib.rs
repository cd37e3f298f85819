//! byoc-json-runtime: TVM's BYOC JSON graph format, the serializer that turns a partitioned
//! function into a JSON graph, and the runtime base that JSON-style plugins build on.
//!
//! - [`format`]: [`JsonGraph`] with a validating reader ([`JsonGraph::parse`]) and a
//!   deterministic writer ([`JsonGraph::to_json`]).
//! - [`serialize`]: a typed partitioned [`byoc_core::ir::Function`] → [`Serialized`] (graph +
//!   constants by name), as TVM's `JSONSerializer` does.
//! - [`runtime`]: [`JsonRuntime`], generic over a vendor [`KernelProvider`]: parse once, bind
//!   constants and build kernels once, run many times (from several threads at once).
//! - [`host`]: [`HostProvider`], a reference provider running kernel nodes with byoc-core's
//!   host kernels, so JSON graphs can be checked numerically.

pub mod attr_text;
pub mod format;
pub mod host;
pub mod runtime;
pub mod serialize;

pub use format::{Entry, FormatError, JsonGraph, JsonNode, NodeAttrs, NodeKind};
pub use host::HostProvider;
pub use runtime::{
    ConstantMap, JsonRuntime, KernelProvider, KernelSpec, NodeKernel, ProviderError, RuntimeError,
};
pub use serialize::{serialize, SerializeError, Serialized};
