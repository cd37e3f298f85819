//! DLPack-like tensor views: how tensors cross the plugin boundary without copies.
//!
//! A [`TensorView`] is `#[repr(C)]`: a data pointer, the rank, a pointer to the shape, a
//! pointer to the strides (in elements; null means compact row-major, the only layout the
//! host passes today) and a [`DataType`] with DLPack's codes (`int` 0, `uint` 1, `float` 2,
//! `bfloat` 4, `bool` 6; custom datatypes keep their registered code, 129 and up, as in TVM).
//! The caller owns the memory behind every pointer for the duration of the call.

use thiserror::Error;

use byoc_ir::{DType, TensorType};

/// A tensor view that does not describe a tensor byoc can use.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[error("{0}")]
pub struct ViewError(pub String);

/// DLPack's `DLDataType`: type code, bits per lane, lanes (always 1 here).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataType {
    /// The type code.
    pub code: u8,
    /// Bits per element.
    pub bits: u8,
    /// Vector lanes.
    pub lanes: u16,
}

const DL_INT: u8 = 0;
const DL_UINT: u8 = 1;
const DL_FLOAT: u8 = 2;
const DL_BFLOAT: u8 = 4;
const DL_BOOL: u8 = 6;

impl DataType {
    /// The DLPack code of a byoc dtype.
    pub fn of(dtype: DType) -> Self {
        let (code, bits) = match dtype {
            DType::Bool => (DL_BOOL, 8),
            DType::Int8 => (DL_INT, 8),
            DType::Int16 => (DL_INT, 16),
            DType::Int32 => (DL_INT, 32),
            DType::Int64 => (DL_INT, 64),
            DType::UInt8 => (DL_UINT, 8),
            DType::Float16 => (DL_FLOAT, 16),
            DType::BFloat16 => (DL_BFLOAT, 16),
            DType::Float32 => (DL_FLOAT, 32),
            DType::Float64 => (DL_FLOAT, 64),
            DType::Custom { code, bits } => (code, u8::try_from(bits).unwrap_or(0)),
        };
        DataType {
            code,
            bits,
            lanes: 1,
        }
    }

    /// The byoc dtype of a DLPack code, if it is one byoc has.
    pub fn dtype(self) -> Option<DType> {
        if self.lanes != 1 {
            return None;
        }
        Some(match (self.code, self.bits) {
            (DL_BOOL, 8) => DType::Bool,
            (DL_INT, 8) => DType::Int8,
            (DL_INT, 16) => DType::Int16,
            (DL_INT, 32) => DType::Int32,
            (DL_INT, 64) => DType::Int64,
            (DL_UINT, 8) => DType::UInt8,
            (DL_FLOAT, 16) => DType::Float16,
            (DL_BFLOAT, 16) => DType::BFloat16,
            (DL_FLOAT, 32) => DType::Float32,
            (DL_FLOAT, 64) => DType::Float64,
            (code, bits @ (8 | 16 | 32 | 64)) if code >= 129 => DType::Custom {
                code,
                bits: u16::from(bits),
            },
            _ => return None,
        })
    }
}

/// A borrowed tensor (DLPack's `DLTensor` without the device).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TensorView {
    /// The first element.
    pub data: *mut u8,
    /// The rank.
    pub ndim: u32,
    /// The element type.
    pub dtype: DataType,
    /// `ndim` dimensions.
    pub shape: *const i64,
    /// `ndim` strides in elements, or null for compact row-major.
    pub strides: *const i64,
    /// Bytes behind `data` (the compact size of the shape; lets the receiver check bounds).
    pub byte_len: u64,
}

impl TensorView {
    /// A view of `bytes` with type `ty`; `shape` must hold `ty`'s dimensions as `i64` and
    /// outlive the view's use.
    pub fn new(ty: &TensorType, shape: &[i64], bytes: *const u8, byte_len: usize) -> Self {
        TensorView {
            data: bytes.cast_mut(),
            ndim: u32::try_from(shape.len()).unwrap_or(u32::MAX),
            dtype: DataType::of(ty.dtype),
            shape: shape.as_ptr(),
            strides: std::ptr::null(),
            byte_len: byte_len as u64,
        }
    }

    /// The tensor type this view describes, checking that the layout is compact and that the
    /// byte length matches the shape.
    ///
    /// # Safety
    /// `shape` and `strides` (when non-null) must point to `ndim` readable `i64`s.
    pub unsafe fn tensor_type(&self) -> Result<TensorType, ViewError> {
        let dtype = self
            .dtype
            .dtype()
            .ok_or_else(|| ViewError(format!("unsupported dtype code {:?}", self.dtype)))?;
        let n = self.ndim as usize;
        let dims: &[i64] = if n == 0 {
            &[]
        } else {
            // SAFETY: the caller guarantees `ndim` readable dimensions.
            unsafe { std::slice::from_raw_parts(self.shape, n) }
        };
        let shape = dims
            .iter()
            .map(|&d| usize::try_from(d).map_err(|_| ViewError(format!("negative dimension {d}"))))
            .collect::<Result<Vec<_>, _>>()?;
        if !self.strides.is_null() {
            // SAFETY: as above, for the strides.
            let strides = unsafe { std::slice::from_raw_parts(self.strides, n) };
            let mut expect = 1i64;
            for (s, d) in strides.iter().zip(dims).rev() {
                if *s != expect {
                    return Err(ViewError(
                        "only compact row-major tensors are supported".to_string(),
                    ));
                }
                expect = expect.saturating_mul(*d);
            }
        }
        let ty = TensorType::new(shape, dtype);
        if ty.size_bytes() as u64 != self.byte_len {
            return Err(ViewError(format!(
                "{ty} needs {} bytes but the view has {}",
                ty.size_bytes(),
                self.byte_len
            )));
        }
        Ok(ty)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dtype_codes_round_trip() {
        let custom = DType::Custom {
            code: 131,
            bits: 16,
        };
        for d in DType::BUILTIN.into_iter().chain([custom]) {
            assert_eq!(DataType::of(d).dtype(), Some(d));
        }
        assert_eq!(
            DataType {
                code: 5,
                bits: 64,
                lanes: 1
            }
            .dtype(),
            None
        );
    }

    #[test]
    fn views_check_layout_and_length() {
        let ty = TensorType::new(vec![2, 3], DType::Float32);
        let shape = [2i64, 3];
        let data = [0u8; 24];
        let v = TensorView::new(&ty, &shape, data.as_ptr(), 24);
        assert_eq!(unsafe { v.tensor_type() }.unwrap(), ty);
        let short = TensorView { byte_len: 20, ..v };
        assert!(unsafe { short.tensor_type() }.is_err());
        let strides = [1i64, 2];
        let strided = TensorView {
            strides: strides.as_ptr(),
            ..v
        };
        assert!(unsafe { strided.tensor_type() }.is_err());
    }
}
