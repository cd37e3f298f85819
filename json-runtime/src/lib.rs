//! byoc-json-runtime: TVM's BYOC JSON graph format, the serializer that turns a partitioned
//! function into a JSON graph, and the runtime base that JSON-style plugins build on.
//!
//! - [`format`]: [`JsonGraph`] with a validating reader ([`JsonGraph::parse`]) and a
//!   deterministic writer ([`JsonGraph::to_json`]).
//! - [`serialize`]: a typed partitioned [`byoc_core::ir::Function`] → [`Serialized`] (graph +
//!   constants by name), as TVM's `JSONSerializer` does.
//! - [`runtime`]: [`JsonRuntime`], generic over a vendor [`KernelProvider`]: parse once, bind
//!   constants and build kernels once, run many times (from several threads at once).
//! - [`binary`]: a graph and its constants as one versioned byte string
//!   ([`Serialized::to_bytes`] / [`Serialized::from_bytes`]), what compiled modules serialize to.
//! - [`module`]: [`JsonRuntime`] as a plugin SDK `CompiledModule` (zero-copy `run`,
//!   `serialize` to the byte string), and runtime errors as `PluginError`s.
//! - [`host`]: [`HostProvider`], a reference provider running kernel nodes with byoc-core's
//!   host kernels, so JSON graphs can be checked numerically. It needs the `executor`
//!   feature (on by default), which plugins leave off: a plugin brings its own kernels.

pub mod attr_text;
pub mod binary;
pub mod format;
#[cfg(feature = "executor")]
pub mod host;
pub mod module;
pub mod runtime;
pub mod serialize;

pub use binary::BinaryError;
pub use format::{Entry, FormatError, JsonGraph, JsonNode, NodeAttrs, NodeKind};
#[cfg(feature = "executor")]
pub use host::HostProvider;
pub use runtime::{
    ConstantMap, JsonRuntime, KernelProvider, KernelSpec, NodeKernel, ProviderError, RuntimeError,
};
pub use serialize::{serialize, SerializeError, Serialized};
