//! The runtime base for JSON-style plugins (TVM's `JSONRuntimeBase`, re-entrant).
//!
//! Lifecycle: [`JsonRuntime::new`] parses and validates the graph once and plans where every
//! entry lives; [`JsonRuntime::init`] binds the constants by name and asks the vendor's
//! [`KernelProvider`] to build one [`NodeKernel`] per kernel node, exactly once (thread-safe,
//! later calls are no-ops); [`JsonRuntime::run`] binds input and output views, checks them
//! against the graph and runs the kernels in node order. `run` takes `&self` and may be called
//! from several threads at once: intermediate buffers come from a per-run arena taken from a
//! small pool, never from shared state.

mod error;
mod executor;
mod plan;
mod provider;

pub use error::RuntimeError;
pub use executor::JsonRuntime;
pub use provider::{ConstantMap, KernelProvider, KernelSpec, NodeKernel, ProviderError};
