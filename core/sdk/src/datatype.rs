//! Custom datatypes a plugin brings (TVM's Bring Your Own Datatypes): the name, the type code,
//! the storage widths, and the lowering table from ops to the C-ABI library functions the
//! plugin exports.
//!
//! The lowering table is plain data keyed like TVM's registry ([`LoweringKey`]): binary ops
//! and comparisons by TVM's op names (`Add`, `Sub`, `Mul`, `Div`, `Mod`, `Min`, `Max`, `EQ`,
//! `NE`, `LT`, `LE`, `GT`, `GE`) and `FloatImm`, intrinsic calls by their intrinsic name
//! (`tir.sqrt`, `tir.exp`, ...), casts by source and destination type name (`float`, `int`,
//! `uint` or a custom name) and the `(src_bits, dst_bits)` pair, and the min-value function per
//! width. The host resolves every function when it loads the plugin, so an interpreter or a
//! code generator consumes the same table.
//!
//! The C signature of a function follows from its key. Values of the datatype travel as their
//! bit patterns in unsigned integers of the width (`uint8_t`, `uint16_t`, `uint32_t`,
//! `uint64_t`):
//! - `Op` (binary): `(uN, uN) -> uN`; comparisons `(uN, uN) -> uint8_t` (0 or 1);
//!   `FloatImm`: `(double) -> uN`.
//! - `Intrinsic`: `(uN) -> uN`.
//! - `Cast`: the source type to the destination type, where `float` is `float`/`double` for
//!   32/64 bits and `int`/`uint` are the C integer types of their bits.
//! - `MinValue`: `() -> uN`, the lowest value (the start of a max reduction).
//! - `DotProduct` (optional): `(const uN *a, const uN *b, size_t len) -> uN`, the exact
//!   `Σ a[i]·b[i]` rounded once (a posit quire, a Kulisch accumulator). The host sums products
//!   with it only when the plugin option the declaration names
//!   ([`CustomDatatype::dot_product_option`]) is `true`; otherwise it adds rounded products one
//!   at a time, as TVM's lowering does.

use std::collections::BTreeSet;
use std::fmt;

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// TVM's first user type code: codes below are built-in types.
pub const FIRST_CUSTOM_CODE: u8 = 129;

/// Binary ops and comparisons a lowering table may name (TVM's names), and `FloatImm`.
pub const LOWERING_OPS: [&str; 14] = [
    "Add", "Sub", "Mul", "Div", "Mod", "Min", "Max", "EQ", "NE", "LT", "LE", "GT", "GE", "FloatImm",
];

/// The built-in type names a cast may convert from or to.
pub const NATIVE_CAST_TYPES: [&str; 3] = ["float", "int", "uint"];

/// What a library function implements.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LoweringKey {
    /// A binary op or comparison, or `FloatImm`, on values of `bits` bits.
    Op {
        /// TVM's op name (one of [`LOWERING_OPS`]).
        op: String,
        /// The width.
        bits: u16,
    },
    /// An intrinsic call on values of `bits` bits.
    Intrinsic {
        /// The intrinsic (`tir.sqrt`).
        name: String,
        /// The width.
        bits: u16,
    },
    /// A cast; one side is the datatype itself.
    Cast {
        /// The source type name (`float`, `int`, `uint` or a custom name).
        src: String,
        /// The destination type name.
        dst: String,
        /// The source width.
        src_bits: u16,
        /// The destination width.
        dst_bits: u16,
    },
    /// The min-value function of a width.
    MinValue {
        /// The width.
        bits: u16,
    },
    /// The exact dot product of a width, rounded once.
    DotProduct {
        /// The width.
        bits: u16,
    },
}

impl LoweringKey {
    /// The widths of the datatype this key uses (`custom` is the datatype's name).
    fn own_widths(&self, custom: &str) -> Vec<u16> {
        match self {
            LoweringKey::Op { bits, .. }
            | LoweringKey::Intrinsic { bits, .. }
            | LoweringKey::MinValue { bits }
            | LoweringKey::DotProduct { bits } => vec![*bits],
            LoweringKey::Cast {
                src,
                dst,
                src_bits,
                dst_bits,
            } => {
                let mut w = Vec::new();
                if src == custom {
                    w.push(*src_bits);
                }
                if dst == custom {
                    w.push(*dst_bits);
                }
                w
            }
        }
    }
}

