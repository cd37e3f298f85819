//! Attribute schemas: what attributes an op takes, their kinds and Relay's defaults.

use crate::{AttrValue, Attrs, IrError};

/// The kind of value an attribute holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttrKind {
    /// An integer.
    Int,
    /// A float (integers are accepted and converted).
    Float,
    /// A boolean (0/1 accepted).
    Bool,
    /// A string.
    Str,
    /// A list of integers (a single integer is accepted as a one-element list).
    Ints,
    /// A list of floats (integers converted).
    Floats,
    /// An integer or `None`.
    OptInt,
    /// A list of integers or `None`.
    OptInts,
    /// Any value (checked by the op's type relation).
    Any,
}

impl AttrKind {
    fn describe(self) -> &'static str {
        match self {
            AttrKind::Int => "an int",
            AttrKind::Float => "a float",
            AttrKind::Bool => "a bool",
            AttrKind::Str => "a string",
            AttrKind::Ints => "a list of ints",
            AttrKind::Floats => "a list of floats",
            AttrKind::OptInt => "an int or None",
            AttrKind::OptInts => "a list of ints or None",
            AttrKind::Any => "any value",
        }
    }

    /// Converts `v` to this kind, or says why it cannot be.
    fn coerce(self, v: AttrValue) -> Result<AttrValue, AttrValue> {
        use AttrValue as V;
        match (self, v) {
            (AttrKind::Any, v) => Ok(v),
            (AttrKind::Int | AttrKind::OptInt, V::Int(i)) => Ok(V::Int(i)),
            (AttrKind::OptInt | AttrKind::OptInts, V::None) => Ok(V::None),
            (AttrKind::Float, V::Int(i)) => Ok(V::Float(i as f64)),
            (AttrKind::Float, V::Float(f)) => Ok(V::Float(f)),
            (AttrKind::Bool, V::Bool(b)) => Ok(V::Bool(b)),
            (AttrKind::Bool, V::Int(i @ (0 | 1))) => Ok(V::Bool(i == 1)),
            (AttrKind::Str, V::Str(s)) => Ok(V::Str(s)),
            (AttrKind::Ints | AttrKind::OptInts, V::Int(i)) => Ok(V::List(vec![V::Int(i)])),
            (AttrKind::Ints | AttrKind::OptInts, V::List(items)) => {
                if items.iter().all(|x| matches!(x, V::Int(_))) {
                    Ok(V::List(items))
                } else {
                    Err(V::List(items))
                }
            }
            (AttrKind::Floats, V::List(items)) => {
                if items.iter().all(|x| x.as_f64().is_some()) {
                    Ok(V::List(
                        items
                            .iter()
                            .map(|x| V::Float(x.as_f64().unwrap_or_default()))
                            .collect(),
                    ))
                } else {
                    Err(V::List(items))
                }
            }
            (_, v) => Err(v),
        }
    }
}

/// One attribute of an op's schema.
#[derive(Clone, Debug)]
pub struct AttrDef {
    /// The Relay attribute name.
    pub name: &'static str,
    /// Its kind.
    pub kind: AttrKind,
    /// Relay's default value.
    pub default: AttrValue,
}

impl AttrDef {
    /// An attribute with a default.
    pub fn new(name: &'static str, kind: AttrKind, default: impl Into<AttrValue>) -> Self {
        AttrDef {
            name,
            kind,
            default: default.into(),
        }
    }

    /// An optional attribute whose default is `None`.
    pub fn optional(name: &'static str, kind: AttrKind) -> Self {
        AttrDef {
            name,
            kind,
            default: AttrValue::None,
        }
    }
}

/// Checks `attrs` against `schema`: rejects unknown names and wrong kinds, converts compatible
/// kinds, and fills in defaults.
pub(crate) fn normalize(op: &str, schema: &[AttrDef], attrs: Attrs) -> Result<Attrs, IrError> {
    let mut out = Attrs::new();
    let mut given = attrs;
    for def in schema {
        let value = match given.remove(def.name) {
            None => def.default.clone(),
            Some(v) => def.kind.coerce(v).map_err(|v| IrError::AttrType {
                op: op.to_string(),
                attr: def.name.to_string(),
                expected: def.kind.describe().to_string(),
                got: format!("{} {v}", v.kind_name()),
            })?,
        };
        out.set(def.name, value);
    }
    if let Some((name, _)) = given.iter().next() {
        let known: Vec<&str> = schema.iter().map(|d| d.name).collect();
        return Err(IrError::UnknownAttr {
            op: op.to_string(),
            attr: name.to_string(),
            known: if known.is_empty() {
                "none".to_string()
            } else {
                known.join(", ")
            },
        });
    }
    Ok(out)
}
