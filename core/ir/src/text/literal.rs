//! Element literals of constants: reading a written value into a dtype's bytes and writing
//! bytes back, exactly.
//!
//! Written forms: decimal numbers (`1`, `-0.5`, `1e-05`), `True`/`False` for bool, and for
//! floating-point dtypes `inf`, `-inf`, `nan` (the dtype's canonical quiet NaN) and
//! `nan(0x7fc00001)` (a NaN with these raw bits, for any other payload or sign). Custom dtypes
//! are written as the unsigned integer of their raw storage bits. Printing uses the shortest
//! decimal that reads back to the same bits, so print-then-parse is bit-exact for every value.

use half::{bf16, f16};

use crate::DType;

/// An element value as written.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum ElemLit {
    /// A number's text (sign, digits, fraction, exponent; or `0x` hex for integers).
    Num(String),
    /// `True` / `False`.
    Bool(bool),
    /// `inf` (false) or `-inf` (true).
    Inf(bool),
    /// `nan` (None) or `nan(0xBITS)`.
    Nan(Option<String>),
}

/// The suffix of a scalar literal of `dtype` (`1f`, `2i64`, `2`), if the dtype has one.
pub(crate) fn scalar_suffix(dtype: DType) -> Option<&'static str> {
    SUFFIXES.iter().find(|(_, d)| *d == dtype).map(|(s, _)| *s)
}

/// The dtype a scalar literal suffix names (`""` is resolved by the caller: int32 or float32).
pub(crate) fn suffix_dtype(suffix: &str) -> Option<DType> {
    match suffix {
        "f32" => Some(DType::Float32),
        "i32" => Some(DType::Int32),
        _ => SUFFIXES.iter().find(|(s, _)| *s == suffix).map(|(_, d)| *d),
    }
}

const SUFFIXES: [(&str, DType); 8] = [
    ("f", DType::Float32),
    ("f64", DType::Float64),
    ("f16", DType::Float16),
    ("", DType::Int32),
    ("i64", DType::Int64),
    ("i8", DType::Int8),
    ("i16", DType::Int16),
    ("u8", DType::UInt8),
];

/// True when the number text is written as an integer (no fraction, no exponent).
pub(crate) fn is_integer_text(text: &str) -> bool {
    text.starts_with("0x") || text.starts_with("-0x") || !text.contains(['.', 'e', 'E'])
}

