//! The BYOC partitioning passes: AnnotateTarget, MergeCompilerRegions, PartitionGraph and
//! Prune, on modules built with the builder API. Cases follow TVM v0.16's
//! `test_pass_annotate_target.py`, `test_pass_merge_compiler_regions.py` and
//! `test_pass_partition_graph.py` (dataflow parts), plus cases where TVM creates cycles.

use std::collections::BTreeMap;

use byoc_exec::plugin::{compile_externals, Runtimes};
use byoc_exec::{ExecOptions, Executor};
use byoc_ir::analysis::regions::{annotation, COMPILER_BEGIN, COMPILER_END};
use byoc_ir::infer_types;
use byoc_ir::target::{CallView, PruneConfig, Support, TargetSupport};
use byoc_ir::{structural_eq_module, Attrs, Callee, Expr, ExprId, FunctionBuilder, Module};
use byoc_ir::{DType, Tensor, Type};
use byoc_passes::annotate_target::{AnnotateTarget, Rejection};
use byoc_passes::merge_compiler_regions::MergeCompilerRegions;
use byoc_passes::partition_graph::PartitionGraph;
use byoc_passes::prune::{op_names, Prune, PruneReason};
use byoc_passes::{run_pass, PartitionError, Pass, PassContext, PassError};
use byoc_sdk::CompileOptions;
use proptest::prelude::*;

/// A pass run alone ([`run_pass`]) on the typed module, as the pipeline hands it over: with
/// what it reported, or just the module.
trait RunAlone {
    fn alone(&self, m: &Module) -> Result<(Module, PassContext), PassError>;
    fn applied(&self, m: &Module) -> Result<Module, PassError> {
        self.alone(m).map(|(m, _)| m)
    }
}

impl<P: Pass> RunAlone for P {
    fn alone(&self, m: &Module) -> Result<(Module, PassContext), PassError> {
        let mut typed = m.clone();
        infer_types(&mut typed)?;
        run_pass(self, &typed)
    }
}

fn t22() -> Type {
    Type::tensor([2, 2], DType::Float32)
}

fn op(b: &mut FunctionBuilder, name: &str, args: &[ExprId]) -> ExprId {
    b.call(name, args, Attrs::new()).unwrap()
}

fn begin(b: &mut FunctionBuilder, x: ExprId, t: &str) -> ExprId {
    b.call(COMPILER_BEGIN, &[x], Attrs::new().with("compiler", t))
        .unwrap()
}

fn end(b: &mut FunctionBuilder, x: ExprId, t: &str) -> ExprId {
    b.call(COMPILER_END, &[x], Attrs::new().with("compiler", t))
        .unwrap()
}

fn main_of(b: FunctionBuilder, params: Vec<ExprId>, body: ExprId) -> Module {
    Module::from_main(b.finish(params, body, Attrs::new()).unwrap())
}

fn assert_same(got: &Module, want: &Module) {
    if let Err(m) = structural_eq_module(got, want) {
        panic!("{m}\ngot: {got:#?}");
    }
}

/// The op calls of every function with `Compiler` = target, by function name.
fn partitions(m: &Module) -> BTreeMap<String, (String, Vec<String>)> {
    m.functions()
        .filter_map(|(name, f)| {
            let t = f.attrs.get_str("Compiler")?;
            let mut ops: Vec<String> = op_names(f).into_iter().map(str::to_string).collect();
            ops.sort();
            Some((name.to_string(), (t.to_string(), ops)))
        })
        .collect()
}

/// Runs a partitioned module with the reference runtimes of its external functions.
fn run_partitioned(m: &Module, inputs: &[Tensor]) -> Vec<Tensor> {
    let externals =
        compile_externals(m, &Runtimes::reference_for(m), &CompileOptions::new()).unwrap();
    Executor::with_externals(
        m,
        ExecOptions {
            threads: 1,
            profile: false,
            memory_budget: None,
        },
        &externals,
    )
    .unwrap()
    .run(inputs)
    .unwrap()
}

fn relu_only() -> TargetSupport {
    TargetSupport::new("test").with_ops(["nn.relu"])
}

// x -> relu -> add(relu, y): relu on `test`, add on the host.
fn relu_add() -> Module {
    let mut b = FunctionBuilder::new();
    let x = b.param("x", t22());
    let y = b.param("y", t22());
    let r = op(&mut b, "nn.relu", &[x]);
    let s = op(&mut b, "add", &[r, y]);
    main_of(b, vec![x, y], s)
}

