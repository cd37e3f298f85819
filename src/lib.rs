//! The byoc driver library: loading models from files, targets (declarative specs and
//! plugins), the partitioning pipeline, its reports (summary, DOT, SVG, HTML), and the commands of the `byoc` tool. The binary in `main.rs` only parses arguments and maps
//! errors to exit codes.

pub mod cli;
pub mod conformance;
pub mod model;
pub mod pipeline;
pub mod plugins;
pub mod report;
pub mod target;

pub use byoc_core as core;
