//! Tensor files in numpy's formats: `.npy` (one array) and `.npz` (a zip of `.npy` entries,
//! keyed by entry name without `.npy`, as `numpy.savez` writes them).
//!
//! Supported dtypes are numpy's built-in ones that byoc has: `bool`, `int8`, `int16`, `int32`,
//! `int64`, `uint8`, `float16`, `float32`, `float64`. Big-endian data is converted and
//! Fortran-order arrays are transposed to byoc's row-major layout on reading; files are written
//! little-endian in C order. `bfloat16` and custom dtypes have no numpy dtype and are refused on
//! writing. Every failure is an [`IoError`] naming the file and, in an archive, the entry.

mod npy;
mod npy_header;
mod npz;

use std::fmt;
use std::path::PathBuf;

use thiserror::Error;

use byoc_ir::{DType, TensorType};

pub use npy::{read_npy, write_npy};
pub use npz::{read_npz, read_npz_as, read_npz_from, write_npz};

/// A failure to read or write a tensor file.
#[derive(Debug, Error)]
pub struct IoError {
    /// The file.
    pub path: PathBuf,
    /// The archive entry (array name), for `.npz` files.
    pub entry: Option<String>,
    /// What went wrong (shown in the message, so not also its source: the reason is printed
    /// once).
    pub kind: IoErrorKind,
}

impl fmt::Display for IoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.path.display())?;
        if let Some(entry) = &self.entry {
            write!(f, ", array '{entry}'")?;
        }
        write!(f, ": {}", self.kind)
    }
}

/// What went wrong in an [`IoError`].
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum IoErrorKind {
    /// The operating system refused to read or write.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The `.npy` header is missing or malformed.
    #[error("not a valid .npy array: {0}")]
    Header(String),
    /// The file is not a readable zip archive, or an entry is damaged.
    #[error("not a valid .npz archive: {0}")]
    Archive(String),
    /// The array's numpy dtype has no byoc equivalent.
    #[error("numpy dtype '{descr}' is not supported (supported: bool, int8, int16, int32, int64, uint8, float16, float32, float64)")]
    UnsupportedDType {
        /// numpy's description of the dtype (`<c8`, `|S3`, ...).
        descr: String,
    },
    /// The array's size overflows or is over the memory budget.
    #[error("{0}")]
    Size(byoc_ir::memory::SizeError),
    /// The shape's byte size does not fit in memory.
    #[error("shape {shape:?} is too large")]
    TooLarge {
        /// The shape from the header.
        shape: Vec<u64>,
    },
    /// The data after the header is shorter or longer than the shape needs.
    #[error("{ty} needs {expected} bytes of data but the array holds {got}")]
    DataSize {
        /// The array's type.
        ty: TensorType,
        /// Bytes the shape and dtype need.
        expected: usize,
        /// Bytes present.
        got: usize,
    },
    /// A `bool` array element that is neither 0 nor 1.
    #[error("bool element {index} holds {value}, not 0 or 1")]
    BadBool {
        /// The element's row-major index.
        index: usize,
        /// Its byte.
        value: u8,
    },
    /// A tensor of a dtype numpy cannot store.
    #[error("dtype {dtype} has no numpy equivalent; cast the tensor to float32 (or another numpy dtype) before saving")]
    NoNumpyDType {
        /// The tensor's dtype.
        dtype: DType,
    },
}
