//! Typed calls of a registered datatype's library functions on bit patterns: the one place
//! where the address of a lowering becomes a callable C function.
//!
//! [`DatatypeCalls::new`] takes a custom dtype (`custom[posites2]16`) and looks up its
//! registered library; each accessor resolves one lowering key to a small callable record
//! ([`BinaryCall`], [`UnaryCall`], [`CompareCall`], [`CastCall`], [`DotProductCall`]) or names
//! the missing key.
//! Values of the datatype travel as their bit patterns widened to `u64` (the low `bits` bits);
//! the record calls the function with the C signature its key implies (see
//! [`byoc_sdk::LoweringKey`]): `uint8_t`, `uint16_t`, `uint32_t` or `uint64_t` for the
//! datatype, `float`/`double`/`int32_t` for the native side of a cast. An interpreter calls
//! these per element; a code generator reads the same keys and addresses.

// `u64::from` widens every storage type but the 64-bit one, which is `u64` already.
#![allow(
    clippy::useless_conversion,
    reason = "the storage-type macro widens u8/u16/u32 and u64 alike"
)]

use std::sync::Arc;

use thiserror::Error;

use super::libraries::{datatype_library, DatatypeLibrary};
use super::options::uses_dot_product;
use byoc_ir::tensor::{Tensor, TensorMut, TensorRef};
use byoc_ir::{DType, TensorType};
use byoc_sdk::LoweringKey;

/// Why a datatype's function cannot be called.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DatatypeCallError {
    /// The dtype is not a registered custom datatype.
    #[error("{dtype} is not a registered custom datatype")]
    NotCustom {
        /// The dtype.
        dtype: String,
    },
    /// The lowering table has no function for the key.
    #[error("{dtype} has no lowering for {key} (plugin '{plugin}')")]
    Missing {
        /// The dtype.
        dtype: String,
        /// The key, as TVM names it.
        key: String,
        /// The plugin that registered the datatype.
        plugin: String,
    },
    /// A cast to or from a native type the host cannot call.
    #[error(
        "casts between {dtype} and {native} are not supported (float32, float64 and int32 are)"
    )]
    Native {
        /// The dtype.
        dtype: String,
        /// The native dtype.
        native: DType,
    },
}

/// The library functions of one width of a registered datatype.
#[derive(Clone, Debug)]
pub struct DatatypeCalls {
    library: Arc<DatatypeLibrary>,
    dtype: DType,
    bits: u16,
}

/// A binary op `(uN, uN) -> uN`.
#[derive(Clone, Copy, Debug)]
pub struct BinaryCall {
    address: usize,
    bits: u16,
}

/// A unary op or intrinsic `(uN) -> uN`.
#[derive(Clone, Copy, Debug)]
pub struct UnaryCall {
    address: usize,
    bits: u16,
}

/// A comparison `(uN, uN) -> uint8_t`.
#[derive(Clone, Copy, Debug)]
pub struct CompareCall {
    address: usize,
    bits: u16,
}

/// The exact dot product `(const uN *a, const uN *b, size_t len) -> uN`: `Σ a[i]·b[i]` rounded
/// once.
#[derive(Clone, Copy, Debug)]
pub struct DotProductCall {
    address: usize,
    bits: u16,
}

/// The native side of a cast.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Native {
    F32,
    F64,
    I32,
}

impl Native {
    fn of(dtype: DType) -> Option<(Native, &'static str, u16)> {
        match dtype {
            DType::Float32 => Some((Native::F32, "float", 32)),
            DType::Float64 => Some((Native::F64, "float", 64)),
            DType::Int32 => Some((Native::I32, "int", 32)),
            _ => None,
        }
    }
}

/// A cast between the datatype and a native type; native values travel as `f64` (exact for
/// `float`, `double` and `int32_t`).
#[derive(Clone, Copy, Debug)]
pub struct CastCall {
    address: usize,
    bits: u16,
    native: Native,
}

/// Runs `$body` with `$U` bound to the storage type of a `$bits`-bit datatype.
macro_rules! call_with_storage {
    ($bits:expr, |$U:ident| $body:expr) => {
        match $bits {
            8 => {
                type $U = u8;
                $body
            }
            16 => {
                type $U = u16;
                $body
            }
            32 => {
                type $U = u32;
                $body
            }
            _ => {
                type $U = u64;
                $body
            }
        }
    };
}

impl BinaryCall {
    /// `f(a, b)` on bit patterns.
    pub fn call(self, a: u64, b: u64) -> u64 {
        call_with_storage!(self.bits, |U| {
            // SAFETY: an `Op` lowering of this width has the signature (uN, uN) -> uN; the
            // library stays loaded for the life of the process.
            let f: extern "C" fn(U, U) -> U = unsafe { std::mem::transmute(self.address) };
            u64::from(f(a as U, b as U))
        })
    }
}

