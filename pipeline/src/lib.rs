//! byoc-pipeline: the library between the compiler crates (byoc-ir, byoc-passes, byoc-exec,
//! ...), byoc-patterns and the `byoc` driver.
//!
//! - [`build()`]: the compiler as one call: partition, codegen of each partition, host
//!   codegen and the executor's plan, into a [`Compiled`] model that runs, profiles, becomes
//!   an artifact and reports;
//! - [`target`]: the pipeline's [`target::Target`], made from a `TargetDescription` (a
//!   plugin's, or a target-spec file's) through one validating path;
//! - [`pipeline`]: the partitioning pipeline, one pass-manager run from prepare to prune;
//! - [`plugins`]: target selection (`--target NAME`, `--target-spec FILE`), each target with
//!   its runtime;
//! - [`model`]: loading `.relay` and `.onnx` models; [`inputs`]: their inputs from `.npz` or
//!   seeded random values, and output names;
//! - [`datatype`]: running a model in a custom datatype (ChangeDatatype with boundary casts);
//! - [`quantize`]: the quantizer's options and calibration samples, and quantizing a model;
//! - [`report`]: the partitioning summary, graph, DOT, SVG and HTML reports;
//! - [`verify`]: checking a partitioned build against a host-only run, output by output;
//! - [`conformance`]: the plugin conformance kit.
//!
//! Plugins use it in tests (the conformance kit, the pipeline) without depending on the
//! driver.

pub mod build;
pub mod conformance;
pub mod datatype;
pub mod inputs;
pub mod model;
pub mod pipeline;
pub mod plugins;
pub mod quantize;
pub mod report;
pub mod target;
pub mod verify;

pub use build::{
    build, build_observed, BuildError, BuildOptions, BuildStep, Compiled, HostCodegen,
};
