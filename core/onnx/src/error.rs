//! Errors of the ONNX importer. Each names the file part it is about: the node (name and op
//! type), the value, the attribute or the input.

use std::fmt;
use std::path::PathBuf;

use thiserror::Error;

use byoc_ir::op::TypeError;
use byoc_ir::IrError;
use byoc_ir::TypeInferError;

/// One unsupported op type of a model: how many nodes use it and the first of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnsupportedOp {
    /// The op type (with its domain when not the default one, `com.microsoft.Gelu`).
    pub op_type: String,
    /// Number of nodes of this type.
    pub count: usize,
    /// The name of the first such node (or `#<index>` when unnamed).
    pub first_node: String,
}

impl fmt::Display for UnsupportedOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let plural = if self.count == 1 { "" } else { "s" };
        write!(
            f,
            "{} ({} node{plural}, first '{}')",
            self.op_type, self.count, self.first_node
        )
    }
}

/// Where in a model a node-level error happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeRef {
    /// The node's name (or `#<index>` when unnamed).
    pub name: String,
    /// Its op type.
    pub op_type: String,
}

impl fmt::Display for NodeRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "node '{}' ({})", self.name, self.op_type)
    }
}

/// An error of [`super::import_file`] / [`super::import_bytes`].
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum OnnxError {
    /// The model file (or an external data file) could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The bytes are not a protobuf message of the ONNX schema (truncated, or another format).
    #[error("not a valid ONNX model: protobuf decoding failed ({reason}); the file is truncated or not an ONNX file")]
    Decode {
        /// What the decoder reported.
        reason: String,
    },
    /// The bytes decode, but not to a model (no graph or no IR version).
    #[error("not an ONNX model: {reason}")]
    NotAModel {
        /// What is missing.
        reason: String,
    },
    /// The default-domain opset is outside the supported range.
    #[error("ONNX opset {version} is not supported (supported: {min} to {max})")]
    Opset {
        /// The model's opset.
        version: i64,
        /// Lowest supported.
        min: i64,
        /// Highest supported.
        max: i64,
    },
    /// Op types the importer cannot convert, all of them.
    #[error("unsupported ONNX ops: {}", list(.ops))]
    UnsupportedOps {
        /// Each op type with its count and first node.
        ops: Vec<UnsupportedOp>,
    },
    /// A node input names no value (no node output, initializer or graph input).
    #[error("{node} uses input '{input}', which no node, initializer or graph input defines")]
    UndefinedInput {
        /// The node.
        node: NodeRef,
        /// The missing value.
        input: String,
    },
    /// A graph output names no value.
    #[error("graph output '{output}' is not produced by any node, initializer or graph input")]
    UndefinedOutput {
        /// The output name.
        output: String,
    },
    /// Two producers for one value name.
    #[error("value '{value}' is defined twice (by {first} and by {second})")]
    DuplicateValue {
        /// The value.
        value: String,
        /// The first definition.
        first: String,
        /// The second definition.
        second: String,
    },
    /// The graph breaks a whole-graph rule (no outputs, a graph input declared twice, an
    /// initializer that contradicts its graph input).
    #[error("invalid ONNX graph: {reason}")]
    InvalidGraph {
        /// What is wrong, naming the values involved.
        reason: String,
    },
    /// The nodes form a cycle.
    #[error("the graph has a cycle through nodes {}", quoted(.nodes))]
    Cycle {
        /// Nodes on (or waiting on) the cycle.
        nodes: Vec<String>,
    },
    /// An attribute has the wrong type.
    #[error("{node}: attribute '{attr}' must be {expected}, got {got}")]
    AttributeType {
        /// The node.
        node: NodeRef,
        /// The attribute.
        attr: String,
        /// What the op needs (`INTS`).
        expected: String,
        /// What the model has.
        got: String,
    },
    /// A graph input has a symbolic or unknown dimension that `--input-shape` does not fix.
    #[error("input '{input}' has {what} dimension {dim}; fix its shape with --input-shape {input}={example}")]
    SymbolicDim {
        /// The input.
        input: String,
        /// The dimension index.
        dim: usize,
        /// `symbolic ('batch')` or `unknown`.
        what: String,
        /// A suggested value for the flag, with the symbolic dims as 1.
        example: String,
    },
    /// `--input-shape` does not fit the model.
    #[error("--input-shape {input}: {reason}")]
    InputShape {
        /// The input named by the flag.
        input: String,
        /// What is wrong.
        reason: String,
    },
    /// A graph input, output or tensor of a type the importer cannot represent.
    #[error("'{name}': {reason}")]
    BadValue {
        /// The value or tensor name.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// External data of a tensor could not be read.
    #[error("tensor '{tensor}': external data '{location}': {reason}")]
    ExternalData {
        /// The tensor.
        tensor: String,
        /// The `location` entry.
        location: String,
        /// What is wrong.
        reason: String,
    },
    /// A node the converter rejects (attribute value, rank, non-constant input where a constant
    /// is needed, ...).
    #[error("{node}: {reason}")]
    Node {
        /// The node.
        node: NodeRef,
        /// What is wrong.
        reason: String,
    },
    /// The Relay ops built for a node do not type-check.
    #[error("{node}: {error}")]
    Type {
        /// The node.
        node: NodeRef,
        /// The type error.
        error: TypeError,
    },
    /// Assembling `@main` failed.
    #[error("building @main failed: {0}")]
    Build(#[from] IrError),
    /// The imported module does not type-check.
    #[error("the imported module does not type-check: {0}")]
    Infer(#[from] TypeInferError),
    /// Building the IR for a node failed.
    #[error("{node}: {error}")]
    Ir {
        /// The node.
        node: NodeRef,
        /// The IR error.
        error: IrError,
    },
}

fn list(ops: &[UnsupportedOp]) -> String {
    ops.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

fn quoted(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("'{n}'"))
        .collect::<Vec<_>>()
        .join(", ")
}