impl UnaryCall {
    /// `f(a)` on a bit pattern.
    pub fn call(self, a: u64) -> u64 {
        call_with_storage!(self.bits, |U| {
            // SAFETY: an `Intrinsic` lowering of this width has the signature (uN) -> uN.
            let f: extern "C" fn(U) -> U = unsafe { std::mem::transmute(self.address) };
            u64::from(f(a as U))
        })
    }
}

impl CompareCall {
    /// `f(a, b) != 0` on bit patterns.
    pub fn call(self, a: u64, b: u64) -> bool {
        call_with_storage!(self.bits, |U| {
            // SAFETY: a comparison lowering of this width has the signature (uN, uN) -> uint8_t.
            let f: extern "C" fn(U, U) -> u8 = unsafe { std::mem::transmute(self.address) };
            f(a as U, b as U) != 0
        })
    }
}

impl DotProductCall {
    /// `Σ a[i]·b[i]` over the common length of two slices of bit patterns, rounded once.
    pub fn call(self, a: &[u64], b: &[u64]) -> u64 {
        let len = a.len().min(b.len());
        call_with_storage!(self.bits, |U| {
            let a: Vec<U> = a[..len].iter().map(|&x| x as U).collect();
            let b: Vec<U> = b[..len].iter().map(|&x| x as U).collect();
            // SAFETY: a `DotProduct` lowering of this width has the signature
            // (const uN *, const uN *, size_t) -> uN and reads `len` elements of each array,
            // both of which hold `len` elements here.
            let f: unsafe extern "C" fn(*const U, *const U, usize) -> U =
                unsafe { std::mem::transmute(self.address) };
            u64::from(unsafe { f(a.as_ptr(), b.as_ptr(), len) })
        })
    }

    /// The function's address, for compiled code that calls it directly.
    pub fn address(self) -> usize {
        self.address
    }
}

impl CastCall {
    /// A native value (given as `f64`) to the datatype's bit pattern.
    pub fn from_native(self, x: f64) -> u64 {
        call_with_storage!(self.bits, |U| {
            // SAFETY: a cast from a native type has the signature (native) -> uN, the native
            // C type following the cast key (float, double or int32_t).
            u64::from(unsafe {
                match self.native {
                    Native::F32 => std::mem::transmute::<usize, extern "C" fn(f32) -> U>(
                        self.address,
                    )(x as f32),
                    Native::F64 => {
                        std::mem::transmute::<usize, extern "C" fn(f64) -> U>(self.address)(x)
                    }
                    Native::I32 => std::mem::transmute::<usize, extern "C" fn(i32) -> U>(
                        self.address,
                    )(x as i32),
                }
            })
        })
    }

    /// A bit pattern of the datatype to the native value, as `f64`.
    pub fn to_native(self, a: u64) -> f64 {
        call_with_storage!(self.bits, |U| {
            let a = a as U;
            // SAFETY: a cast to a native type has the signature (uN) -> native.
            unsafe {
                match self.native {
                    Native::F32 => f64::from(
                        std::mem::transmute::<usize, extern "C" fn(U) -> f32>(self.address)(a),
                    ),
                    Native::F64 => {
                        std::mem::transmute::<usize, extern "C" fn(U) -> f64>(self.address)(a)
                    }
                    Native::I32 => f64::from(
                        std::mem::transmute::<usize, extern "C" fn(U) -> i32>(self.address)(a),
                    ),
                }
            }
        })
    }
}

impl DatatypeCalls {
    /// The calls of a registered custom dtype.
    pub fn new(dtype: DType) -> Result<DatatypeCalls, DatatypeCallError> {
        let not_custom = || DatatypeCallError::NotCustom {
            dtype: dtype.to_string(),
        };
        let DType::Custom { code, bits } = dtype else {
            return Err(not_custom());
        };
        let library = datatype_library(code).ok_or_else(not_custom)?;
        Ok(DatatypeCalls {
            library,
            dtype,
            bits,
        })
    }

    /// The dtype.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// The storage width.
    pub fn bits(&self) -> u16 {
        self.bits
    }

    /// The datatype's name (`posites2`).
    pub fn name(&self) -> &str {
        &self.library.datatype.name
    }

    /// The address of the library function of `key`, for code that calls it with the
    /// signature the key implies (a code generator's table of function pointers).
    pub fn address(&self, key: LoweringKey) -> Result<usize, DatatypeCallError> {
        self.library
            .function(&key)
            .map(|f| f.address)
            .ok_or_else(|| DatatypeCallError::Missing {
                dtype: self.dtype.to_string(),
                key: key.to_string(),
                plugin: self.library.plugin.clone(),
            })
    }

    /// A binary op by TVM's name (`Add`, `Sub`, `Mul`, `Div`, `Mod`, `Min`, `Max`).
    pub fn binary(&self, op: &str) -> Result<BinaryCall, DatatypeCallError> {
        Ok(BinaryCall {
            address: self.address(LoweringKey::Op {
                op: op.to_string(),
                bits: self.bits,
            })?,
            bits: self.bits,
        })
    }