/// Reads an integer text (decimal or `0x` hex, optional `-`).
pub(crate) fn parse_int(text: &str) -> Option<i128> {
    let (neg, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let v = match digits.strip_prefix("0x") {
        Some(hex) => i128::from_str_radix(hex, 16).ok()?,
        None => digits.parse::<i128>().ok()?,
    };
    Some(if neg { -v } else { v })
}

/// Appends the little-endian bytes of `lit` read as `dtype` to `out`, or says why it cannot be.
pub(crate) fn encode(dtype: DType, lit: &ElemLit, out: &mut Vec<u8>) -> Result<(), String> {
    if dtype.is_float() {
        return encode_float(dtype, lit, out);
    }
    let (lo, hi): (i128, i128) = match dtype {
        DType::Bool => (0, 255),
        DType::Int8 => (i8::MIN.into(), i8::MAX.into()),
        DType::Int16 => (i16::MIN.into(), i16::MAX.into()),
        DType::Int32 => (i32::MIN.into(), i32::MAX.into()),
        DType::Int64 => (i64::MIN.into(), i64::MAX.into()),
        DType::UInt8 => (0, 255),
        _ => (0, (1i128 << dtype.bits()) - 1),
    };
    let v = match lit {
        ElemLit::Bool(b) if dtype == DType::Bool => i128::from(*b),
        ElemLit::Num(text) if is_integer_text(text) => parse_int(text)
            .filter(|v| (lo..=hi).contains(v))
            .ok_or_else(|| format!("value {text} does not fit in {dtype}"))?,
        other => {
            let what = if dtype.is_custom() {
                "the raw bits (an unsigned integer)"
            } else {
                "an integer"
            };
            return Err(format!(
                "expected {what} for {dtype} but found {}",
                show(other)
            ));
        }
    };
    let bytes = v.to_le_bytes();
    out.extend_from_slice(&bytes[..dtype.size_bytes()]);
    Ok(())
}

fn show(lit: &ElemLit) -> String {
    match lit {
        ElemLit::Num(t) => t.clone(),
        ElemLit::Bool(b) => if *b { "True" } else { "False" }.to_string(),
        ElemLit::Inf(false) => "inf".to_string(),
        ElemLit::Inf(true) => "-inf".to_string(),
        ElemLit::Nan(None) => "nan".to_string(),
        ElemLit::Nan(Some(bits)) => format!("nan({bits})"),
    }
}

fn encode_float(dtype: DType, lit: &ElemLit, out: &mut Vec<u8>) -> Result<(), String> {
    let bits: u64 = match lit {
        ElemLit::Num(text) if !text.contains("0x") => {
            let bad = || format!("malformed number {text}");
            match dtype {
                DType::Float32 => u64::from(text.parse::<f32>().map_err(|_| bad())?.to_bits()),
                DType::Float64 => text.parse::<f64>().map_err(|_| bad())?.to_bits(),
                DType::Float16 => {
                    u64::from(f16::from_f64(text.parse::<f64>().map_err(|_| bad())?).to_bits())
                }
                _ => u64::from(bf16::from_f64(text.parse::<f64>().map_err(|_| bad())?).to_bits()),
            }
        }
        ElemLit::Inf(neg) => {
            let v = if *neg {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            };
            from_f64_bits(dtype, v)
        }
        ElemLit::Nan(None) => canonical_nan(dtype),
        ElemLit::Nan(Some(text)) => {
            let bits = text
                .strip_prefix("0x")
                .and_then(|h| u64::from_str_radix(h, 16).ok())
                .filter(|&b| dtype.bits() == 64 || b >> dtype.bits() == 0)
                .ok_or_else(|| format!("nan({text}) needs {}-bit hex bits", dtype.bits()))?;
            if !is_nan_bits(dtype, bits) {
                return Err(format!("nan({text}) is not a NaN of {dtype}"));
            }
            bits
        }
        other => {
            return Err(format!(
                "expected a number, inf or nan for {dtype} but found {}",
                show(other)
            ))
        }
    };
    out.extend_from_slice(&bits.to_le_bytes()[..dtype.size_bytes()]);
    Ok(())
}

fn from_f64_bits(dtype: DType, v: f64) -> u64 {
    match dtype {
        DType::Float32 => u64::from((v as f32).to_bits()),
        DType::Float64 => v.to_bits(),
        DType::Float16 => u64::from(f16::from_f64(v).to_bits()),
        _ => u64::from(bf16::from_f64(v).to_bits()),
    }
}

fn canonical_nan(dtype: DType) -> u64 {
    from_f64_bits(dtype, f64::NAN)
}

/// The value of float bits as `f64` (exact for every float dtype).
fn float_value(dtype: DType, bits: u64) -> f64 {
    match dtype {
        DType::Float32 => f64::from(f32::from_bits(bits as u32)),
        DType::Float64 => f64::from_bits(bits),
        DType::Float16 => f16::from_bits(bits as u16).to_f64(),
        _ => bf16::from_bits(bits as u16).to_f64(),
    }
}

fn is_nan_bits(dtype: DType, bits: u64) -> bool {
    float_value(dtype, bits).is_nan()
}

/// Writes one element (`bytes` is exactly its storage) as text that [`encode`] reads back to the
/// same bytes. `suffix` is appended to finite numbers (scalar literals use it).
pub(crate) fn format(dtype: DType, bytes: &[u8], suffix: &str) -> String {
    let mut raw = [0u8; 8];
    raw[..bytes.len()].copy_from_slice(bytes);
    let bits = u64::from_le_bytes(raw);
    if dtype.is_float() {
        let v = float_value(dtype, bits);
        if v.is_nan() {
            return if bits == canonical_nan(dtype) {
                "nan".to_string()
            } else {
                format!("nan(0x{bits:x})")
            };
        }
        if v.is_infinite() {
            return if v < 0.0 { "-inf" } else { "inf" }.to_string();
        }
        // Debug prints the shortest text that reads back to the same value of that width;
        // half-precision values are exact in f32.
        return match dtype {
            DType::Float64 => format!("{v:?}{suffix}"),
            _ => format!("{:?}{suffix}", v as f32),
        };
    }
    match dtype {
        DType::Bool if bits <= 1 => if bits == 1 { "True" } else { "False" }.to_string(),
        DType::Int8 => format!("{}{suffix}", bits as u8 as i8),
        DType::Int16 => format!("{}{suffix}", bits as u16 as i16),
        DType::Int32 => format!("{}{suffix}", bits as u32 as i32),
        DType::Int64 => format!("{}{suffix}", bits as i64),
        _ => format!("{bits}{suffix}"),
    }
}

/// True when the element prints as a plain number (so a scalar can use the literal shorthand).
pub(crate) fn is_finite_number(dtype: DType, bytes: &[u8]) -> bool {
    let text = format(dtype, bytes, "");
    text.starts_with(|c: char| c.is_ascii_digit() || c == '-') && text != "-inf"
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(dtype: DType, lit: ElemLit) -> String {
        let mut bytes = Vec::new();
        encode(dtype, &lit, &mut bytes).unwrap();
        let text = format(dtype, &bytes, "");
        let mut again = Vec::new();
        let lit2 = match text.as_str() {
            "nan" => ElemLit::Nan(None),
            "inf" => ElemLit::Inf(false),
            "-inf" => ElemLit::Inf(true),
            "True" => ElemLit::Bool(true),
            "False" => ElemLit::Bool(false),
            t if t.starts_with("nan(") => ElemLit::Nan(Some(t[4..t.len() - 1].to_string())),
            t => ElemLit::Num(t.to_string()),
        };
        encode(dtype, &lit2, &mut again).unwrap();
        assert_eq!(bytes, again, "{dtype} {text}");
        text
    }

    #[test]
    fn floats_round_trip_bit_exactly() {
        let num = |s: &str| ElemLit::Num(s.to_string());
        assert_eq!(round_trip(DType::Float32, num("0.1")), "0.1");
        assert_eq!(round_trip(DType::Float32, num("1e-05")), "1e-5");
        assert_eq!(round_trip(DType::Float32, num("-0")), "-0.0");
        assert_eq!(round_trip(DType::Float64, num("0.1")), "0.1");
        assert_eq!(round_trip(DType::Float16, num("0.1")), "0.099975586");
        assert_eq!(round_trip(DType::BFloat16, num("3")), "3.0");
        assert_eq!(round_trip(DType::Float32, ElemLit::Nan(None)), "nan");
        assert_eq!(
            round_trip(DType::Float32, ElemLit::Nan(Some("0xffc00001".into()))),
            "nan(0xffc00001)"
        );
        assert_eq!(round_trip(DType::Float16, ElemLit::Inf(true)), "-inf");
        assert_eq!(round_trip(DType::Int8, num("-128")), "-128");
        assert_eq!(round_trip(DType::Bool, ElemLit::Bool(true)), "True");
    }

    #[test]
    fn out_of_range_values_are_rejected() {
        let mut out = Vec::new();
        let e = encode(DType::UInt8, &ElemLit::Num("256".into()), &mut out).unwrap_err();
        assert_eq!(e, "value 256 does not fit in uint8");
        let e = encode(DType::Float32, &ElemLit::Nan(Some("0x1".into())), &mut out).unwrap_err();
        assert_eq!(e, "nan(0x1) is not a NaN of float32");
        let e = encode(DType::Int32, &ElemLit::Num("1.5".into()), &mut out).unwrap_err();
        assert_eq!(e, "expected an integer for int32 but found 1.5");
    }
}
