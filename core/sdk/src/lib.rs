//! The plugin SDK: what a vendor implements to bring a codegen backend to byoc.
//!
//! A vendor crate imports [`prelude`] (`use crate::prelude::*;`), implements
//! [`Plugin`] (name, version, a [`TargetDescription`] of the ops and patterns it takes, the
//! [`OptionSchema`] of its options, `compile` of a [`PartitionedFunction`] into a
//! [`CompiledModule`], `deserialize`, optionally `emit_source`) and [`CompiledModule`] (`run`
//! on views of the host's buffers, `serialize`), then exports it with
//! [`crate::export_plugin!`] from a `cdylib`. Support predicates read calls through
//! [`CallView`]'s helpers; every SDK error converts into [`PluginError`] with `?`. The host
//! loads the `.so` ([`byoc_exec::plugin`]) and checks the ABI version before using it.
//!
//! This module is the stable surface: [`abi`] is the C boundary (versioned, append-only), and
//! everything that crosses it is a function record ([`record`]) or text (functions, op calls),
//! JSON (descriptions, options) or `#[repr(C)]` tensor views ([`TensorView`]), so the
//! vendor-facing types can grow without breaking plugins built against an older SDK of the
//! same ABI major version.

pub mod abi;
mod datatype;
mod describe;
mod function;
pub mod native;
mod options;
pub mod placeholders;
mod plugin;
pub mod prelude;
pub mod record;
mod target_json;
mod view;

pub use datatype::{
    CustomDatatype, DatatypeError, DatatypeLowering, LoweringKey, FIRST_CUSTOM_CODE, LOWERING_OPS,
    NATIVE_CAST_TYPES,
};
pub use describe::{CheckKind, OpSupport, PatternSpec, TargetDescription};
pub use function::{call_to_text, CrossingError, FunctionForm, OwnedCall, PartitionedFunction};
pub use options::{
    check_scopes, check_threads, max_threads, OptionKind, OptionSchema, OptionSpec, OptionValue,
    OptionsError, PluginOptions, TooManyThreads,
};
pub use placeholders::PlaceholderError;
pub use plugin::{
    CompileOptions, CompiledModule, EmittedSource, Plugin, PluginError, THREADS_OPTION,
};
pub use record::RecordError;
pub use target_json::{DescriptionError, Source};
pub use view::{DataType, TensorView, ViewError};

// Vendors name these in their descriptions and predicates.
pub use byoc_ir::target::{CallView, OpRule, PruneConfig, RejectReason};
pub use byoc_ir::tensor::{TensorMut, TensorRef};

/// The IR a plugin compiles and runs on (functions, types, tensors, the op registry, the text
/// format): byoc-ir, re-exported so that a plugin depends on this crate alone.
pub use byoc_ir as ir;
