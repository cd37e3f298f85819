//! The byoc driver library: the command-line tool's library side (checking a partitioned
//! build against the host, progress indicators) over byoc-pipeline, whose modules it re-exports, and the commands of the
//! `byoc` tool ([`cli`]: argument parsing and printing). The binary in `main.rs` only parses
//! arguments and maps errors to exit codes.

pub mod cli;
pub mod progress;
pub mod verify;

pub use byoc_core as core;
pub use byoc_pipeline::{
    conformance, datatype, inputs, model, pipeline, plugins, quantize, report, target,
};
