//! Dense tensors and borrowed views of them.
//!
//! A [`Tensor`] owns its elements in an 8-byte-aligned buffer, row-major (C order), so any
//! element type can be viewed in place with `bytemuck`. [`TensorRef`] and [`TensorMut`] are the
//! borrowed views kernels and runtimes work on; they never copy.

use std::fmt;

use bytemuck::Pod;
use half::{bf16, f16};
use thiserror::Error;

use crate::{DType, TensorType};

/// A Rust type that can be the element type of a tensor.
pub trait Element: Pod + Send + Sync + 'static {
    /// The dtype this Rust type stands for.
    const DTYPE: DType;
}

macro_rules! element {
    ($($t:ty => $d:expr),* $(,)?) => {
        $(impl Element for $t { const DTYPE: DType = $d; })*
    };
}
element!(f32 => DType::Float32, f64 => DType::Float64, f16 => DType::Float16,
    bf16 => DType::BFloat16, i8 => DType::Int8, i16 => DType::Int16, i32 => DType::Int32,
    i64 => DType::Int64, u8 => DType::UInt8);

/// Errors of tensor construction and access.
#[derive(Debug, Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum TensorError {
    /// The element count does not match the shape.
    #[error("{what}: shape {shape:?} holds {expected} elements but {got} were given")]
    ElementCount {
        /// What was being built.
        what: String,
        /// The shape.
        shape: Vec<usize>,
        /// Elements the shape needs.
        expected: usize,
        /// Elements given.
        got: usize,
    },
    /// A typed view was asked for with the wrong element type.
    #[error("tensor has dtype {actual}, not {requested}")]
    DType {
        /// The tensor's dtype.
        actual: DType,
        /// The dtype asked for.
        requested: DType,
    },
    /// The tensor's size overflows or its memory cannot be allocated.
    #[error("cannot allocate a tensor of type {ty}: {reason}")]
    Alloc {
        /// The tensor type.
        ty: TensorType,
        /// Why.
        reason: String,
    },
    /// A byte buffer has the wrong length for its type.
    #[error("tensor of type {ty} needs {expected} bytes but has {got}")]
    ByteCount {
        /// The tensor type.
        ty: TensorType,
        /// Bytes needed.
        expected: usize,
        /// Bytes given.
        got: usize,
    },
}

fn alloc_error(ty: &TensorType, reason: String) -> TensorError {
    TensorError::Alloc {
        ty: ty.clone(),
        reason,
    }
}

/// The element count of `ty`, checked for overflow.
fn checked_len(ty: &TensorType) -> Result<usize, TensorError> {
    crate::dims::product(&ty.shape)
        .ok_or_else(|| alloc_error(ty, "its element count overflows 64 bits".to_string()))
}

/// The byte size of `ty`, checked for overflow: the one check every constructor from bytes
/// makes, so a shape read from a file can never wrap to a small size.
fn checked_bytes(ty: &TensorType) -> Result<usize, TensorError> {
    checked_len(ty)?
        .checked_mul(ty.dtype.size_bytes())
        .ok_or_else(|| alloc_error(ty, "its size overflows 64 bits".to_string()))
}

/// An owned, 8-byte-aligned byte buffer.
#[derive(Clone, Default)]
pub struct AlignedBuf {
    words: Vec<u64>,
    len: usize,
}

impl AlignedBuf {
    /// A zero-filled buffer of `len` bytes.
    pub fn zeroed(len: usize) -> Self {
        AlignedBuf {
            words: vec![0; len.div_ceil(8)],
            len,
        }
    }

    /// A zero-filled buffer of `len` bytes; `None` when the memory cannot be allocated.
    /// The memory comes zeroed from the allocator (as with [`AlignedBuf::zeroed`]), so pages a
    /// kernel never touches are never written.
    pub fn try_zeroed(len: usize) -> Option<Self> {
        let n = len.div_ceil(8);
        if n == 0 {
            return Some(AlignedBuf::default());
        }
        let layout = std::alloc::Layout::array::<u64>(n).ok()?;
        // SAFETY: the layout has a non-zero size (n > 0).
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<u64>();
        if ptr.is_null() {
            return None;
        }
        // SAFETY: `ptr` comes from the global allocator with the layout of `n` u64s (what a
        // `Vec<u64>` of capacity `n` uses), and all `n` are initialized (all-zero bits).
        let words = unsafe { Vec::from_raw_parts(ptr, n, n) };
        Some(AlignedBuf { words, len })
    }

