//! Element data types of tensors.
//!
//! The built-in dtypes are the ones Relay knows (`float32`, `int8`, ...). Custom datatypes
//! (`custom[posit]16`, TVM's Bring Your Own Datatypes) are registered at run time in a
//! process-wide table that gives each name a type code; a [`DType::Custom`] holds that code and
//! its bit width, so `DType` stays `Copy` and cheap to compare.

use std::fmt;
use std::str::FromStr;
use std::sync::{OnceLock, RwLock};

use thiserror::Error;

/// The element type of a tensor.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub enum DType {
    /// Boolean, one byte per element (0 or 1).
    Bool,
    /// Signed 8-bit integer.
    Int8,
    /// Signed 16-bit integer.
    Int16,
    /// Signed 32-bit integer.
    Int32,
    /// Signed 64-bit integer.
    Int64,
    /// Unsigned 8-bit integer.
    UInt8,
    /// IEEE half precision.
    Float16,
    /// bfloat16 (8-bit exponent, 7-bit mantissa).
    BFloat16,
    /// IEEE single precision.
    Float32,
    /// IEEE double precision.
    Float64,
    /// A datatype registered at run time (`custom[name]bits`).
    Custom {
        /// Type code assigned at registration (TVM starts user codes at 129).
        code: u8,
        /// Storage bits per element: 8, 16, 32 or 64.
        bits: u16,
    },
}

/// A custom datatype registered with [`register_custom_dtype`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CustomDType {
    /// The name used in `custom[<name>]<bits>`.
    pub name: String,
    /// The type code.
    pub code: u8,
    /// The storage widths it comes in; empty means any storage width.
    pub widths: Vec<u16>,
}

impl fmt::Display for CustomDType {
    /// `custom[name]8|16|32 (code 132)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let widths: Vec<String> = self.widths.iter().map(u16::to_string).collect();
        let widths = if widths.is_empty() {
            "<bits>".to_string()
        } else {
            widths.join("|")
        };
        write!(f, "custom[{}]{widths} (code {})", self.name, self.code)
    }
}

/// Errors of dtype parsing and custom dtype registration.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DTypeError {
    /// The string is not a dtype name.
    #[error("unknown dtype '{0}' (expected float32, float16, bfloat16, float64, int8, int16, int32, int64, uint8, bool or custom[<name>]<bits>)")]
    Unknown(String),
    /// `custom[name]bits` names a datatype nobody registered.
    #[error("custom datatype '{name}' is not registered; registered: {registered} (a plugin registers datatypes when it is loaded, e.g. the posit plugin registers 'posites2')")]
    UnregisteredCustom {
        /// The name given.
        name: String,
        /// The registered datatypes, listed.
        registered: String,
    },
    /// `custom[name]bits` with a width the datatype does not come in.
    #[error("custom datatype '{name}' does not come in {bits} bits; registered: {registered}")]
    UnsupportedWidth {
        /// The datatype.
        name: String,
        /// The bits given.
        bits: u32,
        /// The registered datatypes, listed.
        registered: String,
    },
    /// The bit width of a custom datatype is not a storage width.
    #[error("custom datatype '{name}' has {bits} bits; custom datatypes are stored in 8, 16, 32 or 64 bits")]
    BadCustomBits {
        /// The datatype name.
        name: String,
        /// The bits given.
        bits: u32,
    },
    /// A name or code is registered twice with different values.
    #[error("custom datatype '{name}' with code {code} conflicts with the registered {existing}")]
    Conflict {
        /// The datatype name.
        name: String,
        /// The code.
        code: u8,
        /// The registration it conflicts with.
        existing: CustomDType,
    },
}

fn custom_table() -> &'static RwLock<Vec<CustomDType>> {
    static TABLE: OnceLock<RwLock<Vec<CustomDType>>> = OnceLock::new();
    TABLE.get_or_init(|| RwLock::new(Vec::new()))
}

/// Registers a custom datatype name with a type code (TVM's `register_custom_type`) and the
/// widths it comes in (empty: any storage width).
///
/// Registering the same name, code and widths again is a no-op; reusing a name or a code for
/// something else is an error.
pub fn register_custom_dtype(name: &str, code: u8, widths: &[u16]) -> Result<(), DTypeError> {
    let mut table = custom_table().write().unwrap_or_else(|e| e.into_inner());
    if let Some(existing) = table.iter().find(|c| c.name == name || c.code == code) {
        if existing.name == name && existing.code == code && existing.widths == widths {
            return Ok(());
        }
        return Err(DTypeError::Conflict {
            name: name.to_string(),
            code,
            existing: existing.clone(),
        });
    }
    table.push(CustomDType {
        name: name.to_string(),
        code,
        widths: widths.to_vec(),
    });
    Ok(())
}

/// The registered custom datatypes, in registration order.
pub fn custom_dtypes() -> Vec<CustomDType> {
    custom_table()
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
}

