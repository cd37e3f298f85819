//! Module-to-module passes of the core: type inference and the prepare passes.

mod infer_type;

pub use infer_type::{infer_function, infer_types, TypeInferError};
