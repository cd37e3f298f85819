//! Host reference kernels: the numeric loops behind the built-in ops' host kernels.
//!
//! Op definitions (`byoc_ir::ops`) check attributes and types and pick a kernel here; the loops
//! themselves are dtype-generic (monomorphized through [`Scalar`] and the dispatch macros) and
//! work on row-major slices. Every kernel built with [`kernel`] checks at run time that it got
//! the tensor types it was built for, so the loops may index without further bounds reasoning.
//! Large tensors (at least [`PARALLEL_MIN_ELEMENTS`] elements) are split across the rayon pool
//! when the executor grants more than one thread.

pub(crate) mod broadcast;
pub(crate) mod conv;
pub(crate) mod custom;
pub mod datatypes;
pub(crate) mod depthwise;
pub(crate) mod elementwise;
pub(crate) mod gemm;
pub(crate) mod gemm_int8;
mod isa;
pub(crate) mod nms;
pub(crate) mod norm;
pub(crate) mod numeric;
mod ops;
pub(crate) mod pad;
pub(crate) mod pool;
pub(crate) mod reduce;
mod registry;
pub(crate) mod resize;
mod scalar;
mod scratch;
pub(crate) mod simd;
mod spec;
pub(crate) mod transform;
pub(crate) mod window;

pub use registry::{
    host_kernel, register_kernel, KernelBuilder, KernelRegistryError, NamedBuilder,
};
pub(crate) use scalar::{Float, Int, Scalar, Wide};
pub(crate) use spec::apply_to_output;
pub use spec::{HostKernel, KernelError, KernelSpec, OutputEpilogue};

use byoc_ir::tensor::{Element, TensorMut, TensorRef};
use byoc_ir::TensorType;

/// Tensors with at least this many elements are processed in parallel when threads > 1.
pub(crate) const PARALLEL_MIN_ELEMENTS: usize = 1 << 16;

/// True when work over `n` elements should be split across threads.
pub(crate) fn parallel(threads: usize, n: usize) -> bool {
    threads > 1 && n >= PARALLEL_MIN_ELEMENTS
}

/// Runs `$body` with the type alias `$T` bound to the Rust element type of `$dtype`, for the
/// dtypes listed; any other dtype evaluates `$otherwise`.
macro_rules! dispatch {
    ($dtype:expr, |$T:ident| $body:expr, [$($d:ident => $t:ty),*], $otherwise:expr) => {
        match $dtype {
            $(byoc_ir::DType::$d => {
                #[allow(dead_code, reason = "not every dispatch uses the alias")]
                type $T = $t;
                $body
            })*
            _ => $otherwise,
        }
    };
}

/// [`dispatch!`] over the numeric built-in dtypes (not bool, not 16-bit floats).
macro_rules! with_numeric {
    ($dtype:expr, |$T:ident| $body:expr, $otherwise:expr) => {
        crate::dispatch!($dtype, |$T| $body,
            [Float32 => f32, Float64 => f64, Int8 => i8, Int16 => i16, Int32 => i32,
             Int64 => i64, UInt8 => u8], $otherwise)
    };
}

/// [`dispatch!`] over the numeric built-in dtypes plus bool (read as `u8` 0/1).
macro_rules! with_numeric_or_bool {
    ($dtype:expr, |$T:ident| $body:expr, $otherwise:expr) => {
        crate::dispatch!($dtype, |$T| $body,
            [Float32 => f32, Float64 => f64, Int8 => i8, Int16 => i16, Int32 => i32,
             Int64 => i64, UInt8 => u8, Bool => u8], $otherwise)
    };
}

/// [`dispatch!`] over `float32` and `float64`.
macro_rules! with_float {
    ($dtype:expr, |$T:ident| $body:expr, $otherwise:expr) => {
        crate::dispatch!($dtype, |$T| $body, [Float32 => f32, Float64 => f64], $otherwise)
    };
}

/// [`dispatch!`] over the integer dtypes.
macro_rules! with_int {
    ($dtype:expr, |$T:ident| $body:expr, $otherwise:expr) => {
        crate::dispatch!($dtype, |$T| $body,
            [Int8 => i8, Int16 => i16, Int32 => i32, Int64 => i64, UInt8 => u8], $otherwise)
    };
}

/// Runs `$body` with `$W` bound to an unsigned integer type as wide as one element of
/// `$bytes` bytes, for byte-moving kernels that work on any dtype.
macro_rules! with_width {
    ($bytes:expr, |$W:ident| $body:expr, $otherwise:expr) => {
        match $bytes {
            1 => {
                type $W = u8;
                $body
            }
            2 => {
                type $W = u16;
                $body
            }
            4 => {
                type $W = u32;
                $body
            }
            8 => {
                type $W = u64;
                $body
            }
            _ => $otherwise,
        }
    };
}