    /// A buffer holding a copy of these bytes.
    pub fn from_bytes(bytes: &[u8]) -> Self {
        let mut buf = AlignedBuf::zeroed(bytes.len());
        buf.as_bytes_mut().copy_from_slice(bytes);
        buf
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Grows (zero-filling) or shrinks the buffer to `len` bytes.
    pub fn resize(&mut self, len: usize) {
        self.words.resize(len.div_ceil(8), 0);
        self.len = len;
    }

    /// The bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &bytemuck::cast_slice(&self.words)[..self.len]
    }

    /// The bytes, mutably.
    pub fn as_bytes_mut(&mut self) -> &mut [u8] {
        &mut bytemuck::cast_slice_mut(&mut self.words)[..self.len]
    }
}

impl fmt::Debug for AlignedBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AlignedBuf({} bytes)", self.len)
    }
}

/// A dense tensor that owns its data.
#[derive(Clone, Debug)]
pub struct Tensor {
    ty: TensorType,
    data: AlignedBuf,
}

impl PartialEq for Tensor {
    fn eq(&self, other: &Self) -> bool {
        self.ty == other.ty && self.data.as_bytes() == other.data.as_bytes()
    }
}

impl Tensor {
    /// A zero-filled tensor (all bits zero: 0, 0.0, false).
    pub fn zeros(ty: TensorType) -> Self {
        let data = AlignedBuf::zeroed(ty.size_bytes());
        Tensor { ty, data }
    }

    /// A zero-filled tensor, or an error instead of an abort when its size overflows or the
    /// memory cannot be allocated: for tensors whose size comes from input.
    pub fn try_zeros(ty: TensorType) -> Result<Self, TensorError> {
        let bytes = checked_bytes(&ty)?;
        let data = AlignedBuf::try_zeroed(bytes)
            .ok_or_else(|| alloc_error(&ty, format!("{bytes} bytes are not available")))?;
        Ok(Tensor { ty, data })
    }

    /// A tensor from elements in row-major order.
    pub fn from_vec<T: Element>(
        shape: impl Into<Vec<usize>>,
        values: Vec<T>,
    ) -> Result<Self, TensorError> {
        Self::from_slice(shape, &values)
    }

    /// A tensor from elements in row-major order.
    pub fn from_slice<T: Element>(
        shape: impl Into<Vec<usize>>,
        values: &[T],
    ) -> Result<Self, TensorError> {
        let ty = TensorType::new(shape, T::DTYPE);
        check_count("tensor", &ty, values.len())?;
        Ok(Tensor {
            data: AlignedBuf::from_bytes(bytemuck::cast_slice(values)),
            ty,
        })
    }

    /// A scalar tensor.
    pub fn scalar<T: Element>(value: T) -> Self {
        Tensor {
            ty: TensorType::scalar(T::DTYPE),
            data: AlignedBuf::from_bytes(bytemuck::bytes_of(&value)),
        }
    }

    /// A tensor from raw bytes in the dtype's native (little-endian) representation.
    pub fn from_bytes(ty: TensorType, bytes: &[u8]) -> Result<Self, TensorError> {
        let expected = checked_bytes(&ty)?;
        if bytes.len() != expected {
            return Err(TensorError::ByteCount {
                expected,
                got: bytes.len(),
                ty,
            });
        }
        Ok(Tensor {
            data: AlignedBuf::from_bytes(bytes),
            ty,
        })
    }

    /// A tensor that takes ownership of `data` (no copy); its length must be `ty.size_bytes()`.
    pub fn from_buf(ty: TensorType, data: AlignedBuf) -> Result<Self, TensorError> {
        let expected = checked_bytes(&ty)?;
        if data.len() != expected {
            return Err(TensorError::ByteCount {
                expected,
                got: data.len(),
                ty,
            });
        }
        Ok(Tensor { ty, data })
    }

