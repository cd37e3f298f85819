//! A graph and its constants as one byte string: what a JSON-style plugin's compiled module
//! serializes to, so an artifact can hold it (TVM's `SaveToBinary` of the JSON runtime plus the
//! constants `ConstLoaderModule` keeps beside it, in one record).
//!
//! Layout, all integers little-endian:
//!
//! ```text
//! 0   magic            8 bytes  "BYOCJSON"
//! 8   format version   u32      1
//! 12  JSON length      u64      then the graph as JSON text (UTF-8, `JsonGraph::to_json`)
//!     constant count   u64      = the number of `const` nodes
//!     per `const` node, in `arg_nodes` order (TVM's `const_names` order):
//!         byte length  u64      = the node's declared type's size
//!         elements              row-major, each in its dtype's little-endian representation
//! ```
//!
//! Constants are not named or typed in the byte string: the graph's `const` nodes carry both.
//! Reading validates the graph (as [`JsonGraph::parse`]) and every length, and refuses
//! trailing bytes, so a truncated or spliced record is an error naming what is wrong and at
//! which offset, never a panic. Writing is deterministic: equal inputs give equal bytes.

use std::sync::Arc;

use byoc_sdk::ir::tensor::Tensor;
use thiserror::Error;

use crate::format::{FormatError, JsonGraph};
use crate::runtime::ConstantMap;
use crate::serialize::Serialized;

/// The first 8 bytes of every record.
pub const MAGIC: &[u8; 8] = b"BYOCJSON";

/// The format version this crate writes and reads.
pub const FORMAT_VERSION: u32 = 1;

