//! A target description: what a plugin offloads and how the host should plan for it.
//!
//! [`TargetDescription`] is the vendor-facing value: op rules with optional Rust predicates,
//! a pattern table in the DESIGN §3.2 text syntax (with optional checks on the root call of a
//! match), prune settings, custom datatypes with per-op lowerings, and flags for the optional
//! hooks. Across the plugin ABI it travels as JSON ([`TargetDescription::to_wire`] /
//! [`TargetDescription::from_wire`]): every field has a default, unknown fields are ignored,
//! so later SDK versions can add fields without breaking older hosts or plugins. Predicates and
//! checks cannot be serialized; the wire form says which entries have one, and the host calls
//! them back by index.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use thiserror::Error;

use super::datatype::CustomDatatype;
use crate::ir::{AttrValue, DType};
use crate::target::{CallView, OpPredicate, OpRule, PruneConfig, RejectReason, TargetSupport};

/// An op the target runs: a rule (attribute values, dtypes) and an optional predicate that
/// applies to every call of the op.
#[derive(Clone)]
pub struct OpSupport {
    /// The declarative part.
    pub rule: OpRule,
    /// Arbitrary code deciding per call; `Err` carries the rejection reason.
    pub predicate: Option<OpPredicate>,
}

/// One pattern table entry.
#[derive(Clone)]
pub struct PatternSpec {
    /// The composite name, `<target>.<name>`.
    pub name: String,
    /// The pattern in the DESIGN §3.2 text syntax.
    pub pattern: String,
    /// A check on the root call of each match; `Err` rejects the match.
    pub check: Option<OpPredicate>,
}

/// What a target supports and how to plan for it.
#[derive(Clone)]
pub struct TargetDescription {
    /// The target name: the `Compiler` attribute of its partitions.
    pub target: String,
    /// Supported ops, in order (rules for one op are alternatives).
    pub ops: Vec<OpSupport>,
    /// The pattern table, earlier entries first.
    pub patterns: Vec<PatternSpec>,
    /// Which partitions are worth offloading.
    pub prune: PruneConfig,
    /// Custom datatypes the plugin brings.
    pub datatypes: Vec<CustomDatatype>,
    /// Whether the host calls [`super::Plugin::optimize`] on each partition before compiling.
    pub optimize: bool,
    /// Whether prepare should run SimplifyInference (batch norm into elementwise ops).
    pub simplify_inference: bool,
    /// Whether prepare should run FoldScaleAxis (per-channel scales after conv2d / dense into
    /// constant weights, shifts into one bias).
    pub fold_scale_axis: bool,
}

impl std::fmt::Debug for TargetDescription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_wire())
    }
}

impl TargetDescription {
    /// A target that supports nothing yet, with default prune settings.
    pub fn new(target: impl Into<String>) -> Self {
        TargetDescription {
            target: target.into(),
            ops: Vec::new(),
            patterns: Vec::new(),
            prune: PruneConfig::default(),
            datatypes: Vec::new(),
            optimize: false,
            simplify_inference: false,
            fold_scale_axis: false,
        }
    }

    /// Supports every call of each of these ops.
    pub fn with_ops<S: Into<String>>(mut self, ops: impl IntoIterator<Item = S>) -> Self {
        self.ops.extend(ops.into_iter().map(|op| OpSupport {
            rule: OpRule::new(op),
            predicate: None,
        }));
        self
    }

    /// Adds an op rule.
    pub fn with_rule(mut self, rule: OpRule) -> Self {
        self.ops.push(OpSupport {
            rule,
            predicate: None,
        });
        self
    }

