//! A small safe layer over the oneDNN 2.6 C API ([`ffi`]): engine, stream, memory
//! descriptors and memories, primitive attributes with post-ops, primitive descriptors and
//! primitives. Every handle is owned and destroyed on drop; every call's status becomes a
//! [`DnnlError`] naming the call and the oneDNN status.
//!
//! Thread safety (oneDNN 2.6, OpenMP build without concurrent-exec): engines, primitive
//! descriptors and primitives may be shared between threads; a primitive executes
//! concurrently on different streams when it uses a user-provided scratchpad (every
//! primitive built here does). Streams and memories are used by one thread at a time.

pub mod ffi;

use std::ffi::{c_int, c_void, CStr};
use std::fmt;
use std::ptr;

use thiserror::Error;

/// A failed oneDNN call.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[error("oneDNN {call} failed: {status}")]
pub struct DnnlError {
    /// The C function that failed.
    pub call: &'static str,
    /// The oneDNN status name (`dnnl_unimplemented`, ...).
    pub status: &'static str,
}

/// The name of a oneDNN status code.
pub fn status_name(status: ffi::dnnl_status_t) -> &'static str {
    match status {
        ffi::dnnl_success => "dnnl_success",
        ffi::dnnl_out_of_memory => "dnnl_out_of_memory",
        ffi::dnnl_invalid_arguments => "dnnl_invalid_arguments",
        ffi::dnnl_unimplemented => {
            "dnnl_unimplemented (no implementation for these shapes/layouts)"
        }
        ffi::dnnl_iterator_ends => "dnnl_iterator_ends",
        ffi::dnnl_runtime_error => "dnnl_runtime_error",
        ffi::dnnl_not_required => "dnnl_not_required",
        _ => "unknown oneDNN status",
    }
}

fn check(status: ffi::dnnl_status_t, call: &'static str) -> Result<(), DnnlError> {
    if status == ffi::dnnl_success {
        Ok(())
    } else {
        Err(DnnlError {
            call,
            status: status_name(status),
        })
    }
}

/// The linked oneDNN's version, `major.minor.patch`.
pub fn version() -> String {
    // SAFETY: dnnl_version returns a pointer to a static struct.
    match unsafe { ffi::dnnl_version().as_ref() } {
        Some(v) => format!("{}.{}.{}", v.major, v.minor, v.patch),
        None => "unknown".to_string(),
    }
}

/// Sets the OpenMP thread count of the calling thread's next parallel regions (oneDNN's
/// threading runtime in Debian's build).
pub fn set_num_threads(threads: usize) {
    let n = c_int::try_from(threads.max(1)).unwrap_or(c_int::MAX);
    // SAFETY: plain libgomp call.
    unsafe { ffi::omp_set_num_threads(n) }
}

/// The OpenMP thread count of the calling thread's next parallel regions.
pub fn max_threads() -> usize {
    // SAFETY: plain libgomp call.
    usize::try_from(unsafe { ffi::omp_get_max_threads() }).unwrap_or(1)
}

/// The instruction set oneDNN dispatches to on this CPU (`dnnl_get_effective_cpu_isa`): a
/// bit set in which every ISA includes the bits of those it extends
/// (`ffi::dnnl_cpu_isa_avx512_core_amx` includes `ffi::dnnl_cpu_isa_avx512_core_bf16`).
pub fn effective_cpu_isa() -> ffi::dnnl_cpu_isa_t {
    // SAFETY: plain query of oneDNN's CPU dispatcher.
    unsafe { ffi::dnnl_get_effective_cpu_isa() }
}

/// The name of the widest ISA in the bit set `isa` (`dnnl_cpu_isa_t`), as oneDNN's
/// `ONEDNN_MAX_CPU_ISA` spells it.
pub fn isa_name(isa: ffi::dnnl_cpu_isa_t) -> &'static str {
    let has = |set: ffi::dnnl_cpu_isa_t| isa & set == set;
    [
        (ffi::dnnl_cpu_isa_avx512_core_amx, "avx512_core_amx"),
        (ffi::dnnl_cpu_isa_avx512_core_bf16, "avx512_core_bf16"),
        (ffi::dnnl_cpu_isa_avx512_core_vnni, "avx512_core_vnni"),
        (ffi::dnnl_cpu_isa_avx512_core, "avx512_core"),
        (ffi::dnnl_cpu_isa_avx2_vnni, "avx2_vnni"),
        (ffi::dnnl_cpu_isa_avx2, "avx2"),
    ]
    .into_iter()
    .find(|&(set, _)| has(set))
    .map_or("an ISA below avx2", |(_, name)| name)
}

