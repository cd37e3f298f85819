//! byoc-plugin-csource: partitions as C source, compiled by the system C compiler and loaded
//! at run time — the "vendor C compiler flow" kind of BYOC integration (TVM's C source
//! codegen).
//!
//! The flow for one partition (a global function with `Compiler="csource"`):
//!
//! ```text
//! Function ──CSourceCodegen::generate──> GeneratedSource (C text + signature)
//!          ──compile──> SharedObject (.so bytes + entry symbol)
//!          ──LoadedPartition::load──> run(inputs, outputs)
//! ```
//!
//! - [`support`]: which ops, attributes and dtypes the target handles, its composite pattern
//!   table, and a core `TargetSupport` for the partitioning passes.
//! - [`codegen`]: the C generator (loop nests per op, fused conv2d/dense epilogues, a planned
//!   intermediate arena, constants embedded or passed in).
//! - [`compile`](mod@compile): the system C compiler driver; [`cflags`] refuses the flags
//!   that would change the ABI it calls the compiled code through.
//! - [`runtime`]: loading the shared object and running it on tensor views.
//! - [`module`]: the compiled module of the SDK and its serialized form (the `.so` bytes and
//!   the entry's signature, for artifacts).
//! - [`plugin`]: [`CSource`], the SDK `Plugin`, exported from the `cdylib` below, with its
//!   compile options.
//!
//! `docs/csource.md` describes the generated C and the options.

pub mod cflags;
pub mod codegen;
pub mod compile;
pub mod module;
pub mod plugin;
pub mod runtime;
pub mod support;

pub use codegen::{check_call, CSourceCodegen, CodegenError, CodegenOptions, GeneratedSource};
pub use compile::{compile, CompileError, CompilerOptions, SharedObject};
pub use module::{CSourceModule, ModuleFormatError};
pub use plugin::{options_schema, CSource, Settings};
pub use runtime::{LoadError, LoadedPartition, RunError};

byoc_sdk::export_plugin!(CSource, CSource::new());