#[test]
fn annotate_wraps_each_call_and_reports_rejections() {
    let targets = [relu_only()];
    let (got, report) = AnnotateTarget::new(&targets).alone(&relu_add()).unwrap();
    let mut b = FunctionBuilder::new();
    let x = b.param("x", t22());
    let y = b.param("y", t22());
    let bx = begin(&mut b, x, "test");
    let r = op(&mut b, "nn.relu", &[bx]);
    let er = end(&mut b, r, "test");
    let br = begin(&mut b, er, "default");
    let by = begin(&mut b, y, "default");
    let s = op(&mut b, "add", &[br, by]);
    let es = end(&mut b, s, "default");
    assert_same(&got, &main_of(b, vec![x, y], es));
    assert_eq!(
        report.rejected,
        vec![Rejection {
            function: "main".into(),
            op: "add".into(),
            target: "test".into(),
            reason: "add is not in the op list of target test".into(),
            at: ExprId::from_index(3),
        }]
    );
}

#[test]
fn annotate_uses_priority_order_and_predicates() {
    let picky = TargetSupport::new("a")
        .with_ops(["nn.relu", "add"])
        .with_predicate(Some("add"), |c: &CallView<'_>| {
            if c.arg_types[0] == c.arg_types[1] {
                Err("same-shape add is left to b".into())
            } else {
                Ok(())
            }
        });
    let other = TargetSupport::new("b").with_ops(["add"]);
    let targets = [picky, other];
    let (got, report) = AnnotateTarget::new(&targets).alone(&relu_add()).unwrap();
    let main = got.main().unwrap();
    let mut chosen: Vec<(String, String)> = main
        .live_ids()
        .into_iter()
        .filter_map(|id| {
            let (o, call) = main.expr(id).as_op_call()?;
            if o.name().starts_with("annotation.") {
                return None;
            }
            let t = annotation(main.expr(call.args[0])).unwrap().target;
            Some((o.name().to_string(), t.to_string()))
        })
        .collect();
    chosen.sort();
    assert_eq!(
        chosen,
        vec![("add".into(), "b".into()), ("nn.relu".into(), "a".into())]
    );
    // add is offloaded (to b), so nothing is reported.
    assert!(report.rejected.is_empty());
}

#[test]
fn annotate_without_non_call_ops_leaves_tuples_bare() {
    let mut b = FunctionBuilder::new();
    let x = b.param("x", t22());
    let r = op(&mut b, "nn.relu", &[x]);
    let t = b.tuple(&[r, x]).unwrap();
    let g = b.tuple_get_item(t, 0).unwrap();
    let m = main_of(b, vec![x], g);
    let targets = [relu_only()];
    let (got, _) = AnnotateTarget::new(&targets)
        .include_non_call_ops(false)
        .alone(&m)
        .unwrap();
    let mut b = FunctionBuilder::new();
    let x = b.param("x", t22());
    let bx = begin(&mut b, x, "test");
    let r = op(&mut b, "nn.relu", &[bx]);
    let er = end(&mut b, r, "test");
    let t = b.tuple(&[er, x]).unwrap();
    let g = b.tuple_get_item(t, 0).unwrap();
    assert_same(&got, &main_of(b, vec![x], g));

    // With non-call ops, the tuple and the get-item are default regions.
    let (got, _) = AnnotateTarget::new(&targets).alone(&m).unwrap();
    let mut b = FunctionBuilder::new();
    let x = b.param("x", t22());
    let bx = begin(&mut b, x, "test");
    let r = op(&mut b, "nn.relu", &[bx]);
    let er = end(&mut b, r, "test");
    let b1 = begin(&mut b, er, "default");
    let b2 = begin(&mut b, x, "default");
    let t = b.tuple(&[b1, b2]).unwrap();
    let et = end(&mut b, t, "default");
    let bt = begin(&mut b, et, "default");
    let g = b.tuple_get_item(bt, 0).unwrap();
    let eg = end(&mut b, g, "default");
    assert_same(&got, &main_of(b, vec![x], eg));
}

