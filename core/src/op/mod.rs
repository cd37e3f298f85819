//! The op registry: every primitive op's name, attribute schema, type relation, fusion pattern
//! kind and host reference kernel.
//!
//! Ops are looked up by their Relay name (`nn.conv2d`). The built-in ops are registered on first
//! use; plugins and tests may register more with [`OpRegistry::register`]. An [`Op`] is a cheap
//! shared handle to a registered [`OpDef`]; two handles are equal when their names are.

mod def;
mod registry;
mod schema;

pub use def::{
    Arity, HostKernel, KernelError, KernelSpec, OpDef, OpImpl, OpPattern, TypeCtx, TypeError,
};
pub use registry::{Op, OpRegistry, RegistryError};
pub use schema::{AttrDef, AttrKind};
