//! The function record: the binary form of a function with its constants as raw bytes.
//!
//! Partitioned functions cross the plugin boundary in it and the built-in `reference` runtime
//! stores its compiled module in it. Layout (integers little-endian):
//!
//! ```text
//! "BYOCFUN\0"          8 bytes magic
//! record version       u32
//! text length          u64
//! text                 UTF-8 Relay text, every constant replaced by a placeholder
//!                      (see crate::placeholders)
//! constant count       u64
//! per constant, in placeholder order:
//!   dtype length       u32
//!   dtype              UTF-8 dtype name (`float32`, `bfloat16`, `custom[posit]16`, ...)
//!   rank               u32
//!   dims               u64 each
//!   data length        u64 (must equal elements x element size)
//!   data               raw little-endian elements
//! ```
//!
//! Reading checks every length against the bytes that remain before it takes or allocates
//! anything, so truncated or damaged bytes give an error that names the part and the offset,
//! never a panic or an allocation sized by a corrupt header. Trailing bytes are an error too.
//! The record carries no checksum: it travels in memory across the boundary, and on disk inside
//! an artifact whose payload checksum covers it.

use std::sync::Arc;

use thiserror::Error;

use byoc_ir::tensor::Tensor;
use byoc_ir::{DType, TensorType};

/// The first bytes of every function record.
pub const RECORD_MAGIC: &[u8; 8] = b"BYOCFUN\0";
/// The record version this SDK writes and reads.
pub const RECORD_VERSION: u32 = 1;

/// Errors of reading a function record; each names the part that is wrong.
#[derive(Debug, Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum RecordError {
    /// The bytes do not start with [`RECORD_MAGIC`].
    #[error("not a function record (the bytes do not start with the function record magic)")]
    NotARecord,
    /// Another record version.
    #[error(
        "function record version {found} is not supported (this SDK reads version {supported})"
    )]
    Version {
        /// The record's version.
        found: u32,
        /// The version this SDK reads.
        supported: u32,
    },
    /// The bytes end inside a part.
    #[error("truncated function record: {what} needs {needed} bytes at offset {offset} but {available} remain")]
    Truncated {
        /// The part that does not fit.
        what: String,
        /// Where it starts.
        offset: usize,
        /// Bytes it needs.
        needed: u64,
        /// Bytes left from `offset`.
        available: usize,
    },
    /// The function text is not UTF-8.
    #[error("function record: the function text is not UTF-8 ({0})")]
    Text(String),
    /// A constant's header is inconsistent.
    #[error("function record: constant {index}: {message}")]
    Constant {
        /// The constant's index.
        index: usize,
        /// What is wrong.
        message: String,
    },
    /// Bytes after the last constant.
    #[error("function record: {count} unexpected bytes after the last constant (offset {offset})")]
    Trailing {
        /// How many.
        count: usize,
        /// Where they start.
        offset: usize,
    },
}

/// Writes a record of `text` and `constants`.
pub(crate) fn write_record(text: &str, constants: &[Arc<Tensor>]) -> Vec<u8> {
    let data: usize = constants
        .iter()
        .map(|t| 32 + 8 * t.shape().len() + t.as_bytes().len())
        .sum();
    let mut out = Vec::with_capacity(RECORD_MAGIC.len() + 4 + 16 + text.len() + data);
    out.extend_from_slice(RECORD_MAGIC);
    out.extend_from_slice(&RECORD_VERSION.to_le_bytes());
    out.extend_from_slice(&(text.len() as u64).to_le_bytes());
    out.extend_from_slice(text.as_bytes());
    out.extend_from_slice(&(constants.len() as u64).to_le_bytes());
    for t in constants {
        let dtype = t.dtype().to_string();
        out.extend_from_slice(&(dtype.len() as u32).to_le_bytes());
        out.extend_from_slice(dtype.as_bytes());
        out.extend_from_slice(&(t.shape().len() as u32).to_le_bytes());
        for &d in t.shape() {
            out.extend_from_slice(&(d as u64).to_le_bytes());
        }
        out.extend_from_slice(&(t.as_bytes().len() as u64).to_le_bytes());
        out.extend_from_slice(t.as_bytes());
    }
    out
}