    /// A tensor whose elements are `values` converted to `ty.dtype` (rounding and saturating as
    /// a C cast from double would, for integers truncating toward zero). Custom dtypes are
    /// rejected: their encoding belongs to the plugin that registered them.
    pub fn from_f64(ty: TensorType, values: &[f64]) -> Result<Self, TensorError> {
        check_count("tensor", &ty, values.len())?;
        let mut t = Tensor::try_zeros(ty)?;
        t.view_mut().fill_from_f64(values)?;
        Ok(t)
    }

    /// A tensor of uniform random values drawn from `rng`: [-1, 1) for floats, [-8, 8) for
    /// signed and [0, 16) for unsigned integers, 0/1 for bools. Seeded generators make it
    /// deterministic (`--random-inputs`, tests, benchmarks). The values are written in place:
    /// the tensor is the only buffer.
    pub fn random_uniform(ty: TensorType, rng: &mut impl rand::Rng) -> Result<Self, TensorError> {
        let dtype = ty.dtype;
        let mut t = Tensor::try_zeros(ty)?;
        let n = t.ty.num_elements();
        t.view_mut().fill_from_iter((0..n).map(|_| {
            if dtype.is_float() {
                rng.gen_range(-1.0..1.0)
            } else if dtype == DType::UInt8 {
                f64::from(rng.gen_range(0u8..16))
            } else if dtype == DType::Bool {
                f64::from(rng.gen_range(0u8..2))
            } else {
                f64::from(rng.gen_range(-8i8..8))
            }
        }))?;
        Ok(t)
    }

    /// A tensor with every element equal to `value` (converted to the dtype).
    pub fn full(ty: TensorType, value: f64) -> Result<Self, TensorError> {
        let mut t = Tensor::try_zeros(ty)?;
        t.view_mut().fill_from_iter(std::iter::repeat(value))?;
        Ok(t)
    }

    /// The tensor's type.
    pub fn ty(&self) -> &TensorType {
        &self.ty
    }

    /// The shape.
    pub fn shape(&self) -> &[usize] {
        &self.ty.shape
    }

    /// The dtype.
    pub fn dtype(&self) -> DType {
        self.ty.dtype
    }

    /// The raw bytes.
    pub fn as_bytes(&self) -> &[u8] {
        self.data.as_bytes()
    }

    /// The elements as a typed slice; the dtype must match `T`.
    pub fn as_slice<T: Element>(&self) -> Result<&[T], TensorError> {
        self.view().as_slice()
    }

    /// The elements as a typed mutable slice; the dtype must match `T`.
    pub fn as_slice_mut<T: Element>(&mut self) -> Result<&mut [T], TensorError> {
        check_dtype::<T>(self.ty.dtype)?;
        Ok(bytemuck::cast_slice_mut(self.data.as_bytes_mut()))
    }

    /// Every element converted to `f64` (bool as 0/1).
    pub fn to_f64_vec(&self) -> Vec<f64> {
        self.view().to_f64_vec()
    }

    /// A borrowed view.
    pub fn view(&self) -> TensorRef<'_> {
        TensorRef {
            ty: &self.ty,
            bytes: self.data.as_bytes(),
        }
    }

    /// A borrowed mutable view.
    pub fn view_mut(&mut self) -> TensorMut<'_> {
        TensorMut {
            ty: &self.ty,
            bytes: self.data.as_bytes_mut(),
        }
    }

    /// The same elements under a new shape with the same element count.
    pub fn reshaped(mut self, shape: impl Into<Vec<usize>>) -> Result<Self, TensorError> {
        let shape = shape.into();
        let ty = TensorType::new(shape, self.ty.dtype);
        check_count("reshape", &ty, self.ty.num_elements())?;
        self.ty = ty;
        Ok(self)
    }
}

fn check_count(what: &str, ty: &TensorType, got: usize) -> Result<(), TensorError> {
    if ty.num_elements() != got {
        return Err(TensorError::ElementCount {
            what: what.to_string(),
            shape: ty.shape.clone(),
            expected: ty.num_elements(),
            got,
        });
    }
    Ok(())
}