/// `None` when oneDNN's int8 convolutions and inner products compute exactly on an ISA (VNNI:
/// `avx512_core_vnni` and above, or `avx2_vnni`, accumulate int8 products in int32); else the
/// ISA's name. Below VNNI oneDNN sums pairs of products in 16 bits and, for signed data, halves
/// the weights first so that those sums cannot saturate, which rounds odd weights ("Nuances of
/// int8 computations" in oneDNN's guide): results that differ from exact integer arithmetic.
pub fn inexact_int8_isa(isa: ffi::dnnl_cpu_isa_t) -> Option<&'static str> {
    let has = |set: ffi::dnnl_cpu_isa_t| isa & set == set;
    if has(ffi::dnnl_cpu_isa_avx512_core_vnni) || has(ffi::dnnl_cpu_isa_avx2_vnni) {
        None
    } else {
        Some(isa_name(isa))
    }
}

/// The channel block of oneDNN's channel-blocked activation layouts on this CPU: 16 floats
/// (one 512-bit register) with AVX-512, 8 otherwise (`nChw16c`, `nChw8c`).
pub fn channel_block() -> i64 {
    let isa = effective_cpu_isa();
    if isa & ffi::dnnl_cpu_isa_avx512_core == ffi::dnnl_cpu_isa_avx512_core {
        16
    } else {
        8
    }
}

/// The element types the runtime's tensors have in oneDNN.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DataType {
    /// IEEE float32: every tensor of the graph, and everything in the default mode.
    F32,
    /// bfloat16 (float32's sign, exponent and top 7 mantissa bits): the operands of
    /// convolutions and matmuls in the `bf16` fpmath mode.
    Bf16,
    /// int32: the accumulators of int8 convolutions and inner products.
    S32,
    /// int8: the data and weights of quantized convolutions and inner products.
    S8,
}

impl DataType {
    fn raw(self) -> ffi::dnnl_data_type_t {
        match self {
            DataType::F32 => ffi::dnnl_f32,
            DataType::Bf16 => ffi::dnnl_bf16,
            DataType::S32 => ffi::dnnl_s32,
            DataType::S8 => ffi::dnnl_s8,
        }
    }

    /// oneDNN's short name (`f32`, `bf16`, `s32`, `s8`).
    pub fn name(self) -> &'static str {
        match self {
            DataType::F32 => "f32",
            DataType::Bf16 => "bf16",
            DataType::S32 => "s32",
            DataType::S8 => "s8",
        }
    }
}

/// A oneDNN memory descriptor: dims, data type and layout.
#[derive(Clone, Copy)]
pub struct MemoryDesc(ffi::dnnl_memory_desc_t);

fn dims_array(what: &'static str, dims: &[i64]) -> Result<ffi::dnnl_dims_t, DnnlError> {
    if dims.len() > ffi::DNNL_MAX_NDIMS {
        return Err(DnnlError {
            call: what,
            status: "more than 12 dimensions",
        });
    }
    let mut out = [0i64; ffi::DNNL_MAX_NDIMS];
    out[..dims.len()].copy_from_slice(dims);
    Ok(out)
}

/// The element strides of the row-major layout of `dims`.
fn row_major_strides(dims: &[i64]) -> Vec<i64> {
    let mut strides = vec![1i64; dims.len()];
    for i in (0..dims.len().saturating_sub(1)).rev() {
        strides[i] = strides[i + 1] * dims[i + 1].max(1);
    }
    strides
}

impl MemoryDesc {
    fn zeroed() -> ffi::dnnl_memory_desc_t {
        // SAFETY: the descriptor is plain old data; all-zero is oneDNN's "zero md".
        unsafe { std::mem::zeroed() }
    }

    /// The empty descriptor (no tensor; e.g. "no bias").
    pub fn zero() -> Self {
        MemoryDesc(Self::zeroed())
    }

    /// A row-major f32 tensor of `dims`.
    pub fn plain(dims: &[i64]) -> Result<Self, DnnlError> {
        Self::plain_of(dims, DataType::F32)
    }

    /// A row-major tensor of `dims` and element type `dt`.
    pub fn plain_of(dims: &[i64], dt: DataType) -> Result<Self, DnnlError> {
        Self::strided_of(dims, &row_major_strides(dims), dt)
    }

    /// An f32 tensor of `dims` with explicit element `strides`.
    pub fn strided(dims: &[i64], strides: &[i64]) -> Result<Self, DnnlError> {
        Self::strided_of(dims, strides, DataType::F32)
    }

    /// A tensor of `dims` and element type `dt` with explicit element `strides`.
    pub fn strided_of(dims: &[i64], strides: &[i64], dt: DataType) -> Result<Self, DnnlError> {
        let d = dims_array("dnnl_memory_desc_init_by_strides", dims)?;
        let s = dims_array("dnnl_memory_desc_init_by_strides", strides)?;
        let mut md = Self::zeroed();
        // SAFETY: md, d and s are valid for the call; ndims <= 12.
        check(
            unsafe {
                ffi::dnnl_memory_desc_init_by_strides(
                    &mut md,
                    dims.len() as c_int,
                    d.as_ptr(),
                    dt.raw(),
                    s.as_ptr(),
                )
            },
            "dnnl_memory_desc_init_by_strides",
        )?;
        Ok(MemoryDesc(md))
    }

    /// An f32 tensor of `dims` whose layout the primitive chooses (`format_tag::any`).
    pub fn any(dims: &[i64]) -> Result<Self, DnnlError> {
        Self::any_of(dims, DataType::F32)
    }