/// The registered datatypes as one line for error messages.
fn registered_list() -> String {
    let all = custom_dtypes();
    if all.is_empty() {
        return "none".to_string();
    }
    all.iter()
        .map(CustomDType::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Looks up a registered custom datatype by name.
pub fn custom_dtype_by_name(name: &str) -> Option<CustomDType> {
    let table = custom_table().read().unwrap_or_else(|e| e.into_inner());
    table.iter().find(|c| c.name == name).cloned()
}

/// Looks up a registered custom datatype by code.
pub fn custom_dtype_by_code(code: u8) -> Option<CustomDType> {
    let table = custom_table().read().unwrap_or_else(|e| e.into_inner());
    table.iter().find(|c| c.code == code).cloned()
}

impl DType {
    /// All built-in dtypes, for tests and listings.
    pub const BUILTIN: [DType; 10] = [
        DType::Bool,
        DType::Int8,
        DType::Int16,
        DType::Int32,
        DType::Int64,
        DType::UInt8,
        DType::Float16,
        DType::BFloat16,
        DType::Float32,
        DType::Float64,
    ];

    /// Bits per element (bool counts as 8: it is stored in a byte).
    pub fn bits(self) -> u32 {
        match self {
            DType::Bool | DType::Int8 | DType::UInt8 => 8,
            DType::Int16 | DType::Float16 | DType::BFloat16 => 16,
            DType::Int32 | DType::Float32 => 32,
            DType::Int64 | DType::Float64 => 64,
            DType::Custom { bits, .. } => u32::from(bits),
        }
    }

    /// Bytes per element.
    pub fn size_bytes(self) -> usize {
        (self.bits() as usize).div_ceil(8)
    }

    /// True for the IEEE and brain floating-point types.
    pub fn is_float(self) -> bool {
        matches!(
            self,
            DType::Float16 | DType::BFloat16 | DType::Float32 | DType::Float64
        )
    }

    /// True for signed and unsigned integer types (not bool).
    pub fn is_int(self) -> bool {
        matches!(
            self,
            DType::Int8 | DType::Int16 | DType::Int32 | DType::Int64 | DType::UInt8
        )
    }

    /// True for custom datatypes.
    pub fn is_custom(self) -> bool {
        matches!(self, DType::Custom { .. })
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            DType::Bool => "bool",
            DType::Int8 => "int8",
            DType::Int16 => "int16",
            DType::Int32 => "int32",
            DType::Int64 => "int64",
            DType::UInt8 => "uint8",
            DType::Float16 => "float16",
            DType::BFloat16 => "bfloat16",
            DType::Float32 => "float32",
            DType::Float64 => "float64",
            DType::Custom { code, bits } => {
                return match custom_dtype_by_code(*code) {
                    Some(c) => write!(f, "custom[{}]{bits}", c.name),
                    None => write!(f, "custom[{code}]{bits}"),
                }
            }
        };
        f.write_str(name)
    }
}

impl FromStr for DType {
    type Err = DTypeError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "bool" => DType::Bool,
            "int8" => DType::Int8,
            "int16" => DType::Int16,
            "int32" => DType::Int32,
            "int64" => DType::Int64,
            "uint8" => DType::UInt8,
            "float16" => DType::Float16,
            "bfloat16" => DType::BFloat16,
            "float32" => DType::Float32,
            "float64" => DType::Float64,
            _ => return parse_custom(s),
        })
    }
}

fn parse_custom(s: &str) -> Result<DType, DTypeError> {
    let unknown = || DTypeError::Unknown(s.to_string());
    let rest = s.strip_prefix("custom[").ok_or_else(unknown)?;
    let (name, bits) = rest.split_once(']').ok_or_else(unknown)?;
    let bits: u32 = bits.parse().map_err(|_| unknown())?;
    if name.is_empty() {
        return Err(unknown());
    }
    if !matches!(bits, 8 | 16 | 32 | 64) {
        return Err(DTypeError::BadCustomBits {
            name: name.to_string(),
            bits,
        });
    }
    let code = match name.parse::<u8>() {
        Ok(code) => code,
        Err(_) => {
            let registered =
                custom_dtype_by_name(name).ok_or_else(|| DTypeError::UnregisteredCustom {
                    name: name.to_string(),
                    registered: registered_list(),
                })?;
            if !registered.widths.is_empty() && !registered.widths.contains(&(bits as u16)) {
                return Err(DTypeError::UnsupportedWidth {
                    name: name.to_string(),
                    bits,
                    registered: registered_list(),
                });
            }
            registered.code
        }
    };
    Ok(DType::Custom {
        code,
        bits: bits as u16,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_names_round_trip() {
        for d in DType::BUILTIN {
            assert_eq!(d.to_string().parse::<DType>().unwrap(), d);
        }
    }

    #[test]
    fn custom_dtypes_need_registration() {
        let err = "custom[notregistered]16".parse::<DType>().unwrap_err();
        assert!(err.to_string().contains("not registered"), "{err}");
        register_custom_dtype("testfmt", 200, &[]).unwrap();
        let d: DType = "custom[testfmt]16".parse().unwrap();
        assert_eq!(
            d,
            DType::Custom {
                code: 200,
                bits: 16
            }
        );
        assert_eq!(d.to_string(), "custom[testfmt]16");
        assert_eq!(d.size_bytes(), 2);
        let conflict = register_custom_dtype("other", 200, &[]).unwrap_err();
        assert!(
            conflict
                .to_string()
                .contains("custom[testfmt]<bits> (code 200)"),
            "{conflict}"
        );
        let bad = "custom[testfmt]12".parse::<DType>().unwrap_err();
        assert!(bad.to_string().contains("12 bits"), "{bad}");
    }

    #[test]
    fn custom_widths_and_unknown_names_list_the_registry() {
        register_custom_dtype("widthfmt", 201, &[8, 16]).unwrap();
        assert!("custom[widthfmt]16".parse::<DType>().is_ok());
        let err = "custom[widthfmt]32"
            .parse::<DType>()
            .unwrap_err()
            .to_string();
        assert!(err.contains("does not come in 32 bits"), "{err}");
        assert!(err.contains("custom[widthfmt]8|16 (code 201)"), "{err}");
        let err = "custom[nosuch]16".parse::<DType>().unwrap_err().to_string();
        assert!(
            err.contains("'nosuch' is not registered; registered: "),
            "{err}"
        );
        assert!(err.contains("custom[widthfmt]8|16 (code 201)"), "{err}");
    }
}
