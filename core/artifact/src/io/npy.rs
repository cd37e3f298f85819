//! `.npy` arrays: one header (parsed and written by `npyz`) followed by the raw elements.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::Path;

use npyz::{DType as NpyDType, NpyHeader, Order, TypeChar, TypeStr, WriterBuilder};

use super::{IoError, IoErrorKind};
use byoc_ir::tensor::Tensor;
use byoc_ir::{DType, TensorType};

/// byoc dtypes with their numpy type character; the size is the dtype's byte size.
const NUMPY_DTYPES: [(DType, TypeChar); 9] = [
    (DType::Bool, TypeChar::Bool),
    (DType::Int8, TypeChar::Int),
    (DType::Int16, TypeChar::Int),
    (DType::Int32, TypeChar::Int),
    (DType::Int64, TypeChar::Int),
    (DType::UInt8, TypeChar::Uint),
    (DType::Float16, TypeChar::Float),
    (DType::Float32, TypeChar::Float),
    (DType::Float64, TypeChar::Float),
];

/// Reads the tensor in the `.npy` file at `path`.
pub fn read_npy(path: impl AsRef<Path>) -> Result<Tensor, IoError> {
    let path = path.as_ref();
    let located = |kind| IoError {
        path: path.to_path_buf(),
        entry: None,
        kind,
    };
    let file = File::open(path).map_err(|e| located(e.into()))?;
    read_array(&mut BufReader::new(file), None).map_err(located)
}

/// Writes `tensor` to `path` as a `.npy` file (little-endian, C order).
pub fn write_npy(path: impl AsRef<Path>, tensor: &Tensor) -> Result<(), IoError> {
    let path = path.as_ref();
    let located = |kind| IoError {
        path: path.to_path_buf(),
        entry: None,
        kind,
    };
    // Check the dtype before creating (and truncating) the file.
    check_numpy_dtype(tensor.dtype()).map_err(located)?;
    let file = File::create(path).map_err(|e| located(e.into()))?;
    let mut w = BufWriter::new(file);
    write_array(&mut w, tensor).map_err(located)?;
    w.flush().map_err(|e| located(e.into()))
}

/// The byoc dtype of a numpy type string, and whether its bytes need swapping. An unsigned
/// array of the size of `custom` (a custom dtype) holds that dtype's bit patterns.
fn byoc_dtype(ts: &TypeStr, custom: Option<DType>) -> Result<(DType, bool), IoErrorKind> {
    let unsupported = || IoErrorKind::UnsupportedDType {
        descr: ts.to_string(),
    };
    let size = usize::try_from(ts.size_field()).map_err(|_| unsupported())?;
    let bits = custom.filter(|c| ts.type_char() == TypeChar::Uint && c.size_bytes() == size);
    let dtype = match bits {
        Some(c) => c,
        None => {
            NUMPY_DTYPES
                .iter()
                .find(|(d, c)| *c == ts.type_char() && d.size_bytes() == size)
                .ok_or_else(unsupported)?
                .0
        }
    };
    let swap = size > 1 && ts.endianness() != npyz::Endianness::of_machine();
    Ok((dtype, swap))
}

/// Fails when numpy has no dtype for `dtype`.
pub(super) fn check_numpy_dtype(dtype: DType) -> Result<(), IoErrorKind> {
    numpy_type_str(dtype).map(drop)
}

/// The numpy type string of a byoc dtype (little-endian); a custom dtype is written as its bit
/// patterns, unsigned integers of its width.
fn numpy_type_str(dtype: DType) -> Result<TypeStr, IoErrorKind> {
    let c = if dtype.is_custom() {
        TypeChar::Uint
    } else {
        NUMPY_DTYPES
            .iter()
            .find(|(d, _)| *d == dtype)
            .ok_or(IoErrorKind::NoNumpyDType { dtype })?
            .1
    };
    let size = dtype.size_bytes();
    let order = if size == 1 { '|' } else { '<' };
    Ok(format!("{order}{c}{size}")
        .parse()
        .expect("type strings built from the table are valid"))
}

/// Reads one `.npy` array (header and data) from `r`, which must hold nothing after it. With
/// `custom`, an unsigned array of that custom dtype's width is read as its bit patterns.
pub(super) fn read_array(r: &mut impl Read, custom: Option<DType>) -> Result<Tensor, IoErrorKind> {
    let checked = super::npy_header::read_checked_header(r)?;
    let header = NpyHeader::from_reader(checked.as_slice())
        .map_err(|e| IoErrorKind::Header(e.to_string()))?;
    let (dtype, swap) = match header.dtype() {
        NpyDType::Plain(ts) => byoc_dtype(&ts, custom)?,
        other => {
            return Err(IoErrorKind::UnsupportedDType {
                descr: other.descr(),
            })
        }
    };
    let too_large = || IoErrorKind::TooLarge {
        shape: header.shape().to_vec(),
    };
    let shape = header
        .shape()
        .iter()
        .map(|&d| usize::try_from(d).map_err(|_| too_large()))
        .collect::<Result<Vec<usize>, _>>()?;
    let ty = TensorType::new(shape, dtype);
    // Checked against the memory budget before anything is allocated; the read stops one
    // byte past the size, so a lying header or a decompression bomb cannot make it grow.
    let expected = byoc_ir::memory::check_tensor(&ty).map_err(IoErrorKind::Size)?;
    let mut data = byoc_ir::memory::try_buffer(&ty, expected).map_err(IoErrorKind::Size)?;
    let got = read_up_to(r, data.as_bytes_mut())?;
    let trailing = read_up_to(r, &mut [0u8])?;
    if got != expected || trailing != 0 {
        return Err(IoErrorKind::DataSize {
            ty,
            expected,
            got: got + trailing,
        });
    }
    let size = dtype.size_bytes();
    if swap {
        data.as_bytes_mut()
            .chunks_exact_mut(size)
            .for_each(<[u8]>::reverse);
    }
    if header.order() == Order::Fortran && ty.rank() > 1 {
        let mut c_order = byoc_ir::memory::try_buffer(&ty, expected).map_err(IoErrorKind::Size)?;
        fortran_to_c(data.as_bytes(), &ty.shape, size, c_order.as_bytes_mut());
        data = c_order;
    }
    if dtype == DType::Bool {
        if let Some((index, &value)) = data.as_bytes().iter().enumerate().find(|(_, &b)| b > 1) {
            return Err(IoErrorKind::BadBool { index, value });
        }
    }
    Ok(Tensor::from_buf(ty, data).expect("the byte count was checked against the type"))
}