    /// A tensor of `dims` and element type `dt` whose layout the primitive chooses.
    pub fn any_of(dims: &[i64], dt: DataType) -> Result<Self, DnnlError> {
        Self::tagged(dims, dt.raw(), ffi::dnnl_format_tag_any)
    }

    /// A 4-D f32 tensor of `dims` with its channels (axis 1) in blocks of `block` (16 or 8:
    /// `aBcd16b`, `aBcd8b`).
    pub fn channel_blocked(dims: &[i64], block: i64) -> Result<Self, DnnlError> {
        let tag = match (dims.len(), block) {
            (4, 16) => ffi::dnnl_aBcd16b,
            (4, 8) => ffi::dnnl_aBcd8b,
            _ => {
                return Err(DnnlError {
                    call: "dnnl_memory_desc_init_by_tag",
                    status: "channel blocks are for 4-D tensors in blocks of 16 or 8",
                })
            }
        };
        Self::tagged(dims, ffi::dnnl_f32, tag)
    }

    /// Whether this is the f32 channel-blocked layout of its dims in blocks of `block`
    /// ([`MemoryDesc::channel_blocked`]).
    pub fn is_channel_blocked(&self, block: i64) -> bool {
        MemoryDesc::channel_blocked(self.dims(), block).is_ok_and(|d| d == *self)
    }

    /// A 1-D byte buffer of `bytes` (a user scratchpad).
    pub fn bytes(bytes: usize) -> Result<Self, DnnlError> {
        Self::tagged(&[bytes.max(1) as i64], ffi::dnnl_u8, ffi::dnnl_a)
    }

    fn tagged(
        dims: &[i64],
        dt: ffi::dnnl_data_type_t,
        tag: ffi::dnnl_format_tag_t,
    ) -> Result<Self, DnnlError> {
        let d = dims_array("dnnl_memory_desc_init_by_tag", dims)?;
        let mut md = Self::zeroed();
        // SAFETY: md and d are valid for the call.
        check(
            unsafe {
                ffi::dnnl_memory_desc_init_by_tag(&mut md, dims.len() as c_int, d.as_ptr(), dt, tag)
            },
            "dnnl_memory_desc_init_by_tag",
        )?;
        Ok(MemoryDesc(md))
    }

    /// The logical dimensions.
    pub fn dims(&self) -> &[i64] {
        let n = (self.0.ndims.max(0) as usize).min(ffi::DNNL_MAX_NDIMS);
        &self.0.dims[..n]
    }

    /// The bytes a buffer of this descriptor needs (padding of blocked layouts included).
    pub fn size(&self) -> usize {
        // SAFETY: self.0 is a valid descriptor.
        unsafe { ffi::dnnl_memory_desc_get_size(&self.0) }
    }

    /// Whether this is the row-major layout of its dims (in its own element type).
    pub fn is_plain(&self) -> bool {
        MemoryDesc::plain_of(self.dims(), self.data_type().unwrap_or(DataType::F32))
            .is_ok_and(|p| p == *self)
    }

    /// This descriptor's row-major layout, in its own element type.
    pub fn plain_like(&self) -> Result<Self, DnnlError> {
        MemoryDesc::plain_of(self.dims(), self.data_type().unwrap_or(DataType::F32))
    }

    /// The layout of `parts` concatenated along `axis` in which each part is one contiguous
    /// run of bytes laid out exactly as the part itself, the parts end to end in order (so
    /// that each part's producer can write straight into its slice). It exists when every
    /// dimension before `axis` has extent 1, `axis` is the outermost dimension of a dense
    /// blocked layout, no part is padded (a blocked `axis` splits at block boundaries) and
    /// all parts share the element type, the other dimensions and their strides and the inner
    /// blocks; `None` otherwise.
    pub fn concat_of_slices(parts: &[MemoryDesc], axis: usize) -> Option<MemoryDesc> {
        let first = parts.first()?;
        let f = &first.0;
        let n = first.dims().len();
        if axis >= n || f.dims[..axis].iter().any(|&d| d != 1) {
            return None;
        }
        // SAFETY (all reads of `blocking` below): format_kind is checked to be blocked first.
        if f.format_kind != ffi::dnnl_blocked {
            return None;
        }
        let fb = unsafe { f.format_desc.blocking };
        let nblks = (fb.inner_nblks.max(0) as usize).min(ffi::DNNL_MAX_NDIMS);
        let axis_block: i64 = (0..nblks)
            .filter(|&k| fb.inner_idxs[k] == axis as i64)
            .map(|k| fb.inner_blks[k])
            .product();
        let mut total = 0i64;
        for p in parts {
            let m = &p.0;
            if m.format_kind != ffi::dnnl_blocked
                || m.ndims != f.ndims
                || m.data_type != f.data_type
                || m.offset0 != 0
                || m.extra.flags != 0
                || m.dims[..n] != m.padded_dims[..n]
                || m.padded_offsets[..n].iter().any(|&o| o != 0)
                || p.plain_like()
                    .map_or(true, |plain| plain.size() != p.size())
            {
                return None;
            }
            let b = unsafe { m.format_desc.blocking };
            if b.inner_nblks != fb.inner_nblks
                || b.inner_blks[..nblks] != fb.inner_blks[..nblks]
                || b.inner_idxs[..nblks] != fb.inner_idxs[..nblks]
                || b.strides[axis] != fb.strides[axis]
                || (axis + 1..n).any(|d| m.dims[d] != f.dims[d] || b.strides[d] != fb.strides[d])
            {
                return None;
            }
            let elems: i64 = m.dims[..n].iter().product();
            if m.dims[axis] % axis_block != 0
                || b.strides[axis] * (m.dims[axis] / axis_block) != elems
            {
                return None;
            }
            total += m.dims[axis];
        }
        let mut out = *f;
        out.dims[axis] = total;
        out.padded_dims[axis] = total;
        let elems = fb.strides[axis] * (total / axis_block);
        // SAFETY: `out` is a copy of a blocked descriptor.
        let strides = unsafe { &mut out.format_desc.blocking.strides };
        strides[..axis].fill(elems);
        Some(MemoryDesc(out))
    }