#[test]
fn annotate_is_idempotent() {
    let targets = [relu_only()];
    let pass = AnnotateTarget::new(&targets);
    let (once, _) = pass.alone(&relu_add()).unwrap();
    let (twice, _) = pass.alone(&once).unwrap();
    // Re-running keeps offloaded calls; default ones are re-annotated the same way.
    let count = |m: &Module| {
        let f = m.main().unwrap();
        f.live_ids()
            .into_iter()
            .filter(|&id| annotation(f.expr(id)).is_some())
            .count()
    };
    assert_eq!(count(&once), count(&twice));
}

/// A composite literal `fn (%a, %b, Composite="test.add_relu") { relu(add(a, b)) }` called on
/// `x, y`, then `relu`.
fn composite_module(prefix: &str) -> Module {
    let mut b = FunctionBuilder::new();
    let x = b.param("x", t22());
    let y = b.param("y", t22());
    let pa = b.param("a", t22());
    let pb = b.param("b", t22());
    let s = op(&mut b, "add", &[pa, pb]);
    let r = op(&mut b, "nn.relu", &[s]);
    let lit = b
        .function(
            &[pa, pb],
            r,
            Attrs::new().with("Composite", format!("{prefix}.add_relu")),
        )
        .unwrap();
    let c = b.call_local(lit, &[x, y]).unwrap();
    let out = op(&mut b, "nn.relu", &[c]);
    main_of(b, vec![x, y], out)
}

#[test]
fn composites_go_to_their_prefix_target_and_stay_in_the_partition() {
    let targets = [relu_only()];
    let (ann, _) = AnnotateTarget::new(&targets)
        .alone(&composite_module("test"))
        .unwrap();
    let merged = MergeCompilerRegions::new().applied(&ann).unwrap();
    let parts = PartitionGraph::new().applied(&merged).unwrap();
    parts.verify().unwrap();
    // One partition holding the composite (add, relu inside) and the relu after it.
    let mut want = BTreeMap::new();
    want.insert(
        "test_0".to_string(),
        (
            "test".to_string(),
            vec!["add".to_string(), "nn.relu".into(), "nn.relu".into()],
        ),
    );
    assert_eq!(partitions(&parts), want);
    let main = parts.main().unwrap();
    assert!(op_names(main).is_empty(), "host keeps no op");

    // A composite of an unselected target stays on the host.
    let (ann, report) = AnnotateTarget::new(&targets)
        .alone(&composite_module("other"))
        .unwrap();
    assert!(report.rejected.is_empty());
    let parts = PartitionGraph::new()
        .applied(&MergeCompilerRegions::new().applied(&ann).unwrap())
        .unwrap();
    let want_ops = vec!["nn.relu".to_string()];
    assert_eq!(partitions(&parts)["test_0"].1, want_ops);
    assert_eq!(op_names(parts.main().unwrap()), vec!["add", "nn.relu"]);
}

fn pipeline(m: &Module, targets: &[TargetSupport], merge: bool) -> Module {
    let (ann, _) = AnnotateTarget::new(targets).alone(m).unwrap();
    let ann = if merge {
        MergeCompilerRegions::new().applied(&ann).unwrap()
    } else {
        ann
    };
    let out = PartitionGraph::new().applied(&ann).unwrap();
    out.verify().unwrap();
    out
}

/// TVM's restriction case (RFC example shape): `a1 -> host -> a2 -> a3` with a direct edge
/// `a1 -> a3`. a2 and a3 merge; a1 cannot join them without a cycle through the host op.
#[test]
fn merge_never_merges_around_another_target() {
    let mut b = FunctionBuilder::new();
    let x = b.param("x", t22());
    let v = b.param("v", Type::tensor([2], DType::Float32));
    let a1 = op(&mut b, "nn.relu", &[x]);
    let d = op(&mut b, "add", &[a1, v]);
    let a2 = op(&mut b, "nn.relu", &[d]);
    let a3 = op(&mut b, "add", &[a1, a2]);
    let m = main_of(b, vec![x, v], a3);
    let no_broadcast = TargetSupport::new("test")
        .with_ops(["nn.relu", "add"])
        .with_predicate(Some("add"), |c: &CallView<'_>| {
            if c.arg_types[0] == c.arg_types[1] {
                Ok(())
            } else {
                Err("broadcasting add".into())
            }
        });
    let got = pipeline(&m, std::slice::from_ref(&no_broadcast), true);
    let mut want = BTreeMap::new();
    want.insert(
        "test_0".to_string(),
        ("test".to_string(), vec!["nn.relu".to_string()]),
    );
    want.insert(
        "test_1".to_string(),
        (
            "test".to_string(),
            vec!["add".to_string(), "nn.relu".into()],
        ),
    );
    assert_eq!(partitions(&got), want);
    assert_eq!(op_names(got.main().unwrap()), vec!["add"]);
}

