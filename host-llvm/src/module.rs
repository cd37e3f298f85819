//! A compiled fused function: its kernel in a loaded shared library, run over the output in
//! parallel chunks with the executor's thread count, and its artifact bytes. A function with
//! an anchor runs the anchor's host kernel, which hands each finished block of the output to
//! the compiled epilogue ([`OutputEpilogue`]).
//!
//! Serialized form (integers little-endian): `"BYOCHOST"`, format version `u32`, header length
//! `u64`, the header (JSON: symbol, input and output element counts, the anchor if any), then
//! the shared library. Reading checks each part's bounds before using it; versions 1 (no
//! anchors) and 2 (no reductions) still read.
//!
//! A reduction's kernel is split over threads only at multiples of its accumulator row
//! ([`Split::grain`]), so that no two calls fold into one output element.

use std::ops::RangeInclusive;
use std::sync::{Arc, Mutex};

use byoc_ir::tensor::{TensorMut, TensorRef};
use byoc_ir::DType;
use byoc_kernels::{HostKernel, OutputEpilogue};
use byoc_sdk::{CompiledModule, PluginError};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::kernel::{Anchor, Kernel};
use crate::library::{self, KernelFn, Library};

/// The first bytes of a serialized module.
const MAGIC: &[u8; 8] = b"BYOCHOST";
/// The serialized format's version (2 added the anchor, 3 the split and scratch buffers of
/// reductions).
const VERSION: u32 = 3;
/// Output elements per parallel task, at least.
const MIN_CHUNK: usize = 1 << 14;

/// How a kernel's range of output positions may be split over threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Split {
    /// Calls start and end at multiples of it (or the end).
    pub grain: usize,
    /// Loop positions per output position (sizes the parallel tasks).
    pub work: usize,
}

impl Default for Split {
    fn default() -> Self {
        Split { grain: 1, work: 1 }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Header {
    symbol: String,
    input_lens: Vec<usize>,
    output_len: usize,
    #[serde(default)]
    anchor: Option<Anchor>,
    #[serde(default)]
    split: Split,
    /// Element counts of the `float32` scratch buffers the kernel takes after its inputs.
    #[serde(default)]
    scratch: Vec<usize>,
}

/// One compiled fused function.
pub struct HostModule {
    header: Header,
    library: Arc<Library>,
    kernel: KernelFn,
    /// The anchor's host kernel, when the compiled kernel is its epilogue.
    anchor: Option<Box<dyn HostKernel>>,
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
#[derive(Clone)]
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

    /// The output pointer moved `by` elements (staying inside its buffer).
    fn with_output_offset(&self, by: usize) -> *mut f32 {
        self.0[0].wrapping_add(by)
    }

    /// These buffers with the output (`bufs[0]`) at `out` instead.
    fn with_output(&self, out: *mut f32) -> Buffers {
        let mut bufs = self.clone();
        bufs.0[0] = out;
        bufs
    }
}

/// Calls `f(lo, hi)` over `0..n` in chunks that start and end at multiples of
/// `split.grain` (or `n`): in parallel tasks of at least [`MIN_CHUNK`] loop positions (at most
/// four per thread), or at once.
fn for_ranges(n: usize, split: Split, threads: usize, f: impl Fn(usize, usize) + Sync) {
    let grain = split.grain.max(1);
    let units = n.div_ceil(grain);
    let positions = n.saturating_mul(split.work.max(1));
    let tasks = (positions / MIN_CHUNK)
        .clamp(1, threads * 4)
        .min(units.max(1));
    if tasks == 1 || threads == 1 {
        if n > 0 {
            f(0, n);
        }
    } else {
        let chunk = units.div_ceil(tasks) * grain;
        (0..tasks).into_par_iter().for_each(|t| {
            let lo = (t * chunk).min(n);
            let hi = (lo + chunk).min(n);
            if lo < hi {
                f(lo, hi);
            }
        });
    }
}

/// The compiled epilogue of an anchored function, as the anchor's kernel calls it.
struct Epilogue<'a> {
    kernel: KernelFn,
    /// `[placeholder for the block, inputs...]`.
    bufs: &'a Buffers,
    output_len: usize,
    threads: usize,
    /// The first block the kernel handed over out of bounds (a kernel bug, reported as an
    /// error after the run rather than written through).
    fault: Mutex<Option<String>>,
}

impl OutputEpilogue for Epilogue<'_> {
    fn apply(&self, offset: usize, block: &mut [u8]) {
        let n = block.len() / 4;
        let aligned = block.len().is_multiple_of(4) && block.as_ptr().align_offset(4) == 0;
        if !aligned
            || offset
                .checked_add(n)
                .is_none_or(|end| end > self.output_len)
        {
            let mut fault = self.fault.lock().unwrap_or_else(|e| e.into_inner());
            fault.get_or_insert_with(|| {
                format!(
                    "the anchor handed the epilogue {} bytes at element {offset} of {}",
                    block.len(),
                    self.output_len
                )
            });
            return;
        }
        let block = Buffers(vec![block.as_mut_ptr().cast::<f32>()]);
        let kernel = self.kernel;
        for_ranges(n, Split::default(), self.threads, |lo, hi| {
            // `lo < n`, so the pointer stays inside the block.
            let bufs = self.bufs.with_output(block.with_output_offset(lo));
            // SAFETY: the block holds elements `offset..offset + n` of the output (checked
            // above against the output's length), each call rewrites its own part of it, and
            // the inputs hold their kernel's element counts (checked by `run`).
            unsafe { kernel(bufs.as_ptr(), (offset + lo) as i64, (offset + hi) as i64) }
        });
    }
}