    /// The element type (`None` for types the runtime does not use).
    pub fn data_type(&self) -> Option<DataType> {
        [DataType::F32, DataType::Bf16, DataType::S32, DataType::S8]
            .into_iter()
            .find(|t| t.raw() == self.0.data_type)
    }

    /// A short layout description for profiles and errors: `plain` or the blocking
    /// (`blocked:16c`), after the element type when it is not f32 (`bf16 blocked:16c`).
    pub fn layout(&self) -> String {
        match self.data_type() {
            Some(DataType::F32) => self.blocking(DataType::F32),
            Some(t) => format!("{} {}", t.name(), self.blocking(t)),
            None => format!("data type {}", self.0.data_type),
        }
    }

    /// The layout part of [`MemoryDesc::layout`], for a descriptor of element type `dt`.
    fn blocking(&self, dt: DataType) -> String {
        if MemoryDesc::plain_of(self.dims(), dt).is_ok_and(|p| p == *self) {
            return "plain".to_string();
        }
        if self.0.format_kind != ffi::dnnl_blocked {
            return format!("format_kind {}", self.0.format_kind);
        }
        // SAFETY: format_kind says the blocking member is the active one.
        let b = unsafe { self.0.format_desc.blocking };
        let n = (b.inner_nblks.max(0) as usize).min(ffi::DNNL_MAX_NDIMS);
        let blocks: Vec<String> = (0..n)
            .map(|i| {
                format!(
                    "{}{}",
                    b.inner_blks[i],
                    (b'a' + b.inner_idxs[i] as u8) as char
                )
            })
            .collect();
        if blocks.is_empty() {
            let strides = &b.strides[..self.dims().len()];
            format!("strided{strides:?}")
        } else {
            format!("blocked:{}", blocks.join(""))
        }
    }

    fn raw(&self) -> *const ffi::dnnl_memory_desc_t {
        &self.0
    }
}

impl PartialEq for MemoryDesc {
    fn eq(&self, other: &Self) -> bool {
        // SAFETY: both are valid descriptors.
        unsafe { ffi::dnnl_memory_desc_equal(&self.0, &other.0) != 0 }
    }
}

impl fmt::Debug for MemoryDesc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} {}", self.dims(), self.layout())
    }
}

/// A CPU engine.
pub struct Engine(ffi::dnnl_engine_t);

// SAFETY: oneDNN engines are thread-safe.
unsafe impl Send for Engine {}
// SAFETY: as above.
unsafe impl Sync for Engine {}

impl Engine {
    /// The first CPU engine.
    pub fn cpu() -> Result<Self, DnnlError> {
        let mut e = ptr::null_mut();
        // SAFETY: out-pointer valid.
        check(
            unsafe { ffi::dnnl_engine_create(&mut e, ffi::dnnl_cpu, 0) },
            "dnnl_engine_create",
        )?;
        Ok(Engine(e))
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        // SAFETY: owned handle, destroyed once.
        unsafe { ffi::dnnl_engine_destroy(self.0) };
    }
}

/// An in-order stream on an engine; one thread uses it at a time.
pub struct Stream(ffi::dnnl_stream_t);

// SAFETY: a stream may move between threads; it is never used by two at once (not Sync).
unsafe impl Send for Stream {}

impl Stream {
    /// A stream on `engine`.
    pub fn new(engine: &Engine) -> Result<Self, DnnlError> {
        let mut s = ptr::null_mut();
        // SAFETY: out-pointer and engine valid.
        check(
            unsafe { ffi::dnnl_stream_create(&mut s, engine.0, ffi::dnnl_stream_default_flags) },
            "dnnl_stream_create",
        )?;
        Ok(Stream(s))
    }

    /// Waits for the submitted primitives to finish.
    pub fn wait(&self) -> Result<(), DnnlError> {
        // SAFETY: valid stream.
        check(unsafe { ffi::dnnl_stream_wait(self.0) }, "dnnl_stream_wait")
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        // SAFETY: owned handle.
        unsafe { ffi::dnnl_stream_destroy(self.0) };
    }
}

