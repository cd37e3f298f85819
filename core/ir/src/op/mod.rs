//! The op registry: every primitive op's name, attribute schema, type relation and fusion
//! pattern kind. An op's host reference kernel is not part of it: byoc-kernels builds it, keyed
//! by the op (`byoc_kernels::host_kernel`), so that plugins link the registry without kernels.
//!
//! Ops are looked up by their Relay name (`nn.conv2d`). The built-in ops are registered on first
//! use; plugins and tests may register more with [`OpRegistry::register`]. An [`Op`] is a cheap
//! shared handle to a registered [`OpDef`]; two handles are equal when their names are.

mod def;
mod registry;
mod schema;

pub use crate::ops::strided_slice_window;
pub use def::{Arity, OpDef, OpImpl, OpPattern, TypeCtx, TypeError};
pub use registry::{Op, OpRegistry, RegistryError};
pub use schema::{AttrDef, AttrKind};
