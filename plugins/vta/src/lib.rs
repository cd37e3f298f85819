//! byoc-plugin-vta: TVM's VTA (Versatile Tensor Accelerator) as a byoc target — a custom
//! accelerator with its own compiler backend.
//!
//! ```text
//! partition of vta.* composites ──compiler::read_partition──> layers (int8 conv2d/dense + epilogue)
//!     ──compiler::program::compile_layer──> LOAD/GEMM/ALU/STORE stream + micro-op kernels
//!     ──VtaModule::run──> pack tensors into a DRAM image, sim::Simulator::run, unpack the output
//! ```
//!
//! - [`config`]: the hardware configuration (`vta_config.json` keys), validated.
//! - [`isa`]: instructions and micro-ops, bit-exact encode/decode, assembly text.
//! - [`sim`]: the simulator (fsim semantics, module queues, dependency tokens, cycle model,
//!   profiler counters).
//! - [`compiler`]: layers, tiling, packing, instruction stream generation.
//! - [`module`]: the compiled partition, its run and its serialized form.
//! - [`plugin`]: [`Vta`], the SDK `Plugin`, exported from the `cdylib` below.
//!
//! `docs/vta.md` describes the ISA, the compilation of a convolution, the cycle model and the
//! profile.

pub mod compiler;
pub mod config;
pub mod isa;
pub mod module;
pub mod plugin;
pub mod sim;

pub use config::{ConfigError, VtaConfig};
pub use module::VtaModule;
pub use plugin::{Settings, Vta};
pub use sim::{Profile, SimError, Simulator};

byoc_sdk::export_plugin!(Vta, Vta::new());