/// A memory object: a descriptor bound to a data pointer the caller owns. Creating one and
/// re-pointing it only stores the pointer; [`Primitive::execute`] (unsafe) is where it is
/// read or written.
pub struct Memory(ffi::dnnl_memory_t);

// SAFETY: a memory object is a descriptor plus a pointer; it moves between threads with the
// execution state that owns it and is never shared (not Sync).
unsafe impl Send for Memory {}

impl Memory {
    /// A memory of `desc` over `data` (null for "set later").
    pub fn new(engine: &Engine, desc: &MemoryDesc, data: *mut u8) -> Result<Self, DnnlError> {
        let mut m = ptr::null_mut();
        // SAFETY: out-pointer, descriptor and engine valid; a null handle means "none".
        check(
            unsafe { ffi::dnnl_memory_create(&mut m, desc.raw(), engine.0, data.cast::<c_void>()) },
            "dnnl_memory_create",
        )?;
        Ok(Memory(m))
    }

    /// Points the memory at `data`.
    pub fn set_data(&mut self, data: *mut u8) -> Result<(), DnnlError> {
        // SAFETY: valid memory; the caller keeps data alive while executing.
        check(
            unsafe { ffi::dnnl_memory_set_data_handle(self.0, data.cast::<c_void>()) },
            "dnnl_memory_set_data_handle",
        )
    }

    /// The raw handle, for execution arguments.
    pub fn handle(&self) -> ffi::dnnl_memory_t {
        self.0
    }
}

impl Drop for Memory {
    fn drop(&mut self) {
        // SAFETY: owned handle.
        unsafe { ffi::dnnl_memory_destroy(self.0) };
    }
}

/// A post-op appended to a primitive's result, in order.
#[derive(Clone, Debug, PartialEq)]
pub enum PostOp {
    /// `dst = result + dst` (the residual add; dst holds the sum operand before execution).
    Sum,
    /// `dst = alg(result, src1)`, `src1` broadcasting (per tensor or per channel); its
    /// memory is the execution argument [`PostOp::binary_arg`] of the post-op's index.
    Binary {
        /// The binary algorithm (`ffi::dnnl_binary_*`).
        alg: ffi::dnnl_alg_kind_t,
        /// The second operand's layout.
        src1: Box<MemoryDesc>,
    },
    /// `dst = eltwise(result)` with oneDNN's `alg`, `alpha`, `beta`.
    Eltwise {
        /// The eltwise algorithm (`ffi::dnnl_eltwise_*`).
        alg: ffi::dnnl_alg_kind_t,
        /// oneDNN's alpha parameter.
        alpha: f32,
        /// oneDNN's beta parameter.
        beta: f32,
    },
}

impl PostOp {
    /// The execution argument of the second operand of the binary post-op at `index`.
    pub fn binary_arg(index: usize) -> c_int {
        let i = c_int::try_from(index + 1).unwrap_or(c_int::MAX);
        ffi::DNNL_ARG_ATTR_MULTIPLE_POST_OP_BASE.saturating_mul(i) | ffi::DNNL_ARG_SRC_1
    }
}

/// Primitive attributes: always a user-managed scratchpad, plus post-ops.
pub struct Attr(ffi::dnnl_primitive_attr_t);

impl Attr {
    /// Attributes with a user scratchpad and `post_ops`.
    pub fn new(post_ops: &[PostOp]) -> Result<Self, DnnlError> {
        let mut a = ptr::null_mut();
        // SAFETY: out-pointer valid.
        check(
            unsafe { ffi::dnnl_primitive_attr_create(&mut a) },
            "dnnl_primitive_attr_create",
        )?;
        let attr = Attr(a);
        // SAFETY: valid attr.
        check(
            unsafe {
                ffi::dnnl_primitive_attr_set_scratchpad_mode(a, ffi::dnnl_scratchpad_mode_user)
            },
            "dnnl_primitive_attr_set_scratchpad_mode",
        )?;
        if !post_ops.is_empty() {
            let mut po = ptr::null_mut();
            // SAFETY: out-pointer valid.
            check(
                unsafe { ffi::dnnl_post_ops_create(&mut po) },
                "dnnl_post_ops_create",
            )?;
            let result = (|| {
                for op in post_ops {
                    match *op {
                        // SAFETY: valid post-ops handle.
                        PostOp::Sum => check(
                            unsafe { ffi::dnnl_post_ops_append_sum(po, 1.0) },
                            "dnnl_post_ops_append_sum",
                        )?,
                        // SAFETY: valid post-ops handle and descriptor (copied).
                        PostOp::Binary { alg, ref src1 } => check(
                            unsafe { ffi::dnnl_post_ops_append_binary(po, alg, src1.raw()) },
                            "dnnl_post_ops_append_binary",
                        )?,
                        // SAFETY: valid post-ops handle.
                        PostOp::Eltwise { alg, alpha, beta } => check(
                            unsafe { ffi::dnnl_post_ops_append_eltwise(po, 1.0, alg, alpha, beta) },
                            "dnnl_post_ops_append_eltwise",
                        )?,
                    }
                }
                // SAFETY: valid handles; the attr copies the post-ops.
                check(
                    unsafe { ffi::dnnl_primitive_attr_set_post_ops(a, po) },
                    "dnnl_primitive_attr_set_post_ops",
                )
            })();
            // SAFETY: owned post-ops handle, no longer needed.
            unsafe { ffi::dnnl_post_ops_destroy(po) };
            result?;
        }
        Ok(attr)
    }
}

