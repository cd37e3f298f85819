//! A compiled kernel on a custom datatype: its function in a loaded shared library, the table
//! of library-function addresses it calls (resolved from the loaded datatype plugin when the
//! module is created or read back, never linked into the library), run over its work units
//! in parallel chunks, and its artifact bytes.
//!
//! Serialized form (integers little-endian): `"BYOCHODT"`, format version `u32`, header
//! length `u64`, the header (JSON: symbol, the datatype, the lowering keys of the table, the
//! operands' dtypes and element counts, the work units), then the shared library. Reading
//! checks each part's bounds, then resolves every lowering key in the datatype's registered
//! library: a datatype whose plugin is not loaded, or a plugin without one of the functions,
//! refuses the module with what is missing.

use std::sync::Arc;

use byoc_ir::tensor::{TensorMut, TensorRef};
use byoc_ir::DType;
use byoc_kernels::datatypes::DatatypeCalls;
use byoc_sdk::{CompiledModule, LoweringKey, PluginError};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::kernel::{CustomKernel, Elem, Operand};
use crate::library::{self, Library};
use crate::module::check_arity;

/// The first bytes of a serialized module.
pub const MAGIC: &[u8; 8] = b"BYOCHODT";
/// The serialized format's version.
const VERSION: u32 = 1;

/// Splits serialized module bytes into the header and the library
/// ([`crate::module::read_sections`]).
fn read_sections(bytes: &[u8]) -> Result<(&[u8], &[u8]), PluginError> {
    crate::module::read_sections(
        bytes,
        MAGIC,
        VERSION..=VERSION,
        "custom-datatype host kernel module",
    )
}

/// Raw buffer pointers handed to the kernel from several threads.
struct Buffers(Vec<*mut u8>);
// SAFETY: the kernel only reads the inputs and writes disjoint units of the output per call.
unsafe impl Send for Buffers {}
// SAFETY: as above.
unsafe impl Sync for Buffers {}

/// Calls `call(bufs, lo, hi)` over work units `0..n` in chunks of at least `grain` units, on
/// the executor's thread pool when `threads > 1` (at most four tasks per thread).
fn run_chunks(
    ptrs: Vec<*mut u8>,
    n: usize,
    grain: usize,
    threads: usize,
    call: impl Fn(*const *mut u8, i64, i64) + Sync,
) {
    let bufs = Buffers(ptrs);
    let bufs = &bufs;
    let call = |lo: usize, hi: usize| call(bufs.0.as_ptr(), lo as i64, hi as i64);
    let tasks = (n / grain.max(1)).clamp(1, threads.max(1) * 4);
    if tasks == 1 {
        if n > 0 {
            call(0, n);
        }
    } else {
        let chunk = n.div_ceil(tasks);
        (0..tasks).into_par_iter().for_each(|t| {
            let (lo, hi) = (t * chunk, ((t + 1) * chunk).min(n));
            if lo < hi {
                call(lo, hi);
            }
        });
    }
}

/// The signature of a compiled custom kernel: `(bufs, fns, lo, hi)`.
type CustomFn = unsafe extern "C" fn(*const *mut u8, *const usize, i64, i64);

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Header {
    symbol: String,
    dtype: String,
    calls: Vec<LoweringKey>,
    /// `(dtype, element count)` of each input.
    inputs: Vec<(String, usize)>,
    output: (String, usize),
    units: usize,
    grain: usize,
}

/// One compiled function on a custom datatype.
pub struct CustomModule {
    header: Header,
    /// The operands' dtypes: the output, then the inputs.
    dtypes: Vec<DType>,
    library: Arc<Library>,
    kernel: CustomFn,
    table: Vec<usize>,
    threads: usize,
}

impl std::fmt::Debug for CustomModule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CustomModule")
            .field("header", &self.header)
            .field("threads", &self.threads)
            .finish_non_exhaustive()
    }
}

fn dtype_name(dtype: DType, o: &Operand) -> String {
    match o.elem {
        Elem::Custom => dtype.to_string(),
        Elem::F32 => DType::Float32.to_string(),
    }
}

impl CustomModule {
    /// The compiled `kernel` under `symbol` in `library`.
    pub fn new(
        library: Arc<Library>,
        symbol: &str,
        kernel: &CustomKernel,
        threads: usize,
    ) -> Result<CustomModule, PluginError> {
        let (units, grain) = kernel.units();
        let header = Header {
            symbol: symbol.to_string(),
            dtype: kernel.dtype.to_string(),
            calls: kernel.calls.clone(),
            inputs: kernel
                .inputs
                .iter()
                .map(|o| (dtype_name(kernel.dtype, o), o.len))
                .collect(),
            output: (dtype_name(kernel.dtype, &kernel.output), kernel.output.len),
            units,
            grain,
        };
        CustomModule::resolve(library, header, threads)
    }