/// Hand-written annotations where the only other path goes through unannotated tuple nodes.
/// TVM propagates restrictions along annotated edges only and merges the two regions into
/// one that both feeds and consumes the tuple (a cycle); here they stay apart.
#[test]
fn merge_sees_paths_through_unannotated_nodes() {
    let mut b = FunctionBuilder::new();
    let x = b.param("x", t22());
    let bx = begin(&mut b, x, "test");
    let r1 = op(&mut b, "nn.relu", &[bx]);
    let e1 = end(&mut b, r1, "test");
    let e1b = end(&mut b, r1, "test");
    let t = b.tuple(&[e1b, x]).unwrap();
    let g = b.tuple_get_item(t, 1).unwrap();
    let h = op(&mut b, "add", &[g, e1b]);
    let b1 = begin(&mut b, e1, "test");
    let b2 = begin(&mut b, h, "test");
    let s = op(&mut b, "add", &[b1, b2]);
    let es = end(&mut b, s, "test");
    let m = main_of(b, vec![x], es);
    let merged = MergeCompilerRegions::new().applied(&m).unwrap();
    let parts = PartitionGraph::new().applied(&merged).unwrap();
    parts.verify().unwrap();
    assert_eq!(partitions(&parts).len(), 2);
    // Without the detour the two regions merge.
    let mut b = FunctionBuilder::new();
    let x = b.param("x", t22());
    let bx = begin(&mut b, x, "test");
    let r1 = op(&mut b, "nn.relu", &[bx]);
    let e1 = end(&mut b, r1, "test");
    let b1 = begin(&mut b, e1, "test");
    let b2 = begin(&mut b, x, "test");
    let s = op(&mut b, "add", &[b1, b2]);
    let es = end(&mut b, s, "test");
    let m = main_of(b, vec![x], es);
    let merged = MergeCompilerRegions::new().applied(&m).unwrap();
    let main = merged.main().unwrap();
    let ends = main
        .live_ids()
        .into_iter()
        .filter(|&id| {
            main.expr(id)
                .as_op_call()
                .is_some_and(|(o, _)| o.name() == COMPILER_END)
        })
        .count();
    assert_eq!(ends, 1, "the inner end/begin pair is removed");
    let parts = PartitionGraph::new().applied(&merged).unwrap();
    let mut want = BTreeMap::new();
    want.insert(
        "test_0".to_string(),
        (
            "test".to_string(),
            vec!["add".to_string(), "nn.relu".into()],
        ),
    );
    assert_eq!(partitions(&parts), want);
    // x feeds both the relu and the add: one parameter.
    assert_eq!(parts.get("test_0").unwrap().params.len(), 1);
}

/// A path that only exists once regions have merged: `a` feeds `r1`, the tuple of `r1` and
/// `r2` merges both relus into one region, and `r2` feeds `s`. Before that merge nothing leads
/// from `a` to `s` except their direct edge; after it, `a -> {r1, r2, tuple} -> s` does, so
/// `s` must not absorb `a`. Checking `s` against the paths of the unmerged graph put `a` and `s`
/// into one region that both feeds and consumes the relus' region (a cycle).
#[test]
fn merge_sees_paths_created_by_earlier_merges() {
    let mut b = FunctionBuilder::new();
    let x = b.param("x", t22());
    let a = op(&mut b, "add", &[x, x]);
    let r1 = op(&mut b, "nn.relu", &[a]);
    let c = b.constant(const22(1.0));
    let r2 = op(&mut b, "nn.relu", &[c]);
    let t = b.tuple(&[r1, r2]).unwrap();
    let g = b.tuple_get_item(t, 0).unwrap();
    let s = op(&mut b, "add", &[r2, a]);
    let body = b.tuple(&[g, s]).unwrap();
    let m = main_of(b, vec![x], body);
    let targets = [
        TargetSupport::new("adds").with_ops(["add"]),
        TargetSupport::new("relus").with_ops(["nn.relu"]),
    ];
    let parts = pipeline(&m, &targets, true);
    let mut want = BTreeMap::new();
    want.insert(
        "adds_0".to_string(),
        ("adds".to_string(), vec!["add".to_string()]),
    );
    want.insert(
        "relus_0".to_string(),
        (
            "relus".to_string(),
            vec!["nn.relu".to_string(), "nn.relu".into()],
        ),
    );
    want.insert(
        "adds_1".to_string(),
        ("adds".to_string(), vec!["add".to_string()]),
    );
    assert_eq!(partitions(&parts), want);
    // a = x + x, s = relu(1) + a; the first output is relu(a).
    let x = Tensor::from_vec(vec![2, 2], vec![1.0f32, -2.0, 3.0, -4.0]).unwrap();
    let got = run_partitioned(&parts, &[x]);
    let want = [vec![2.0f32, 0.0, 6.0, 0.0], vec![3.0, -3.0, 7.0, -7.0]];
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(g.as_slice::<f32>().unwrap(), w.as_slice());
    }
}