/// True when `bytes` start with [`RECORD_MAGIC`].
pub(crate) fn is_record(bytes: &[u8]) -> bool {
    bytes.starts_with(RECORD_MAGIC)
}

/// A cursor over the record that checks every read against the bytes left.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: u64, what: &dyn Fn() -> String) -> Result<&'a [u8], RecordError> {
        let available = self.bytes.len() - self.at;
        let truncated = || RecordError::Truncated {
            what: what(),
            offset: self.at,
            needed: n,
            available,
        };
        let n = usize::try_from(n).map_err(|_| truncated())?;
        if n > available {
            return Err(truncated());
        }
        let bytes: &'a [u8] = self.bytes;
        let s = &bytes[self.at..self.at + n];
        self.at += n;
        Ok(s)
    }

    fn u32(&mut self, what: &dyn Fn() -> String) -> Result<u32, RecordError> {
        let mut b = [0u8; 4];
        b.copy_from_slice(self.take(4, what)?);
        Ok(u32::from_le_bytes(b))
    }

    fn u64(&mut self, what: &dyn Fn() -> String) -> Result<u64, RecordError> {
        let mut b = [0u8; 8];
        b.copy_from_slice(self.take(8, what)?);
        Ok(u64::from_le_bytes(b))
    }

    /// The next constant (`index` is for messages).
    fn constant(&mut self, index: usize) -> Result<Arc<Tensor>, RecordError> {
        let part = |p: &'static str| move || format!("constant {index} {p}");
        let bad = |message: String| RecordError::Constant { index, message };
        let len = self.u32(&part("dtype length"))?;
        let name = self.take(u64::from(len), &part("dtype"))?;
        let name = std::str::from_utf8(name)
            .map_err(|_| bad("the dtype name is not UTF-8".to_string()))?;
        let dtype: DType = name.parse().map_err(|e| bad(format!("{e}")))?;
        let rank = self.u32(&part("rank"))?;
        let dims = self.take(u64::from(rank) * 8, &part("dims"))?;
        let shape = dims
            .chunks_exact(8)
            .map(|c| {
                let mut b = [0u8; 8];
                b.copy_from_slice(c);
                usize::try_from(u64::from_le_bytes(b))
                    .map_err(|_| bad("a dimension does not fit in memory".to_string()))
            })
            .collect::<Result<Vec<usize>, _>>()?;
        let ty = TensorType::new(shape, dtype);
        let expected = byoc_ir::memory::tensor_bytes(&ty).map_err(|e| bad(e.to_string()))?;
        let shape = &ty.shape;
        let data_len = self.u64(&part("data length"))?;
        if usize::try_from(data_len) != Ok(expected) {
            return Err(bad(format!(
                "{data_len} data bytes for shape {shape:?} of {dtype}, which needs {expected}"
            )));
        }
        let data = self.take(data_len, &part("data"))?;
        Tensor::from_bytes(ty, data)
            .map(Arc::new)
            .map_err(|e| bad(e.to_string()))
    }
}

/// Reads a record: the function text and the constants its placeholders name.
pub(crate) fn read_record(bytes: &[u8]) -> Result<(&str, Vec<Arc<Tensor>>), RecordError> {
    if !is_record(bytes) {
        return Err(RecordError::NotARecord);
    }
    let mut r = Reader {
        bytes,
        at: RECORD_MAGIC.len(),
    };
    let found = r.u32(&|| "the version".to_string())?;
    if found != RECORD_VERSION {
        return Err(RecordError::Version {
            found,
            supported: RECORD_VERSION,
        });
    }
    let len = r.u64(&|| "the text length".to_string())?;
    let text = r.take(len, &|| "the function text".to_string())?;
    let text = std::str::from_utf8(text).map_err(|e| RecordError::Text(e.to_string()))?;
    let count = r.u64(&|| "the constant count".to_string())?;
    // Each constant takes at least 16 header bytes, so a count past that is caught by the
    // reads below; nothing is reserved from the header's count.
    let mut constants = Vec::new();
    for index in 0..count {
        let index = usize::try_from(index).unwrap_or(usize::MAX);
        constants.push(r.constant(index)?);
    }
    if r.at != bytes.len() {
        return Err(RecordError::Trailing {
            count: bytes.len() - r.at,
            offset: r.at,
        });
    }
    Ok((text, constants))
}
