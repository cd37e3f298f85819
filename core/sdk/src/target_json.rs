//! The JSON form of a [`TargetDescription`]: one schema for target-spec files and for plugin
//! descriptions crossing the ABI, read by one reader.
//!
//! ```json
//! {
//!   "target": "myacc",
//!   "ops": ["add", {"op": "nn.conv2d", "attrs": {"groups": 1}, "dtypes": ["float32"], "predicate": false}],
//!   "patterns": [{"name": "myacc.conv2d_relu", "pattern": "nn.relu(nn.conv2d(*, *))", "check": false}],
//!   "prune": {"min_ops": 1, "require_any": ["nn.conv2d"], "max_partitions": null},
//!   "prepare": ["simplify-inference", "fold-scale-axis"],
//!   "datatypes": [],
//!   "optimize": false
//! }
//! ```
//!
//! Every key but `target` may be left out. An op entry is a name or a rule object.
//! `"simplify_inference": true` and `"fold_scale_axis": true` are accepted as spellings of
//! asking for those prepare passes (older spec files use them).
//!
//! The two sources differ only in strictness ([`Source`]): a spec file is written by hand, so
//! an unknown key is refused (typos do not pass silently) and `predicate` / `check` flags are
//! refused (a file has no code behind them); a plugin description may come from a newer SDK,
//! so unknown keys are ignored, and its flags say which entries the host calls back into the
//! plugin for. Structure is checked here; meaning (op names, attribute schemas, pass names)
//! by [`TargetDescription::validated`].

use std::sync::Arc;

use serde_json::{Map, Value};
use thiserror::Error;

use super::datatype::CustomDatatype;
use super::describe::{CheckKind, OpSupport, PatternSpec, TargetDescription};
use byoc_ir::target::{OpPredicate, OpRule, PruneConfig};
use byoc_ir::{AttrValue, DType};

/// Where a description's JSON comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// A target-spec file: unknown keys and predicate flags are refused.
    Spec,
    /// A plugin's description across the ABI: unknown keys are ignored.
    Plugin,
}

/// What is wrong with a target description (its JSON, or its meaning).
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DescriptionError {
    /// Not JSON.
    #[error("line {line}, column {column}: {message}")]
    Json {
        /// Line, from 1.
        line: usize,
        /// Column, from 1.
        column: usize,
        /// serde's description.
        message: String,
    },
    /// An entry (or the whole object, `place` empty) of the wrong shape or value.
    #[error("{}{message}", if place.is_empty() { String::new() } else { format!("{place}: ") })]
    Entry {
        /// Where (`ops[2]`, `prune`, `patterns[0]`).
        place: String,
        /// What is wrong.
        message: String,
    },
    /// A bad target name.
    #[error("bad target name '{0}': a name is non-empty, has no whitespace or '.', and is not 'default'")]
    BadName(String),
    /// An op the registry does not know.
    #[error("{place}: unknown op '{op}'")]
    UnknownOp {
        /// Where (`ops[2]`, `prune.require_any[0]`).
        place: String,
        /// The op.
        op: String,
    },
}

fn entry(place: impl Into<String>, message: impl Into<String>) -> DescriptionError {
    DescriptionError::Entry {
        place: place.into(),
        message: message.into(),
    }
}

const TOP_KEYS: &[&str] = &[
    "target",
    "ops",
    "patterns",
    "prune",
    "prepare",
    "datatypes",
    "optimize",
    "simplify_inference",
    "fold_scale_axis",
];
const OP_KEYS: &[&str] = &["op", "attrs", "dtypes", "predicate"];
const PATTERN_KEYS: &[&str] = &["name", "pattern", "check"];
const PRUNE_KEYS: &[&str] = &["min_ops", "require_any", "max_partitions"];