    /// A comparison by TVM's name (`EQ`, `NE`, `LT`, `LE`, `GT`, `GE`).
    pub fn compare(&self, op: &str) -> Result<CompareCall, DatatypeCallError> {
        Ok(CompareCall {
            address: self.address(LoweringKey::Op {
                op: op.to_string(),
                bits: self.bits,
            })?,
            bits: self.bits,
        })
    }

    /// An intrinsic by its name (`tir.sqrt`).
    pub fn intrinsic(&self, name: &str) -> Result<UnaryCall, DatatypeCallError> {
        Ok(UnaryCall {
            address: self.address(LoweringKey::Intrinsic {
                name: name.to_string(),
                bits: self.bits,
            })?,
            bits: self.bits,
        })
    }

    /// The cast between the datatype and `native` (`float32`, `float64` or `int32`).
    pub fn cast(&self, native: DType, to_custom: bool) -> Result<CastCall, DatatypeCallError> {
        let (kind, name, native_bits) =
            Native::of(native).ok_or_else(|| DatatypeCallError::Native {
                dtype: self.dtype.to_string(),
                native,
            })?;
        let own = self.library.datatype.name.clone();
        let key = if to_custom {
            LoweringKey::Cast {
                src: name.to_string(),
                dst: own,
                src_bits: native_bits,
                dst_bits: self.bits,
            }
        } else {
            LoweringKey::Cast {
                src: own,
                dst: name.to_string(),
                src_bits: self.bits,
                dst_bits: native_bits,
            }
        };
        Ok(CastCall {
            address: self.address(key)?,
            bits: self.bits,
            native: kind,
        })
    }

    /// The bit pattern of a `float32` value (every registered width has this cast).
    pub fn from_f32(&self, x: f32) -> Result<u64, DatatypeCallError> {
        Ok(self.cast(DType::Float32, true)?.from_native(f64::from(x)))
    }

    /// The exact dot product of this width, when the table has one and the datatype's
    /// dot-product option is on ([`super::apply_datatype_options`]); `None` means sums of
    /// products add one rounded product at a time.
    pub fn dot_product(&self) -> Option<DotProductCall> {
        if !uses_dot_product(self.library.datatype.code) {
            return None;
        }
        self.library
            .function(&LoweringKey::DotProduct { bits: self.bits })
            .map(|f| DotProductCall {
                address: f.address,
                bits: self.bits,
            })
    }

    /// The registered min value (the start of a max reduction).
    pub fn min_value(&self) -> Result<u64, DatatypeCallError> {
        let address = self.address(LoweringKey::MinValue { bits: self.bits })?;
        Ok(call_with_storage!(self.bits, |U| {
            // SAFETY: a `MinValue` lowering has the signature () -> uN.
            let f: extern "C" fn() -> U = unsafe { std::mem::transmute(address) };
            u64::from(f())
        }))
    }
}

/// The elements of a custom-typed tensor as bit patterns, widened to `u64`.
pub fn read_bits(t: &TensorRef<'_>) -> Vec<u64> {
    let width = t.ty.dtype.size_bytes();
    t.bytes
        .chunks_exact(width)
        .map(|c| {
            let mut word = [0u8; 8];
            word[..width].copy_from_slice(c);
            u64::from_ne_bytes(word)
        })
        .collect()
}

/// Writes bit patterns (the low bits of each `u64`) into a custom-typed tensor.
pub fn write_bits(values: &[u64], t: &mut TensorMut<'_>) {
    let width = t.ty.dtype.size_bytes();
    for (chunk, &v) in t.bytes.chunks_exact_mut(width).zip(values) {
        chunk.copy_from_slice(&v.to_ne_bytes()[..width]);
    }
}

/// `t` converted element by element to `to` through the library's casts: a native tensor
/// (`float32`, `float64`, `int32`) to a custom datatype, or a custom one to a native dtype.
pub fn convert_tensor(t: &Tensor, to: DType) -> Result<Tensor, DatatypeCallError> {
    let from = t.dtype();
    let ty = TensorType::new(t.shape().to_vec(), to);
    let mut out = Tensor::zeros(ty);
    if to.is_custom() && !from.is_custom() {
        let cast = DatatypeCalls::new(to)?.cast(from, true)?;
        let bits: Vec<u64> = t
            .to_f64_vec()
            .into_iter()
            .map(|v| cast.from_native(v))
            .collect();
        write_bits(&bits, &mut out.view_mut());
    } else if from.is_custom() && !to.is_custom() {
        let cast = DatatypeCalls::new(from)?.cast(to, false)?;
        let values: Vec<f64> = read_bits(&t.view())
            .into_iter()
            .map(|b| cast.to_native(b))
            .collect();
        // The count matches by construction and native dtypes take any f64.
        out.view_mut()
            .fill_from_f64(&values)
            .map_err(|_| DatatypeCallError::Native {
                dtype: from.to_string(),
                native: to,
            })?;
    } else {
        return Err(DatatypeCallError::Native {
            dtype: from.to_string(),
            native: to,
        });
    }
    Ok(out)
}