#[test]
fn duplicate_outputs_collapse_and_tuple_outputs_flatten() {
    // r = relu(x) used twice by the host; the body returns (relu(r), r) as a tuple.
    let mut b = FunctionBuilder::new();
    let x = b.param("x", t22());
    let r = op(&mut b, "nn.relu", &[x]);
    let h1 = op(&mut b, "add", &[r, x]);
    let h2 = op(&mut b, "add", &[r, h1]);
    let m = main_of(b, vec![x], h2);
    let got = pipeline(&m, &[relu_only()], true);
    let ext = got.get("test_0").unwrap();
    // One output although two ends were placed.
    assert!(matches!(ext.expr(ext.body), Expr::Call(_)));
    // A tuple literal that leaves a region is flattened at the call site.
    let both = TargetSupport::new("test").with_ops(["nn.relu", "add"]);
    let mut b = FunctionBuilder::new();
    let x = b.param("x", t22());
    let r = op(&mut b, "nn.relu", &[x]);
    let s = op(&mut b, "add", &[r, x]);
    let inner = b.tuple(&[r, s]).unwrap();
    let outer = b.tuple(&[inner, x]).unwrap();
    let m = main_of(b, vec![x], outer);
    let got = pipeline(&m, std::slice::from_ref(&both), true);
    let ext = got.get("test_0").unwrap();
    let Expr::Tuple(fields) = ext.expr(ext.body) else {
        panic!("tuple body expected");
    };
    assert_eq!(fields.len(), 2);
    assert!(fields
        .iter()
        .all(|&f| ext.ty(f).is_some_and(|t| t.as_tensor().is_some())));
}

fn const22(v: f32) -> Tensor {
    Tensor::from_vec(vec![2, 2], vec![v; 4]).unwrap()
}

#[test]
fn constants_are_bound_or_passed() {
    let both = TargetSupport::new("test").with_ops(["nn.relu", "add"]);
    let mut b = FunctionBuilder::new();
    let x = b.param("x", t22());
    let c = b.constant(const22(1.5));
    let s = op(&mut b, "add", &[x, c]);
    let m = main_of(b, vec![x], s);
    let (ann, _) = AnnotateTarget::new(std::slice::from_ref(&both))
        .alone(&m)
        .unwrap();
    let bound = PartitionGraph::new().applied(&ann).unwrap();
    let f = bound.get("test_0").unwrap();
    assert_eq!(f.params.len(), 1);
    assert!(f
        .live_ids()
        .iter()
        .any(|&id| matches!(f.expr(id), Expr::Constant(_))));
    let passed = PartitionGraph::new()
        .bind_constants(false)
        .applied(&ann)
        .unwrap();
    let f = passed.get("test_0").unwrap();
    assert_eq!(f.params.len(), 2);
    let main = passed.main().unwrap();
    let call = main.expr(main.body).as_call().unwrap();
    assert!(matches!(main.expr(call.args[1]), Expr::Constant(_)));
}