impl TargetDescription {
    /// The JSON form (predicates and checks become flags).
    pub fn to_wire(&self) -> String {
        let ops = self.ops.iter().map(|o| {
            let mut m = Map::new();
            m.insert("op".into(), Value::from(o.rule.op.clone()));
            let attrs: Map<String, Value> = o
                .rule
                .attrs
                .iter()
                .map(|(k, v)| (k.clone(), attr_to_json(v)))
                .collect();
            m.insert("attrs".into(), Value::Object(attrs));
            if let Some(ds) = &o.rule.dtypes {
                let names = ds.iter().map(|d| Value::from(d.to_string())).collect();
                m.insert("dtypes".into(), Value::Array(names));
            }
            m.insert("predicate".into(), Value::Bool(o.predicate.is_some()));
            Value::Object(m)
        });
        let patterns = self.patterns.iter().map(|p| {
            serde_json::json!({"name": p.name, "pattern": p.pattern, "check": p.check.is_some()})
        });
        let wire = serde_json::json!({
            "target": self.target,
            "ops": ops.collect::<Vec<_>>(),
            "patterns": patterns.collect::<Vec<_>>(),
            "prune": {
                "min_ops": self.prune.min_ops,
                "require_any": self.prune.require_any,
                "max_partitions": self.prune.max_partitions,
            },
            "prepare": self.prepare,
            "datatypes": self.datatypes,
            "optimize": self.optimize,
        });
        wire.to_string()
    }

    /// Reads a plugin's description. `callback(kind, index)` makes the predicate for op entry
    /// `index` (kind [`CheckKind::Op`]) or the check for pattern entry `index`
    /// ([`CheckKind::Pattern`]) where the JSON says there is one.
    pub fn from_wire(
        text: &str,
        callback: impl Fn(CheckKind, u32) -> OpPredicate,
    ) -> Result<Self, DescriptionError> {
        read(text, Source::Plugin, &callback)
    }

    /// Reads a target-spec file's text (the same JSON, read strictly; see [`Source::Spec`]).
    /// The result is not validated yet: see [`TargetDescription::validated`].
    pub fn from_spec_json(text: &str) -> Result<Self, DescriptionError> {
        read(text, Source::Spec, &|_, _| {
            // Unreachable in practice: the spec reader refuses flags before asking.
            Arc::new(|_| Err("a target spec has no predicates".into()))
        })
    }
}

