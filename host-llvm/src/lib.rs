//! byoc-host-llvm: the host code generator. What stays on the host after partitioning is
//! fused (core's HostFuse pass: elementwise and broadcast chains into one function each, with
//! the injective ops between them (transpose, concatenate, pad, reshapes), each reduction
//! with its producers and consumers, and the elementwise consumers of a conv2d, dense,
//! pooling or softmax into its group as an epilogue) and every fused function is compiled with LLVM 14 (through `inkwell`) into native
//! loops for the host CPU, vectorized and run in parallel chunks on the executor's threads.
//!
//! - [`kernel`]: a fused function as a loop kernel (boxes of the output, each a collapsed
//!   iteration space with strided loads and a DAG; the anchor of an epilogue);
//! - [`reduction`]: the reductions' folds and loop order (bit-identical to the reference);
//! - [`window`]: the windowed poolings' geometry, folded tap by tap as the reference does;
//! - [`index_map`]: the affine index maps through injective ops, and the cutting of the output
//!   into boxes at concatenation and pad boundaries;
//! - [`codegen`]: the kernel as LLVM IR, optimized (`default<O3>`, host CPU) into an object;
//! - [`library`]: the object linked into a shared library by the system C compiler, and
//!   libraries loaded from bytes;
//! - [`module`]: a compiled fused function as a `CompiledModule` (run, serialize);
//! - [`plugin`]: the `host-llvm` plugin that artifacts name for these partitions;
//! - [`custom`]: functions on custom datatypes (`custom[...]` tensors) compiled to loops that
//!   call the datatype plugin's library functions through a table filled at load;
//! - [`host`]: [`compile_host`], fusion and compilation of a whole module with fallback.
//!
//! LLVM stays in this crate: the compiler crates (byoc-ir, byoc-passes, byoc-exec, ...) and
//! the plugins never link it.

pub mod codegen;
pub mod custom;
pub mod host;
pub mod index_map;
pub mod kernel;
pub mod library;
pub mod module;
pub mod plugin;
pub mod reduction;
pub mod window;

pub use host::{
    compile_fused, compile_host, create_host_pass, run_host_passes, Fallback, HostCode,
    HostCodegenError,
};
pub use plugin::{plugin, HostLlvm, PLUGIN_NAME};
