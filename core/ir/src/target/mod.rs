//! What a BYOC target offloads: its name, its op support rules and its pruning settings.
//!
//! A [`TargetSupport`] answers, for one typed op call, [`Support::Supported`] or
//! [`Support::Rejected`] with the reason. A call is supported when the target lists its op
//! ([`OpRule`]: optionally restricted to attribute values and argument/result dtypes; several
//! rules for one op are alternatives) and every [`OpPredicate`] registered for that op (or for
//! all ops) accepts it. Predicates are arbitrary Rust code over a [`CallView`], e.g. "conv2d
//! only when channels <= 3"; they return a [`RejectReason`] that ends up in the annotation
//! report. Rules and predicates are checked in the order they were added, so reasons are
//! deterministic.

mod call;

use std::fmt;
use std::sync::Arc;

use crate::{AttrValue, DType};

pub use call::CallView;

/// Why a target declined a call (shown to users, e.g. `groups=32 not supported`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RejectReason(pub String);

impl fmt::Display for RejectReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<String> for RejectReason {
    fn from(s: String) -> Self {
        RejectReason(s)
    }
}

impl From<&str> for RejectReason {
    fn from(s: &str) -> Self {
        RejectReason(s.to_string())
    }
}

/// A support predicate: `Ok(())` accepts the call, `Err(reason)` declines it.
pub type OpPredicate = Arc<dyn Fn(&CallView<'_>) -> Result<(), RejectReason> + Send + Sync>;

/// The answer of a support query.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Support {
    /// The target can run the call.
    Supported,
    /// The target declines the call.
    Rejected {
        /// Which rule said no and why.
        reason: String,
    },
}

/// One entry of a target's op list.
#[derive(Clone, Debug, PartialEq)]
pub struct OpRule {
    /// The op name (`nn.conv2d`).
    pub op: String,
    /// Attributes that must equal these values (schema defaults count).
    pub attrs: Vec<(String, AttrValue)>,
    /// Allowed dtypes of every tensor argument and result; `None` allows all.
    pub dtypes: Option<Vec<DType>>,
}

impl OpRule {
    /// A rule accepting every call of `op`.
    pub fn new(op: impl Into<String>) -> Self {
        OpRule {
            op: op.into(),
            attrs: Vec::new(),
            dtypes: None,
        }
    }

    /// Requires attribute `name` to equal `value`.
    pub fn with_attr(mut self, name: &str, value: impl Into<AttrValue>) -> Self {
        self.attrs.push((name.to_string(), value.into()));
        self
    }

    /// Restricts the tensor dtypes of arguments and result.
    pub fn with_dtypes(mut self, dtypes: impl IntoIterator<Item = DType>) -> Self {
        self.dtypes = Some(dtypes.into_iter().collect());
        self
    }