fn read(
    text: &str,
    source: Source,
    callback: &dyn Fn(CheckKind, u32) -> OpPredicate,
) -> Result<TargetDescription, DescriptionError> {
    let root: Value = serde_json::from_str(text).map_err(|e| {
        let message = e.to_string();
        // serde_json appends "at line L column C"; the error shows the position itself.
        let message = match message.rfind(" at line ") {
            Some(at) => message[..at].to_string(),
            None => message,
        };
        DescriptionError::Json {
            line: e.line(),
            column: e.column(),
            message,
        }
    })?;
    let top = object(&root, "", "a JSON object")?;
    let r = Reader { source };
    r.keys(top, TOP_KEYS, "")?;
    let target = match top.get("target") {
        Some(Value::String(s)) => s.clone(),
        Some(other) => {
            return Err(entry(
                "target",
                format!("expected a string, found {}", kind(other)),
            ))
        }
        None => return Err(entry("", "missing field `target`")),
    };
    let mut d = TargetDescription::new(target);
    for (i, e) in r.list(top, "ops", "")?.iter().enumerate() {
        let index = u32::try_from(i).map_err(|_| entry("ops", "too many entries"))?;
        let (rule, predicate) = r.op(i, e)?;
        d.ops.push(OpSupport {
            rule,
            predicate: predicate.then(|| callback(CheckKind::Op, index)),
        });
    }
    for (i, e) in r.list(top, "patterns", "")?.iter().enumerate() {
        let place = format!("patterns[{i}]");
        let index = u32::try_from(i).map_err(|_| entry("patterns", "too many entries"))?;
        let m = object(e, &place, "{\"name\": ..., \"pattern\": ...}")?;
        r.keys(m, PATTERN_KEYS, &place)?;
        let check = r.flag(m, "check", &place)?;
        d.patterns.push(PatternSpec {
            name: string(m, "name", &place)?,
            pattern: string(m, "pattern", &place)?,
            check: check.then(|| callback(CheckKind::Pattern, index)),
        });
    }
    if let Some(p) = top.get("prune") {
        let m = object(p, "prune", "an object")?;
        r.keys(m, PRUNE_KEYS, "prune")?;
        let count = |key: &str| match m.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v
                .as_u64()
                .and_then(|n| usize::try_from(n).ok())
                .map(Some)
                .ok_or_else(|| entry("prune", format!("{key} must be a non-negative integer"))),
        };
        d.prune = PruneConfig {
            min_ops: count("min_ops")?.unwrap_or(PruneConfig::default().min_ops),
            require_any: strings(r.list(m, "require_any", "prune")?, "prune.require_any")?,
            max_partitions: count("max_partitions")?,
        };
    }
    for pass in strings(r.list(top, "prepare", "")?, "prepare")? {
        d = d.with_prepare(pass);
    }
    // The older spellings of two prepare requests.
    for (key, pass) in [
        ("simplify_inference", "simplify-inference"),
        ("fold_scale_axis", "fold-scale-axis"),
    ] {
        if r.flag(top, key, "")? {
            d = d.with_prepare(pass);
        }
    }
    if let Some(v) = top.get("datatypes") {
        d.datatypes = serde_json::from_value::<Vec<CustomDatatype>>(v.clone())
            .map_err(|e| entry("datatypes", e.to_string()))?;
    }
    d.optimize = r.flag(top, "optimize", "")?;
    // The plugin's flags are the only source of predicates; a spec file has none.
    Ok(d)
}

struct Reader {
    source: Source,
}

impl Reader {
    /// Refuses keys outside `known` in a spec file.
    fn keys(
        &self,
        m: &Map<String, Value>,
        known: &[&str],
        place: &str,
    ) -> Result<(), DescriptionError> {
        if self.source == Source::Plugin {
            return Ok(());
        }
        match m.keys().find(|k| !known.contains(&k.as_str())) {
            Some(k) => {
                let expected: Vec<String> = known.iter().map(|k| format!("`{k}`")).collect();
                Err(entry(
                    place,
                    format!(
                        "unknown field `{k}`, expected one of {}",
                        expected.join(", ")
                    ),
                ))
            }
            None => Ok(()),
        }
    }

