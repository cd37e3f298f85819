//! Attribute values of calls and functions.
//!
//! Call attributes are normalized against the op's schema when a call is built (unknown names
//! rejected, types checked, defaults filled in), so every call carries every attribute of its op
//! and two calls that differ only in spelled-out defaults are equal. Function attributes
//! (`Composite`, `Compiler`, `global_symbol`, `Primitive`, ...) are free-form.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use super::DType;

/// One attribute value.
#[derive(Clone, Debug, PartialEq)]
pub enum AttrValue {
    /// Relay's `None` (an optional attribute left unset).
    None,
    /// A boolean (`True` / `False`).
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A floating-point number.
    Float(f64),
    /// A string.
    Str(String),
    /// A list of values.
    List(Vec<AttrValue>),
}

impl AttrValue {
    /// The integer, if this is one.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            AttrValue::Int(v) => Some(*v),
            _ => None,
        }
    }

    /// The number as `f64`, for an integer or a float.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            AttrValue::Int(v) => Some(*v as f64),
            AttrValue::Float(v) => Some(*v),
            _ => None,
        }
    }

    /// The boolean, if this is one (integers 0/1 count, as in Relay).
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            AttrValue::Bool(b) => Some(*b),
            AttrValue::Int(0) => Some(false),
            AttrValue::Int(1) => Some(true),
            _ => None,
        }
    }

    /// The string, if this is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            AttrValue::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The elements, if this is a list.
    pub fn as_list(&self) -> Option<&[AttrValue]> {
        match self {
            AttrValue::List(v) => Some(v),
            _ => None,
        }
    }

    /// A list of integers, if this is one.
    pub fn as_int_list(&self) -> Option<Vec<i64>> {
        self.as_list()?.iter().map(AttrValue::as_int).collect()
    }

    /// True for [`AttrValue::None`].
    pub fn is_none(&self) -> bool {
        matches!(self, AttrValue::None)
    }

    /// A short name of the value's kind, for error messages.
    pub fn kind_name(&self) -> &'static str {
        match self {
            AttrValue::None => "None",
            AttrValue::Bool(_) => "bool",
            AttrValue::Int(_) => "int",
            AttrValue::Float(_) => "float",
            AttrValue::Str(_) => "string",
            AttrValue::List(_) => "list",
        }
    }

    /// A list of integers.
    pub fn ints(values: impl IntoIterator<Item = i64>) -> Self {
        AttrValue::List(values.into_iter().map(AttrValue::Int).collect())
    }
}

impl From<i64> for AttrValue {
    fn from(v: i64) -> Self {
        AttrValue::Int(v)
    }
}

impl From<f64> for AttrValue {
    fn from(v: f64) -> Self {
        AttrValue::Float(v)
    }
}

impl From<bool> for AttrValue {
    fn from(v: bool) -> Self {
        AttrValue::Bool(v)
    }
}

impl From<&str> for AttrValue {
    fn from(v: &str) -> Self {
        AttrValue::Str(v.to_string())
    }
}

impl From<String> for AttrValue {
    fn from(v: String) -> Self {
        AttrValue::Str(v)
    }
}

impl From<DType> for AttrValue {
    fn from(v: DType) -> Self {
        AttrValue::Str(v.to_string())
    }
}

impl From<Vec<i64>> for AttrValue {
    fn from(v: Vec<i64>) -> Self {
        AttrValue::ints(v)
    }
}

impl fmt::Display for AttrValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AttrValue::None => f.write_str("None"),
            AttrValue::Bool(true) => f.write_str("True"),
            AttrValue::Bool(false) => f.write_str("False"),
            AttrValue::Int(v) => write!(f, "{v}"),
            AttrValue::Float(v) => {
                if v.is_finite() && v.fract() == 0.0 && v.abs() < 1e15 {
                    write!(f, "{v:.1}f")
                } else {
                    write!(f, "{v:?}f")
                }
            }
            AttrValue::Str(s) => write!(f, "\"{}\"", escape(s)),
            AttrValue::List(items) => {
                f.write_str("[")?;
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    v.fmt(f)?;
                }
                f.write_str("]")
            }
        }
    }
}

/// Escapes a string for the text format (`"` and `\` and control characters).
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// A set of named attributes, ordered by name so iteration and printing are deterministic.
///
/// The map is shared between copies and copied on the first write, so copying an expression
/// (which every rewriting pass does for each node it keeps) does not copy its attributes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Attrs(Arc<BTreeMap<String, AttrValue>>);

impl Attrs {
    /// No attributes.
    pub fn new() -> Self {
        Attrs::default()
    }

    /// Sets an attribute, builder style.
    pub fn with(mut self, name: &str, value: impl Into<AttrValue>) -> Self {
        self.set(name, value);
        self
    }

    /// Sets an attribute.
    pub fn set(&mut self, name: &str, value: impl Into<AttrValue>) {
        Arc::make_mut(&mut self.0).insert(name.to_string(), value.into());
    }

    /// Removes an attribute, returning its value.
    pub fn remove(&mut self, name: &str) -> Option<AttrValue> {
        if !self.0.contains_key(name) {
            return None;
        }
        Arc::make_mut(&mut self.0).remove(name)
    }

    /// The attribute's value.
    pub fn get(&self, name: &str) -> Option<&AttrValue> {
        self.0.get(name)
    }

    /// The attribute as a string, if present and a string.
    pub fn get_str(&self, name: &str) -> Option<&str> {
        self.get(name).and_then(AttrValue::as_str)
    }

    /// The attribute as an integer, if present and an integer.
    pub fn get_int(&self, name: &str) -> Option<i64> {
        self.get(name).and_then(AttrValue::as_int)
    }

    /// True when the attribute is present.
    pub fn contains(&self, name: &str) -> bool {
        self.0.contains_key(name)
    }

    /// Iterates in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &AttrValue)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// Number of attributes.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl FromIterator<(String, AttrValue)> for Attrs {
    fn from_iter<I: IntoIterator<Item = (String, AttrValue)>>(iter: I) -> Self {
        Attrs(Arc::new(iter.into_iter().collect()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_is_relay_text() {
        assert_eq!(AttrValue::ints([1, 1]).to_string(), "[1, 1]");
        assert_eq!(AttrValue::Float(0.5).to_string(), "0.5f");
        assert_eq!(AttrValue::Float(2.0).to_string(), "2.0f");
        assert_eq!(AttrValue::Bool(true).to_string(), "True");
        assert_eq!(AttrValue::from("a\"b").to_string(), "\"a\\\"b\"");
    }
}
