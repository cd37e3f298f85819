//! Targets as the pipeline sees them: a [`TargetSupport`] (op rules, predicates, prune
//! settings) together with the target's [`PatternTable`], and the declarative target spec
//! (`docs/partitioning.md`), a JSON file that gives a target without writing a plugin:
//!
//! ```json
//! {
//!   "target": "myacc",
//!   "ops": ["add", "nn.relu", {"op": "nn.conv2d", "attrs": {"groups": 1}, "dtypes": ["float32"]}],
//!   "patterns": [
//!     {"name": "myacc.conv2d_bias_relu", "pattern": "nn.relu(nn.bias_add(nn.conv2d(*, *), *))"}
//!   ],
//!   "prune": {"min_ops": 1, "require_any": ["nn.conv2d", "nn.dense"]}
//! }
//! ```
//!
//! Besides the contract's keys a spec may set `"simplify_inference": true` (prepare then
//! rewrites `nn.batch_norm` and friends into elementwise ops, as TVM's DNNL flow does),
//! `"fold_scale_axis": true` (prepare folds per-channel scales after conv2d / dense into the
//! constant weights) and `"prune": {"max_partitions": N}`. Every op name, attribute, dtype and pattern is checked
//! against the op registry when the spec loads; errors name the file and the entry.

use std::path::Path;

use byoc_core::ir::{AttrValue, Attrs};
use byoc_core::op::OpRegistry;
use byoc_core::target::{OpRule, PruneConfig, TargetSupport};
use byoc_core::DType;
use byoc_patterns::{Check, PatternTable, TableEntry, TableError};
use serde::Deserialize;
use serde_json::Value;
use thiserror::Error;

pub use byoc_core::byoc::HOST_TARGET;

/// A target: what it supports and which composites it forms.
#[derive(Clone, Debug)]
pub struct Target {
    /// Op rules, predicates and prune settings; its name is the target's name.
    pub support: TargetSupport,
    /// The composite patterns, applied before annotation (names `<target>.<name>`).
    pub patterns: PatternTable,
    /// Whether prepare runs SimplifyInference for this target.
    pub simplify_inference: bool,
    /// Whether prepare runs FoldScaleAxis for this target.
    pub fold_scale_axis: bool,
}

impl Target {
    /// A target with these support rules and no patterns.
    pub fn new(support: TargetSupport) -> Self {
        Target {
            support,
            patterns: PatternTable::new(),
            simplify_inference: false,
            fold_scale_axis: false,
        }
    }

    /// The target name (the `Compiler` attribute of its partitions).
    pub fn name(&self) -> &str {
        self.support.name()
    }

    /// Sets the pattern table.
    pub fn with_patterns(mut self, patterns: PatternTable) -> Self {
        self.patterns = patterns;
        self
    }

    /// Parses a target spec from JSON text.
    pub fn from_spec_json(text: &str) -> Result<Self, TargetSpecError> {
        let spec: SpecJson = serde_json::from_str(text).map_err(|e| TargetSpecError::Json {
            line: e.line(),
            column: e.column(),
            message: strip_position(&e.to_string()),
        })?;
        spec.into_target()
    }

    /// Reads a target spec file; errors name the file.
    pub fn from_spec_file(path: &Path) -> Result<Self, TargetSpecFileError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| TargetSpecFileError {
            file: file.clone(),
            error: TargetSpecError::Read(e.to_string()),
        })?;
        Target::from_spec_json(&text).map_err(|error| TargetSpecFileError { file, error })
    }
}

/// A target spec file that could not be loaded.
#[derive(Debug, Error)]
#[error("target spec '{file}': {error}")]
pub struct TargetSpecFileError {
    /// The file.
    pub file: String,
    /// What is wrong with it.
    pub error: TargetSpecError,
}

