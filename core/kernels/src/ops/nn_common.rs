//! Host kernels of the nn_common ops: the kernel half of [`byoc_ir::ops::nn_common`].

use byoc_ir::DType;

use {
    crate::gemm::Gemm,
    crate::numeric::{Real, Widen},
    crate::{HostKernel, KernelError, KernelSpec, OutputEpilogue},
    byoc_ir::tensor::{Element, TensorMut, TensorRef},
    std::marker::PhantomData,
};

/// Input `i` of a kernel as a typed slice.
pub(super) fn input<'a, T: Element>(
    op: &str,
    inputs: &[TensorRef<'a>],
    i: usize,
) -> Result<&'a [T], KernelError> {
    inputs
        .get(i)
        .ok_or_else(|| KernelError::new(op, format!("missing input {i}")))?
        .as_slice()
        .map_err(|e| KernelError::new(op, format!("input {i}: {e}")))
}

/// Output `i` of a kernel as a typed mutable slice.
pub(super) fn output<'o, T: Element>(
    op: &str,
    outputs: &'o mut [TensorMut<'_>],
    i: usize,
) -> Result<&'o mut [T], KernelError> {
    outputs
        .get_mut(i)
        .ok_or_else(|| KernelError::new(op, format!("missing output {i}")))?
        .as_slice_mut()
        .map_err(|e| KernelError::new(op, format!("output {i}: {e}")))
}

/// A kernel body generic over a floating-point element type.
pub(super) trait RealBody: Send + Sync + 'static {
    /// Runs the kernel with elements of type `T`.
    fn run<T: Real>(
        &self,
        inputs: &[TensorRef<'_>],
        outputs: &mut [TensorMut<'_>],
        threads: usize,
    ) -> Result<(), KernelError>;
}

/// A [`RealBody`] fixed to element type `T`.
struct RealTyped<K, T>(K, PhantomData<fn() -> T>);

impl<K: RealBody, T: Real> HostKernel for RealTyped<K, T> {
    fn run(
        &self,
        inputs: &[TensorRef<'_>],
        outputs: &mut [TensorMut<'_>],
        threads: usize,
    ) -> Result<(), KernelError> {
        self.0.run::<T>(inputs, outputs, threads)
    }
}

/// The host kernel running `body` on `dtype` elements (float32 or float64).
pub(super) fn real_kernel<K: RealBody>(
    spec: &KernelSpec<'_>,
    dtype: DType,
    body: K,
) -> Result<Box<dyn HostKernel>, KernelError> {
    match dtype {
        DType::Float32 => Ok(Box::new(RealTyped::<K, f32>(body, PhantomData))),
        DType::Float64 => Ok(Box::new(RealTyped::<K, f64>(body, PhantomData))),
        other => Err(spec.unsupported(other)),
    }
}

/// A GEMM-based kernel body over data elements `A`, weight elements `B`, accumulating and
/// producing `T`.
pub(super) trait GemmBody: Send + Sync + 'static {
    /// Runs the kernel with these element types, then `epilogue` (if any) over output 0 (see
    /// [`HostKernel::run_with_epilogue`]).
    fn run<A: Widen<T>, B: Widen<T>, T: Gemm>(
        &self,
        inputs: &[TensorRef<'_>],
        outputs: &mut [TensorMut<'_>],
        threads: usize,
        epilogue: Option<&dyn OutputEpilogue>,
    ) -> Result<(), KernelError>;
}

/// A [`GemmBody`] fixed to element types.
struct GemmTyped<K, A, B, T>(K, PhantomData<fn(A, B) -> T>);

impl<K: GemmBody, A: Widen<T>, B: Widen<T>, T: Gemm> HostKernel for GemmTyped<K, A, B, T> {
    fn run(
        &self,
        inputs: &[TensorRef<'_>],
        outputs: &mut [TensorMut<'_>],
        threads: usize,
    ) -> Result<(), KernelError> {
        self.0.run::<A, B, T>(inputs, outputs, threads, None)
    }

    fn run_with_epilogue(
        &self,
        inputs: &[TensorRef<'_>],
        outputs: &mut [TensorMut<'_>],
        threads: usize,
        epilogue: &dyn OutputEpilogue,
    ) -> Result<(), KernelError> {
        self.0
            .run::<A, B, T>(inputs, outputs, threads, Some(epilogue))
    }
}

/// The host kernel running `body` for data dtype `a`, weight dtype `b` and output dtype `out`:
/// float32 and float64 throughout, or int8/uint8/int32 operands accumulating exactly in int32.
pub(super) fn gemm_kernel<K: GemmBody>(
    spec: &KernelSpec<'_>,
    a: DType,
    b: DType,
    out: DType,
    body: K,
) -> Result<Box<dyn HostKernel>, KernelError> {
    use DType::{Float32, Float64, Int32, Int8, UInt8};
    fn typed<K: GemmBody, A: Widen<T>, B: Widen<T>, T: Gemm>(body: K) -> Box<dyn HostKernel> {
        Box::new(GemmTyped::<K, A, B, T>(body, PhantomData))
    }
    Ok(match (a, b, out) {
        (Float32, Float32, Float32) => typed::<K, f32, f32, f32>(body),
        (Float64, Float64, Float64) => typed::<K, f64, f64, f64>(body),
        (Int8, Int8, Int32) => typed::<K, i8, i8, i32>(body),
        (Int8, UInt8, Int32) => typed::<K, i8, u8, i32>(body),
        (UInt8, Int8, Int32) => typed::<K, u8, i8, i32>(body),
        (UInt8, UInt8, Int32) => typed::<K, u8, u8, i32>(body),
        (Int32, Int32, Int32) => typed::<K, i32, i32, i32>(body),
        _ => return Err(spec.unsupported(format!("{a} x {b} -> {out}"))),
    })
}
