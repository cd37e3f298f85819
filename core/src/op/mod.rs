//! The op registry: every primitive op's name, attribute schema, type relation, fusion pattern
//! kind and host reference kernel.
//!
//! The host kernel half (`OpImpl::host_kernel`, `HostKernel`, `KernelSpec`, `KernelError`)
//! exists with the `executor` feature only; without it (as plugins build) an op is its name,
//! schema, type relation and pattern kind.
//!
//! Ops are looked up by their Relay name (`nn.conv2d`). The built-in ops are registered on first
//! use; plugins and tests may register more with [`OpRegistry::register`]. An [`Op`] is a cheap
//! shared handle to a registered [`OpDef`]; two handles are equal when their names are.

mod def;
mod registry;
mod schema;

pub use crate::ops::strided_slice_window;
#[cfg(feature = "executor")]
pub(crate) use def::apply_to_output;
pub use def::{Arity, OpDef, OpImpl, OpPattern, TypeCtx, TypeError};
#[cfg(feature = "executor")]
pub use def::{HostKernel, KernelError, KernelSpec, OutputEpilogue};
pub use registry::{Op, OpRegistry, RegistryError};
pub use schema::{AttrDef, AttrKind};
