//! byoc-plugin-dnnl: partitions as TVM-style BYOC JSON graphs, executed with oneDNN
//! primitives — the JSON-codegen kind of BYOC integration (TVM's DNNL codegen and runtime).
//!
//! - [`support`]: what the target takes (ops with their predicates, the `dnnl.*` composite
//!   pattern table, prune settings), as an SDK `TargetDescription`.

pub mod support;
