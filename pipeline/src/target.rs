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
//! Besides the contract's keys a spec may set `"prepare": ["simplify-inference",
//! "fold-scale-axis"]` (prepare then rewrites `nn.batch_norm` and friends into elementwise ops,
//! as TVM's DNNL flow does, and folds per-channel scales after conv2d / dense into the
//! constant weights; `"simplify_inference": true` and `"fold_scale_axis": true` say the same)
//! and `"prune": {"max_partitions": N}`.
//!
//! A spec file and a plugin's description are one model, [`TargetDescription`], and become a
//! [`Target`] through one path, [`Target::from_description`]: every op name, attribute (checked
//! and normalized against the op's schema), dtype, prepare pass and pattern is checked when
//! the target is made; errors name the file and the entry.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use byoc_exec::plugin::{ReferenceRuntime, Runtimes};
use byoc_ir::target::{OpPredicate, TargetSupport};
use byoc_ir::{ExprId, Function, Type};
use byoc_patterns::{Check, PatternTable, TableEntry, TableError};
use byoc_sdk::{CallView, DescriptionError, Plugin, TargetDescription};
use thiserror::Error;

pub use byoc_ir::partition::HOST_TARGET;

/// A target: what it supports, which composites it forms, and the runtime that compiles its
/// partitions.
#[derive(Clone)]
pub struct Target {
    /// Op rules, predicates and prune settings; its name is the target's name.
    pub support: TargetSupport,
    /// The composite patterns, applied before annotation (names `<target>.<name>`).
    pub patterns: PatternTable,
    /// The prepare passes the target asks for, by name.
    pub prepare: Vec<String>,
    /// The runtime compiling the target's partitions: its plugin, or the built-in reference
    /// runtime (host kernels) for a declarative target.
    pub runtime: Arc<dyn Plugin>,
}

impl fmt::Debug for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Target")
            .field("support", &self.support)
            .field("patterns", &self.patterns)
            .field("prepare", &self.prepare)
            .field("runtime", &self.runtime.name())
            .finish()
    }
}

impl Target {
    /// A target with these support rules, no patterns, no prepare passes, compiled by the
    /// reference runtime.
    pub fn new(support: TargetSupport) -> Self {
        Target {
            support,
            patterns: PatternTable::new(),
            prepare: Vec::new(),
            runtime: Arc::new(ReferenceRuntime),
        }
    }

    /// Sets the runtime that compiles the target's partitions.
    pub fn with_runtime(mut self, runtime: Arc<dyn Plugin>) -> Self {
        self.runtime = runtime;
        self
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

    /// Whether the target asks prepare to run the pass called `pass`.
    pub fn asks_for(&self, pass: &str) -> bool {
        self.prepare.iter().any(|p| p == pass)
    }

    /// The pipeline target of a description, from a plugin or a spec file alike (compiled by
    /// the reference runtime until [`Target::with_runtime`] names its plugin): the
    /// description is validated ([`TargetDescription::validated`]: names, attributes
    /// normalized against the op schemas, prepare passes, prune ops), its patterns parsed into
    /// the pattern table (checks call the description's predicate with the root call of each
    /// match).
    pub fn from_description(d: &TargetDescription) -> Result<Target, TargetSpecError> {
        let d = d.clone().validated()?;
        let patterns = pattern_table(
            &d.target,
            d.patterns.iter().map(|p| {
                (
                    p.name.as_str(),
                    p.pattern.as_str(),
                    p.check.clone().map(root_call_check),
                )
            }),
        )?;
        Ok(Target {
            support: d.support(),
            patterns,
            prepare: d.prepare,
            runtime: Arc::new(ReferenceRuntime),
        })
    }

    /// Parses a target spec from JSON text.
    pub fn from_spec_json(text: &str) -> Result<Self, TargetSpecError> {
        Target::from_description(&TargetDescription::from_spec_json(text)?)
    }

    /// Reads a target spec file; errors name the file.
    pub fn from_spec_file(path: &Path) -> Result<Self, TargetSpecFileError> {
        let file = path.display().to_string();
        let text = byoc_ir::memory::read_file_to_string(path).map_err(|e| TargetSpecFileError {
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

/// What is wrong with a target spec or a plugin's description.
#[derive(Debug, Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum TargetSpecError {
    /// The file could not be read.
    #[error("cannot read: {0}")]
    Read(String),
    /// The description's JSON or meaning (names, ops, attributes, prepare passes).
    #[error(transparent)]
    Description(#[from] DescriptionError),
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

/// The runtime of each target, by target name (what codegen looks partitions up in).
pub fn runtimes(targets: &[Target]) -> Runtimes {
    targets
        .iter()
        .fold(Runtimes::new(), |r, t| r.with(t.name(), t.runtime.clone()))
}

/// The names of the plugins compiling `targets`, without repeats.
pub fn plugin_names(targets: &[Target]) -> Vec<&str> {
    let mut names: Vec<&str> = targets.iter().map(|t| t.runtime.name()).collect();
    names.sort_unstable();
    names.dedup();
    names
}

/// A pattern table from `(name, pattern text, check)` entries; names need the `<target>.`
/// prefix.
fn pattern_table<'a>(
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

/// A pattern check that hands the typed root call of a match to a description's predicate.
fn root_call_check(predicate: OpPredicate) -> Check {
    Arc::new(move |f: &Function, root: ExprId| {
        let Some((op, call)) = f.expr(root).as_op_call() else {
            return Err("the match's root is not an op call".to_string());
        };
        let arg_types: Option<Vec<Type>> = call.args.iter().map(|&a| f.ty(a).cloned()).collect();
        let (Some(arg_types), Some(result_type)) = (arg_types, f.ty(root)) else {
            return Err(format!("{} is not typed", op.name()));
        };
        predicate(&CallView {
            op,
            attrs: &call.attrs,
            arg_types: &arg_types,
            result_type,
        })
        .map_err(|reason| reason.0)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use byoc_ir::target::OpRule;
    use byoc_ir::AttrValue;
    use byoc_ir::DType;

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
        assert!(t.prepare.is_empty());
        let t = Target::from_spec_json(
            r#"{"target": "acc", "simplify_inference": true, "fold_scale_axis": true}"#,
        )
        .unwrap();
        assert!(t.asks_for("simplify-inference") && t.asks_for("fold-scale-axis"));
        let t =
            Target::from_spec_json(r#"{"target": "acc", "prepare": ["fold-scale-axis"]}"#).unwrap();
        assert_eq!(t.prepare, ["fold-scale-axis"]);
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
    fn a_plugin_rule_is_normalized_like_a_spec_rule() {
        // `alpha` is a float in nn.leaky_relu's schema: a plugin's integer 1 and a spec's 1
        // both become 1.0, the value calls carry.
        let plugin = TargetDescription::new("acc")
            .with_rule(OpRule::new("nn.leaky_relu").with_attr("alpha", 1i64));
        let from_plugin = Target::from_description(&plugin).unwrap();
        let from_spec = Target::from_spec_json(
            r#"{"target": "acc", "ops": [{"op": "nn.leaky_relu", "attrs": {"alpha": 1}}]}"#,
        )
        .unwrap();
        let want = [("alpha".to_string(), AttrValue::Float(1.0))];
        assert_eq!(from_plugin.support.rules()[0].attrs, want);
        assert_eq!(from_spec.support.rules()[0].attrs, want);
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