impl fmt::Display for LoweringKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoweringKey::Op { op, bits } => write!(f, "{op} ({bits} bits)"),
            LoweringKey::Intrinsic { name, bits } => {
                write!(f, "Call.intrin.{name} ({bits} bits)")
            }
            LoweringKey::Cast {
                src,
                dst,
                src_bits,
                dst_bits,
            } => write!(f, "Cast.{dst}.{src} ({src_bits}, {dst_bits})"),
            LoweringKey::MinValue { bits } => write!(f, "min ({bits} bits)"),
            LoweringKey::DotProduct { bits } => write!(f, "DotProduct ({bits} bits)"),
        }
    }
}

/// One entry of a lowering table: an op on the datatype and the exported C function that
/// implements it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DatatypeLowering {
    /// What the function implements.
    pub key: LoweringKey,
    /// The exported symbol (`Posit16es2Add`).
    pub function: String,
}

/// A custom datatype a plugin brings (`custom[<name>]<bits>`). The host registers the name and
/// code and resolves the lowering table when it loads the plugin.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CustomDatatype {
    /// The name in `custom[<name>]<bits>`.
    pub name: String,
    /// The type code, [`FIRST_CUSTOM_CODE`] to 255.
    pub code: u8,
    /// The storage widths the datatype comes in (8, 16, 32 or 64).
    pub widths: Vec<u16>,
    /// The lowering table.
    #[serde(default)]
    pub lowerings: Vec<DatatypeLowering>,
    /// The plugin flag (`quire` for the key `<plugin>.quire`) that makes the host sum products
    /// with the [`LoweringKey::DotProduct`] functions; required exactly when the table has
    /// them. Unset or `false`, sums add one rounded product at a time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dot_product_option: Option<String>,
}

/// What is wrong with a datatype declaration.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DatatypeError {
    /// The name cannot appear in `custom[<name>]<bits>`.
    #[error("datatype name '{name}' is not an identifier (letters, digits and '_', not starting with a digit)")]
    Name {
        /// The name.
        name: String,
    },
    /// A code below [`FIRST_CUSTOM_CODE`].
    #[error(
        "datatype '{name}': code {code} is reserved for built-in types (custom codes are 129..255)"
    )]
    Code {
        /// The datatype.
        name: String,
        /// The code.
        code: u8,
    },
    /// No widths, or a width that is not a storage width.
    #[error("datatype '{name}': widths {widths:?} must be a non-empty list of 8, 16, 32 or 64")]
    Widths {
        /// The datatype.
        name: String,
        /// The widths declared.
        widths: Vec<u16>,
    },
    /// A lowering that is malformed or uses a width the datatype does not declare.
    #[error("datatype '{name}': lowering {key} -> '{function}': {problem}")]
    Lowering {
        /// The datatype.
        name: String,
        /// The entry's key, as TVM names it.
        key: String,
        /// The entry's function.
        function: String,
        /// What is wrong.
        problem: String,
    },
    /// Two entries for one key.
    #[error("datatype '{name}': lowering {key} is given twice")]
    Duplicate {
        /// The datatype.
        name: String,
        /// The key, as TVM names it.
        key: String,
    },
    /// `DotProduct` lowerings without the option that enables them, or the option without them.
    #[error("datatype '{name}': {problem}")]
    DotProduct {
        /// The datatype.
        name: String,
        /// What is wrong.
        problem: String,
    },
    /// A width without the float casts every use of a datatype needs (model inputs come in and
    /// outputs go out as float32).
    #[error("datatype '{name}': width {bits} has no {missing} lowering")]
    MissingCast {
        /// The datatype.
        name: String,
        /// The width.
        bits: u16,
        /// The missing key, as TVM names it.
        missing: String,
    },
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

impl CustomDatatype {
    /// The casts from and to `float32` of one width, which every width must have.
    pub fn float_casts(&self, bits: u16) -> [LoweringKey; 2] {
        let cast = |src: &str, dst: &str, src_bits, dst_bits| LoweringKey::Cast {
            src: src.to_string(),
            dst: dst.to_string(),
            src_bits,
            dst_bits,
        };
        [
            cast("float", &self.name, 32, bits),
            cast(&self.name, "float", bits, 32),
        ]
    }

