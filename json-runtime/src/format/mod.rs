//! TVM's BYOC JSON graph format (`docs/json-runtime.md`): the types, the reader with validation, and the
//! writer.
//!
//! ```json
//! {"nodes": [{"op": "input", "name": "x", "attrs": {"shape": [[[1, 8]]], "dtype": [["float32"]]}},
//!            {"op": "kernel", "name": "nn.relu", "inputs": [[0, 0, 0]],
//!             "attrs": {"num_inputs": "1", "num_outputs": "1",
//!                       "shape": [[[1, 8]]], "dtype": [["float32"]]}}],
//!  "arg_nodes": [0], "heads": [[1, 0, 0]], "node_row_ptr": [0, 1, 2]}
//! ```

mod error;
mod graph;
mod read;
mod write;

pub use error::FormatError;
pub use graph::{Entry, JsonGraph, JsonNode, NodeAttrs, NodeKind};