#[test]
fn names_count_per_target_in_topological_order() {
    // relu(x) on a, add on b, relu on a again: a_0, b_0, a_1.
    let mut b = FunctionBuilder::new();
    let x = b.param("x", t22());
    let r = op(&mut b, "nn.relu", &[x]);
    let s = op(&mut b, "add", &[r, x]);
    let r2 = op(&mut b, "nn.relu", &[s]);
    let m = main_of(b, vec![x], r2);
    let ta = TargetSupport::new("a").with_ops(["nn.relu"]);
    let tb = TargetSupport::new("b+b").with_ops(["add"]);
    let got = pipeline(&m, &[ta, tb], true);
    let parts = partitions(&got);
    let names: Vec<(&str, &str)> = parts
        .iter()
        .map(|(n, (t, _))| (n.as_str(), t.as_str()))
        .collect();
    assert_eq!(names, vec![("a_0", "a"), ("a_1", "a"), ("b_b_0", "b+b")]);
    let main = got.main().unwrap();
    let order: Vec<&str> = main
        .live_ids()
        .into_iter()
        .filter_map(|id| match &main.expr(id).as_call()?.callee {
            Callee::Global(g) => Some(g.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(order, vec!["a_0", "b_b_0", "a_1"]);
}

#[test]
fn malformed_annotations_are_errors() {
    // An end whose argument is in no region.
    let mut b = FunctionBuilder::new();
    let x = b.param("x", t22());
    let r = op(&mut b, "nn.relu", &[x]);
    let e = end(&mut b, r, "test");
    let m = main_of(b, vec![x], e);
    let err = PartitionGraph::new().applied(&m).unwrap_err();
    assert!(
        matches!(&err, PassError::InPass { pass: "partition-graph", source }
            if matches!(**source, PassError::Partition(PartitionError::Region(_)))),
        "{err}"
    );
    assert!(err.to_string().contains("closes no region"), "{err}");
    // A region value used outside without an end.
    let mut b = FunctionBuilder::new();
    let x = b.param("x", t22());
    let bx = begin(&mut b, x, "test");
    let r = op(&mut b, "nn.relu", &[bx]);
    let h = op(&mut b, "add", &[r, x]);
    let m = main_of(b, vec![x], h);
    let err = MergeCompilerRegions::new().applied(&m).unwrap_err();
    assert!(err.to_string().contains("entered no region"), "{err}");
    let mut b = FunctionBuilder::new();
    let x = b.param("x", t22());
    let bx = begin(&mut b, x, "test");
    let r = op(&mut b, "nn.relu", &[bx]);
    let m = main_of(b, vec![x], r);
    let err = MergeCompilerRegions::new().applied(&m).unwrap_err();
    assert!(err.to_string().contains("without a compiler_end"), "{err}");
}

/// A long alternating chain: every region is restricted by all the ones before it, the worst
/// case for restriction sets. Checks the result; timings are in the benchmarks.
#[test]
fn long_alternating_chain() {
    let n = 20_000;
    let mut b = FunctionBuilder::new();
    let x = b.param("x", t22());
    let mut prev = x;
    let mut prev2 = x;
    for i in 0..n {
        let v = if i % 2 == 0 {
            op(&mut b, "nn.relu", &[prev])
        } else {
            op(&mut b, "add", &[prev, prev2])
        };
        prev2 = prev;
        prev = v;
    }
    let m = main_of(b, vec![x], prev);
    let ta = TargetSupport::new("a").with_ops(["nn.relu"]);
    let tb = TargetSupport::new("b").with_ops(["add"]);
    let got = pipeline(&m, &[ta, tb], true);
    // add(relu_k, add_{k-1}): no two regions of one target are adjacent, so nothing merges.
    assert_eq!(partitions(&got).len(), n);
}

fn chain_module() -> Module {
    // relu(x) [test] -> add (host) -> relu -> relu [test]
    let mut b = FunctionBuilder::new();
    let x = b.param("x", t22());
    let r = op(&mut b, "nn.relu", &[x]);
    let s = op(&mut b, "add", &[r, x]);
    let r2 = op(&mut b, "nn.relu", &[s]);
    let r3 = op(&mut b, "nn.relu", &[r2]);
    main_of(b, vec![x], r3)
}

#[test]
fn prune_inlines_small_and_unwanted_partitions() {
    let m = chain_module();
    let parts = pipeline(&m, &[relu_only()], true);
    assert_eq!(partitions(&parts).len(), 2);
    let small = relu_only().with_prune(PruneConfig {
        min_ops: 2,
        ..PruneConfig::default()
    });
    let (pruned, report) = Prune::new(std::slice::from_ref(&small))
        .alone(&parts)
        .unwrap();
    pruned.verify().unwrap();
    assert_eq!(report.pruned.len(), 1);
    assert_eq!(report.pruned[0].name, "test_0");
    assert_eq!(
        report.pruned[0].reason,
        PruneReason::TooFewOps { ops: 1, min_ops: 2 }
    );
    assert_eq!(partitions(&pruned).len(), 1);
    assert_eq!(op_names(pruned.main().unwrap()), vec!["nn.relu", "add"]);

    let limited = relu_only().with_prune(PruneConfig {
        max_partitions: Some(1),
        ..PruneConfig::default()
    });
    let (pruned, report) = Prune::new(std::slice::from_ref(&limited))
        .alone(&parts)
        .unwrap();
    assert_eq!(report.pruned.len(), 1);
    assert_eq!(report.pruned[0].name, "test_0", "the smaller one goes");
    assert_eq!(partitions(&pruned).len(), 1);

    let needs_add = relu_only().with_prune(PruneConfig {
        require_any: vec!["add".into()],
        ..PruneConfig::default()
    });
    let (pruned, report) = Prune::new(std::slice::from_ref(&needs_add))
        .alone(&parts)
        .unwrap();
    assert_eq!(report.pruned.len(), 2);
    assert!(partitions(&pruned).is_empty());
    let mut typed = pruned.clone();
    infer_types(&mut typed).unwrap();
    assert_eq!(op_names(typed.main().unwrap()).len(), 4);
}

#[test]
fn prune_inlines_multi_output_partitions() {
    let mut b = FunctionBuilder::new();
    let x = b.param("x", t22());
    let r = op(&mut b, "nn.relu", &[x]);
    let s = op(&mut b, "nn.relu", &[r]);
    let h = op(&mut b, "add", &[r, s]);
    let m = main_of(b, vec![x], h);
    let parts = pipeline(&m, &[relu_only()], true);
    let all = relu_only().with_prune(PruneConfig {
        min_ops: 5,
        ..PruneConfig::default()
    });
    let (pruned, _) = Prune::new(std::slice::from_ref(&all))
        .alone(&parts)
        .unwrap();
    pruned.verify().unwrap();
    assert_same(&pruned, &m);
}

// ---------------------------------------------------------------------------------------
// Random DAGs.

#[derive(Clone, Debug)]
enum Node {
    Relu(usize),
    Add(usize, usize),
    /// `(a, b).i`
    Pick(usize, usize, bool),
    Const(u8),
}

fn dag() -> impl Strategy<Value = (Vec<Node>, Vec<usize>)> {
    let nodes = prop::collection::vec(
        (
            0u8..4,
            any::<prop::sample::Index>(),
            any::<prop::sample::Index>(),
            any::<bool>(),
        ),
        1..40,
    );
    (
        nodes,
        prop::collection::vec(any::<prop::sample::Index>(), 1..3),
    )
        .prop_map(|(raw, outs)| {
            // Node i may use the two inputs (0, 1) and nodes before it.
            let nodes: Vec<Node> = raw
                .into_iter()
                .enumerate()
                .map(|(i, (k, a, b, flag))| {
                    let avail = i + 2;
                    let (a, b) = (a.index(avail), b.index(avail));
                    match k {
                        0 => Node::Relu(a),
                        1 => Node::Add(a, b),
                        2 => Node::Pick(a, b, flag),
                        _ => Node::Const(a as u8),
                    }
                })
                .collect();
            let total = nodes.len() + 2;
            let outs = outs.into_iter().map(|o| o.index(total)).collect();
            (nodes, outs)
        })
}

fn build_dag(nodes: &[Node], outs: &[usize]) -> Module {
    let mut b = FunctionBuilder::new();
    let x = b.param("x", t22());
    let y = b.param("y", t22());
    let mut ids = vec![x, y];
    for n in nodes {
        let id = match *n {
            Node::Relu(a) => op(&mut b, "nn.relu", &[ids[a]]),
            Node::Add(a, c) => op(&mut b, "add", &[ids[a], ids[c]]),
            Node::Pick(a, c, first) => {
                let t = b.tuple(&[ids[a], ids[c]]).unwrap();
                b.tuple_get_item(t, usize::from(!first)).unwrap()
            }
            Node::Const(v) => b.constant(const22(f32::from(v))),
        };
        ids.push(id);
    }
    let body = if outs.len() == 1 {
        ids[outs[0]]
    } else {
        let fields: Vec<ExprId> = outs.iter().map(|&o| ids[o]).collect();
        b.tuple(&fields).unwrap()
    };
    main_of(b, vec![x, y], body)
}

fn random_targets(mask: u8) -> Vec<TargetSupport> {
    let ops = ["nn.relu", "add"];
    (0..3)
        .map(|t| {
            let chosen: Vec<&str> = ops
                .iter()
                .enumerate()
                .filter(|(i, _)| mask >> (t * 2 + i) & 1 == 1)
                .map(|(_, o)| *o)
                .collect();
            TargetSupport::new(format!("t{t}")).with_ops(chosen)
        })
        .collect()
}

fn total_ops(m: &Module) -> usize {
    m.functions().map(|(_, f)| op_names(f).len()).sum()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn partitioning_random_dags_keeps_invariants(
        (nodes, outs) in dag(),
        mask in 0u8..64,
        merge in any::<bool>(),
        non_call in any::<bool>(),
        bind in any::<bool>(),
        inputs in prop::collection::vec(-4.0f32..4.0, 8),
    ) {
        let m = build_dag(&nodes, &outs);
        let targets = random_targets(mask);
        let (ann, _) = AnnotateTarget::new(&targets)
            .include_non_call_ops(non_call)
            .alone(&m)
            .unwrap();
        let ann = if merge { MergeCompilerRegions::new().applied(&ann).unwrap() } else { ann };
        let parts = PartitionGraph::new().bind_constants(bind).applied(&ann).unwrap();
        parts.verify().unwrap();
        let mut typed = parts.clone();
        infer_types(&mut typed).unwrap();
        let mut original = m.clone();
        infer_types(&mut original).unwrap();
        // Every op is somewhere, once; no annotation is left.
        prop_assert_eq!(total_ops(&typed), total_ops(&original));
        for (name, f) in typed.functions() {
            let ops = op_names(f);
            prop_assert!(ops.iter().all(|o| !o.starts_with("annotation.")), "{name}");
            let Some(target) = f.attrs.get_str("Compiler") else { continue };
            prop_assert!(!ops.is_empty(), "{name} is empty");
            let support = targets.iter().find(|t| t.name() == target).unwrap();
            for id in f.live_ids() {
                let Some((o, call)) = f.expr(id).as_op_call() else { continue };
                // External functions call nothing global: the module stays acyclic.
                let arg_types: Vec<Type> =
                    call.args.iter().map(|&a| f.ty(a).unwrap().clone()).collect();
                let view = CallView {
                    op: o,
                    attrs: &call.attrs,
                    arg_types: &arg_types,
                    result_type: f.ty(id).unwrap(),
                };
                prop_assert_eq!(support.query(&view), Support::Supported, "{}", o.name());
            }
            prop_assert!(f.live_ids().iter().all(|&id| !matches!(
                f.expr(id).as_call().map(|c| &c.callee),
                Some(Callee::Global(_))
            )));
        }
        // Same results as the unpartitioned module, before and after pruning.
        let x = Tensor::from_vec(vec![2, 2], inputs[..4].to_vec()).unwrap();
        let y = Tensor::from_vec(vec![2, 2], inputs[4..].to_vec()).unwrap();
        let run = |m: &Module| run_partitioned(m, &[x.clone(), y.clone()]);
        let want = run(&m);
        let got = run(&parts);
        prop_assert_eq!(want.len(), got.len());
        for (w, g) in want.iter().zip(&got) {
            prop_assert_eq!(w.as_bytes(), g.as_bytes());
        }
        let pruning: Vec<TargetSupport> = targets
            .iter()
            .map(|t| t.clone().with_prune(PruneConfig { min_ops: 2, ..PruneConfig::default() }))
            .collect();
        let (pruned, _) = Prune::new(&pruning).alone(&parts).unwrap();
        pruned.verify().unwrap();
        for (w, g) in want.iter().zip(&run(&pruned)) {
            prop_assert_eq!(w.as_bytes(), g.as_bytes());
        }
        // Merging never yields more partitions than not merging.
        if merge {
            let (plain, _) = AnnotateTarget::new(&targets)
                .include_non_call_ops(non_call)
                .alone(&m)
                .unwrap();
            let unmerged = PartitionGraph::new().applied(&plain).unwrap();
            prop_assert!(partitions(&parts).len() <= partitions(&unmerged).len());
        }
    }
}