    /// Resolves the header's datatype, dtypes and library functions in this process.
    fn resolve(
        library: Arc<Library>,
        header: Header,
        threads: usize,
    ) -> Result<CustomModule, PluginError> {
        let needs = |e: &dyn std::fmt::Display| {
            PluginError::new(format!(
                "compiled host function {} needs the datatype {}: {e} (load the plugin that \
                 registers it, e.g. with --plugin-path)",
                header.symbol, header.dtype
            ))
        };
        let dtype: DType = header.dtype.parse().map_err(|e| needs(&e))?;
        let calls = DatatypeCalls::new(dtype).map_err(|e| needs(&e))?;
        let table = header
            .calls
            .iter()
            .map(|key| calls.address(key.clone()).map_err(|e| needs(&e)))
            .collect::<Result<Vec<_>, _>>()?;
        let dtypes = std::iter::once(&header.output)
            .chain(&header.inputs)
            .map(|(d, _)| d.parse::<DType>().map_err(|e| needs(&e)))
            .collect::<Result<Vec<_>, _>>()?;
        // SAFETY: every exported custom kernel has the `CustomFn` signature (super::codegen).
        let kernel = unsafe { library.function::<CustomFn>(&header.symbol) }
            .map_err(|e| PluginError::new(e.0))?;
        Ok(CustomModule {
            header,
            dtypes,
            library,
            kernel,
            table,
            threads: threads.max(1),
        })
    }

    /// Reads the bytes of [`CompiledModule::serialize`].
    pub fn from_bytes(bytes: &[u8], threads: usize) -> Result<CustomModule, PluginError> {
        let (header, lib) = read_sections(bytes)?;
        let header: Header = serde_json::from_slice(header).map_err(|e| {
            PluginError::new(format!(
                "malformed custom-datatype host kernel module: header: {e}"
            ))
        })?;
        let library = library::load(Arc::new(lib.to_vec())).map_err(|e| PluginError::new(e.0))?;
        CustomModule::resolve(library, header, threads)
    }
}

/// The tensor's bytes if it is `dtype` with `len` elements.
fn checked(
    ty: &byoc_ir::TensorType,
    bytes: usize,
    dtype: DType,
    len: usize,
    what: &str,
    symbol: &str,
) -> Result<(), PluginError> {
    if ty.dtype != dtype || ty.num_elements() != len || bytes != len * dtype.size_bytes() {
        return Err(PluginError::new(format!(
            "{what} is {ty} but host kernel {symbol} takes {len} {dtype} elements"
        )));
    }
    Ok(())
}

impl CompiledModule for CustomModule {
    fn run(
        &self,
        inputs: &[TensorRef<'_>],
        outputs: &mut [TensorMut<'_>],
    ) -> Result<(), PluginError> {
        let h = &self.header;
        check_arity(&h.symbol, h.inputs.len(), inputs.len(), outputs.len())?;
        let out = &mut outputs[0];
        checked(
            out.ty,
            out.bytes.len(),
            self.dtypes[0],
            h.output.1,
            "the output",
            &h.symbol,
        )?;
        let mut ptrs = vec![out.bytes.as_mut_ptr()];
        for (k, (t, (_, len))) in inputs.iter().zip(&h.inputs).enumerate() {
            let what = format!("input {k}");
            checked(
                t.ty,
                t.bytes.len(),
                self.dtypes[1 + k],
                *len,
                &what,
                &h.symbol,
            )?;
            ptrs.push(t.bytes.as_ptr().cast_mut());
        }
        let (kernel, table) = (self.kernel, self.table.as_ptr() as usize);
        run_chunks(ptrs, h.units, h.grain, self.threads, |bufs, lo, hi| {
            // SAFETY: every buffer holds the element count and dtype the kernel was compiled
            // for (checked above), the output does not overlap the inputs (the executor's
            // storage rule), concurrent calls write disjoint units of it, and the table holds
            // one resolved address per lowering key, with the signature the key implies.
            unsafe { kernel(bufs, table as *const usize, lo, hi) }
        });
        Ok(())
    }

    fn serialize(&self) -> Result<Vec<u8>, PluginError> {
        let header = serde_json::to_vec(&self.header)?;
        Ok(crate::module::write_sections(
            MAGIC,
            VERSION,
            &header,
            self.library.bytes(),
        ))
    }
}