fn check_dtype<T: Element>(actual: DType) -> Result<(), TensorError> {
    // Bool is stored as one byte per element and viewed as u8.
    let ok = actual == T::DTYPE || (actual == DType::Bool && T::DTYPE == DType::UInt8);
    if ok {
        Ok(())
    } else {
        Err(TensorError::DType {
            actual,
            requested: T::DTYPE,
        })
    }
}

/// A borrowed, read-only tensor view: a type and the bytes of its elements.
#[derive(Clone, Copy, Debug)]
pub struct TensorRef<'a> {
    /// The tensor type.
    pub ty: &'a TensorType,
    /// The elements, row-major; `bytes.len() == ty.size_bytes()`, 8-byte aligned.
    pub bytes: &'a [u8],
}

/// A borrowed, writable tensor view.
#[derive(Debug)]
pub struct TensorMut<'a> {
    /// The tensor type.
    pub ty: &'a TensorType,
    /// The elements, row-major; `bytes.len() == ty.size_bytes()`, 8-byte aligned.
    pub bytes: &'a mut [u8],
}

impl<'a> TensorRef<'a> {
    /// The elements as a typed slice; the dtype must match `T`.
    pub fn as_slice<T: Element>(&self) -> Result<&'a [T], TensorError> {
        check_dtype::<T>(self.ty.dtype)?;
        Ok(bytemuck::cast_slice(self.bytes))
    }

    /// The shape.
    pub fn shape(&self) -> &'a [usize] {
        &self.ty.shape
    }

    /// An owned copy.
    pub fn to_tensor(&self) -> Tensor {
        Tensor {
            ty: self.ty.clone(),
            data: AlignedBuf::from_bytes(self.bytes),
        }
    }

    /// Every element converted to `f64` (bool as 0/1). Custom dtypes give their raw bits.
    pub fn to_f64_vec(&self) -> Vec<f64> {
        fn conv<T: Pod, F: Fn(T) -> f64>(bytes: &[u8], f: F) -> Vec<f64> {
            bytemuck::cast_slice::<u8, T>(bytes)
                .iter()
                .map(|&v| f(v))
                .collect()
        }
        let b = self.bytes;
        match self.ty.dtype {
            DType::Bool | DType::UInt8 => conv(b, |v: u8| f64::from(v)),
            DType::Int8 => conv(b, |v: i8| f64::from(v)),
            DType::Int16 => conv(b, |v: i16| f64::from(v)),
            DType::Int32 => conv(b, |v: i32| f64::from(v)),
            DType::Int64 => conv(b, |v: i64| v as f64),
            DType::Float16 => conv(b, |v: f16| v.to_f64()),
            DType::BFloat16 => conv(b, |v: bf16| v.to_f64()),
            DType::Float32 => conv(b, |v: f32| f64::from(v)),
            DType::Float64 => conv(b, |v: f64| v),
            DType::Custom { bits, .. } => match bits {
                8 => conv(b, |v: u8| f64::from(v)),
                16 => conv(b, |v: u16| f64::from(v)),
                32 => conv(b, |v: u32| f64::from(v)),
                _ => conv(b, |v: u64| v as f64),
            },
        }
    }
}

impl<'a> TensorMut<'a> {
    /// The elements as a typed mutable slice; the dtype must match `T`.
    pub fn as_slice_mut<T: Element>(&mut self) -> Result<&mut [T], TensorError> {
        check_dtype::<T>(self.ty.dtype)?;
        Ok(bytemuck::cast_slice_mut(self.bytes))
    }