    /// Checks the declaration: name, code, widths, and every lowering (known op, declared
    /// widths, casts that involve the datatype, no duplicates, float casts for every width).
    pub fn validate(&self) -> Result<(), DatatypeError> {
        let name = &self.name;
        if !is_identifier(name) {
            return Err(DatatypeError::Name { name: name.clone() });
        }
        if self.code < FIRST_CUSTOM_CODE {
            return Err(DatatypeError::Code {
                name: name.clone(),
                code: self.code,
            });
        }
        let widths: BTreeSet<u16> = self.widths.iter().copied().collect();
        if widths.is_empty()
            || widths.len() != self.widths.len()
            || !widths.iter().all(|b| matches!(b, 8 | 16 | 32 | 64))
        {
            return Err(DatatypeError::Widths {
                name: name.clone(),
                widths: self.widths.clone(),
            });
        }
        let mut seen = BTreeSet::new();
        for l in &self.lowerings {
            let problem = |problem: String| DatatypeError::Lowering {
                name: name.clone(),
                key: l.key.to_string(),
                function: l.function.clone(),
                problem,
            };
            if l.function.is_empty() {
                return Err(problem("the function name is empty".into()));
            }
            match &l.key {
                LoweringKey::Op { op, .. } if !LOWERING_OPS.contains(&op.as_str()) => {
                    return Err(problem(format!(
                        "unknown op (expected one of {})",
                        LOWERING_OPS.join(", ")
                    )));
                }
                LoweringKey::Intrinsic {
                    name: intrinsic, ..
                } if intrinsic.is_empty() => {
                    return Err(problem("the intrinsic name is empty".into()));
                }
                LoweringKey::Cast {
                    src,
                    dst,
                    src_bits,
                    dst_bits,
                } => {
                    if src != name && dst != name {
                        return Err(problem(format!(
                            "the cast neither reads nor gives '{name}'"
                        )));
                    }
                    for (side, bits) in [(src, src_bits), (dst, dst_bits)] {
                        if side != name
                            && !(NATIVE_CAST_TYPES.contains(&side.as_str())
                                && matches!(bits, 8 | 16 | 32 | 64))
                        {
                            return Err(problem(format!(
                                "'{side}' with {bits} bits is not float, int or uint of 8, 16, 32 or 64 bits"
                            )));
                        }
                    }
                }
                _ => {}
            }
            if let Some(bits) = l
                .key
                .own_widths(name)
                .into_iter()
                .find(|b| !widths.contains(b))
            {
                return Err(problem(format!(
                    "{bits} bits is not a declared width ({:?})",
                    self.widths
                )));
            }
            if !seen.insert(&l.key) {
                return Err(DatatypeError::Duplicate {
                    name: name.clone(),
                    key: l.key.to_string(),
                });
            }
        }
        self.validate_dot_product()?;
        for &bits in &self.widths {
            for missing in self.float_casts(bits) {
                if !seen.contains(&missing) {
                    return Err(DatatypeError::MissingCast {
                        name: name.clone(),
                        bits,
                        missing: missing.to_string(),
                    });
                }
            }
        }
        Ok(())
    }

    /// A `DotProduct` lowering comes with the plugin option that enables it, and the reverse.
    fn validate_dot_product(&self) -> Result<(), DatatypeError> {
        let has_lowering = self
            .lowerings
            .iter()
            .any(|l| matches!(l.key, LoweringKey::DotProduct { .. }));
        let problem = match (&self.dot_product_option, has_lowering) {
            (None, true) => {
                "DotProduct lowerings need dot_product_option, the plugin flag that enables them"
                    .to_string()
            }
            (Some(option), false) => format!(
                "dot_product_option '{option}' is set, but the table has no DotProduct lowering"
            ),
            (Some(option), true) if !is_identifier(option) => format!(
                "dot_product_option '{option}' is not an option name (letters, digits and '_')"
            ),
            _ => return Ok(()),
        };
        Err(DatatypeError::DotProduct {
            name: self.name.clone(),
            problem,
        })
    }

    /// The function of a key, if the table has one.
    pub fn function(&self, key: &LoweringKey) -> Option<&str> {
        self.lowerings
            .iter()
            .find(|l| &l.key == key)
            .map(|l| l.function.as_str())
    }