impl HostModule {
    /// The kernel `symbol` of `library`, with its inputs' and output's element counts, its
    /// anchor (when the kernel is the anchor's epilogue) and how its range splits.
    pub fn new(
        library: Arc<Library>,
        symbol: &str,
        input_lens: Vec<usize>,
        output_len: usize,
        anchor: Option<Anchor>,
        split: Split,
        threads: usize,
    ) -> Result<HostModule, PluginError> {
        if split.grain == 0 || split.work == 0 {
            return Err(PluginError::new(format!(
                "host kernel {symbol}: a split of grain {} and work {}",
                split.grain, split.work
            )));
        }
        let kernel = library.kernel(symbol).map_err(|e| PluginError::new(e.0))?;
        let anchor_kernel = match &anchor {
            Some(a) => {
                if let Some(&k) = a.args.iter().find(|&&k| k >= input_lens.len()) {
                    return Err(PluginError::new(format!(
                        "host kernel {symbol}: the anchor reads input {k} of {}",
                        input_lens.len()
                    )));
                }
                Some(a.host_kernel().map_err(PluginError::new)?)
            }
            None => None,
        };
        Ok(HostModule {
            header: Header {
                symbol: symbol.to_string(),
                input_lens,
                output_len,
                anchor,
                split,
                scratch: Vec::new(),
            },
            library,
            kernel,
            anchor: anchor_kernel,
            threads: threads.max(1),
        })
    }

    /// The compiled `kernel`, symbol `symbol` of `library`.
    pub fn of_kernel(
        library: Arc<Library>,
        symbol: &str,
        kernel: &Kernel,
        threads: usize,
    ) -> Result<HostModule, PluginError> {
        let split = Split {
            grain: kernel.grain(),
            work: kernel.work(),
        };
        let mut m = HostModule::new(
            library,
            symbol,
            kernel.input_lens.clone(),
            kernel.len,
            kernel.anchor.clone(),
            split,
            threads,
        )?;
        m.set_scratch(kernel.scratch())?;
        Ok(m)
    }

    /// Sets the scratch buffers the kernel takes after its inputs (element counts), each at
    /// most the output's size.
    fn set_scratch(&mut self, scratch: Vec<usize>) -> Result<(), PluginError> {
        if let Some(n) = scratch.iter().find(|&&n| n > self.header.output_len) {
            return Err(PluginError::new(format!(
                "host kernel {}: a scratch buffer of {n} elements for an output of {}",
                self.header.symbol, self.header.output_len
            )));
        }
        self.header.scratch = scratch;
        Ok(())
    }

    /// Reads the bytes of [`CompiledModule::serialize`].
    pub fn from_bytes(bytes: &[u8], threads: usize) -> Result<HostModule, PluginError> {
        let bad = |what: &str| PluginError::new(format!("malformed host kernel module: {what}"));
        let (header, library) = read_sections(bytes, MAGIC, 1..=VERSION, "host kernel module")?;
        let header: Header =
            serde_json::from_slice(header).map_err(|e| bad(&format!("header: {e}")))?;
        let library =
            library::load(Arc::new(library.to_vec())).map_err(|e| PluginError::new(e.0))?;
        let mut m = HostModule::new(
            library,
            &header.symbol,
            header.input_lens,
            header.output_len,
            header.anchor,
            header.split,
            threads,
        )?;
        m.set_scratch(header.scratch)?;
        Ok(m)
    }
}

