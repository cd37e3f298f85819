//! AnnotateTarget: marks which target runs each call (TVM Relay's `AnnotateTarget`).
//!
//! Needs: a verified module (types are inferred here unless every expression has one).
//! Holds after: every op call, and with `include_non_call_ops` every tuple and tuple-get-item, of every non-external function
//! sits between `annotation.compiler_begin` on each argument and `annotation.compiler_end` on
//! each use, both carrying its target: the first target in priority order whose support
//! accepts the call; for a call of a composite function literal, the target named by the
//! composite's prefix (`dnnl.conv2d_relu` → `dnnl`) when that target is selected; otherwise
//! `default`. Each use gets its own begin and end, as in TVM. Tuples and get-items take the
//! common target of their arguments (`default` if they differ). Without
//! `include_non_call_ops`, tuples and get-items stay unannotated and are fed through ends only.
//! Composite bodies are left untouched. Regions already in the module (hand-written
//! annotations, or an earlier run) are checked first (see [`byoc_ir::analysis::regions`]; a
//! malformed one is an error naming the node) and their members, in per-op or merged form, are
//! kept as they are, so re-running is idempotent; `default` annotations delimit nothing here
//! and the ops under them are annotated again (TVM's one run per target).
//!
//! Every op call left to `default` is reported with each target's reason for declining it.
//! Cost: linear in the module size times the number of targets.

use crate::{PartitionError, Pass, PassContext, PassError};
use byoc_ir::analysis::regions::{
    annotation, composite_call, literal_members, AnnotationKind, RegionSet, COMPILER_BEGIN,
    COMPILER_END,
};
use byoc_ir::infer_missing_types;
use byoc_ir::op::{Op, OpRegistry};
use byoc_ir::partition::{skipped_by_passes, HOST_TARGET};
use byoc_ir::target::{CallView, Support, TargetSupport};
use byoc_ir::{rewrite::Rebuild, Attrs, Call, Callee, Expr, ExprId, Function, IrError, Module};

/// One op call left on the host, and why one target declined it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejection {
    /// The global function holding the call.
    pub function: String,
    /// The op.
    pub op: String,
    /// The target that declined it.
    pub target: String,
    /// The rule's reason.
    pub reason: String,
    /// The call in the input module.
    pub at: ExprId,
}

/// What AnnotateTarget decided besides the annotations.
#[derive(Default)]
struct AnnotateReport {
    /// For every op call left to `default`, one entry per target, in function, call and
    /// target priority order.
    rejected: Vec<Rejection>,
}

/// The AnnotateTarget pass.
#[derive(Clone, Debug)]
pub struct AnnotateTarget<'t> {
    targets: &'t [TargetSupport],
    include_non_call_ops: bool,
}

impl<'t> AnnotateTarget<'t> {
    /// Annotates for `targets`, in priority order, with `include_non_call_ops` on (TVM's
    /// default).
    pub fn new(targets: &'t [TargetSupport]) -> Self {
        AnnotateTarget {
            targets,
            include_non_call_ops: true,
        }
    }

    /// Whether tuples and tuple-get-items are annotated too (off for flows without
    /// MergeCompilerRegions, as TVM's ACL and cutlass flows do).
    pub fn include_non_call_ops(mut self, on: bool) -> Self {
        self.include_non_call_ops = on;
        self
    }

    /// Annotates `module` in place, reporting what it left on the host.
    fn annotate(&self, module: &mut Module) -> Result<AnnotateReport, PartitionError> {
        infer_missing_types(module)?;
        let mut report = AnnotateReport::default();
        for name in module.names() {
            let Some(f) = module.get(&name).filter(|f| !skipped_by_passes(f)) else {
                continue;
            };
            let annotated = self.annotate_function(&name, f, &mut report)?;
            module.insert(name, annotated);
        }
        Ok(report)
    }

    fn annotate_function(
        &self,
        name: &str,
        f: &Function,
        report: &mut AnnotateReport,
    ) -> Result<Function, PartitionError> {
        let has_regions = f
            .ids()
            .any(|id| annotation(f.expr(id)).is_some_and(|a| a.target != HOST_TARGET));
        let manual = match has_regions {
            true => Some(RegionSet::build(f, name, true)?),
            false => None,
        };
        let mut a = Annotator {
            pass: self,
            rb: Rebuild::new(f),
            recorded: vec![None; f.len()],
            in_literal: literal_members(f),
            manual,
            begin: annotation_op(COMPILER_BEGIN)?,
            end: annotation_op(COMPILER_END)?,
        };
        for old in f.live_ids() {
            a.visit(name, old, report)?;
        }
        let body = a.insert_end(f.body)?;
        let params = f
            .params
            .iter()
            .map(|&p| a.rb.get(p))
            .collect::<Result<Vec<_>, _>>()?;
        let builder = std::mem::take(&mut a.rb.builder);
        Ok(builder.finish(params, body, f.attrs.clone())?)
    }