pub(crate) use {dispatch, with_float, with_int, with_numeric, with_numeric_or_bool, with_width};

/// The loop of a kernel: inputs and outputs already checked against the built-for types.
type KernelFn =
    dyn Fn(&[TensorRef<'_>], &mut [TensorMut<'_>], usize) -> Result<(), KernelError> + Send + Sync;

/// A host kernel made of a closure plus the tensor types it was built for.
struct FnKernel {
    op: String,
    inputs: Vec<TensorType>,
    outputs: Vec<TensorType>,
    run: Box<KernelFn>,
}

impl FnKernel {
    fn check(
        &self,
        what: &str,
        want: &[TensorType],
        got: &[(&TensorType, usize)],
    ) -> Result<(), KernelError> {
        if want.len() != got.len() {
            return Err(KernelError::new(
                &self.op,
                format!(
                    "expected {} {what} tensor(s), got {}",
                    want.len(),
                    got.len()
                ),
            ));
        }
        for (i, (w, (ty, len))) in want.iter().zip(got).enumerate() {
            if w != *ty || *len != w.size_bytes() {
                return Err(KernelError::new(
                    &self.op,
                    format!("{what} {i} is {ty} ({len} bytes) but the kernel was built for {w}"),
                ));
            }
        }
        Ok(())
    }
}

impl HostKernel for FnKernel {
    fn run(
        &self,
        inputs: &[TensorRef<'_>],
        outputs: &mut [TensorMut<'_>],
        threads: usize,
    ) -> Result<(), KernelError> {
        let ins: Vec<_> = inputs.iter().map(|t| (t.ty, t.bytes.len())).collect();
        self.check("input", &self.inputs, &ins)?;
        let outs: Vec<_> = outputs.iter().map(|t| (t.ty, t.bytes.len())).collect();
        self.check("output", &self.outputs, &outs)?;
        (self.run)(inputs, outputs, threads)
    }
}

/// A host kernel for `op` running `run` on inputs and outputs of exactly these types.
pub(crate) fn kernel(
    op: &str,
    inputs: &[TensorType],
    outputs: &[TensorType],
    run: impl Fn(&[TensorRef<'_>], &mut [TensorMut<'_>], usize) -> Result<(), KernelError>
        + Send
        + Sync
        + 'static,
) -> Box<dyn HostKernel> {
    Box::new(FnKernel {
        op: op.to_string(),
        inputs: inputs.to_vec(),
        outputs: outputs.to_vec(),
        run: Box::new(run),
    })
}

/// Input `i` as a typed slice (bool read as `u8`). Types were checked by [`kernel`], so a
/// mismatch here is a wiring mistake in the op, reported rather than panicking.
pub(crate) fn input<'a, T: Element>(
    inputs: &[TensorRef<'a>],
    i: usize,
) -> Result<&'a [T], KernelError> {
    let t = inputs
        .get(i)
        .ok_or_else(|| KernelError::new("kernel", format!("missing input {i}")))?;
    t.as_slice::<T>()
        .map_err(|e| KernelError::new("kernel", format!("input {i}: {e}")))
}

/// Output `i` as a typed mutable slice (bool written as `u8`).
pub(crate) fn output<'s, T: Element>(
    outputs: &'s mut [TensorMut<'_>],
    i: usize,
) -> Result<&'s mut [T], KernelError> {
    let t = outputs
        .get_mut(i)
        .ok_or_else(|| KernelError::new("kernel", format!("missing output {i}")))?;
    t.as_slice_mut::<T>()
        .map_err(|e| KernelError::new("kernel", format!("output {i}: {e}")))
}

/// Bytes viewed as elements of width `W` (tensor buffers are 8-byte aligned).
pub(crate) fn words<W: bytemuck::Pod>(bytes: &[u8]) -> Result<&[W], KernelError> {
    bytemuck::try_cast_slice(bytes)
        .map_err(|e| KernelError::new("kernel", format!("misaligned tensor buffer: {e}")))
}

/// Bytes viewed as mutable elements of width `W`.
pub(crate) fn words_mut<W: bytemuck::Pod>(bytes: &mut [u8]) -> Result<&mut [W], KernelError> {
    bytemuck::try_cast_slice_mut(bytes)
        .map_err(|e| KernelError::new("kernel", format!("misaligned tensor buffer: {e}")))
}

/// Row-major strides (in elements) of `shape`.
pub(crate) fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1];
    }
    s
}