/// What is wrong with a target spec.
#[derive(Debug, Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum TargetSpecError {
    /// The file could not be read.
    #[error("cannot read: {0}")]
    Read(String),
    /// Not JSON, or not the spec's shape.
    #[error("line {line}, column {column}: {message}")]
    Json {
        /// Line, from 1.
        line: usize,
        /// Column, from 1.
        column: usize,
        /// serde's description.
        message: String,
    },
    /// A bad target name.
    #[error("bad target name '{0}': a name is non-empty, has no whitespace or '.', and is not 'default'")]
    BadName(String),
    /// An entry of `ops` that is neither a name nor a rule object.
    #[error("ops[{index}]: {message}")]
    BadOpEntry {
        /// The entry's index.
        index: usize,
        /// What is wrong.
        message: String,
    },
    /// An op the registry does not know.
    #[error("{place}: unknown op '{op}'")]
    UnknownOp {
        /// Where (`ops[2]`, `prune.require_any[0]`).
        place: String,
        /// The op.
        op: String,
    },
    /// A pattern entry that does not form a valid table entry.
    #[error("patterns[{index}] ('{name}'): {source}")]
    Pattern {
        /// The entry's index.
        index: usize,
        /// Its name.
        name: String,
        /// The table's error (parse errors carry the column in the pattern); boxed, as it
        /// is large and travels only on failure.
        source: Box<TableError>,
    },
    /// A composite name without the target's prefix.
    #[error("patterns[{index}]: composite name '{name}' must start with '{target}.'")]
    MissingPrefix {
        /// The entry's index.
        index: usize,
        /// The name.
        name: String,
        /// The target.
        target: String,
    },
}

/// Two selected targets that cannot be used together.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[error("target '{0}' is selected twice (each target name may appear once)")]
pub struct DuplicateTarget(pub String);

/// Checks that target names are distinct.
pub fn check_distinct(targets: &[Target]) -> Result<(), DuplicateTarget> {
    for (i, t) in targets.iter().enumerate() {
        if targets[..i].iter().any(|u| u.name() == t.name()) {
            return Err(DuplicateTarget(t.name().to_string()));
        }
    }
    Ok(())
}