impl Attr {
    /// Sets one output scale for the whole result (applied to the accumulator, after an int8
    /// primitive's bias, before the post-ops).
    pub fn with_output_scale(self, scale: f32) -> Result<Self, DnnlError> {
        // SAFETY: valid attr; oneDNN copies the one scale.
        check(
            unsafe { ffi::dnnl_primitive_attr_set_output_scales(self.0, 1, 0, &scale) },
            "dnnl_primitive_attr_set_output_scales",
        )?;
        Ok(self)
    }
}

impl Drop for Attr {
    fn drop(&mut self) {
        // SAFETY: owned handle.
        unsafe { ffi::dnnl_primitive_attr_destroy(self.0) };
    }
}

/// An op descriptor (`*_desc_init` output), input to [`PrimitiveDesc::new`].
pub struct OpDesc(Box<ffi::OpDesc>);

macro_rules! op_desc {
    ($call:ident ( $($arg:expr),* $(,)? )) => {{
        let mut d = Box::new(ffi::OpDesc([0u8; 6144]));
        // SAFETY: d is large enough for any op descriptor; all pointer arguments point to
        // live locals for the duration of the call.
        check(unsafe { ffi::$call(&mut *d, $($arg),*) }, stringify!($call))?;
        Ok(OpDesc(d))
    }};
}

/// Spatial parameters of a convolution, deconvolution or pooling (oneDNN conventions:
/// dilation 0 = dense).
pub struct Window<'a> {
    /// Strides per spatial axis.
    pub strides: &'a [i64],
    /// Dilations per spatial axis, oneDNN style (`d - 1`).
    pub dilates: &'a [i64],
    /// Padding before, per spatial axis.
    pub pad_l: &'a [i64],
    /// Padding after, per spatial axis.
    pub pad_r: &'a [i64],
}

impl OpDesc {
    /// A forward-inference (de)convolution.
    pub fn convolution(
        deconv: bool,
        src: &MemoryDesc,
        weights: &MemoryDesc,
        bias: &MemoryDesc,
        dst: &MemoryDesc,
        w: &Window<'_>,
    ) -> Result<Self, DnnlError> {
        let s = dims_array("convolution strides", w.strides)?;
        let d = dims_array("convolution dilates", w.dilates)?;
        let l = dims_array("convolution padding", w.pad_l)?;
        let r = dims_array("convolution padding", w.pad_r)?;
        if deconv {
            op_desc!(dnnl_dilated_deconvolution_forward_desc_init(
                ffi::dnnl_forward_inference,
                ffi::dnnl_deconvolution_direct,
                src.raw(),
                weights.raw(),
                bias.raw(),
                dst.raw(),
                s.as_ptr(),
                d.as_ptr(),
                l.as_ptr(),
                r.as_ptr(),
            ))
        } else {
            op_desc!(dnnl_dilated_convolution_forward_desc_init(
                ffi::dnnl_forward_inference,
                ffi::dnnl_convolution_direct,
                src.raw(),
                weights.raw(),
                bias.raw(),
                dst.raw(),
                s.as_ptr(),
                d.as_ptr(),
                l.as_ptr(),
                r.as_ptr(),
            ))
        }
    }

    /// A forward-inference inner product (dense).
    pub fn inner_product(
        src: &MemoryDesc,
        weights: &MemoryDesc,
        bias: &MemoryDesc,
        dst: &MemoryDesc,
    ) -> Result<Self, DnnlError> {
        op_desc!(dnnl_inner_product_forward_desc_init(
            ffi::dnnl_forward_inference,
            src.raw(),
            weights.raw(),
            bias.raw(),
            dst.raw()
        ))
    }

    /// A (batched, broadcasting) matmul; `bias` is [`MemoryDesc::zero`] for none.
    pub fn matmul(
        src: &MemoryDesc,
        weights: &MemoryDesc,
        bias: &MemoryDesc,
        dst: &MemoryDesc,
    ) -> Result<Self, DnnlError> {
        op_desc!(dnnl_matmul_desc_init(
            src.raw(),
            weights.raw(),
            bias.raw(),
            dst.raw()
        ))
    }

    /// An eltwise op.
    pub fn eltwise(
        alg: ffi::dnnl_alg_kind_t,
        data: &MemoryDesc,
        alpha: f32,
        beta: f32,
    ) -> Result<Self, DnnlError> {
        op_desc!(dnnl_eltwise_forward_desc_init(
            ffi::dnnl_forward_inference,
            alg,
            data.raw(),
            alpha,
            beta
        ))
    }

