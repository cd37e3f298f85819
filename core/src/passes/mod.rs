//! Module-to-module passes of the core: type inference and the prepare passes.

pub mod annotate_target;
mod infer_type;
pub mod merge_compiler_regions;
pub mod partition_graph;
pub mod prune;

pub use infer_type::{infer_function, infer_types, TypeInferError};