    /// The widths as `8|16|32`.
    pub fn widths_text(&self) -> String {
        let w: Vec<String> = self.widths.iter().map(u16::to_string).collect();
        w.join("|")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lowering(key: LoweringKey, function: &str) -> DatatypeLowering {
        DatatypeLowering {
            key,
            function: function.into(),
        }
    }

    fn myfloat() -> CustomDatatype {
        let mut d = CustomDatatype {
            name: "myfloat".into(),
            code: 131,
            widths: vec![32],
            lowerings: Vec::new(),
            dot_product_option: None,
        };
        for key in d.float_casts(32) {
            d.lowerings.push(lowering(key, "Custom32Cast"));
        }
        d.lowerings.push(lowering(
            LoweringKey::Op {
                op: "Add".into(),
                bits: 32,
            },
            "Custom32Add",
        ));
        d
    }

    #[test]
    fn a_complete_table_validates() {
        myfloat().validate().unwrap();
        let json = serde_json::to_string(&myfloat()).unwrap();
        assert!(json.contains(r#""kind":"cast""#), "{json}");
        let back: CustomDatatype = serde_json::from_str(&json).unwrap();
        assert_eq!(back, myfloat());
    }

    #[test]
    fn bad_declarations_say_what_is_wrong() {
        let check = |edit: &dyn Fn(&mut CustomDatatype), expected: &str| {
            let mut d = myfloat();
            edit(&mut d);
            let err = d.validate().unwrap_err().to_string();
            assert!(err.contains(expected), "expected '{expected}' in: {err}");
        };
        check(&|d| d.code = 100, "code 100 is reserved");
        check(&|d| d.name = "1x".into(), "not an identifier");
        check(&|d| d.widths = vec![12], "widths [12]");
        check(&|d| d.widths = vec![], "widths []");
        check(
            &|d| d.widths = vec![32, 16],
            "width 16 has no Cast.myfloat.float (32, 16)",
        );
        check(
            &|d| {
                d.lowerings.push(lowering(
                    LoweringKey::Op {
                        op: "Pow".into(),
                        bits: 32,
                    },
                    "P",
                ))
            },
            "unknown op",
        );
        check(
            &|d| {
                d.lowerings.push(lowering(
                    LoweringKey::Op {
                        op: "Sub".into(),
                        bits: 16,
                    },
                    "S",
                ))
            },
            "16 bits is not a declared width",
        );
        check(
            &|d| {
                d.lowerings.push(lowering(
                    LoweringKey::Cast {
                        src: "float".into(),
                        dst: "int".into(),
                        src_bits: 32,
                        dst_bits: 32,
                    },
                    "C",
                ))
            },
            "neither reads nor gives",
        );
        check(
            &|d| {
                d.lowerings.push(lowering(
                    LoweringKey::Cast {
                        src: "double".into(),
                        dst: "myfloat".into(),
                        src_bits: 64,
                        dst_bits: 32,
                    },
                    "C",
                ))
            },
            "'double' with 64 bits is not float",
        );
        check(
            &|d| {
                let first = d.lowerings[0].clone();
                d.lowerings.push(first)
            },
            "given twice",
        );
        check(
            &|d| d.lowerings[2].function.clear(),
            "function name is empty",
        );
        let dot = |d: &mut CustomDatatype| {
            d.lowerings.push(lowering(
                LoweringKey::DotProduct { bits: 32 },
                "Custom32Dot",
            ))
        };
        check(&dot, "DotProduct lowerings need dot_product_option");
        check(
            &|d| d.dot_product_option = Some("exact".into()),
            "dot_product_option 'exact' is set, but the table has no DotProduct lowering",
        );
        check(
            &|d| {
                dot(d);
                d.dot_product_option = Some("exact-dot".into())
            },
            "'exact-dot' is not an option name",
        );
        let mut d = myfloat();
        dot(&mut d);
        d.dot_product_option = Some("exact".into());
        d.validate().unwrap();
        let json = serde_json::to_string(&d).unwrap();
        assert!(json.contains(r#""kind":"dot_product""#), "{json}");
        assert_eq!(serde_json::from_str::<CustomDatatype>(&json).unwrap(), d);
    }
}