    /// A list under `key` (absent: empty).
    fn list<'v>(
        &self,
        m: &'v Map<String, Value>,
        key: &str,
        place: &str,
    ) -> Result<&'v [Value], DescriptionError> {
        match m.get(key) {
            None => Ok(&[]),
            Some(Value::Array(items)) => Ok(items),
            Some(other) => Err(entry(
                join(place, key),
                format!("expected a list, found {}", kind(other)),
            )),
        }
    }

    /// A boolean under `key` (absent: false); `predicate` and `check` flags are refused in
    /// a spec file.
    fn flag(
        &self,
        m: &Map<String, Value>,
        key: &str,
        place: &str,
    ) -> Result<bool, DescriptionError> {
        let on = match m.get(key) {
            None => false,
            Some(Value::Bool(b)) => *b,
            Some(other) => {
                return Err(entry(
                    join(place, key),
                    format!("expected true or false, found {}", kind(other)),
                ))
            }
        };
        if on && self.source == Source::Spec && matches!(key, "predicate" | "check") {
            return Err(entry(
                place,
                format!("'{key}' needs plugin code; a target spec cannot set it"),
            ));
        }
        Ok(on)
    }

    /// One `ops` entry: a name, or a rule object.
    fn op(&self, index: usize, e: &Value) -> Result<(OpRule, bool), DescriptionError> {
        let place = format!("ops[{index}]");
        let m = match e {
            Value::String(name) => return Ok((OpRule::new(name.as_str()), false)),
            Value::Object(m) => m,
            other => {
                return Err(entry(
                    place,
                    format!(
                        "expected an op name or {{\"op\": ..., \"attrs\": ..., \"dtypes\": ...}}, found {}",
                        kind(other)
                    ),
                ))
            }
        };
        if self.source == Source::Spec {
            if let Some(key) = m.keys().find(|k| !OP_KEYS.contains(&k.as_str())) {
                return Err(entry(
                    place,
                    format!("unknown key '{key}' (expected op, attrs, dtypes)"),
                ));
            }
        }
        let Some(Value::String(name)) = m.get("op") else {
            return Err(entry(place, "a rule object needs \"op\": \"<op name>\""));
        };
        let mut rule = OpRule::new(name.as_str());
        if let Some(attrs) = m.get("attrs") {
            let attrs = object(attrs, &place, "\"attrs\" as an object")?;
            for (k, v) in attrs {
                let value = attr_from_json(v)
                    .map_err(|msg| entry(&place, format!("attribute '{k}': {msg}")))?;
                rule = rule.with_attr(k, value);
            }
        }
        if let Some(dtypes) = m.get("dtypes") {
            let Value::Array(list) = dtypes else {
                return Err(entry(
                    place,
                    format!(
                        "\"dtypes\" must be a list of dtype names, found {}",
                        kind(dtypes)
                    ),
                ));
            };
            let mut parsed = Vec::with_capacity(list.len());
            for d in list {
                let Value::String(s) = d else {
                    return Err(entry(place, format!("dtype {d} is not a string")));
                };
                let dtype: DType = s
                    .parse()
                    .map_err(|e| entry(&place, format!("dtype '{s}': {e}")))?;
                parsed.push(dtype);
            }
            rule = rule.with_dtypes(parsed);
        }
        let predicate = self.flag(m, "predicate", &place)?;
        Ok((rule, predicate))
    }
}

fn join(place: &str, key: &str) -> String {
    if place.is_empty() {
        key.to_string()
    } else {
        format!("{place}.{key}")
    }
}

fn object<'v>(
    v: &'v Value,
    place: &str,
    what: &str,
) -> Result<&'v Map<String, Value>, DescriptionError> {
    match v {
        Value::Object(m) => Ok(m),
        other => Err(entry(
            place,
            format!("expected {what}, found {}", kind(other)),
        )),
    }
}

fn string(m: &Map<String, Value>, key: &str, place: &str) -> Result<String, DescriptionError> {
    match m.get(key) {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(entry(
            place,
            format!("\"{key}\" must be a string, found {}", kind(other)),
        )),
        None => Err(entry(place, format!("missing \"{key}\""))),
    }
}

fn strings(items: &[Value], place: &str) -> Result<Vec<String>, DescriptionError> {
    items
        .iter()
        .enumerate()
        .map(|(i, v)| match v {
            Value::String(s) => Ok(s.clone()),
            other => Err(entry(
                format!("{place}[{i}]"),
                format!("expected a string, found {}", kind(other)),
            )),
        })
        .collect()
}

fn attr_to_json(v: &AttrValue) -> Value {
    match v {
        AttrValue::None => Value::Null,
        AttrValue::Bool(b) => Value::Bool(*b),
        AttrValue::Int(i) => Value::from(*i),
        AttrValue::Float(f) => Value::from(*f),
        AttrValue::Str(s) => Value::String(s.clone()),
        AttrValue::List(items) => Value::Array(items.iter().map(attr_to_json).collect()),
    }
}