/// serde_json appends "at line L column C"; the error shows the position itself.
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(at) => message[..at].to_string(),
        None => message.to_string(),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SpecJson {
    target: String,
    #[serde(default)]
    ops: Vec<Value>,
    #[serde(default)]
    patterns: Vec<PatternJson>,
    #[serde(default)]
    prune: PruneJson,
    #[serde(default)]
    simplify_inference: bool,
    #[serde(default)]
    fold_scale_axis: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PatternJson {
    name: String,
    pattern: String,
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct PruneJson {
    min_ops: Option<usize>,
    #[serde(default)]
    require_any: Vec<String>,
    max_partitions: Option<usize>,
}

impl SpecJson {
    fn into_target(self) -> Result<Target, TargetSpecError> {
        let name = self.target;
        check_target_name(&name)?;
        let mut support = TargetSupport::new(name.as_str());
        for (index, entry) in self.ops.iter().enumerate() {
            support = support.with_rule(op_rule(index, entry)?);
        }
        let patterns = pattern_table(
            &name,
            self.patterns
                .iter()
                .map(|p| (p.name.as_str(), p.pattern.as_str(), None)),
        )?;
        for (i, op) in self.prune.require_any.iter().enumerate() {
            if OpRegistry::lookup(op).is_none() {
                return Err(TargetSpecError::UnknownOp {
                    place: format!("prune.require_any[{i}]"),
                    op: op.clone(),
                });
            }
        }
        let defaults = PruneConfig::default();
        support = support.with_prune(PruneConfig {
            min_ops: self.prune.min_ops.unwrap_or(defaults.min_ops),
            require_any: self.prune.require_any,
            max_partitions: self.prune.max_partitions,
        });
        Ok(Target {
            support,
            patterns,
            simplify_inference: self.simplify_inference,
            fold_scale_axis: self.fold_scale_axis,
        })
    }
}

/// Checks a target name: non-empty, no whitespace or '.', not the host's name.
pub(crate) fn check_target_name(name: &str) -> Result<(), TargetSpecError> {
    if name.is_empty()
        || name == HOST_TARGET
        || name.contains(|c: char| c.is_whitespace() || c == '.')
    {
        return Err(TargetSpecError::BadName(name.to_string()));
    }
    Ok(())
}

/// A pattern table from `(name, pattern text, check)` entries; names need the `<target>.`
/// prefix.
pub(crate) fn pattern_table<'a>(
    target: &str,
    entries: impl IntoIterator<Item = (&'a str, &'a str, Option<Check>)>,
) -> Result<PatternTable, TargetSpecError> {
    let mut table = PatternTable::for_target(target);
    for (index, (name, text, check)) in entries.into_iter().enumerate() {
        let wrap = |source| match source {
            TableError::MissingTargetPrefix { name, target } => TargetSpecError::MissingPrefix {
                index,
                name,
                target,
            },
            source => TargetSpecError::Pattern {
                index,
                name: name.to_string(),
                source: Box::new(source),
            },
        };
        let pattern = text.parse().map_err(|p| wrap(TableError::Parse(p)))?;
        table
            .push(TableEntry {
                name: name.to_string(),
                pattern,
                check,
            })
            .map_err(wrap)?;
    }
    Ok(table)
}

fn op_rule(index: usize, entry: &Value) -> Result<OpRule, TargetSpecError> {
    let bad = |message: String| TargetSpecError::BadOpEntry { index, message };
    let (name, attrs, dtypes) = match entry {
        Value::String(name) => (name.as_str(), None, None),
        Value::Object(map) => {
            if let Some(key) = map
                .keys()
                .find(|k| !matches!(k.as_str(), "op" | "attrs" | "dtypes"))
            {
                return Err(bad(format!(
                    "unknown key '{key}' (expected op, attrs, dtypes)"
                )));
            }
            let Some(Value::String(name)) = map.get("op") else {
                return Err(bad("a rule object needs \"op\": \"<op name>\"".to_string()));
            };
            (name.as_str(), map.get("attrs"), map.get("dtypes"))
        }
        other => {
            return Err(bad(format!(
                "expected an op name or {{\"op\": ..., \"attrs\": ..., \"dtypes\": ...}}, found {}",
                json_kind(other)
            )))
        }
    };
    let Some(op) = OpRegistry::lookup(name) else {
        return Err(TargetSpecError::UnknownOp {
            place: format!("ops[{index}]"),
            op: name.to_string(),
        });
    };
    let mut rule = OpRule::new(name);
    if let Some(attrs) = attrs {
        let Value::Object(map) = attrs else {
            return Err(bad(format!(
                "\"attrs\" must be an object, found {}",
                json_kind(attrs)
            )));
        };
        let mut given = Attrs::new();
        for (k, v) in map {
            given.set(
                k,
                attr_value(v).map_err(|m| bad(format!("attribute '{k}': {m}")))?,
            );
        }
        // Validate names and kinds against the op's schema; keep the coerced values.
        let normalized = op.normalize_attrs(given).map_err(|e| bad(e.to_string()))?;
        for k in map.keys() {
            if let Some(v) = normalized.get(k) {
                rule = rule.with_attr(k, v.clone());
            }
        }
    }
    if let Some(dtypes) = dtypes {
        let Value::Array(list) = dtypes else {
            return Err(bad(format!(
                "\"dtypes\" must be a list of dtype names, found {}",
                json_kind(dtypes)
            )));
        };
        let mut parsed = Vec::with_capacity(list.len());
        for d in list {
            let Value::String(s) = d else {
                return Err(bad(format!("dtype {d} is not a string")));
            };
            let dtype: DType = s.parse().map_err(|e| bad(format!("dtype '{s}': {e}")))?;
            parsed.push(dtype);
        }
        rule = rule.with_dtypes(parsed);
    }
    Ok(rule)
}

fn attr_value(v: &Value) -> Result<AttrValue, String> {
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
            AttrValue::List(items.iter().map(attr_value).collect::<Result<_, _>>()?)
        }
        Value::Object(_) => return Err("an object is not an attribute value".to_string()),
    })
}

