//! The compiled module of one csource partition as the SDK sees it, and its serialized form.
//!
//! [`CSourceModule`] holds the [`SharedObject`] (the `.so` bytes and the entry's signature)
//! and the [`LoadedPartition`] made from it; `run` passes the SDK's views straight to the
//! generated entry (no copies), `serialize` writes [`SharedObject`] in the layout below, and
//! [`CSourceModule::from_bytes`] reads it back and loads the object without any compiler.
//!
//! Layout (integers little-endian, version [`FORMAT_VERSION`]):
//!
//! ```text
//! "BYOCCSO\0"       8 bytes magic
//! format version    u32
//! header length     u32
//! header            JSON: {"symbol", "inputs": [shape...], "outputs": [shape...],
//!                          "constants": [shape...], "object_len"}   (all float32)
//! shared object     object_len bytes
//! constants         the passed-in constants' float32 data, in order, native byte order
//! ```
//!
//! Reading checks the magic, the version, that the header parses, that the sections add up
//! to the byte count exactly and that the symbol is a C identifier, before the object is
//! written to a temporary file and opened.

use std::sync::Arc;

use byoc_sdk::ir::Tensor;
use byoc_sdk::ir::TensorType;
use byoc_sdk::{CompiledModule, PluginError, TensorMut, TensorRef};
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::codegen::is_c_identifier;
use crate::compile::SharedObject;
use crate::runtime::{LoadError, LoadedPartition};
use crate::support::DTYPE;

/// The first bytes of a serialized csource module.
pub const MODULE_MAGIC: &[u8; 8] = b"BYOCCSO\0";
/// The layout version this crate writes and reads.
pub const FORMAT_VERSION: u32 = 1;
/// Bytes before the header: magic, version, header length.
const PREFIX_LEN: usize = 8 + 4 + 4;

/// Why serialized module bytes could not be read.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ModuleFormatError {
    /// The bytes do not start with [`MODULE_MAGIC`].
    #[error("not a csource module (the {len} bytes do not start with the csource module magic)")]
    NotAModule {
        /// How many bytes there are.
        len: usize,
    },
    /// Another layout version.
    #[error("csource module format version {found} is not supported (this plugin reads version {supported}); rebuild the artifact")]
    Version {
        /// The version in the bytes.
        found: u32,
        /// The version this plugin reads.
        supported: u32,
    },
    /// The header is not the expected JSON.
    #[error("csource module header: {0}")]
    Header(String),
    /// The sections do not add up to the byte count.
    #[error("csource module: the header describes {expected} bytes but there are {found}")]
    Length {
        /// Bytes the header and prefix describe.
        expected: usize,
        /// Bytes given.
        found: usize,
    },
    /// The embedded shared object does not load.
    #[error(transparent)]
    Load(#[from] LoadError),
}

/// The JSON header of the layout.
#[derive(Serialize, Deserialize)]
struct Header {
    symbol: String,
    inputs: Vec<Vec<usize>>,
    outputs: Vec<Vec<usize>>,
    constants: Vec<Vec<usize>>,
    object_len: usize,
}

/// A compiled, loaded csource partition.
#[derive(Debug)]
pub struct CSourceModule {
    object: SharedObject,
    partition: LoadedPartition,
}

fn shapes(types: &[TensorType]) -> Vec<Vec<usize>> {
    types.iter().map(|t| t.shape.clone()).collect()
}

fn types(shapes: Vec<Vec<usize>>) -> Vec<TensorType> {
    shapes
        .into_iter()
        .map(|s| TensorType::new(s, DTYPE))
        .collect()
}

impl CSourceModule {
    /// Loads a compiled partition.
    pub fn load(object: SharedObject) -> Result<Self, LoadError> {
        let partition = LoadedPartition::load(&object)?;
        Ok(CSourceModule { object, partition })
    }

    /// The compiled shared object and its signature.
    pub fn object(&self) -> &SharedObject {
        &self.object
    }

    /// The layout of the module docs.
    pub fn to_bytes(&self) -> Vec<u8> {
        let o = &self.object;
        let header = Header {
            symbol: o.symbol.clone(),
            inputs: shapes(&o.inputs),
            outputs: shapes(&o.outputs),
            constants: o.constants.iter().map(|c| c.shape().to_vec()).collect(),
            object_len: o.bytes.len(),
        };
        // Strings, numbers and lists always serialize.
        let header = serde_json::to_vec(&header).unwrap_or_default();
        let mut out = Vec::with_capacity(PREFIX_LEN + header.len() + o.bytes.len());
        out.extend_from_slice(MODULE_MAGIC);
        out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        out.extend_from_slice(&(header.len() as u32).to_le_bytes());
        out.extend_from_slice(&header);
        out.extend_from_slice(&o.bytes);
        for c in &o.constants {
            out.extend_from_slice(c.as_bytes());
        }
        out
    }

    /// Reads the layout of the module docs and loads the shared object.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, ModuleFormatError> {
        let len = bytes.len();
        if len < PREFIX_LEN || &bytes[..8] != MODULE_MAGIC {
            return Err(ModuleFormatError::NotAModule { len });
        }
        let word = |at: usize| {
            u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
        };
        let version = word(8);
        if version != FORMAT_VERSION {
            return Err(ModuleFormatError::Version {
                found: version,
                supported: FORMAT_VERSION,
            });
        }
        let header_end = PREFIX_LEN.saturating_add(word(12) as usize);
        let header = bytes
            .get(PREFIX_LEN..header_end)
            .ok_or(ModuleFormatError::Length {
                expected: header_end,
                found: len,
            })?;
        let header: Header =
            serde_json::from_slice(header).map_err(|e| ModuleFormatError::Header(e.to_string()))?;
        if !is_c_identifier(&header.symbol) {
            return Err(ModuleFormatError::Header(format!(
                "symbol '{}' is not a C identifier",
                header.symbol
            )));
        }
        let constants = types(header.constants);
        let sizes: Option<usize> = constants
            .iter()
            .try_fold(header.object_len, |acc, t| acc.checked_add(t.size_bytes()));
        let expected = sizes.and_then(|s| s.checked_add(header_end));
        if expected != Some(len) {
            return Err(ModuleFormatError::Length {
                expected: expected.unwrap_or(usize::MAX),
                found: len,
            });
        }
        let mut at = header_end + header.object_len;
        let mut tensors = Vec::with_capacity(constants.len());
        for ty in constants {
            let end = at + ty.size_bytes();
            let t = Tensor::from_bytes(ty, &bytes[at..end])
                .map_err(|e| ModuleFormatError::Header(e.to_string()))?;
            tensors.push(Arc::new(t));
            at = end;
        }
        let object = SharedObject {
            symbol: header.symbol,
            bytes: bytes[header_end..header_end + header.object_len].to_vec(),
            inputs: types(header.inputs),
            outputs: types(header.outputs),
            constants: tensors,
        };
        Ok(CSourceModule::load(object)?)
    }
}

impl CompiledModule for CSourceModule {
    fn run(
        &self,
        inputs: &[TensorRef<'_>],
        outputs: &mut [TensorMut<'_>],
    ) -> Result<(), PluginError> {
        self.partition
            .run(inputs, outputs)
            .map_err(|e| PluginError::new(e.to_string()))
    }

    fn serialize(&self) -> Result<Vec<u8>, PluginError> {
        Ok(self.to_bytes())
    }
}