    /// The target index of a call: into `targets`, or `targets.len()` for default.
    fn choose(
        &self,
        function: &str,
        f: &Function,
        id: ExprId,
        report: &mut AnnotateReport,
    ) -> usize {
        let default = self.targets.len();
        if let Some((_, composite)) = composite_call(f, id) {
            let prefix = composite.split('.').next().unwrap_or(composite);
            return self
                .targets
                .iter()
                .position(|t| t.name() == prefix)
                .unwrap_or(default);
        }
        let Some((op, call)) = f.expr(id).as_op_call() else {
            return default;
        };
        let arg_types: Vec<_> = call
            .args
            .iter()
            .map(|&a| f.ty(a).cloned().expect("types were inferred"))
            .collect();
        let result_type = f.ty(id).expect("types were inferred");
        let view = CallView {
            op,
            attrs: &call.attrs,
            arg_types: &arg_types,
            result_type,
        };
        let mut rejections = Vec::new();
        for (i, t) in self.targets.iter().enumerate() {
            match t.query(&view) {
                Support::Supported => return i,
                Support::Rejected { reason } => rejections.push(Rejection {
                    function: function.to_string(),
                    op: op.name().to_string(),
                    target: t.name().to_string(),
                    reason,
                    at: id,
                }),
            }
        }
        report.rejected.extend(rejections);
        default
    }

    fn target_name(&self, t: usize) -> &str {
        self.targets.get(t).map_or(HOST_TARGET, |t| t.name())
    }
}

impl Pass for AnnotateTarget<'_> {
    fn name(&self) -> &'static str {
        "annotate-target"
    }

    /// Annotates `module`; the rejections go to [`PassContext::rejected`].
    fn run(&self, module: &mut Module, cx: &mut PassContext) -> Result<(), PassError> {
        cx.rejected.extend(self.annotate(module)?.rejected);
        Ok(())
    }
}

fn annotation_op(name: &str) -> Result<Op, IrError> {
    OpRegistry::lookup(name).ok_or_else(|| IrError::UnknownOp(name.to_string()))
}

struct Annotator<'p, 't, 'f> {
    pass: &'p AnnotateTarget<'t>,
    rb: Rebuild<'f>,
    /// Target index of each annotated source node.
    recorded: Vec<Option<usize>>,
    in_literal: Vec<bool>,
    /// The regions already in the function, if it has any.
    manual: Option<RegionSet>,
    begin: Op,
    end: Op,
}

