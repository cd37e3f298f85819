//! A compiled fused function: its kernel in a loaded shared library, run over the output in
//! parallel chunks with the executor's thread count, and its artifact bytes.
//!
//! Serialized form (integers little-endian): `"BYOCHOST"`, format version `u32`, header length
//! `u64`, the header (JSON: symbol, input and output element counts), then the shared library.
//! Reading checks each part's bounds before using it.

use std::sync::Arc;

use byoc_core::ir::DType;
use byoc_core::sdk::{CompiledModule, PluginError};
use byoc_core::tensor::{TensorMut, TensorRef};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::library::{self, KernelFn, Library};

/// The first bytes of a serialized module.
const MAGIC: &[u8; 8] = b"BYOCHOST";
/// The serialized format's version.
const VERSION: u32 = 1;
/// Output elements per parallel task, at least.
const MIN_CHUNK: usize = 1 << 14;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Header {
    symbol: String,
    input_lens: Vec<usize>,
    output_len: usize,
}

/// One compiled fused function.
pub struct HostModule {
    header: Header,
    library: Arc<Library>,
    kernel: KernelFn,
    threads: usize,
}

impl std::fmt::Debug for HostModule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostModule")
            .field("header", &self.header)
            .field("threads", &self.threads)
            .finish_non_exhaustive()
    }
}

/// Raw buffer pointers handed to the kernel from several threads.
struct Buffers(Vec<*mut f32>);
// SAFETY: the kernel only reads the inputs and writes disjoint output ranges per call.
unsafe impl Send for Buffers {}
// SAFETY: as above.
unsafe impl Sync for Buffers {}

impl Buffers {
    /// The pointer array the kernel takes (whole-struct access keeps closures `Sync`).
    fn as_ptr(&self) -> *const *mut f32 {
        self.0.as_ptr()
    }
}

impl HostModule {
    /// The kernel `symbol` of `library`, with its inputs' and output's element counts.
    pub fn new(
        library: Arc<Library>,
        symbol: &str,
        input_lens: Vec<usize>,
        output_len: usize,
        threads: usize,
    ) -> Result<HostModule, PluginError> {
        let kernel = library.kernel(symbol).map_err(|e| PluginError::new(e.0))?;
        Ok(HostModule {
            header: Header {
                symbol: symbol.to_string(),
                input_lens,
                output_len,
            },
            library,
            kernel,
            threads: threads.max(1),
        })
    }

    /// Reads the bytes of [`CompiledModule::serialize`].
    pub fn from_bytes(bytes: &[u8], threads: usize) -> Result<HostModule, PluginError> {
        let bad = |what: &str| PluginError::new(format!("malformed host kernel module: {what}"));
        if bytes.get(..8) != Some(&MAGIC[..]) {
            return Err(bad("it does not start with the host module magic"));
        }
        let version = bytes
            .get(8..12)
            .and_then(|b| b.try_into().ok())
            .map(u32::from_le_bytes)
            .ok_or_else(|| bad("truncated version"))?;
        if version != VERSION {
            return Err(bad(&format!(
                "format version {version} (this byoc reads {VERSION})"
            )));
        }
        let header_len = bytes
            .get(12..20)
            .and_then(|b| b.try_into().ok())
            .map(u64::from_le_bytes)
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| bad("truncated header length"))?;
        let header_end = 20usize
            .checked_add(header_len)
            .filter(|&e| e <= bytes.len())
            .ok_or_else(|| bad("the header runs past the end"))?;
        let header: Header = serde_json::from_slice(&bytes[20..header_end])
            .map_err(|e| bad(&format!("header: {e}")))?;
        let library = library::load(Arc::new(bytes[header_end..].to_vec()))
            .map_err(|e| PluginError::new(e.0))?;
        HostModule::new(
            library,
            &header.symbol,
            header.input_lens,
            header.output_len,
            threads,
        )
    }
}

fn f32_view(t: &TensorRef<'_>, len: usize, what: &str) -> Result<*const f32, PluginError> {
    if t.ty.dtype != DType::Float32 || t.ty.num_elements() != len || t.bytes.len() != len * 4 {
        return Err(PluginError::new(format!(
            "{what} is {} but the host kernel takes {len} float32 elements",
            t.ty
        )));
    }
    Ok(t.bytes.as_ptr().cast())
}

impl CompiledModule for HostModule {
    fn run(
        &self,
        inputs: &[TensorRef<'_>],
        outputs: &mut [TensorMut<'_>],
    ) -> Result<(), PluginError> {
        let h = &self.header;
        if inputs.len() != h.input_lens.len() || outputs.len() != 1 {
            return Err(PluginError::new(format!(
                "host kernel {} takes {} input(s) and 1 output, got {} and {}",
                h.symbol,
                h.input_lens.len(),
                inputs.len(),
                outputs.len()
            )));
        }
        let out = &mut outputs[0];
        if out.ty.dtype != DType::Float32
            || out.ty.num_elements() != h.output_len
            || out.bytes.len() != h.output_len * 4
        {
            return Err(PluginError::new(format!(
                "the output is {} but host kernel {} writes {} float32 elements",
                out.ty, h.symbol, h.output_len
            )));
        }
        let mut ptrs = vec![out.bytes.as_mut_ptr().cast::<f32>()];
        for (k, (t, &len)) in inputs.iter().zip(&h.input_lens).enumerate() {
            ptrs.push(f32_view(t, len, &format!("input {k}"))?.cast_mut());
        }
        let bufs = Buffers(ptrs);
        let n = h.output_len;
        let kernel = self.kernel;
        let call = |lo: usize, hi: usize| {
            // SAFETY: every buffer was checked to hold its kernel's element count, the output
            // does not overlap the inputs (the executor's storage rule), and concurrent calls
            // write disjoint ranges of it.
            unsafe { kernel(bufs.as_ptr(), lo as i64, hi as i64) }
        };
        let tasks = (n / MIN_CHUNK).clamp(1, self.threads * 4);
        if tasks == 1 || self.threads == 1 {
            if n > 0 {
                call(0, n);
            }
        } else {
            let chunk = n.div_ceil(tasks);
            (0..tasks).into_par_iter().for_each(|t| {
                let lo = t * chunk;
                let hi = (lo + chunk).min(n);
                if lo < hi {
                    call(lo, hi);
                }
            });
        }
        Ok(())
    }

    fn serialize(&self) -> Result<Vec<u8>, PluginError> {
        let header = serde_json::to_vec(&self.header)?;
        let lib = self.library.bytes();
        let mut out = Vec::with_capacity(20 + header.len() + lib.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&(header.len() as u64).to_le_bytes());
        out.extend_from_slice(&header);
        out.extend_from_slice(lib);
        Ok(out)
    }
}