/// Reads into `buf` until it is full or `r` ends; returns the bytes read.
fn read_up_to(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match r.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// Writes `tensor` as one `.npy` array (little-endian, C order) to `w`.
pub(super) fn write_array(w: &mut impl Write, tensor: &Tensor) -> Result<(), IoErrorKind> {
    let ts = numpy_type_str(tensor.dtype())?;
    let shape: Vec<u64> = tensor.shape().iter().map(|&d| d as u64).collect();
    npyz::WriteOptions::<u8>::new()
        .dtype(NpyDType::Plain(ts))
        .shape(&shape)
        .writer(&mut *w)
        .write_header_only()?;
    // Tensor bytes are little-endian, which the type string declares.
    w.write_all(tensor.as_bytes())?;
    Ok(())
}

/// Reorders the elements of a Fortran-order (first axis fastest) array of `shape` into
/// row-major order in `dst` (as long as `src`).
fn fortran_to_c(src: &[u8], shape: &[usize], size: usize, dst: &mut [u8]) {
    let mut strides = vec![1usize; shape.len()];
    for k in 1..shape.len() {
        strides[k] = strides[k - 1] * shape[k - 1];
    }
    let mut index = vec![0usize; shape.len()];
    let mut offset = 0usize;
    for out in dst.chunks_exact_mut(size) {
        out.copy_from_slice(&src[offset * size..(offset + 1) * size]);
        for k in (0..shape.len()).rev() {
            index[k] += 1;
            offset += strides[k];
            if index[k] < shape[k] {
                break;
            }
            offset -= strides[k] * shape[k];
            index[k] = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A version 1.0 `.npy` file with this header dictionary and `data`.
    fn npy(dict: &str, data: &[u8]) -> Vec<u8> {
        let mut header = dict.to_string();
        while !(10 + header.len() + 1).is_multiple_of(64) {
            header.push(' ');
        }
        header.push('\n');
        let mut out = b"\x93NUMPY\x01\x00".to_vec();
        out.extend_from_slice(&u16::try_from(header.len()).unwrap().to_le_bytes());
        out.extend_from_slice(header.as_bytes());
        out.extend_from_slice(data);
        out
    }

    #[test]
    fn huge_header_shapes_are_refused_before_allocating() {
        let read = |shape: &str| {
            let dict = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {shape}, }}");
            read_array(&mut std::io::Cursor::new(npy(&dict, &[0; 8])), None)
                .unwrap_err()
                .to_string()
        };
        // Caught in the header, before npyz multiplies the dimensions.
        let err = read("(4611686018427387904, 4)");
        assert_eq!(err, "shape [4611686018427387904, 4] is too large");
        let err = read("(0, 18446744073709551615, 2)");
        assert_eq!(err, "shape [0, 18446744073709551615, 2] is too large");
        // Caught by the memory module: no elements, but a dimension no attribute can hold.
        let err = read("(0, 9223372036854775808)");
        assert!(err.contains("has a dimension over 2^63-1"), "{err}");
        // Within 64 bits, but not within the address space.
        let err = read("(4611686018427387903, 2)");
        assert!(err.contains("overflows 64 bits"), "{err}");
        // A header that promises more data than the file holds.
        let err = read("(3,)");
        assert!(
            err.contains("needs 12 bytes of data but the array holds 8"),
            "{err}"
        );
    }

    #[test]
    fn fortran_order_is_transposed() {
        // A 2x3 array [[0, 1, 2], [3, 4, 5]] stored column-major: 0 3 1 4 2 5.
        let src: Vec<u8> = vec![0, 3, 1, 4, 2, 5];
        let mut dst = [0u8; 6];
        fortran_to_c(&src, &[2, 3], 1, &mut dst);
        assert_eq!(dst, [0, 1, 2, 3, 4, 5]);
    }

    #[test]
    fn type_strings_follow_numpy() {
        assert_eq!(numpy_type_str(DType::Float32).unwrap().to_string(), "<f4");
        assert_eq!(numpy_type_str(DType::Bool).unwrap().to_string(), "|b1");
        assert_eq!(numpy_type_str(DType::UInt8).unwrap().to_string(), "|u1");
        assert!(numpy_type_str(DType::BFloat16).is_err());
    }
}