/// Why a graph and its constants could not be written to or read from bytes.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum BinaryError {
    /// The bytes do not start with [`MAGIC`].
    #[error("not a byoc JSON graph record (the bytes do not start with \"BYOCJSON\")")]
    Magic,
    /// A format version this crate does not read.
    #[error("JSON graph record format version {found} is not supported (this byoc reads version {supported})")]
    Version {
        /// The version in the bytes.
        found: u32,
        /// The version this crate reads.
        supported: u32,
    },
    /// The bytes end inside a field.
    #[error("JSON graph record truncated: {what} at byte {offset} needs {needed} bytes, {available} left")]
    Truncated {
        /// The field being read.
        what: String,
        /// Where it starts.
        offset: usize,
        /// Its size.
        needed: u64,
        /// The bytes left from `offset`.
        available: usize,
    },
    /// Bytes after the last constant.
    #[error("JSON graph record has {count} trailing bytes after the last constant")]
    Trailing {
        /// How many.
        count: usize,
    },
    /// The JSON text is not UTF-8.
    #[error("JSON graph record: the graph text is not UTF-8: {0}")]
    Utf8(#[from] std::str::Utf8Error),
    /// The JSON text is not a valid graph.
    #[error("JSON graph record: {0}")]
    Graph(#[from] FormatError),
    /// The record holds another number of constants than the graph has `const` nodes.
    #[error("JSON graph record holds {found} constants but the graph has {expected} const nodes")]
    ConstantCount {
        /// The graph's `const` nodes.
        expected: usize,
        /// The record's count.
        found: u64,
    },
    /// A `const` node has no constant (writing).
    #[error("{symbol}: constant '{name}' (node {node}) was not provided")]
    MissingConstant {
        /// The graph symbol.
        symbol: String,
        /// The node id.
        node: usize,
        /// The constant name.
        name: String,
    },
    /// A constant's type (writing) or byte length (reading) differs from its node's type.
    #[error("{symbol}: constant '{name}' (node {node}) {problem}")]
    ConstantType {
        /// The graph symbol.
        symbol: String,
        /// The node id.
        node: usize,
        /// The constant name.
        name: String,
        /// What differs.
        problem: String,
    },
}

fn symbol_of(graph: &JsonGraph) -> String {
    graph
        .symbol
        .clone()
        .unwrap_or_else(|| "JSON graph".to_string())
}

fn put_u64(out: &mut Vec<u8>, n: usize) {
    out.extend_from_slice(&(n as u64).to_le_bytes());
}

impl Serialized {
    /// The graph and its constants as bytes (layout in the [module docs](self)). Every `const`
    /// node needs a constant of its declared type; constants no node names are left out.
    pub fn to_bytes(&self) -> Result<Vec<u8>, BinaryError> {
        let json = self.graph.to_json();
        let symbol = || symbol_of(&self.graph);
        let mut consts = Vec::new();
        for n in self.graph.const_nodes() {
            let node = &self.graph.nodes[n];
            let tensor =
                self.constants
                    .get(&node.name)
                    .ok_or_else(|| BinaryError::MissingConstant {
                        symbol: symbol(),
                        node: n,
                        name: node.name.clone(),
                    })?;
            let declared = &node.outputs[0];
            if tensor.ty() != declared {
                return Err(BinaryError::ConstantType {
                    symbol: symbol(),
                    node: n,
                    name: node.name.clone(),
                    problem: format!("is {} but the graph declares {declared}", tensor.ty()),
                });
            }
            consts.push(tensor.as_bytes());
        }
        let payload: usize = consts.iter().map(|c| 8 + c.len()).sum();
        let mut out = Vec::with_capacity(MAGIC.len() + 4 + 8 + json.len() + 8 + payload);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        put_u64(&mut out, json.len());
        out.extend_from_slice(json.as_bytes());
        put_u64(&mut out, consts.len());
        for c in consts {
            put_u64(&mut out, c.len());
            out.extend_from_slice(c);
        }
        Ok(out)
    }

    /// Reads what [`Serialized::to_bytes`] wrote: the graph is parsed and validated, and each
    /// `const` node gets its constant, checked against the node's type.
    pub fn from_bytes(bytes: &[u8]) -> Result<Serialized, BinaryError> {
        let mut r = Reader { bytes, at: 0 };
        if r.take(MAGIC.len() as u64, "magic")? != MAGIC {
            return Err(BinaryError::Magic);
        }
        let version = r.u32("format version")?;
        if version != FORMAT_VERSION {
            return Err(BinaryError::Version {
                found: version,
                supported: FORMAT_VERSION,
            });
        }
        let json_len = r.u64("JSON length")?;
        let json = std::str::from_utf8(r.take(json_len, "graph JSON")?)?;
        let graph = JsonGraph::parse(json)?;
        let const_nodes: Vec<usize> = graph.const_nodes().collect();
        let count = r.u64("constant count")?;
        if count != const_nodes.len() as u64 {
            return Err(BinaryError::ConstantCount {
                expected: const_nodes.len(),
                found: count,
            });
        }
        let mut constants = ConstantMap::new();
        for n in const_nodes {
            let node = &graph.nodes[n];
            let what = || format!("constant '{}' (node {n})", node.name);
            let len = r.u64(&format!("byte length of {}", what()))?;
            let ty = &node.outputs[0];
            if len != ty.size_bytes() as u64 {
                return Err(BinaryError::ConstantType {
                    symbol: symbol_of(&graph),
                    node: n,
                    name: node.name.clone(),
                    problem: format!("has {len} bytes but {ty} takes {}", ty.size_bytes()),
                });
            }
            let data = r.take(len, &what())?;
            // The length was checked against the type just above.
            let tensor =
                Tensor::from_bytes(ty.clone(), data).map_err(|e| BinaryError::ConstantType {
                    symbol: symbol_of(&graph),
                    node: n,
                    name: node.name.clone(),
                    problem: e.to_string(),
                })?;
            constants.insert(node.name.clone(), Arc::new(tensor));
        }
        if r.at != bytes.len() {
            return Err(BinaryError::Trailing {
                count: bytes.len() - r.at,
            });
        }
        Ok(Serialized { graph, constants })
    }
}

/// A cursor over the record with bounds-checked reads.
struct Reader<'b> {
    bytes: &'b [u8],
    at: usize,
}

impl<'b> Reader<'b> {
    fn take(&mut self, n: u64, what: &str) -> Result<&'b [u8], BinaryError> {
        let available = self.bytes.len() - self.at;
        let end = usize::try_from(n)
            .ok()
            .filter(|&n| n <= available)
            .map(|n| self.at + n)
            .ok_or_else(|| BinaryError::Truncated {
                what: what.to_string(),
                offset: self.at,
                needed: n,
                available,
            })?;
        let slice = &self.bytes[self.at..end];
        self.at = end;
        Ok(slice)
    }

    fn u32(&mut self, what: &str) -> Result<u32, BinaryError> {
        let b = self.take(4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self, what: &str) -> Result<u64, BinaryError> {
        let b = self.take(8, what)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }
}
