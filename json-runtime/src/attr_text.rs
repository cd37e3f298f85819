//! TVM's string encoding of op attributes in JSON graphs, both directions.
//!
//! Encoding follows TVM's `OpAttrExtractor`: integers in decimal, floats as C++ `ostream`
//! with `precision(17)` (`%.17g`: `6.0` → `"6"`, `1e-5` → `"1.0000000000000001e-05"`),
//! booleans `"1"`/`"0"`, strings as themselves, lists element-wise, an unset optional
//! (`channels=None`) as `[""]`. Decoding goes back to an [`AttrValue`] given the kind the op's
//! schema declares.

use byoc_sdk::ir::op::AttrKind;
use byoc_sdk::ir::AttrValue;
use thiserror::Error;

/// An attribute value that has no string encoding (a nested list, which TVM also rejects).
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[error("attribute '{attr}' is a nested list ({value}); JSON graph attributes are flat lists")]
pub struct AttrEncodeError {
    /// The attribute.
    pub attr: String,
    /// The value, in Relay text.
    pub value: String,
}

/// Strings that do not decode to the kind an op's schema declares.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[error("attribute '{attr}' = {value:?} is not {expected}")]
pub struct AttrDecodeError {
    /// The attribute.
    pub attr: String,
    /// The strings as written.
    pub value: Vec<String>,
    /// What was expected.
    pub expected: &'static str,
}

/// Formats a double as C's `%.17g` (what `std::ostream` with `precision(17)` writes).
pub fn format_f64(v: f64) -> String {
    if v.is_nan() {
        return "nan".to_string();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    if v == 0.0 {
        return if v.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    let sci = format!("{v:.16e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..17).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", strip_zeros(mantissa), exp.abs())
    } else {
        let decimals = usize::try_from(16 - exp).unwrap_or(0);
        strip_zeros(&format!("{v:.decimals$}")).to_string()
    }
}

/// Drops trailing zeros after a decimal point, and the point if nothing follows it.
fn strip_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

fn scalar_text(v: &AttrValue) -> Option<String> {
    match v {
        AttrValue::None => Some(String::new()),
        AttrValue::Bool(b) => Some(if *b { "1" } else { "0" }.to_string()),
        AttrValue::Int(i) => Some(i.to_string()),
        AttrValue::Float(f) => Some(format_f64(*f)),
        AttrValue::Str(s) => Some(s.clone()),
        AttrValue::List(_) => None,
    }
}

/// Encodes one attribute value as TVM writes it inside `[[...]]`.
pub fn encode_attr(name: &str, value: &AttrValue) -> Result<Vec<String>, AttrEncodeError> {
    let nested = || AttrEncodeError {
        attr: name.to_string(),
        value: value.to_string(),
    };
    match value {
        AttrValue::List(items) => items
            .iter()
            .map(|x| scalar_text(x).ok_or_else(nested))
            .collect(),
        scalar => scalar_text(scalar).map(|s| vec![s]).ok_or_else(nested),
    }
}

fn parse_int(s: &str) -> Option<AttrValue> {
    s.parse().ok().map(AttrValue::Int)
}

fn parse_float(s: &str) -> Option<AttrValue> {
    s.parse().ok().map(AttrValue::Float)
}

fn parse_bool(s: &str) -> Option<AttrValue> {
    match s {
        "1" | "true" | "True" => Some(AttrValue::Bool(true)),
        "0" | "false" | "False" => Some(AttrValue::Bool(false)),
        _ => None,
    }
}

/// A value whose kind the schema leaves open: an integer, else a float, else a string.
fn guess(s: &str) -> AttrValue {
    parse_int(s)
        .or_else(|| parse_float(s))
        .unwrap_or_else(|| AttrValue::Str(s.to_string()))
}

fn one(strings: &[String]) -> Option<&str> {
    match strings {
        [s] => Some(s),
        _ => None,
    }
}

fn is_unset(strings: &[String]) -> bool {
    matches!(strings, [s] if s.is_empty())
}

fn list(strings: &[String], f: fn(&str) -> Option<AttrValue>) -> Option<AttrValue> {
    strings
        .iter()
        .map(|s| f(s))
        .collect::<Option<Vec<_>>>()
        .map(AttrValue::List)
}

/// Decodes an attribute's strings into a value of `kind` (the op schema's kind).
pub fn decode_attr(
    name: &str,
    kind: AttrKind,
    strings: &[String],
) -> Result<AttrValue, AttrDecodeError> {
    let (value, expected) = match kind {
        AttrKind::Int => (one(strings).and_then(parse_int), "an integer"),
        AttrKind::Float => (one(strings).and_then(parse_float), "a number"),
        AttrKind::Bool => (
            one(strings).and_then(parse_bool),
            "a boolean (\"1\" or \"0\")",
        ),
        AttrKind::Str => (one(strings).map(AttrValue::from), "one string"),
        AttrKind::Ints => (list(strings, parse_int), "a list of integers"),
        AttrKind::Floats => (list(strings, parse_float), "a list of numbers"),
        AttrKind::OptInt if is_unset(strings) => (Some(AttrValue::None), ""),
        AttrKind::OptInt => (one(strings).and_then(parse_int), "an integer or unset"),
        AttrKind::OptInts if is_unset(strings) => (Some(AttrValue::None), ""),
        AttrKind::OptInts => (list(strings, parse_int), "a list of integers or unset"),
        AttrKind::Any if is_unset(strings) => (Some(AttrValue::None), ""),
        AttrKind::Any => (
            Some(match one(strings) {
                Some(s) => guess(s),
                None => AttrValue::List(strings.iter().map(|s| guess(s)).collect()),
            }),
            "",
        ),
    };
    value.ok_or_else(|| AttrDecodeError {
        attr: name.to_string(),
        value: strings.to_vec(),
        expected,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_print_as_percent_17g() {
        assert_eq!(format_f64(6.0), "6");
        assert_eq!(format_f64(1e-5), "1.0000000000000001e-05");
        assert_eq!(format_f64(0.5), "0.5");
        assert_eq!(format_f64(0.1), "0.10000000000000001");
        assert_eq!(format_f64(-2.5e20), "-2.5e+20");
        assert_eq!(format_f64(1e16), "10000000000000000");
        assert_eq!(format_f64(1e17), "1e+17");
        assert_eq!(format_f64(0.0001), "0.0001");
    }

    #[test]
    fn encoding_round_trips_through_the_schema_kind() {
        let v = AttrValue::ints([1, 2]);
        let s = encode_attr("strides", &v).unwrap();
        assert_eq!(s, vec!["1", "2"]);
        assert_eq!(decode_attr("strides", AttrKind::Ints, &s).unwrap(), v);
        let none = encode_attr("channels", &AttrValue::None).unwrap();
        assert_eq!(none, vec![""]);
        assert_eq!(
            decode_attr("channels", AttrKind::OptInt, &none).unwrap(),
            AttrValue::None
        );
        let err = decode_attr("groups", AttrKind::Int, &["x".to_string()]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "attribute 'groups' = [\"x\"] is not an integer"
        );
    }
}
