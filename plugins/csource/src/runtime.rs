//! Loading a compiled partition and running it on tensor views.
//!
//! [`LoadedPartition::load`] first checks the bytes without running them
//! ([`check_shared_object`]: an ELF shared object for this machine exporting the entry
//! symbol), then writes the shared object's bytes to a private temporary file
//! (created with mode 0600 under a random name), opens it with `libloading` (`dlopen`),
//! looks up the entry symbol and deletes the file (the mapping stays valid). The library is
//! never unloaded: the handle is leaked on purpose, so the entry's function pointer stays
//! valid for the life of the process, runs on other threads can never race an unload, and no
//! `dlclose` runs library destructors while a caller still holds the partition. The cost is
//! the mapping of each loaded module (the size of its code and constants) until exit.
//!
//! [`LoadedPartition::run`] checks every view against the partition's types, builds DLPack
//! `DLTensor` descriptors over the views' bytes (no copies) and calls the entry; the passed-in
//! constants are appended after the outputs.

use std::ffi::{c_char, c_void};
use std::io::Write as _;
use std::sync::Arc;

use byoc_sdk::ir::tensor::{TensorMut, TensorRef};
use byoc_sdk::ir::Tensor;
use byoc_sdk::ir::TensorType;
use byoc_sdk::native::{check_shared_object, NativeCodeError};
use thiserror::Error;

use crate::compile::SharedObject;

/// DLPack's `DLDevice`.
#[repr(C)]
struct DlDevice {
    device_type: i32,
    device_id: i32,
}

/// DLPack's `DLDataType`.
#[repr(C)]
struct DlDataType {
    code: u8,
    bits: u8,
    lanes: u16,
}

/// DLPack's `DLTensor` (the generated C calls it `byoc_tensor`).
#[repr(C)]
struct DlTensor {
    data: *mut c_void,
    device: DlDevice,
    ndim: i32,
    dtype: DlDataType,
    shape: *mut i64,
    strides: *mut i64,
    byte_offset: u64,
}

/// DLPack's CPU device type and float type code.
const DL_CPU: i32 = 1;
const DL_FLOAT: u8 = 2;

/// The generated entry: arguments, their count, an error buffer and its length.
type EntryFn = unsafe extern "C" fn(*const *const DlTensor, i32, *mut c_char, u64) -> i32;

/// Bytes of the error message buffer handed to the entry.
const ERR_LEN: usize = 1024;

/// Why a shared object could not be loaded.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum LoadError {
    /// Writing the private temporary copy failed.
    #[error("partition {symbol}: cannot write the shared object to a temporary file: {source}")]
    Io {
        /// The partition symbol.
        symbol: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The bytes are not an ELF shared object for this machine with the entry symbol.
    #[error("partition {symbol}: the compiled module ({len} bytes) is not a loadable shared object: {source}")]
    Invalid {
        /// The partition symbol.
        symbol: String,
        /// Size of the byte string.
        len: usize,
        /// What the check found.
        source: NativeCodeError,
    },
    /// The dynamic loader refused the bytes.
    #[error("partition {symbol}: the compiled module ({len} bytes) is not a loadable shared object: {source}")]
    Open {
        /// The partition symbol.
        symbol: String,
        /// Size of the byte string.
        len: usize,
        /// The loader's error.
        source: libloading::Error,
    },
    /// The shared object does not export the entry symbol.
    #[error("partition {symbol}: the shared object has no entry symbol '{symbol}': {source}")]
    MissingEntry {
        /// The partition symbol.
        symbol: String,
        /// The loader's error.
        source: libloading::Error,
    },
}

/// Why a run failed.
#[derive(Debug, Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum RunError {
    /// Wrong number of inputs or outputs.
    #[error("partition {partition}: {given} {what} given, expected {expected}")]
    ArgumentCount {
        /// The partition symbol.
        partition: String,
        /// `inputs` or `outputs`.
        what: &'static str,
        /// How many were given.
        given: usize,
        /// How many the partition takes.
        expected: usize,
    },
    /// A view whose type differs from the partition's.
    #[error("partition {partition}: {what} has type {got:?}, expected {expected:?}")]
    ArgumentType {
        /// The partition symbol.
        partition: String,
        /// Which argument (`input 0`, `output 1`).
        what: String,
        /// The view's type.
        got: TensorType,
        /// The partition's type.
        expected: TensorType,
    },
    /// A view whose byte length does not match its type.
    #[error("partition {partition}: {what} holds {got} bytes but its type needs {expected}")]
    ArgumentBytes {
        /// The partition symbol.
        partition: String,
        /// Which argument.
        what: String,
        /// Bytes given.
        got: usize,
        /// Bytes its type needs.
        expected: usize,
    },
    /// The generated code reported an error.
    #[error("partition {partition}: {message}")]
    Kernel {
        /// The partition symbol.
        partition: String,
        /// The message written by the generated code.
        message: String,
    },
}

/// A compiled partition loaded into this process, ready to run.
#[derive(Clone, Debug)]
pub struct LoadedPartition {
    symbol: String,
    entry: EntryFn,
    inputs: Vec<TensorType>,
    outputs: Vec<TensorType>,
    constants: Vec<Arc<Tensor>>,
}

