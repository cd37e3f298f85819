//! The compiled dnnl module: the partition's JSON graph and constants, with the runtime built
//! from them. Its bytes (for artifacts) are the graph and the constants, not the primitives:
//! deserializing rebuilds the primitives for the machine it runs on.
//!
//! Byte format (version 1, little-endian):
//! `b"BYOCDNNL"`, `u32 version`, `u64 len` + graph JSON, `u32 count`, then per constant:
//! `u64 len` + name, `u64 len` + dtype name, `u32 rank`, `rank × u64` dims, `u64 len` +
//! row-major bytes.

use std::sync::Arc;

use byoc_core::sdk::{CompiledModule, PluginError};
use byoc_core::tensor::{TensorMut, TensorRef};
use byoc_core::{DType, Tensor, TensorType};
use byoc_json_runtime::ConstantMap;

use crate::runtime::DnnlRuntime;

const MAGIC: &[u8; 8] = b"BYOCDNNL";
const VERSION: u32 = 1;

/// A partition compiled for oneDNN.
#[derive(Debug)]
pub struct DnnlModule {
    json: String,
    constants: ConstantMap,
    runtime: DnnlRuntime,
}

impl DnnlModule {
    /// Builds the runtime of `json` with `constants`.
    pub fn new(
        json: String,
        constants: ConstantMap,
        threads: Option<usize>,
    ) -> Result<Self, PluginError> {
        let runtime = DnnlRuntime::new(&json, &constants, threads)
            .map_err(|e| PluginError::new(e.to_string()))?;
        Ok(DnnlModule {
            json,
            constants,
            runtime,
        })
    }

    /// The runtime.
    pub fn runtime(&self) -> &DnnlRuntime {
        &self.runtime
    }

    /// The graph JSON.
    pub fn json(&self) -> &str {
        &self.json
    }

    /// The module as bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        put(&mut out, self.json.as_bytes());
        out.extend_from_slice(&(self.constants.len() as u32).to_le_bytes());
        for (name, t) in &self.constants {
            put(&mut out, name.as_bytes());
            put(&mut out, t.dtype().to_string().as_bytes());
            out.extend_from_slice(&(t.shape().len() as u32).to_le_bytes());
            for &d in t.shape() {
                out.extend_from_slice(&(d as u64).to_le_bytes());
            }
            put(&mut out, t.as_bytes());
        }
        out
    }

    /// Reads [`DnnlModule::to_bytes`] back and rebuilds the runtime.
    pub fn from_bytes(bytes: &[u8], threads: Option<usize>) -> Result<Self, PluginError> {
        let mut r = Reader { bytes, pos: 0 };
        if r.take(8)? != MAGIC {
            return Err(PluginError::new(
                "not a dnnl module (bad magic; expected BYOCDNNL)",
            ));
        }
        let version = u32::from_le_bytes(r.array()?);
        if version != VERSION {
            return Err(PluginError::new(format!(
                "dnnl module format version {version} is not supported (this plugin reads {VERSION})"
            )));
        }
        let json = r.string("graph")?;
        let count = u32::from_le_bytes(r.array()?);
        let mut constants = ConstantMap::new();
        for i in 0..count {
            let name = r.string("constant name")?;
            let dtype_text = r.string("constant dtype")?;
            let dtype: DType = dtype_text
                .parse()
                .map_err(|e| PluginError::new(format!("constant {i} ('{name}'): {e}")))?;
            let rank = u32::from_le_bytes(r.array()?);
            let shape = (0..rank)
                .map(|_| {
                    usize::try_from(u64::from_le_bytes(r.array()?))
                        .map_err(|_| PluginError::new(format!("constant {i} ('{name}'): dimension overflows")))
                })
                .collect::<Result<Vec<usize>, _>>()?;
            let ty = TensorType::new(shape, dtype);
            let data = r.chunk()?;
            let t = Tensor::from_bytes(ty, data)
                .map_err(|e| PluginError::new(format!("constant {i} ('{name}'): {e}")))?;
            constants.insert(name, Arc::new(t));
        }
        if r.pos != bytes.len() {
            return Err(PluginError::new(format!(
                "dnnl module: {} trailing byte(s)",
                bytes.len() - r.pos
            )));
        }
        DnnlModule::new(json, constants, threads)
    }
}

fn put(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
    out.extend_from_slice(bytes);
}

struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], PluginError> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.bytes.len());
        let Some(end) = end else {
            return Err(PluginError::new(format!(
                "dnnl module truncated at byte {} (needs {n} more)",
                self.pos
            )));
        };
        let s = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], PluginError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }

    fn chunk(&mut self) -> Result<&'a [u8], PluginError> {
        let n = u64::from_le_bytes(self.array()?);
        let n = usize::try_from(n)
            .map_err(|_| PluginError::new("dnnl module: chunk length overflows"))?;
        self.take(n)
    }

    fn string(&mut self, what: &str) -> Result<String, PluginError> {
        let c = self.chunk()?;
        String::from_utf8(c.to_vec())
            .map_err(|_| PluginError::new(format!("dnnl module: {what} is not UTF-8")))
    }
}

impl CompiledModule for DnnlModule {
    fn run(
        &self,
        inputs: &[TensorRef<'_>],
        outputs: &mut [TensorMut<'_>],
    ) -> Result<(), PluginError> {
        self.runtime
            .run(inputs, outputs)
            .map_err(|e| PluginError::new(e.to_string()))
    }

    fn serialize(&self) -> Result<Vec<u8>, PluginError> {
        Ok(self.to_bytes())
    }
}
