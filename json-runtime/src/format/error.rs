//! Errors of reading and validating a JSON graph.

use thiserror::Error;

/// Why a JSON graph was rejected. Every variant names the node (by id) or the graph-level
/// field where the problem is.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum FormatError {
    /// Not JSON, or JSON of the wrong structure (unknown or missing key, wrong value kind);
    /// the message carries line and column.
    #[error("JSON graph: {0}")]
    Json(#[from] serde_json::Error),
    /// A node's `op` is not `input`, `const` or `kernel`.
    #[error("node {node}: unknown op kind '{op}' (expected input, const or kernel)")]
    UnknownOpKind {
        /// The node id.
        node: usize,
        /// The `op` value.
        op: String,
    },
    /// A required attribute is missing.
    #[error("node {node} ('{name}'): missing attribute '{attr}'")]
    MissingAttr {
        /// The node id.
        node: usize,
        /// The node name.
        name: String,
        /// The attribute.
        attr: &'static str,
    },
    /// An attribute does not have TVM's encoding.
    #[error("node {node} ('{name}'): attribute '{attr}' {problem}")]
    BadAttr {
        /// The node id.
        node: usize,
        /// The node name.
        name: String,
        /// The attribute.
        attr: String,
        /// What is wrong, e.g. `must be a list holding one list of strings, got 3`.
        problem: String,
    },
    /// A `dtype` string is not a dtype.
    #[error("node {node} ('{name}'): dtype {index} '{value}' is not a dtype: {reason}")]
    BadDType {
        /// The node id.
        node: usize,
        /// The node name.
        name: String,
        /// The output index.
        index: usize,
        /// The string.
        value: String,
        /// Why it is not one.
        reason: String,
    },
    /// A `shape` holds a negative (dynamic) dimension or one too large.
    #[error("node {node} ('{name}'): shape {index} {shape:?} has an invalid dimension (static, non-negative sizes only)")]
    BadShape {
        /// The node id.
        node: usize,
        /// The node name.
        name: String,
        /// The output index.
        index: usize,
        /// The shape as written.
        shape: Vec<i64>,
    },
    /// An output's size overflows or is over the memory budget.
    #[error("node {node} ('{name}'): output {index}: {source}")]
    Size {
        /// The node id.
        node: usize,
        /// The node name.
        name: String,
        /// The output index.
        index: usize,
        /// The tensor, its size and the budget.
        source: byoc_sdk::ir::memory::SizeError,
    },
    /// `shape` and `dtype` have different lengths, or a declared count disagrees.
    #[error("node {node} ('{name}'): {what} is {got} but {expected_from} gives {expected}")]
    CountMismatch {
        /// The node id.
        node: usize,
        /// The node name.
        name: String,
        /// The field that disagrees (`dtype count`, `num_outputs`, `num_inputs`).
        what: &'static str,
        /// Its value.
        got: usize,
        /// Where the expected count comes from (`shape`, `inputs`).
        expected_from: &'static str,
        /// The expected count.
        expected: usize,
    },
    /// An `input` or `const` node has inputs.
    #[error("node {node} ('{name}'): a {kind} node cannot have inputs")]
    LeafWithInputs {
        /// The node id.
        node: usize,
        /// The node name.
        name: String,
        /// Its kind.
        kind: &'static str,
    },
    /// An entry is not `[node, index]` or `[node, index, version]`.
    #[error("{location}: entry {position} has {len} elements; an entry is [node, index] or [node, index, version]")]
    BadEntry {
        /// Where the entry is (`node 3 inputs`, `heads`).
        location: String,
        /// Its position in that list.
        position: usize,
        /// Its element count.
        len: usize,
    },
    /// An entry names a node or output that does not exist.
    #[error("{location}: entry {entry} is dangling: {reason}")]
    DanglingEntry {
        /// Where the entry is (`node 3 inputs`, `heads`).
        location: String,
        /// The entry as written.
        entry: String,
        /// Why, e.g. `node 9 does not exist (the graph has 4 nodes)`.
        reason: String,
    },
    /// The nodes form a cycle.
    #[error("node {node} ('{name}'): the graph has a cycle through this node")]
    Cycle {
        /// A node on the cycle.
        node: usize,
        /// Its name.
        name: String,
    },
    /// A node reads a later node (acyclic, but not in the topological order the runtime runs).
    #[error("node {node} ('{name}'): input {input} reads node {producer}, which comes later; nodes must be in topological order")]
    ForwardReference {
        /// The reading node.
        node: usize,
        /// Its name.
        name: String,
        /// The input position.
        input: usize,
        /// The later node.
        producer: usize,
    },
    /// `node_row_ptr` is not the prefix sum of the nodes' output counts.
    #[error("node_row_ptr: {problem}")]
    RowPtr {
        /// What is wrong.
        problem: String,
    },
    /// `arg_nodes` is not the list of leaf nodes.
    #[error("arg_nodes: {problem}")]
    ArgNodes {
        /// What is wrong.
        problem: String,
    },
    /// The graph has no outputs.
    #[error("heads: the graph has no outputs")]
    NoHeads,
}