impl LoadedPartition {
    /// Loads `so` (see the module documentation: the library is never unloaded).
    ///
    /// Loading runs the shared object's initializers, like loading any plugin: pass only
    /// modules made by [`crate::compile()`] (or read from an artifact of a trusted build).
    pub fn load(so: &SharedObject) -> Result<LoadedPartition, LoadError> {
        let symbol = so.symbol.clone();
        check_shared_object(&so.bytes, &[&symbol]).map_err(|source| LoadError::Invalid {
            symbol: symbol.clone(),
            len: so.bytes.len(),
            source,
        })?;
        let io = |source| LoadError::Io {
            symbol: symbol.clone(),
            source,
        };
        let mut file = tempfile::Builder::new()
            .prefix("byoc-csource-")
            .suffix(".so")
            .tempfile()
            .map_err(io)?;
        file.write_all(&so.bytes).map_err(io)?;
        file.flush().map_err(io)?;
        // SAFETY: opening a library runs its initializers; the generated C has none, and the
        // caller is told to load only modules this crate compiled.
        let library =
            unsafe { byoc_sdk::native::open(file.path()) }.map_err(|source| LoadError::Open {
                symbol: symbol.clone(),
                len: so.bytes.len(),
                source,
            })?;
        // Never unloaded (see the module documentation).
        let library: &'static libloading::Library = Box::leak(Box::new(library));
        // SAFETY: the generated entry has exactly the `EntryFn` signature (see
        // `codegen::emit`); the library lives for the rest of the process.
        let entry: EntryFn = unsafe { library.get::<EntryFn>(symbol.as_bytes()) }
            .map(|f| *f)
            .map_err(|source| LoadError::MissingEntry {
                symbol: symbol.clone(),
                source,
            })?;
        Ok(LoadedPartition {
            symbol,
            entry,
            inputs: so.inputs.clone(),
            outputs: so.outputs.clone(),
            constants: so.constants.clone(),
        })
    }

    /// The entry symbol.
    pub fn symbol(&self) -> &str {
        &self.symbol
    }

    /// Input types, in order.
    pub fn inputs(&self) -> &[TensorType] {
        &self.inputs
    }

    /// Output types, in order.
    pub fn outputs(&self) -> &[TensorType] {
        &self.outputs
    }

    fn check(
        &self,
        what: String,
        ty: &TensorType,
        len: usize,
        expected: &TensorType,
    ) -> Result<(), RunError> {
        if ty != expected {
            return Err(RunError::ArgumentType {
                partition: self.symbol.clone(),
                what,
                got: ty.clone(),
                expected: expected.clone(),
            });
        }
        if len != expected.size_bytes() {
            return Err(RunError::ArgumentBytes {
                partition: self.symbol.clone(),
                what,
                got: len,
                expected: expected.size_bytes(),
            });
        }
        Ok(())
    }

    /// Runs the partition: reads `inputs`, writes every element of `outputs`.
    pub fn run(
        &self,
        inputs: &[TensorRef<'_>],
        outputs: &mut [TensorMut<'_>],
    ) -> Result<(), RunError> {
        for (what, given, expected) in [
            ("inputs", inputs.len(), self.inputs.len()),
            ("outputs", outputs.len(), self.outputs.len()),
        ] {
            if given != expected {
                return Err(RunError::ArgumentCount {
                    partition: self.symbol.clone(),
                    what,
                    given,
                    expected,
                });
            }
        }
        let mut args: Vec<(*mut c_void, &TensorType)> = Vec::new();
        for (i, (t, want)) in inputs.iter().zip(&self.inputs).enumerate() {
            self.check(format!("input {i}"), t.ty, t.bytes.len(), want)?;
            args.push((t.bytes.as_ptr().cast_mut().cast(), want));
        }
        for (k, (t, want)) in outputs.iter_mut().zip(&self.outputs).enumerate() {
            self.check(format!("output {k}"), t.ty, t.bytes.len(), want)?;
            args.push((t.bytes.as_mut_ptr().cast(), want));
        }
        for c in &self.constants {
            args.push((c.as_bytes().as_ptr().cast_mut().cast(), c.ty()));
        }
        let mut shapes: Vec<Vec<i64>> = args
            .iter()
            .map(|(_, ty)| ty.shape.iter().map(|&d| d as i64).collect())
            .collect();
        let tensors: Vec<DlTensor> = args
            .iter()
            .zip(shapes.iter_mut())
            .map(|(&(data, ty), shape)| DlTensor {
                data,
                device: DlDevice {
                    device_type: DL_CPU,
                    device_id: 0,
                },
                ndim: ty.rank() as i32,
                dtype: DlDataType {
                    code: DL_FLOAT,
                    bits: 32,
                    lanes: 1,
                },
                shape: shape.as_mut_ptr(),
                strides: std::ptr::null_mut(),
                byte_offset: 0,
            })
            .collect();
        let ptrs: Vec<*const DlTensor> = tensors.iter().map(|t| t as *const DlTensor).collect();
        let mut err = [0u8; ERR_LEN];
        // SAFETY: every argument was checked against the types the code was generated for, so
        // the generated loops stay inside each buffer; the output views are distinct `&mut`
        // borrows, the inputs and constants are only read; `tensors`, `shapes` and `err`
        // outlive the call.
        let rc = unsafe {
            (self.entry)(
                ptrs.as_ptr(),
                ptrs.len() as i32,
                err.as_mut_ptr().cast(),
                ERR_LEN as u64,
            )
        };
        if rc != 0 {
            let end = err.iter().position(|&b| b == 0).unwrap_or(ERR_LEN);
            return Err(RunError::Kernel {
                partition: self.symbol.clone(),
                message: String::from_utf8_lossy(&err[..end]).into_owned(),
            });
        }
        Ok(())
    }
}