fn json_kind(v: &Value) -> &'static str {
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

    fn err(text: &str) -> String {
        Target::from_spec_json(text).unwrap_err().to_string()
    }

    #[test]
    fn design_example_loads() {
        let t = Target::from_spec_json(
            r#"{
              "target": "myacc",
              "ops": ["add", "nn.relu", {"op": "nn.conv2d", "attrs": {"groups": 1}, "dtypes": ["float32"]}],
              "patterns": [
                {"name": "myacc.conv2d_bias_relu", "pattern": "nn.relu(nn.bias_add(nn.conv2d(*, *), *))"}
              ],
              "prune": {"min_ops": 1, "require_any": ["nn.conv2d", "nn.dense"]}
            }"#,
        )
        .unwrap();
        assert_eq!(t.name(), "myacc");
        assert_eq!(t.support.rules().len(), 3);
        assert_eq!(
            t.support.rules()[2],
            OpRule::new("nn.conv2d")
                .with_attr("groups", 1i64)
                .with_dtypes([DType::Float32])
        );
        assert_eq!(t.patterns.len(), 1);
        assert_eq!(t.support.prune.require_any, ["nn.conv2d", "nn.dense"]);
        assert!(!t.simplify_inference && !t.fold_scale_axis);
        let t = Target::from_spec_json(
            r#"{"target": "acc", "simplify_inference": true, "fold_scale_axis": true}"#,
        )
        .unwrap();
        assert!(t.simplify_inference && t.fold_scale_axis);
    }

    #[test]
    fn bad_specs_name_the_problem() {
        assert_eq!(
            err(r#"{"target": "a", "ops": ["nn.conv3x"]}"#),
            "ops[0]: unknown op 'nn.conv3x'"
        );
        assert!(err(r#"{"target": "a", "ops": [3]}"#).starts_with("ops[0]: expected an op name or"));
        assert!(
            err(r#"{"target": "a", "ops": [{"op": "nn.conv2d", "attrs": {"grups": 1}}]}"#)
                .contains("grups")
        );
        assert!(
            err(r#"{"target": "a", "ops": [{"op": "nn.conv2d", "dtypes": ["float33"]}]}"#)
                .contains("float33")
        );
        assert!(
            err(r#"{"target": "a", "ops": [{"op": "add", "colour": 1}]}"#)
                .contains("unknown key 'colour'")
        );
        assert!(err(r#"{"target": "a", "opz": []}"#).contains("unknown field `opz`"));
        assert!(err("{\"target\": \"a\",\n \"ops\": [").starts_with("line 2, column"));
        assert!(err(r#"{"target": "default"}"#).contains("bad target name"));
        assert_eq!(
            err(r#"{"target": "a", "patterns": [{"name": "relu", "pattern": "nn.relu(*)"}]}"#),
            "patterns[0]: composite name 'relu' must start with 'a.'"
        );
        assert!(
            err(r#"{"target": "a", "patterns": [{"name": "a.x", "pattern": "nn.relu(*"}]}"#)
                .starts_with("patterns[0] ('a.x'): ")
        );
        assert!(err(
            r#"{"target": "a", "patterns": [{"name": "a.x", "pattern": "nn.relu(*)"},
                                             {"name": "a.x", "pattern": "add(*, *)"}]}"#
        )
        .contains("two entries named 'a.x'"));
        assert_eq!(
            err(r#"{"target": "a", "prune": {"require_any": ["nn.dens"]}}"#),
            "prune.require_any[0]: unknown op 'nn.dens'"
        );
    }

    #[test]
    fn duplicate_targets_are_refused() {
        let a = Target::new(TargetSupport::new("a"));
        let b = Target::new(TargetSupport::new("b"));
        assert!(check_distinct(&[a.clone(), b]).is_ok());
        assert_eq!(
            check_distinct(&[a.clone(), a]).unwrap_err().to_string(),
            "target 'a' is selected twice (each target name may appear once)"
        );
    }
}
