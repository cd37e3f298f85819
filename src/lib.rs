//! The byoc driver library: the commands of the `byoc` tool ([`cli`]: argument parsing and
//! printing) and their progress indicators ([`progress`]), over byoc-pipeline, whose modules it
//! re-exports (the compiler as one call, `byoc_pipeline::build`, and checking a partitioned
//! build against the host, [`verify`], are there). The binary in `main.rs` only parses
//! arguments and maps errors to exit codes.

pub mod cli;
pub mod progress;

pub use byoc_pipeline::{
    conformance, datatype, inputs, model, pipeline, plugins, quantize, report, target, verify,
};
