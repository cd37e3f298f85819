//! The host executor: runs `@main` of a module with the host reference kernels.
//!
//! Planning happens once, in [`Executor::new`]: `@main` is lowered to a flat, topologically
//! ordered list of kernel calls (calls of composites and of host global functions inlined,
//! calls of external functions dispatched to their compiled modules, tuples and view ops
//! resolved to aliases, constants bound in place), every call site's kernel is built,
//! half-precision ops are promoted to `float32`, and a liveness-based storage plan lets
//! intermediate values share scratch buffers, the parts of a concatenation written in place
//! where they can be. [`Executor::run`] then only runs kernels.

mod error;
mod executor;
mod external;
pub mod json_host;
mod plan;
pub mod plugin;
mod profile;
mod promote;
mod storage;

pub use error::ExecError;
pub use executor::{ExecOptions, Executor};
pub use external::{AcceleratorCounters, ExternalModule, ExternalModules};
pub use plan::InputInfo;
pub use profile::{CallTime, InPlaceParts, OpTime, Profile, TargetTime};
pub use storage::{ConcatParts, MemoryReport};