    /// Adds an op rule with a predicate on each call.
    pub fn with_rule_checked(
        mut self,
        rule: OpRule,
        predicate: impl Fn(&CallView<'_>) -> Result<(), RejectReason> + Send + Sync + 'static,
    ) -> Self {
        self.ops.push(OpSupport {
            rule,
            predicate: Some(Arc::new(predicate)),
        });
        self
    }

    /// Appends a pattern table entry (`name` should be `<target>.<name>`).
    pub fn with_pattern(mut self, name: impl Into<String>, pattern: impl Into<String>) -> Self {
        self.patterns.push(PatternSpec {
            name: name.into(),
            pattern: pattern.into(),
            check: None,
        });
        self
    }

    /// Appends a pattern table entry with a check on the root call of each match.
    pub fn with_pattern_checked(
        mut self,
        name: impl Into<String>,
        pattern: impl Into<String>,
        check: impl Fn(&CallView<'_>) -> Result<(), RejectReason> + Send + Sync + 'static,
    ) -> Self {
        self.patterns.push(PatternSpec {
            name: name.into(),
            pattern: pattern.into(),
            check: Some(Arc::new(check)),
        });
        self
    }

    /// Sets the prune settings.
    pub fn with_prune(mut self, prune: PruneConfig) -> Self {
        self.prune = prune;
        self
    }

    /// Declares a custom datatype.
    pub fn with_datatype(mut self, datatype: CustomDatatype) -> Self {
        self.datatypes.push(datatype);
        self
    }

    /// Asks the host to call the plugin's optimize hook on each partition.
    pub fn with_optimize(mut self) -> Self {
        self.optimize = true;
        self
    }

    /// Asks prepare to run SimplifyInference (and constant folding after it).
    pub fn with_simplify_inference(mut self) -> Self {
        self.simplify_inference = true;
        self
    }

    /// Asks prepare to run FoldScaleAxis, so batch-norm scales after a conv2d or dense land
    /// in its constant weights (after SimplifyInference, when that is asked for too).
    pub fn with_fold_scale_axis(mut self) -> Self {
        self.fold_scale_axis = true;
        self
    }

    /// The op support rules and predicates as the annotation pass sees them.
    pub fn support(&self) -> TargetSupport {
        let mut support = TargetSupport::new(&self.target).with_prune(self.prune.clone());
        for op in &self.ops {
            support = support.with_rule(op.rule.clone());
            if let Some(p) = &op.predicate {
                let p = p.clone();
                support = support.with_predicate(Some(&op.rule.op), move |c| p(c));
            }
        }
        support
    }

    /// The op names, in order, without repetition.
    pub fn op_names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = Vec::new();
        for op in &self.ops {
            if !names.contains(&op.rule.op.as_str()) {
                names.push(&op.rule.op);
            }
        }
        names
    }

    /// The JSON wire form (predicates and checks become flags).
    pub fn to_wire(&self) -> String {
        let wire = WireDescription {
            target: self.target.clone(),
            ops: self
                .ops
                .iter()
                .map(|o| WireOp {
                    op: o.rule.op.clone(),
                    attrs: o
                        .rule
                        .attrs
                        .iter()
                        .map(|(k, v)| (k.clone(), attr_to_json(v)))
                        .collect(),
                    dtypes: o
                        .rule
                        .dtypes
                        .as_ref()
                        .map(|ds| ds.iter().map(DType::to_string).collect()),
                    predicate: o.predicate.is_some(),
                })
                .collect(),
            patterns: self
                .patterns
                .iter()
                .map(|p| WirePattern {
                    name: p.name.clone(),
                    pattern: p.pattern.clone(),
                    check: p.check.is_some(),
                })
                .collect(),
            prune: WirePrune {
                min_ops: self.prune.min_ops,
                require_any: self.prune.require_any.clone(),
                max_partitions: self.prune.max_partitions,
            },
            datatypes: self.datatypes.clone(),
            optimize: self.optimize,
            simplify_inference: self.simplify_inference,
            fold_scale_axis: self.fold_scale_axis,
        };
        // Serializing plain strings, numbers and lists cannot fail.
        serde_json::to_string(&wire).unwrap_or_default()
    }

    /// Reads the wire form. `callback(kind, index)` makes the predicate for op entry `index`
    /// (kind [`CheckKind::Op`]) or the check for pattern entry `index` ([`CheckKind::Pattern`])
    /// where the wire form says there is one.
    pub fn from_wire(
        text: &str,
        callback: impl Fn(CheckKind, u32) -> OpPredicate,
    ) -> Result<Self, DescriptionError> {
        let wire: WireDescription =
            serde_json::from_str(text).map_err(|e| DescriptionError::Json(e.to_string()))?;
        let mut ops = Vec::with_capacity(wire.ops.len());
        for (i, o) in wire.ops.into_iter().enumerate() {
            let index = u32::try_from(i).map_err(|_| DescriptionError::TooLarge)?;
            let mut rule = OpRule::new(&o.op);
            for (name, value) in &o.attrs {
                let v = attr_from_json(value).ok_or_else(|| DescriptionError::Attr {
                    op: o.op.clone(),
                    attr: name.clone(),
                })?;
                rule = rule.with_attr(name, v);
            }
            if let Some(ds) = &o.dtypes {
                let dtypes = ds
                    .iter()
                    .map(|d| {
                        d.parse::<DType>().map_err(|e| DescriptionError::DType {
                            op: o.op.clone(),
                            message: e.to_string(),
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                rule = rule.with_dtypes(dtypes);
            }
            ops.push(OpSupport {
                rule,
                predicate: o.predicate.then(|| callback(CheckKind::Op, index)),
            });
        }
        let mut patterns = Vec::with_capacity(wire.patterns.len());
        for (i, p) in wire.patterns.into_iter().enumerate() {
            let index = u32::try_from(i).map_err(|_| DescriptionError::TooLarge)?;
            patterns.push(PatternSpec {
                check: p.check.then(|| callback(CheckKind::Pattern, index)),
                name: p.name,
                pattern: p.pattern,
            });
        }
        Ok(TargetDescription {
            target: wire.target,
            ops,
            patterns,
            prune: PruneConfig {
                min_ops: wire.prune.min_ops,
                require_any: wire.prune.require_any,
                max_partitions: wire.prune.max_partitions,
            },
            datatypes: wire.datatypes,
            optimize: wire.optimize,
            simplify_inference: wire.simplify_inference,
            fold_scale_axis: wire.fold_scale_axis,
        })
    }

    /// The predicate of op entry `index` or the check of pattern entry `index`.
    pub fn check(&self, kind: CheckKind, index: u32) -> Option<&OpPredicate> {
        let i = usize::try_from(index).ok()?;
        match kind {
            CheckKind::Op => self.ops.get(i)?.predicate.as_ref(),
            CheckKind::Pattern => self.patterns.get(i)?.check.as_ref(),
        }
    }
}

/// Which list a predicate index refers to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckKind {
    /// An op entry's predicate.
    Op,
    /// A pattern entry's check.
    Pattern,
}

/// Errors of reading a description's wire form.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DescriptionError {
    /// Not the expected JSON.
    #[error("malformed target description: {0}")]
    Json(String),
    /// An attribute value that is not a Relay attribute value.
    #[error("op '{op}': attribute '{attr}' is not a number, string, bool, null or list")]
    Attr {
        /// The op.
        op: String,
        /// The attribute.
        attr: String,
    },
    /// A dtype name that does not parse.
    #[error("op '{op}': {message}")]
    DType {
        /// The op.
        op: String,
        /// The parse error.
        message: String,
    },
    /// More entries than an index can address.
    #[error("target description has more than 2^32 entries")]
    TooLarge,
}

#[derive(Serialize, Deserialize)]
struct WireDescription {
    target: String,
    #[serde(default)]
    ops: Vec<WireOp>,
    #[serde(default)]
    patterns: Vec<WirePattern>,
    #[serde(default)]
    prune: WirePrune,
    #[serde(default)]
    datatypes: Vec<CustomDatatype>,
    #[serde(default)]
    optimize: bool,
    #[serde(default)]
    simplify_inference: bool,
    /// Added after the first wire version: absent (older plugins) means off, and older hosts
    /// ignore it.
    #[serde(default)]
    fold_scale_axis: bool,
}

#[derive(Serialize, Deserialize)]
struct WireOp {
    op: String,
    #[serde(default)]
    attrs: BTreeMap<String, Value>,
    #[serde(default)]
    dtypes: Option<Vec<String>>,
    #[serde(default)]
    predicate: bool,
}

#[derive(Serialize, Deserialize)]
struct WirePattern {
    name: String,
    pattern: String,
    #[serde(default)]
    check: bool,
}

#[derive(Serialize, Deserialize)]
struct WirePrune {
    #[serde(default = "one")]
    min_ops: usize,
    #[serde(default)]
    require_any: Vec<String>,
    #[serde(default)]
    max_partitions: Option<usize>,
}

fn one() -> usize {
    1
}

impl Default for WirePrune {
    fn default() -> Self {
        WirePrune {
            min_ops: 1,
            require_any: Vec::new(),
            max_partitions: None,
        }
    }
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

fn attr_from_json(v: &Value) -> Option<AttrValue> {
    Some(match v {
        Value::Null => AttrValue::None,
        Value::Bool(b) => AttrValue::Bool(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => AttrValue::Int(i),
            None => AttrValue::Float(n.as_f64()?),
        },
        Value::String(s) => AttrValue::Str(s.clone()),
        Value::Array(items) => {
            AttrValue::List(items.iter().map(attr_from_json).collect::<Option<_>>()?)
        }
        Value::Object(_) => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sdk::{DatatypeLowering, LoweringKey};

    #[test]
    fn wire_round_trip_keeps_rules_and_flags() {
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
            })
            .with_optimize()
            .with_simplify_inference()
            .with_fold_scale_axis();
        let text = d.to_wire();
        let back = TargetDescription::from_wire(&text, |kind, i| {
            assert_eq!((kind, i), (CheckKind::Op, 1));
            Arc::new(|_| Ok(()))
        })
        .unwrap();
        assert_eq!(back.to_wire(), text);
        assert_eq!(back.ops[1].rule, d.ops[1].rule);
        assert!(back.ops[1].predicate.is_some() && back.ops[0].predicate.is_none());
        assert!(back.optimize && back.simplify_inference && back.fold_scale_axis);
        assert_eq!(back.datatypes, d.datatypes);
    }

    #[test]
    fn unknown_fields_are_ignored_and_bad_json_is_an_error() {
        let d = TargetDescription::from_wire(r#"{"target": "x", "future": 1}"#, |_, _| {
            Arc::new(|_| Ok(()))
        })
        .unwrap();
        assert_eq!(d.target, "x");
        assert_eq!(d.prune.min_ops, 1);
        // A description from before `fold_scale_axis` existed reads with it off.
        assert!(!d.fold_scale_axis && !d.simplify_inference);
        assert!(TargetDescription::from_wire("{", |_, _| Arc::new(|_| Ok(()))).is_err());
    }
}