    /// A binary op; `src1` may broadcast (dims of 1).
    pub fn binary(
        alg: ffi::dnnl_alg_kind_t,
        src0: &MemoryDesc,
        src1: &MemoryDesc,
        dst: &MemoryDesc,
    ) -> Result<Self, DnnlError> {
        op_desc!(dnnl_binary_desc_init(
            alg,
            src0.raw(),
            src1.raw(),
            dst.raw()
        ))
    }

    /// Batch normalization with global statistics.
    pub fn batch_norm(data: &MemoryDesc, epsilon: f32, flags: u32) -> Result<Self, DnnlError> {
        op_desc!(dnnl_batch_normalization_forward_desc_init(
            ffi::dnnl_forward_inference,
            data.raw(),
            epsilon,
            flags
        ))
    }

    /// Layer normalization over the last axis.
    pub fn layer_norm(
        data: &MemoryDesc,
        stat: &MemoryDesc,
        epsilon: f32,
        flags: u32,
    ) -> Result<Self, DnnlError> {
        op_desc!(dnnl_layer_normalization_forward_desc_init(
            ffi::dnnl_forward_inference,
            data.raw(),
            stat.raw(),
            epsilon,
            flags
        ))
    }

    /// Pooling (`pooling_v2`: with dilation).
    pub fn pooling(
        alg: ffi::dnnl_alg_kind_t,
        src: &MemoryDesc,
        dst: &MemoryDesc,
        kernel: &[i64],
        w: &Window<'_>,
    ) -> Result<Self, DnnlError> {
        let s = dims_array("pooling strides", w.strides)?;
        let k = dims_array("pooling kernel", kernel)?;
        let d = dims_array("pooling dilation", w.dilates)?;
        let l = dims_array("pooling padding", w.pad_l)?;
        let r = dims_array("pooling padding", w.pad_r)?;
        op_desc!(dnnl_pooling_v2_forward_desc_init(
            ffi::dnnl_forward_inference,
            alg,
            src.raw(),
            dst.raw(),
            s.as_ptr(),
            k.as_ptr(),
            d.as_ptr(),
            l.as_ptr(),
            r.as_ptr(),
        ))
    }

    /// A shuffle along `axis` with oneDNN's `group_size`: the axis, of size `C`, is read as a
    /// `(C / group_size, group_size)` row-major matrix and transposed (checked against the host
    /// executor's reshape/transpose in the plugin's tests). So a channel shuffle with `g` groups
    /// (`(g, C/g)` transposed) has `group_size = C / g`. Source and destination share `data`'s
    /// layout.
    pub fn shuffle(data: &MemoryDesc, axis: usize, group_size: i64) -> Result<Self, DnnlError> {
        op_desc!(dnnl_shuffle_forward_desc_init(
            ffi::dnnl_forward_inference,
            data.raw(),
            axis as c_int,
            group_size
        ))
    }

    /// Local response normalization across channels:
    /// `src * (k + alpha / size * sum(src^2 over the window))^-beta`.
    pub fn lrn(
        data: &MemoryDesc,
        size: i64,
        alpha: f32,
        beta: f32,
        k: f32,
    ) -> Result<Self, DnnlError> {
        op_desc!(dnnl_lrn_forward_desc_init(
            ffi::dnnl_forward_inference,
            ffi::dnnl_lrn_across_channels,
            data.raw(),
            size,
            alpha,
            beta,
            k
        ))
    }

    /// Softmax along `axis`.
    pub fn softmax(data: &MemoryDesc, axis: usize) -> Result<Self, DnnlError> {
        op_desc!(dnnl_softmax_forward_desc_init(
            ffi::dnnl_forward_inference,
            data.raw(),
            axis as c_int
        ))
    }
}

/// A primitive descriptor: the implementation oneDNN chose, with its memory layouts.
pub struct PrimitiveDesc(ffi::dnnl_primitive_desc_t);

// SAFETY: primitive descriptors are immutable after creation.
unsafe impl Send for PrimitiveDesc {}
// SAFETY: as above.
unsafe impl Sync for PrimitiveDesc {}

/// Which memory of a primitive descriptor to query.
#[derive(Clone, Copy, Debug)]
pub enum Query {
    /// Source `i`.
    Src(i32),
    /// Weights `i`.
    Weights(i32),
    /// Destination `i`.
    Dst(i32),
    /// The scratchpad.
    Scratchpad,
}

impl PrimitiveDesc {
    /// The primitive descriptor of `op` with `attr`.
    pub fn new(engine: &Engine, op: &OpDesc, attr: &Attr) -> Result<Self, DnnlError> {
        let mut pd = ptr::null_mut();
        // SAFETY: op points to an initialized op descriptor; handles valid.
        check(
            unsafe {
                ffi::dnnl_primitive_desc_create(
                    &mut pd,
                    (&*op.0 as *const ffi::OpDesc).cast::<c_void>(),
                    attr.0,
                    engine.0,
                    ptr::null_mut(),
                )
            },
            "dnnl_primitive_desc_create",
        )?;
        Ok(PrimitiveDesc(pd))
    }

