//! Everything a plugin crate names, in one import: `use crate::prelude::*;`.
//!
//! The traits to implement ([`Plugin`], [`CompiledModule`]), the description builder and its
//! rules ([`TargetDescription`], [`OpRule`], [`PruneConfig`]), what predicates see
//! ([`CallView`], [`RejectReason`]), typed options ([`OptionSchema`], [`PluginOptions`]), the
//! function a plugin compiles ([`PartitionedFunction`]), tensors ([`TensorRef`],
//! [`TensorMut`]), the IR's value types ([`DType`], [`Type`], [`AttrValue`]), the one error
//! type ([`PluginError`]) and the export macro ([`export_plugin!`]).

pub use super::{
    CallView, CompileOptions, CompiledModule, CustomDatatype, DatatypeLowering, EmittedSource,
    LoweringKey, OpRule, OptionSchema, PartitionedFunction, Plugin, PluginError, PluginOptions,
    PruneConfig, RejectReason, TargetDescription, TensorMut, TensorRef, THREADS_OPTION,
};
pub use crate::export_plugin;
pub use byoc_ir::{AttrValue, DType, TensorType, Type};
