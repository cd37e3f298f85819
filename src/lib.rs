//! The byoc driver library: the pipeline that takes a model from a file to results, used by the
//! `byoc` command-line tool.

pub use byoc_core as core;