    /// A reorder from `src` to `dst` layout.
    pub fn reorder(engine: &Engine, src: &MemoryDesc, dst: &MemoryDesc) -> Result<Self, DnnlError> {
        let attr = Attr::new(&[])?;
        let mut pd = ptr::null_mut();
        // SAFETY: descriptors and handles valid.
        check(
            unsafe {
                ffi::dnnl_reorder_primitive_desc_create(
                    &mut pd,
                    src.raw(),
                    engine.0,
                    dst.raw(),
                    engine.0,
                    attr.0,
                )
            },
            "dnnl_reorder_primitive_desc_create",
        )?;
        Ok(PrimitiveDesc(pd))
    }

    /// A concatenation of `srcs` along `axis` into `dst` (may be `any`).
    pub fn concat(
        engine: &Engine,
        dst: &MemoryDesc,
        axis: usize,
        srcs: &[MemoryDesc],
    ) -> Result<Self, DnnlError> {
        let attr = Attr::new(&[])?;
        let raw: Vec<ffi::dnnl_memory_desc_t> = srcs.iter().map(|m| m.0).collect();
        let mut pd = ptr::null_mut();
        // SAFETY: descriptors and handles valid; raw has srcs.len() elements.
        check(
            unsafe {
                ffi::dnnl_concat_primitive_desc_create(
                    &mut pd,
                    dst.raw(),
                    raw.len() as c_int,
                    axis as c_int,
                    raw.as_ptr(),
                    attr.0,
                    engine.0,
                )
            },
            "dnnl_concat_primitive_desc_create",
        )?;
        Ok(PrimitiveDesc(pd))
    }

    /// The descriptor of one of the primitive's memories (the zero descriptor if none).
    pub fn query(&self, what: Query) -> MemoryDesc {
        let (q, i) = match what {
            Query::Src(i) => (ffi::dnnl_query_src_md, i),
            Query::Weights(i) => (ffi::dnnl_query_weights_md, i),
            Query::Dst(i) => (ffi::dnnl_query_dst_md, i),
            Query::Scratchpad => (ffi::dnnl_query_scratchpad_md, 0),
        };
        // SAFETY: valid pd; a returned pointer is valid while the pd lives and is copied.
        match unsafe { ffi::dnnl_primitive_desc_query_md(self.0, q, i).as_ref() } {
            Some(md) => MemoryDesc(*md),
            None => MemoryDesc::zero(),
        }
    }

    /// The implementation's name (`brgconv:avx512_core`, `jit:avx2`, ...).
    pub fn impl_name(&self) -> String {
        let mut s: *const std::ffi::c_char = ptr::null();
        // SAFETY: the query writes a pointer to a string owned by the pd.
        let status = unsafe {
            ffi::dnnl_primitive_desc_query(
                self.0,
                ffi::dnnl_query_impl_info_str,
                0,
                (&mut s as *mut *const std::ffi::c_char).cast::<c_void>(),
            )
        };
        if status != ffi::dnnl_success || s.is_null() {
            return "unknown".to_string();
        }
        // SAFETY: non-null, NUL-terminated, owned by the pd.
        unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned()
    }
}

impl Drop for PrimitiveDesc {
    fn drop(&mut self) {
        // SAFETY: owned handle.
        unsafe { ffi::dnnl_primitive_desc_destroy(self.0) };
    }
}

/// An executable primitive.
pub struct Primitive(ffi::dnnl_primitive_t);

// SAFETY: primitives are immutable; with a user scratchpad they execute concurrently on
// different streams.
unsafe impl Send for Primitive {}
// SAFETY: as above.
unsafe impl Sync for Primitive {}

impl Primitive {
    /// The primitive of `pd`.
    pub fn new(pd: &PrimitiveDesc) -> Result<Self, DnnlError> {
        let mut p = ptr::null_mut();
        // SAFETY: valid pd.
        check(
            unsafe { ffi::dnnl_primitive_create(&mut p, pd.0) },
            "dnnl_primitive_create",
        )?;
        Ok(Primitive(p))
    }

    /// Executes on `stream` with `args` (`DNNL_ARG_*` → memory).
    ///
    /// # Safety
    /// Every memory in `args` must be alive and point at a buffer that is valid (writable for
    /// outputs and the scratchpad) for at least its descriptor's size, and no other thread may
    /// use those buffers during the call.
    pub unsafe fn execute(
        &self,
        stream: &Stream,
        args: &[ffi::dnnl_exec_arg_t],
    ) -> Result<(), DnnlError> {
        // SAFETY: valid primitive and stream; the caller guarantees the memories.
        check(
            unsafe {
                ffi::dnnl_primitive_execute(self.0, stream.0, args.len() as c_int, args.as_ptr())
            },
            "dnnl_primitive_execute",
        )
    }
}

impl Drop for Primitive {
    fn drop(&mut self) {
        // SAFETY: owned handle.
        unsafe { ffi::dnnl_primitive_destroy(self.0) };
    }
}