    fn check(&self, call: &CallView<'_>) -> Result<(), String> {
        for (name, want) in &self.attrs {
            match call.attrs.get(name) {
                Some(got) if got == want => {}
                Some(got) => return Err(format!("{name}={got} not supported (needs {want})")),
                None => return Err(format!("attribute '{name}' missing (needs {want})")),
            }
        }
        if let Some(allowed) = &self.dtypes {
            let args = call.arg_types.iter().enumerate().map(|(i, t)| (Some(i), t));
            for (pos, ty) in args.chain([(None, call.result_type)]) {
                for t in ty.flatten_tensors() {
                    if !allowed.contains(&t.dtype) {
                        let what = match pos {
                            Some(i) => format!("argument {i}"),
                            None => "result".to_string(),
                        };
                        let list: Vec<String> = allowed.iter().map(|d| d.to_string()).collect();
                        return Err(format!(
                            "{what} has dtype {} (supported: {})",
                            t.dtype,
                            list.join(", ")
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

/// Pruning settings of a target: which partitions are worth offloading (see the prune pass).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PruneConfig {
    /// Partitions with fewer primitive ops (composite bodies counted) are inlined back.
    pub min_ops: usize,
    /// When non-empty, a partition must contain at least one of these ops.
    pub require_any: Vec<String>,
    /// Keep at most this many partitions of the target, the largest ones.
    pub max_partitions: Option<usize>,
}

impl Default for PruneConfig {
    fn default() -> Self {
        PruneConfig {
            min_ops: 1,
            require_any: Vec::new(),
            max_partitions: None,
        }
    }
}

struct ScopedPredicate {
    /// The op it applies to; `None` for every op.
    op: Option<String>,
    check: OpPredicate,
}

/// A target's name, op support rules and pruning settings.
#[derive(Clone)]
pub struct TargetSupport {
    name: String,
    rules: Vec<OpRule>,
    predicates: Vec<Arc<ScopedPredicate>>,
    /// Pruning settings.
    pub prune: PruneConfig,
}

impl fmt::Debug for TargetSupport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TargetSupport")
            .field("name", &self.name)
            .field("rules", &self.rules)
            .field("predicates", &self.predicates.len())
            .field("prune", &self.prune)
            .finish()
    }
}

impl TargetSupport {
    /// A target supporting nothing yet.
    pub fn new(name: impl Into<String>) -> Self {
        TargetSupport {
            name: name.into(),
            rules: Vec::new(),
            predicates: Vec::new(),
            prune: PruneConfig::default(),
        }
    }

    /// The target name (the `Compiler` attribute of its partitions).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The op rules in order.
    pub fn rules(&self) -> &[OpRule] {
        &self.rules
    }

    /// Supports every call of each of these ops.
    pub fn with_ops<S: Into<String>>(mut self, ops: impl IntoIterator<Item = S>) -> Self {
        self.rules.extend(ops.into_iter().map(OpRule::new));
        self
    }

    /// Adds an op rule (rules for the same op are alternatives).
    pub fn with_rule(mut self, rule: OpRule) -> Self {
        self.rules.push(rule);
        self
    }

    /// Adds a predicate for calls of `op` (`None`: for every op call).
    pub fn with_predicate(
        mut self,
        op: Option<&str>,
        check: impl Fn(&CallView<'_>) -> Result<(), RejectReason> + Send + Sync + 'static,
    ) -> Self {
        self.predicates.push(Arc::new(ScopedPredicate {
            op: op.map(str::to_string),
            check: Arc::new(check),
        }));
        self
    }

    /// Sets the pruning settings.
    pub fn with_prune(mut self, prune: PruneConfig) -> Self {
        self.prune = prune;
        self
    }

    /// True when some rule names `op` (the call may still be rejected by attrs, dtypes or
    /// predicates).
    pub fn lists_op(&self, op: &str) -> bool {
        self.rules.iter().any(|r| r.op == op)
    }

    /// Whether the target runs this call, and if not, why.
    pub fn query(&self, call: &CallView<'_>) -> Support {
        let name = call.op.name();
        let mut rule_reasons = Vec::new();
        let mut listed = false;
        let mut accepted = false;
        for rule in self.rules.iter().filter(|r| r.op == name) {
            listed = true;
            match rule.check(call) {
                Ok(()) => {
                    accepted = true;
                    break;
                }
                Err(reason) => rule_reasons.push(reason),
            }
        }
        if !listed {
            return Support::Rejected {
                reason: format!("{name} is not in the op list of target {}", self.name),
            };
        }
        if !accepted {
            return Support::Rejected {
                reason: rule_reasons.join("; "),
            };
        }
        for p in &self.predicates {
            if p.op.as_deref().is_some_and(|op| op != name) {
                continue;
            }
            if let Err(reason) = (p.check)(call) {
                return Support::Rejected { reason: reason.0 };
            }
        }
        Support::Supported
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::op::{Op, OpRegistry};
    use crate::{Attrs, Type};

    fn view<'a>(op: &'a Op, attrs: &'a Attrs, args: &'a [Type], ret: &'a Type) -> CallView<'a> {
        CallView {
            op,
            attrs,
            arg_types: args,
            result_type: ret,
        }
    }

    #[test]
    fn rules_dtypes_and_predicates_give_reasons() {
        let add = OpRegistry::lookup("add").unwrap();
        let relu = OpRegistry::lookup("nn.relu").unwrap();
        let t = TargetSupport::new("acc")
            .with_rule(OpRule::new("add").with_dtypes([DType::Float32]))
            .with_ops(["nn.relu"])
            .with_predicate(Some("nn.relu"), |c| match c.result_type.as_tensor() {
                Some(t) if t.rank() <= 2 => Ok(()),
                _ => Err("rank above 2".into()),
            });
        let attrs = Attrs::new();
        let f32t = Type::tensor([2, 2], DType::Float32);
        let i8t = Type::tensor([2, 2], DType::Int8);
        let args = [f32t.clone(), f32t.clone()];
        assert_eq!(
            t.query(&view(&add, &attrs, &args, &f32t)),
            Support::Supported
        );
        let args8 = [i8t.clone(), i8t.clone()];
        assert_eq!(
            t.query(&view(&add, &attrs, &args8, &i8t)),
            Support::Rejected {
                reason: "argument 0 has dtype int8 (supported: float32)".into()
            }
        );
        let r4 = Type::tensor([1, 2, 2, 2], DType::Float32);
        assert_eq!(
            t.query(&view(&relu, &attrs, std::slice::from_ref(&r4), &r4)),
            Support::Rejected {
                reason: "rank above 2".into()
            }
        );
        let other = TargetSupport::new("b").with_rule(OpRule::new("add").with_attr("x", 1i64));
        assert_eq!(
            other.query(&view(&relu, &attrs, std::slice::from_ref(&f32t), &f32t)),
            Support::Rejected {
                reason: "nn.relu is not in the op list of target b".into()
            }
        );
        assert_eq!(
            other.query(&view(&add, &attrs, &args, &f32t)),
            Support::Rejected {
                reason: "attribute 'x' missing (needs 1)".into()
            }
        );
    }
}