    /// A read-only view of the same elements.
    pub fn as_ref(&self) -> TensorRef<'_> {
        TensorRef {
            ty: self.ty,
            bytes: self.bytes,
        }
    }

    /// Overwrites every element with `values` converted to the dtype (see [`Tensor::from_f64`]).
    pub fn fill_from_f64(&mut self, values: &[f64]) -> Result<(), TensorError> {
        check_count("fill", self.ty, values.len())?;
        self.fill_from_iter(values.iter().copied())
    }

    /// Overwrites the elements, in order, with the first values of `values` converted to the
    /// dtype (see [`Tensor::from_f64`]); elements past the end of `values` keep theirs.
    pub fn fill_from_iter(&mut self, values: impl Iterator<Item = f64>) -> Result<(), TensorError> {
        fn put<T: Pod>(bytes: &mut [u8], values: impl Iterator<Item = f64>, f: impl Fn(f64) -> T) {
            for (d, v) in bytemuck::cast_slice_mut::<u8, T>(bytes)
                .iter_mut()
                .zip(values)
            {
                *d = f(v);
            }
        }
        let b = &mut *self.bytes;
        match self.ty.dtype {
            DType::Bool => put(b, values, |v| u8::from(v != 0.0)),
            DType::UInt8 => put(b, values, |v| v as u8),
            DType::Int8 => put(b, values, |v| v as i8),
            DType::Int16 => put(b, values, |v| v as i16),
            DType::Int32 => put(b, values, |v| v as i32),
            DType::Int64 => put(b, values, |v| v as i64),
            DType::Float16 => put(b, values, f16::from_f64),
            DType::BFloat16 => put(b, values, bf16::from_f64),
            DType::Float32 => put(b, values, |v| v as f32),
            DType::Float64 => put(b, values, |v| v),
            DType::Custom { .. } => {
                return Err(TensorError::DType {
                    actual: self.ty.dtype,
                    requested: DType::Float64,
                })
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_from_bytes_are_checked_not_wrapped() {
        // (2^62 + 1) * 4 elements wrap to 4 in 64 bits: 16 bytes of float32.
        let ty = TensorType::new(vec![(1 << 62) + 1, 4], DType::Float32);
        let err = Tensor::from_bytes(ty.clone(), &[0; 16]).unwrap_err();
        assert!(err.to_string().contains("overflows 64 bits"), "{err}");
        let err = Tensor::from_buf(ty, AlignedBuf::zeroed(16)).unwrap_err();
        assert!(err.to_string().contains("overflows 64 bits"), "{err}");
    }

    #[test]
    fn sizes_from_input_fail_instead_of_aborting() {
        let overflow = TensorType::new(vec![usize::MAX, 2], DType::Float32);
        let err = Tensor::try_zeros(overflow.clone()).unwrap_err();
        assert!(err.to_string().contains("overflows 64 bits"), "{err}");
        let mut rng = rand::rngs::mock::StepRng::new(0, 1);
        assert!(Tensor::random_uniform(overflow, &mut rng).is_err());
        // 2^60 elements: no machine has the memory; the reservation fails, nothing aborts.
        let huge = TensorType::new(vec![1 << 30, 1 << 30], DType::Float32);
        let err = Tensor::full(huge.clone(), 1.0).unwrap_err();
        assert!(err.to_string().contains("are not available"), "{err}");
        assert!(Tensor::try_zeros(huge).is_err());
        let small = Tensor::try_zeros(TensorType::new(vec![2, 3], DType::Int64)).unwrap();
        assert_eq!(small.as_slice::<i64>().unwrap(), &[0; 6]);
    }

    #[test]
    fn typed_views_check_dtype() {
        let t = Tensor::from_vec([2, 2], vec![1.0f32, 2.0, 3.0, 4.0]).unwrap();
        assert_eq!(t.as_slice::<f32>().unwrap(), &[1.0, 2.0, 3.0, 4.0]);
        let err = t.as_slice::<i32>().unwrap_err();
        assert_eq!(err.to_string(), "tensor has dtype float32, not int32");
        let err = Tensor::from_vec([3], vec![1i8, 2]).unwrap_err();
        assert!(err
            .to_string()
            .contains("holds 3 elements but 2 were given"));
    }

    #[test]
    fn f64_conversion_follows_c_casts() {
        let t = Tensor::from_f64(TensorType::new([3], DType::Int8), &[1.7, -1.7, 300.0]).unwrap();
        assert_eq!(t.as_slice::<i8>().unwrap(), &[1, -1, 127]);
        let b = Tensor::from_f64(TensorType::new([2], DType::Bool), &[0.0, 2.0]).unwrap();
        assert_eq!(b.to_f64_vec(), vec![0.0, 1.0]);
        let h = Tensor::full(TensorType::new([2], DType::Float16), 0.5).unwrap();
        assert_eq!(h.to_f64_vec(), vec![0.5, 0.5]);
    }
}