fn attr_from_json(v: &Value) -> Result<AttrValue, String> {
    Ok(match v {
        Value::Null => AttrValue::None,
        Value::Bool(b) => AttrValue::Bool(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => AttrValue::Int(i),
            None => AttrValue::Float(
                n.as_f64()
                    .ok_or_else(|| format!("number {n} out of range"))?,
            ),
        },
        Value::String(s) => AttrValue::Str(s.clone()),
        Value::Array(items) => {
            AttrValue::List(items.iter().map(attr_from_json).collect::<Result<_, _>>()?)
        }
        Value::Object(_) => return Err("an object is not an attribute value".to_string()),
    })
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DatatypeLowering, LoweringKey};

    fn accept_all(_: CheckKind, _: u32) -> OpPredicate {
        Arc::new(|_| Ok(()))
    }

    #[test]
    fn wire_round_trip_keeps_rules_flags_and_prepare() {
        let d = TargetDescription::new("acc")
            .with_ops(["add"])
            .with_rule_checked(
                OpRule::new("nn.conv2d")
                    .with_attr("groups", 1i64)
                    .with_dtypes([DType::Float32]),
                |_| Err("no".into()),
            )
            .with_pattern("acc.add_relu", "nn.relu(add(*, *))")
            .with_datatype(CustomDatatype {
                name: "posit".into(),
                code: 131,
                widths: vec![16],
                lowerings: vec![DatatypeLowering {
                    key: LoweringKey::Op {
                        op: "Add".into(),
                        bits: 16,
                    },
                    function: "posit16_add".into(),
                }],
                dot_product_option: None,
            })
            .with_optimize()
            .with_prepare("simplify-inference")
            .with_prepare("fold-scale-axis");
        let text = d.to_wire();
        let back = TargetDescription::from_wire(&text, |kind, i| {
            assert_eq!((kind, i), (CheckKind::Op, 1));
            Arc::new(|_| Ok(()))
        })
        .unwrap();
        assert_eq!(back.to_wire(), text);
        assert_eq!(back.ops[1].rule, d.ops[1].rule);
        assert!(back.ops[1].predicate.is_some() && back.ops[0].predicate.is_none());
        assert!(back.optimize);
        assert_eq!(back.prepare, ["simplify-inference", "fold-scale-axis"]);
        assert_eq!(back.datatypes, d.datatypes);
    }

    #[test]
    fn plugins_may_send_unknown_keys_and_specs_may_not() {
        let text = r#"{"target": "x", "future": 1, "ops": [{"op": "add", "later": true}]}"#;
        let d = TargetDescription::from_wire(text, accept_all).unwrap();
        assert_eq!((d.target.as_str(), d.prune.min_ops), ("x", 1));
        assert!(d.prepare.is_empty());
        let err = TargetDescription::from_spec_json(text)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("unknown field `future`, expected one of `target`"),
            "{err}"
        );
        let err = TargetDescription::from_spec_json(
            r#"{"target": "x", "ops": [{"op": "add", "predicate": true}]}"#,
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            err,
            "ops[0]: 'predicate' needs plugin code; a target spec cannot set it"
        );
        assert!(TargetDescription::from_wire("{", accept_all).is_err());
    }

    #[test]
    fn a_spec_reads_into_the_same_description_as_the_builder() {
        let spec = TargetDescription::from_spec_json(
            r#"{"target": "myacc",
                "ops": ["add", {"op": "nn.conv2d", "attrs": {"groups": 1}, "dtypes": ["float32"]}],
                "patterns": [{"name": "myacc.conv_relu", "pattern": "nn.relu(nn.conv2d(*, *))"}],
                "prune": {"require_any": ["nn.conv2d"]},
                "simplify_inference": true}"#,
        )
        .unwrap();
        let built = TargetDescription::new("myacc")
            .with_ops(["add"])
            .with_rule(
                OpRule::new("nn.conv2d")
                    .with_attr("groups", 1i64)
                    .with_dtypes([DType::Float32]),
            )
            .with_pattern("myacc.conv_relu", "nn.relu(nn.conv2d(*, *))")
            .with_prune(PruneConfig {
                require_any: vec!["nn.conv2d".into()],
                ..PruneConfig::default()
            })
            .with_prepare("simplify-inference");
        assert_eq!(spec.to_wire(), built.to_wire());
    }
}