impl Annotator<'_, '_, '_> {
    fn src(&self) -> &Function {
        self.rb.src
    }

    fn visit(
        &mut self,
        function: &str,
        old: ExprId,
        report: &mut AnnotateReport,
    ) -> Result<(), PartitionError> {
        let src = self.rb.src;
        let expr = src.expr(old);
        if self.in_literal[old.index()] {
            self.rb.copy(old)?;
            return Ok(());
        }
        match annotation(expr) {
            // A hand-written begin over a call this run annotated (a bare host op feeding a
            // manual region) closes that call's region with an end first.
            Some(a) if a.kind == AnnotationKind::Begin => {
                return self.feed_through_ends(old, &[a.arg]);
            }
            Some(_) => {
                self.rb.copy(old)?;
                return Ok(());
            }
            None => {}
        }
        if self
            .manual
            .as_ref()
            .is_some_and(|r| r.region_of(old).is_some())
        {
            // A member of a region already in the module (per-op or merged form) stays.
            self.rb.copy(old)?;
            return Ok(());
        }
        let non_call = self.pass.include_non_call_ops;
        match expr {
            Expr::Call(call) => {
                let plain_local =
                    matches!(call.callee, Callee::Local(_)) && composite_call(src, old).is_none();
                if plain_local && !non_call {
                    return self.feed_through_ends(old, &call.args);
                }
                let t = self.pass.choose(function, src, old, report);
                let (args, _) = self.annotate_args(&call.args, Some(t))?;
                let callee = match &call.callee {
                    Callee::Local(lit) => Callee::Local(self.rb.get(*lit)?),
                    other => other.clone(),
                };
                let new = self.rb.builder.push(Expr::Call(Call {
                    callee,
                    args,
                    attrs: call.attrs.clone(),
                }))?;
                self.finish_node(old, new, Some(t));
            }
            Expr::Tuple(fields) if non_call && !fields.is_empty() => {
                let (fields, t) = self.annotate_args(fields, None)?;
                let new = self.rb.builder.tuple(&fields)?;
                self.finish_node(old, new, Some(t));
            }
            Expr::TupleGetItem { tuple, index } if non_call => {
                let (args, t) = self.annotate_args(&[*tuple], None)?;
                let new = self.rb.builder.tuple_get_item(args[0], *index)?;
                self.finish_node(old, new, Some(t));
            }
            Expr::Tuple(fields) => self.feed_through_ends(old, fields)?,
            Expr::TupleGetItem { tuple, .. } => self.feed_through_ends(old, &[*tuple])?,
            Expr::Var(_) | Expr::Constant(_) | Expr::Function(_) => {
                self.rb.copy(old)?;
            }
        }
        Ok(())
    }

    /// Copies an unannotated node, closing each annotated argument with its own end.
    fn feed_through_ends(&mut self, old: ExprId, args: &[ExprId]) -> Result<(), PartitionError> {
        let mut ended = Vec::with_capacity(args.len());
        for &a in args {
            let v = self.rb.get(a)?;
            ended.push(match self.recorded[a.index()] {
                Some(t) if has_args(self.src().expr(a)) => self.annotate(false, v, t)?,
                _ => v,
            });
        }
        let new_expr = match self.src().expr(old) {
            Expr::Tuple(_) => Expr::Tuple(ended),
            Expr::TupleGetItem { index, .. } => Expr::TupleGetItem {
                tuple: ended[0],
                index: *index,
            },
            _ => match self.rb.mapped_expr(old)? {
                Expr::Call(call) => Expr::Call(Call {
                    args: ended,
                    ..call
                }),
                other => other,
            },
        };
        let new = self.rb.builder.push(new_expr)?;
        self.finish_node(old, new, None);
        Ok(())
    }

    fn finish_node(&mut self, old: ExprId, new: ExprId, target: Option<usize>) {
        if let Some(ty) = self.src().ty_shared(old) {
            self.rb.builder.set_ty_shared(new, ty.clone());
        }
        self.rb.set(old, new);
        self.recorded[old.index()] = target;
    }

    /// `compiler_begin` (`begin`) or `compiler_end` of target `t` around the new node `v`.
    fn annotate(&mut self, begin: bool, v: ExprId, t: usize) -> Result<ExprId, PartitionError> {
        let op = if begin { &self.begin } else { &self.end };
        let attrs = Attrs::new().with("compiler", self.pass.target_name(t));
        let new = self.rb.builder.call_op(op, &[v], attrs)?;
        if let Some(ty) = self.rb.builder.ty_shared(v).cloned() {
            self.rb.builder.set_ty_shared(new, ty);
        }
        Ok(new)
    }

    /// The annotated arguments of a node and its target: `op_target`, or the common target of
    /// the arguments (`default` if they differ).
    fn annotate_args(
        &mut self,
        args: &[ExprId],
        op_target: Option<usize>,
    ) -> Result<(Vec<ExprId>, usize), PartitionError> {
        let default = self.pass.targets.len();
        // (value, needs a begin, target of the value)
        let mut prepared = Vec::with_capacity(args.len());
        for &a in args {
            let src = self.rb.src;
            let prev = annotation(src.expr(a)).filter(|x| x.kind == AnnotationKind::Begin);
            let entry = match prev {
                Some(b) if b.target != HOST_TARGET => (self.rb.get(a)?, false, default),
                Some(b) => {
                    let t = annotation(src.expr(b.arg))
                        .filter(|x| x.kind == AnnotationKind::End)
                        .and_then(|x| self.pass.targets.iter().position(|t| t.name() == x.target))
                        .unwrap_or(default);
                    (self.rb.get(b.arg)?, true, t)
                }
                None => match self.recorded[a.index()] {
                    Some(t) if has_args(src.expr(a)) => {
                        let v = self.rb.get(a)?;
                        (self.annotate(false, v, t)?, true, t)
                    }
                    Some(t) => (self.rb.get(a)?, true, t),
                    None => (self.rb.get(a)?, true, default),
                },
            };
            prepared.push(entry);
        }
        let common = prepared.first().map_or(default, |p| p.2);
        let ref_target = if prepared.iter().all(|p| p.2 == common) {
            common
        } else {
            default
        };
        let t = op_target.unwrap_or(ref_target);
        let mut out = Vec::with_capacity(prepared.len());
        for (v, wrap, _) in prepared {
            out.push(if wrap { self.annotate(true, v, t)? } else { v });
        }
        Ok((out, t))
    }

    /// The body with an end when it is an annotated value.
    fn insert_end(&mut self, body: ExprId) -> Result<ExprId, PartitionError> {
        let v = self.rb.get(body)?;
        match self.recorded[body.index()] {
            Some(t) if has_args(self.src().expr(body)) => self.annotate(false, v, t),
            _ => Ok(v),
        }
    }
}

/// True unless the node is a call without arguments or an empty tuple (which TVM leaves
/// without an end).
fn has_args(expr: &Expr) -> bool {
    match expr {
        Expr::Call(c) => !c.args.is_empty(),
        Expr::Tuple(fields) => !fields.is_empty(),
        _ => true,
    }
}
