//! The in-memory JSON graph: nodes, entries and the graph-level index arrays.
//!
//! A [`JsonGraph`] that came out of [`JsonGraph::parse`] or the serializer is valid: every entry
//! names an existing output of an earlier node, `node_row_ptr` is the prefix sum of the nodes'
//! output counts, `arg_nodes` lists exactly the `input` and `const` nodes, and every node has
//! one `shape`/`dtype` pair per output.

use std::fmt;

use byoc_sdk::ir::TensorType;

/// One output of one node: TVM's `JSONGraphNodeEntry`, written `[node, index, version]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Entry {
    /// The producing node's id.
    pub node: u32,
    /// Which of its outputs.
    pub index: u32,
    /// TVM's version field; always written as 0, carried through on reading.
    pub version: u32,
}

impl Entry {
    /// Output `index` of node `node`, version 0.
    pub fn new(node: u32, index: u32) -> Self {
        Entry {
            node,
            index,
            version: 0,
        }
    }

    /// The node id as an index.
    pub fn node_index(self) -> usize {
        self.node as usize
    }
}

impl fmt::Display for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}, {}, {}]", self.node, self.index, self.version)
    }
}

/// The `op` field of a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NodeKind {
    /// A function parameter (bound per run).
    Input,
    /// A constant (bound once, by name, at initialization).
    Const,
    /// An op or composite call, executed by the kernel provider.
    Kernel,
}

impl NodeKind {
    /// The JSON spelling: `input`, `const` or `kernel`.
    pub fn as_str(self) -> &'static str {
        match self {
            NodeKind::Input => "input",
            NodeKind::Const => "const",
            NodeKind::Kernel => "kernel",
        }
    }

    /// Parses the JSON spelling.
    pub fn from_name(name: &str) -> Option<NodeKind> {
        match name {
            "input" => Some(NodeKind::Input),
            "const" => Some(NodeKind::Const),
            "kernel" => Some(NodeKind::Kernel),
            _ => None,
        }
    }
}

impl fmt::Display for NodeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The op attributes of a node, in document order: each a list of strings, as TVM writes
/// them (`"strides": [["1", "1"]]` is `("strides", ["1", "1"])`). `shape`, `dtype`,
/// `num_inputs` and `num_outputs` are not here; they live in [`JsonNode::outputs`] and are
/// derived from the node.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeAttrs(Vec<(String, Vec<String>)>);

impl NodeAttrs {
    /// No attributes.
    pub fn new() -> Self {
        NodeAttrs::default()
    }

    /// Appends an attribute, or replaces the value of an existing one in place.
    pub fn set(&mut self, name: impl Into<String>, value: Vec<String>) {
        let name = name.into();
        match self.0.iter_mut().find(|(k, _)| *k == name) {
            Some((_, v)) => *v = value,
            None => self.0.push((name, value)),
        }
    }

    /// Removes an attribute, returning its strings.
    pub fn remove(&mut self, name: &str) -> Option<Vec<String>> {
        let i = self.0.iter().position(|(k, _)| k == name)?;
        Some(self.0.remove(i).1)
    }

    /// The attribute's strings.
    pub fn get(&self, name: &str) -> Option<&[String]> {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_slice())
    }

    /// The attribute as one string (`"data_layout": [["NCHW"]]` gives `"NCHW"`).
    pub fn get_str(&self, name: &str) -> Option<&str> {
        match self.get(name)? {
            [one] => Some(one),
            _ => None,
        }
    }

    /// Iterates in document order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &[String])> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_slice()))
    }

    /// Number of attributes.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// One node of the graph.
#[derive(Clone, Debug, PartialEq)]
pub struct JsonNode {
    /// `input`, `const` or `kernel`.
    pub kind: NodeKind,
    /// Parameter name, constant name, or the kernel's op / composite name.
    pub name: String,
    /// The entries this node reads (empty for inputs and constants).
    pub inputs: Vec<Entry>,
    /// One tensor type per output (the `shape` and `dtype` attributes).
    pub outputs: Vec<TensorType>,
    /// The other attributes.
    pub attrs: NodeAttrs,
}

/// A BYOC JSON graph (TVM's `JSONSerializer` output / `JSONRuntimeBase` input).
#[derive(Clone, Debug, PartialEq)]
pub struct JsonGraph {
    /// The `symbol` field (optional on reading; TVM's reader discards it).
    pub symbol: Option<String>,
    /// The nodes; node ids are indices.
    pub nodes: Vec<JsonNode>,
    /// Ids of the leaf (`input` and `const`) nodes, ascending.
    pub arg_nodes: Vec<u32>,
    /// The graph outputs.
    pub heads: Vec<Entry>,
    /// Prefix sums of the nodes' output counts; entry `(n, i)` has id `node_row_ptr[n] + i`.
    pub node_row_ptr: Vec<u32>,
}

impl JsonGraph {
    /// The flat id of an entry (TVM's `EntryID`).
    ///
    /// # Panics
    /// If the entry's node does not exist; entries of a validated graph always do.
    pub fn entry_id(&self, entry: Entry) -> usize {
        self.node_row_ptr[entry.node_index()] as usize + entry.index as usize
    }

    /// The number of entries (TVM's `NumEntries`).
    pub fn num_entries(&self) -> usize {
        self.node_row_ptr.last().map_or(0, |&n| n as usize)
    }

    /// The tensor type of an entry.
    ///
    /// # Panics
    /// If the entry does not exist; entries of a validated graph always do.
    pub fn entry_type(&self, entry: Entry) -> &TensorType {
        &self.nodes[entry.node_index()].outputs[entry.index as usize]
    }

    /// The `input` node ids in `arg_nodes` order.
    pub fn input_nodes(&self) -> impl Iterator<Item = usize> + '_ {
        self.arg_nodes_of(NodeKind::Input)
    }

    /// The `const` node ids in `arg_nodes` order.
    pub fn const_nodes(&self) -> impl Iterator<Item = usize> + '_ {
        self.arg_nodes_of(NodeKind::Const)
    }

    fn arg_nodes_of(&self, kind: NodeKind) -> impl Iterator<Item = usize> + '_ {
        self.arg_nodes
            .iter()
            .map(|&n| n as usize)
            .filter(move |&n| self.nodes[n].kind == kind)
    }

    /// The constant names in `arg_nodes` order (TVM's `const_names`).
    pub fn const_names(&self) -> Vec<String> {
        self.const_nodes()
            .map(|n| self.nodes[n].name.clone())
            .collect()
    }

    /// The input entries in calling order: input nodes in `arg_nodes` order, each node's
    /// outputs in order (a tuple-typed parameter contributes several).
    pub fn input_entries(&self) -> Vec<Entry> {
        self.input_nodes()
            .flat_map(|n| {
                let count = self.nodes[n].outputs.len() as u32;
                (0..count).map(move |i| Entry::new(n as u32, i))
            })
            .collect()
    }
}
