//! The `.npy` preamble and header, read and bounded before `npyz` parses them.
//!
//! `npyz` allocates the header at the length the preamble gives (up to 4 GiB) and multiplies
//! the shape's dimensions without checking for overflow. This module reads the preamble and
//! the header text itself, refuses a header longer than [`MAX_HEADER_LEN`] and a shape whose
//! dimensions (the non-zero ones, which bound every stride) overflow 64 bits, and hands the
//! bytes it read on to `npyz`. Anything else malformed is left to `npyz` to report.

use std::io::Read;

use super::IoErrorKind;

/// The longest header byoc reads; numpy writes a few hundred bytes.
pub(super) const MAX_HEADER_LEN: usize = 1 << 16;

const MAGIC: &[u8; 6] = b"\x93NUMPY";

/// Reads the preamble (magic, version, header length) and the header of a `.npy` array from
/// `r`, checks them as the module docs say, and returns every byte read.
pub(super) fn read_checked_header(r: &mut impl Read) -> Result<Vec<u8>, IoErrorKind> {
    let bad = |m: &str| IoErrorKind::Header(m.to_string());
    let mut bytes = vec![0u8; 8];
    r.read_exact(&mut bytes)
        .map_err(|_| bad("the file is shorter than the .npy preamble"))?;
    if &bytes[..6] != MAGIC {
        return Err(bad("magic not found for NPY file"));
    }
    let len_bytes = if bytes[6] == 1 { 2 } else { 4 };
    let mut len = [0u8; 4];
    r.read_exact(&mut len[..len_bytes])
        .map_err(|_| bad("the file is shorter than the .npy preamble"))?;
    bytes.extend_from_slice(&len[..len_bytes]);
    let header_len = usize::try_from(u32::from_le_bytes(len)).unwrap_or(usize::MAX);
    if header_len > MAX_HEADER_LEN {
        return Err(IoErrorKind::Header(format!(
            "its header is {header_len} bytes long, over the {MAX_HEADER_LEN} bytes byoc reads"
        )));
    }
    let start = bytes.len();
    bytes.resize(start + header_len, 0);
    r.read_exact(&mut bytes[start..])
        .map_err(|_| bad("the file ends inside the header"))?;
    if let Some(shape) = shape_of(&bytes[start..]) {
        let nonzero = shape.iter().filter(|&&d| d != 0);
        if nonzero.copied().try_fold(1u64, u64::checked_mul).is_none() {
            return Err(IoErrorKind::TooLarge { shape });
        }
    }
    Ok(bytes)
}

/// The integers of the `'shape': (...)` entry of a header dictionary, when it has one that
/// reads as a tuple of non-negative integers.
fn shape_of(header: &[u8]) -> Option<Vec<u64>> {
    let text = std::str::from_utf8(header).ok()?;
    let key = text.find("'shape'").or_else(|| text.find("\"shape\""))?;
    let rest = &text[key + "'shape'".len()..];
    let open = rest.find('(')?;
    let close = open + rest[open..].find(')')?;
    rest[open + 1..close]
        .split(',')
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .map(|d| d.parse().ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_are_read_from_the_header_text() {
        let header = b"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3, ), }";
        assert_eq!(shape_of(header), Some(vec![2, 3]));
        assert_eq!(shape_of(b"{'shape': (), }"), Some(vec![]));
        assert_eq!(shape_of(b"{'shape': (7,), }"), Some(vec![7]));
        assert_eq!(shape_of(b"{'descr': '<f4'}"), None);
    }

    #[test]
    fn long_headers_are_refused_before_allocating() {
        let mut file = b"\x93NUMPY\x02\x00".to_vec();
        file.extend_from_slice(&u32::MAX.to_le_bytes());
        let err = read_checked_header(&mut file.as_slice()).unwrap_err();
        assert!(
            err.to_string()
                .contains("its header is 4294967295 bytes long"),
            "{err}"
        );
    }
}