/// Serialized host-module bytes: `magic`, format `version` (`u32`), the header's length
/// (`u64`), the header, the library; what [`read_sections`] splits.
pub(crate) fn write_sections(magic: &[u8; 8], version: u32, header: &[u8], lib: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(20 + header.len() + lib.len());
    out.extend_from_slice(magic);
    out.extend_from_slice(&version.to_le_bytes());
    out.extend_from_slice(&(header.len() as u64).to_le_bytes());
    out.extend_from_slice(header);
    out.extend_from_slice(lib);
    out
}

/// Splits serialized host-module bytes (`magic`, format version `u32`, header length `u64`,
/// header, library) into the header and the library, checking the magic, that the version is
/// one of `versions`, and each part's bounds; `what` names the module kind in errors.
pub(crate) fn read_sections<'a>(
    bytes: &'a [u8],
    magic: &[u8; 8],
    versions: RangeInclusive<u32>,
    what: &str,
) -> Result<(&'a [u8], &'a [u8]), PluginError> {
    let bad = |why: &str| PluginError::new(format!("malformed {what}: {why}"));
    if bytes.get(..8) != Some(&magic[..]) {
        return Err(bad(&format!("it does not start with the {what} magic")));
    }
    let version = bytes
        .get(8..12)
        .and_then(|b| b.try_into().ok())
        .map(u32::from_le_bytes)
        .ok_or_else(|| bad("truncated version"))?;
    if !versions.contains(&version) {
        return Err(bad(&format!(
            "format version {version} (this byoc reads {})",
            versions.end()
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
    Ok((&bytes[20..header_end], &bytes[header_end..]))
}

/// Refuses a call of host kernel `symbol` (which takes `expected` inputs and one output) with
/// `inputs` inputs and `outputs` outputs.
pub(crate) fn check_arity(
    symbol: &str,
    expected: usize,
    inputs: usize,
    outputs: usize,
) -> Result<(), PluginError> {
    if inputs != expected || outputs != 1 {
        return Err(PluginError::new(format!(
            "host kernel {symbol} takes {expected} input(s) and 1 output, got {inputs} and {outputs}"
        )));
    }
    Ok(())
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
        check_arity(&h.symbol, h.input_lens.len(), inputs.len(), outputs.len())?;
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
        // Scratch buffers (checked no larger than the output), disjoint per call as the
        // output's ranges are.
        let mut scratch: Vec<Vec<f32>> = h.scratch.iter().map(|&n| vec![0.0; n]).collect();
        ptrs.extend(scratch.iter_mut().map(|s| s.as_mut_ptr()));
        let bufs = Buffers(ptrs);
        let kernel = self.kernel;
        let (Some(anchor), Some(anchor_kernel)) = (&h.anchor, &self.anchor) else {
            for_ranges(h.output_len, h.split, self.threads, |lo, hi| {
                // SAFETY: every buffer was checked to hold its kernel's element count, the
                // output does not overlap the inputs (the executor's storage rule), and
                // concurrent calls write disjoint ranges of it.
                unsafe { kernel(bufs.as_ptr(), lo as i64, hi as i64) }
            });
            return Ok(());
        };
        let anchor_inputs: Vec<TensorRef<'_>> = anchor.args.iter().map(|&k| inputs[k]).collect();
        let epilogue = Epilogue {
            kernel,
            bufs: &bufs,
            output_len: h.output_len,
            threads: self.threads,
            fault: Mutex::new(None),
        };
        anchor_kernel
            .run_with_epilogue(&anchor_inputs, outputs, self.threads, &epilogue)
            .map_err(|e| PluginError::new(format!("host kernel {}: {e}", h.symbol)))?;
        match epilogue
            .fault
            .into_inner()
            .unwrap_or_else(|e| e.into_inner())
        {
            None => Ok(()),
            Some(fault) => Err(PluginError::new(format!(
                "host kernel {}: {fault}",
                h.symbol
            ))),
        }
    }

    fn serialize(&self) -> Result<Vec<u8>, PluginError> {
        let header = serde_json::to_vec(&self.header)?;
        Ok(write_sections(
            MAGIC,
            VERSION,
            &header,
            self.library.bytes(),
        ))
    }
}
