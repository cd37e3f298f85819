//! A target description: what a plugin offloads and how the host should plan for it.
//!
//! [`TargetDescription`] is the one target model: op rules with optional Rust predicates, a
//! pattern table in the pattern text syntax (with optional checks on the root call of a
//! match), prune settings, the prepare passes the target asks for (by name), custom datatypes
//! with per-op lowerings, and flags for the optional hooks. A plugin builds one in code; a
//! target-spec file and a plugin's description across the ABI are its JSON form, read by one
//! reader ([`super::target_json`]). [`TargetDescription::validated`] is the one check every
//! description passes before planning uses it: op names, attribute names and values against
//! the op's schema (normalized, so a rule's `1` matches the schema's `1.0`), prepare pass
//! names, prune ops.

use byoc_ir::stages::prepare_passes;
use std::sync::Arc;

use super::datatype::CustomDatatype;
use super::target_json::DescriptionError;
use byoc_ir::op::OpRegistry;
use byoc_ir::partition::HOST_TARGET;
use byoc_ir::target::{CallView, OpPredicate, OpRule, PruneConfig, RejectReason, TargetSupport};
use byoc_ir::Attrs;

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
    /// The pattern in the pattern text syntax (`docs/patterns.md`).
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
    /// The prepare passes the target asks for, by name (names from [`prepare_passes`]):
    /// `simplify-inference` (batch norm into elementwise ops), `fold-scale-axis` (per-channel
    /// scales after conv2d / dense into constant weights, shifts into one bias).
    pub prepare: Vec<String>,
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
            prepare: Vec::new(),
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

    /// Asks prepare to run the pass called `pass` (one of [`prepare_passes`]; prepare runs
    /// them in that list's order, whatever the order of asking).
    pub fn with_prepare(mut self, pass: impl Into<String>) -> Self {
        let pass = pass.into();
        if !self.prepare.contains(&pass) {
            self.prepare.push(pass);
        }
        self
    }

    /// Whether the target asks prepare to run `pass`.
    pub fn asks_for(&self, pass: &str) -> bool {
        self.prepare.iter().any(|p| p == pass)
    }

    /// The description checked against the op registry, with every rule's attribute values
    /// normalized by the op's schema (so `with_attr("alpha", 1i64)` compares as the schema's
    /// float `1.0`): the target name (non-empty, no whitespace or `.`, not the host's
    /// `default`), op names, rule attributes, prepare pass names and prune ops. Errors name
    /// the entry (`ops[2]`, `prune.require_any[0]`). Patterns are checked where they are
    /// parsed, by the pattern table.
    pub fn validated(mut self) -> Result<Self, DescriptionError> {
        let name = &self.target;
        if name.is_empty()
            || name == HOST_TARGET
            || name.contains(|c: char| c.is_whitespace() || c == '.')
        {
            return Err(DescriptionError::BadName(name.clone()));
        }
        for (index, support) in self.ops.iter_mut().enumerate() {
            let place = || format!("ops[{index}]");
            let rule = &mut support.rule;
            let op = OpRegistry::lookup(&rule.op).ok_or_else(|| DescriptionError::UnknownOp {
                place: place(),
                op: rule.op.clone(),
            })?;
            if rule.attrs.is_empty() {
                continue;
            }
            let given = rule
                .attrs
                .iter()
                .fold(Attrs::new(), |a, (k, v)| a.with(k, v.clone()));
            let normalized = op
                .normalize_attrs(given)
                .map_err(|e| DescriptionError::Entry {
                    place: place(),
                    message: e.to_string(),
                })?;
            for (k, v) in &mut rule.attrs {
                if let Some(n) = normalized.get(k) {
                    *v = n.clone();
                }
            }
        }
        for (index, pass) in self.prepare.iter().enumerate() {
            if !prepare_passes().any(|p| p == pass) {
                return Err(DescriptionError::Entry {
                    place: format!("prepare[{index}]"),
                    message: format!(
                        "'{pass}' is not a prepare pass (known: {})",
                        prepare_passes().collect::<Vec<_>>().join(", ")
                    ),
                });
            }
        }
        for (index, op) in self.prune.require_any.iter().enumerate() {
            if OpRegistry::lookup(op).is_none() {
                return Err(DescriptionError::UnknownOp {
                    place: format!("prune.require_any[{index}]"),
                    op: op.clone(),
                });
            }
        }
        Ok(self)
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

#[cfg(test)]
mod tests {
    use super::*;
    use byoc_ir::target::Support;
    use byoc_ir::{AttrValue, DType, Type};

    #[test]
    fn a_rule_integer_matches_the_schema_float_after_validation() {
        // `nn.leaky_relu`'s `alpha` is a float in the op schema; calls carry it normalized.
        let d = TargetDescription::new("acc")
            .with_rule(OpRule::new("nn.leaky_relu").with_attr("alpha", 1i64));
        let op = OpRegistry::lookup("nn.leaky_relu").unwrap();
        let attrs = op
            .normalize_attrs(Attrs::new().with("alpha", AttrValue::Float(1.0)))
            .unwrap();
        let t = Type::tensor([2], DType::Float32);
        let call = CallView {
            op: &op,
            attrs: &attrs,
            arg_types: std::slice::from_ref(&t),
            result_type: &t,
        };
        // Unvalidated, the rule's integer 1 does not equal the call's 1.0.
        assert!(matches!(d.support().query(&call), Support::Rejected { .. }));
        let d = d.validated().unwrap();
        assert_eq!(
            d.ops[0].rule.attrs,
            [("alpha".to_string(), AttrValue::Float(1.0))]
        );
        assert_eq!(d.support().query(&call), Support::Supported);
    }

    #[test]
    fn validation_names_the_entry() {
        let err = |d: TargetDescription| d.validated().unwrap_err().to_string();
        assert_eq!(
            err(TargetDescription::new("acc").with_ops(["add", "nn.conv3x"])),
            "ops[1]: unknown op 'nn.conv3x'"
        );
        assert!(err(TargetDescription::new("acc")
            .with_rule(OpRule::new("nn.conv2d").with_attr("grups", 1i64)))
        .starts_with("ops[0]: "));
        assert_eq!(
            err(TargetDescription::new("acc").with_prepare("fold-everything")),
            "prepare[0]: 'fold-everything' is not a prepare pass (known: simplify-inference, fold-scale-axis)"
        );
        assert!(err(TargetDescription::new("default")).contains("bad target name 'default'"));
        assert_eq!(
            err(TargetDescription::new("acc").with_prune(PruneConfig {
                require_any: vec!["nn.dens".into()],
                ..PruneConfig::default()
            })),
            "prune.require_any[0]: unknown op 'nn.dens'"
        );
    }
}
