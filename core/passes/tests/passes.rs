//! Tests of the pass manager and the prepare passes: each pass's effect against an expected
//! module built by hand, numerics against hand-computed values, and error messages. The
//! module-in/module-out tests of FoldConstant and SimplifyInference are pass cases
//! (`tests/cases/passes/fold_constant_*.case`, `simplify_inference_*.case`).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::Once;

use byoc_ir::op::{Arity, OpDef, OpImpl, OpPattern, OpRegistry, TypeCtx, TypeError};
use byoc_ir::tensor::{TensorMut, TensorRef};
use byoc_ir::Tensor;
use byoc_ir::{structural_eq_module, Attrs, DType, ExprId, FunctionBuilder, Module, Type};
use byoc_kernels::{register_kernel, HostKernel, KernelError};
use byoc_passes::{
    create_pass, BindParams, DeadCodeElimination, FoldConstant, InferType, Pass, PassContext,
    PassError, PassManager, SimplifyInference,
};

fn ty(shape: &[usize]) -> Type {
    Type::tensor(shape.to_vec(), DType::Float32)
}

fn t(shape: &[usize], values: &[f32]) -> Tensor {
    Tensor::from_slice(shape.to_vec(), values).unwrap()
}

fn none() -> Attrs {
    Attrs::new()
}

/// Runs `passes` (verifying after each) and returns the module.
fn run(mut m: Module, passes: Vec<Box<dyn Pass>>) -> Module {
    let mut pm = PassManager::new().verify_each(true);
    for p in passes {
        pm.push(p);
    }
    pm.run(&mut m, &mut PassContext::new()).unwrap();
    m
}

fn assert_same(actual: &Module, expected: &Module) {
    if let Err(m) = structural_eq_module(actual, expected) {
        panic!("modules differ: {m}\nactual: {actual:#?}");
    }
}

/// The constant the body of `@main` became.
fn body_constant(m: &Module) -> Vec<f64> {
    let main = m.main().unwrap();
    match main.expr(main.body).as_constant() {
        Some(c) => c.to_f64_vec(),
        None => panic!("body is not a constant: {:?}", main.expr(main.body)),
    }
}

fn assert_close(actual: &[f64], expected: &[f64]) {
    assert_eq!(actual.len(), expected.len(), "{actual:?} vs {expected:?}");
    for (i, (a, e)) in actual.iter().zip(expected).enumerate() {
        assert!(
            (a - e).abs() <= 1e-6,
            "element {i}: {a} vs {e} ({actual:?})"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Test-only ops: one without a host kernel, one whose kernel always fails.

struct SameType;

impl OpImpl for SameType {
    fn infer_type(&self, ctx: &TypeCtx<'_>) -> Result<Type, TypeError> {
        Ok(Type::Tensor(ctx.tensor(0)?.clone()))
    }
}

struct Failing;

impl HostKernel for Failing {
    fn run(
        &self,
        _inputs: &[TensorRef<'_>],
        _outputs: &mut [TensorMut<'_>],
        _threads: usize,
    ) -> Result<(), KernelError> {
        Err(KernelError::new("test.failing", "input out of range"))
    }
}

fn register_test_ops() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        for (name, kernel_fails) in [("test.no_kernel", false), ("test.failing", true)] {
            OpRegistry::register(OpDef::new(
                name,
                "identity for tests",
                Arity::Exact(1),
                OpPattern::Opaque,
                SameType,
            ))
            .unwrap();
            register_kernel(name, move |spec| {
                if kernel_fails {
                    Ok(Box::new(Failing))
                } else {
                    Err(spec.unsupported("any input"))
                }
            })
            .unwrap();
        }
    });
}

// ---------------------------------------------------------------------------------------------
// Pass manager

/// `@main(%x) = add(%x, relu(add(c1, c2)))`, with a dead `relu(%x)`.
fn foldable_module() -> Module {
    let mut b = FunctionBuilder::new();
    let x = b.param("x", ty(&[2]));
    let c1 = b.constant(t(&[2], &[1.0, -5.0]));
    let c2 = b.constant(t(&[2], &[2.0, 1.0]));
    let s = b.call("add", &[c1, c2], none()).unwrap();
    let r = b.call("nn.relu", &[s], none()).unwrap();
    b.call("nn.relu", &[x], none()).unwrap();
    let out = b.call("add", &[x, r], none()).unwrap();
    Module::from_main(b.finish(vec![x], out, none()).unwrap())
}

#[test]
fn manager_prints_before_and_after_the_named_passes() {
    let events = RefCell::new(Vec::new());
    let mut pm = PassManager::new()
        .pass(InferType)
        .pass(FoldConstant)
        .pass(DeadCodeElimination)
        .print_before(["fold-constant"])
        .print_after(["fold-constant", "dead-code-elimination"])
        .print_sink(|pass, when, m: &Module| {
            let n = m.main().unwrap().len();
            events
                .borrow_mut()
                .push(format!("{when} {pass}: {n} nodes"));
        });
    let mut m = foldable_module();
    let mut cx = PassContext::new();
    pm.run(&mut m, &mut cx).unwrap();
    drop(pm);
    assert_eq!(
        events.into_inner(),
        [
            "before fold-constant: 7 nodes",
            "after fold-constant: 3 nodes",
            "after dead-code-elimination: 3 nodes",
        ]
    );
    let timed: Vec<&str> = cx.timings.iter().map(|t| t.pass).collect();
    assert_eq!(
        timed,
        ["infer-type", "fold-constant", "dead-code-elimination"]
    );
}

#[test]
fn manager_rejects_print_names_outside_the_pipeline() {
    let mut pm = PassManager::new()
        .pass(InferType)
        .pass(FoldConstant)
        .print_after(["merge-compiler-regions"]);
    let err = pm
        .run(&mut foldable_module(), &mut PassContext::new())
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown pass 'merge-compiler-regions' (known: infer-type, fold-constant)"
    );
}

#[test]
fn manager_names_the_failing_pass() {
    let params = BTreeMap::from([("q".to_string(), t(&[2], &[0.0, 0.0]))]);
    let mut pm = PassManager::new()
        .pass(InferType)
        .pass(BindParams::new(params));
    let err = pm
        .run(&mut foldable_module(), &mut PassContext::new())
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "in pass bind-params: @main has no parameter named 'q' (parameters: x)"
    );
    assert!(matches!(
        err,
        PassError::InPass {
            pass: "bind-params",
            ..
        }
    ));
}

/// A broken pass: forgets every inferred type.
struct ClearTypes;

impl Pass for ClearTypes {
    fn name(&self) -> &'static str {
        "clear-types"
    }

    fn run(&self, module: &mut Module, _cx: &mut PassContext) -> Result<(), PassError> {
        module.functions_mut().for_each(|(_, f)| f.clear_types());
        Ok(())
    }
}

#[test]
fn manager_verifies_types_after_each_pass_when_asked() {
    let mut pm = PassManager::new().pass(InferType).pass(ClearTypes);
    let err = pm
        .run(&mut foldable_module(), &mut PassContext::new())
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "in pass clear-types: in @main, at %x: recorded type none but inference gives \
         Tensor[(2), float32]"
    );
    let mut pm = PassManager::new()
        .pass(InferType)
        .pass(ClearTypes)
        .verify_each(false);
    pm.run(&mut foldable_module(), &mut PassContext::new())
        .unwrap();
}

#[test]
fn registry_creates_passes_by_name() {
    for name in [
        "infer-type",
        "simplify-inference",
        "fold-scale-axis",
        "fold-constant",
        "dead-code-elimination",
    ] {
        assert_eq!(create_pass(name).unwrap().name(), name);
    }
    let needs = create_pass("bind-params").err().unwrap();
    assert_eq!(
        needs.to_string(),
        "pass 'bind-params' needs arguments and cannot be created by name"
    );
    let unknown = create_pass("fold-constants").err().unwrap();
    assert_eq!(
        unknown.to_string(),
        "unknown pass 'fold-constants' (known: fold-constant, dead-code-elimination, \
         simplify-inference, fold-scale-axis, merge-composite, annotate-target, \
         merge-compiler-regions, partition-graph, prune, outline-custom-reductions, host-fuse, \
         infer-type, bind-params, change-datatype, quantize)"
    );
}

#[test]
fn infer_type_pass_types_every_live_node() {
    let m = run(foldable_module(), vec![Box::new(InferType)]);
    let main = m.main().unwrap();
    for id in main.live_ids() {
        assert!(main.ty(id).is_some(), "{id} untyped");
    }
}

// ---------------------------------------------------------------------------------------------
// BindParams

/// `@main(%x, %w) = add(%x, %w)`.
fn add_module() -> Module {
    let mut b = FunctionBuilder::new();
    let x = b.param("x", ty(&[2]));
    let w = b.param("w", ty(&[2]));
    let s = b.call("add", &[x, w], none()).unwrap();
    Module::from_main(b.finish(vec![x, w], s, none()).unwrap())
}

fn bind(m: &mut Module, params: &[(&str, Tensor)]) -> Result<(), PassError> {
    let params = params
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    BindParams::new(params).run(m, &mut PassContext::new())
}

#[test]
fn bind_params_replaces_parameters_by_constants() {
    let w = t(&[2], &[3.0, 4.0]);
    let m = run(
        add_module(),
        vec![Box::new(BindParams::new(BTreeMap::from([(
            "w".to_string(),
            w.clone(),
        )])))],
    );
    let mut b = FunctionBuilder::new();
    let x = b.param("x", ty(&[2]));
    let c = b.constant(w);
    let s = b.call("add", &[x, c], none()).unwrap();
    let expected = Module::from_main(b.finish(vec![x], s, none()).unwrap());
    assert_same(&m, &expected);
}

#[test]
fn bind_params_rejects_unknown_names_and_wrong_types() {
    let mut m = add_module();
    let err = bind(&mut m, &[("y", t(&[2], &[0.0, 0.0]))]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "@main has no parameter named 'y' (parameters: x, w)"
    );
    let err = bind(&mut m, &[("w", t(&[3], &[0.0, 0.0, 0.0]))]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "parameter %w of @main has type Tensor[(2), float32] but the value bound to it has \
         type Tensor[(3), float32]"
    );
    let err = bind(
        &mut m,
        &[("w", Tensor::from_slice([2usize], &[1i32, 2]).unwrap())],
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "parameter %w of @main has type Tensor[(2), float32] but the value bound to it has \
         type Tensor[(2), int32]"
    );
    // A failed bind leaves the module as it was.
    assert_same(&m, &add_module());

    let mut b = FunctionBuilder::new();
    let x1 = b.param("x", ty(&[2]));
    let x2 = b.param("x", ty(&[2]));
    let s = b.call("add", &[x1, x2], none()).unwrap();
    let mut twice = Module::from_main(b.finish(vec![x1, x2], s, none()).unwrap());
    let err = bind(&mut twice, &[("x", t(&[2], &[0.0, 0.0]))]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "@main has 2 parameters named 'x'; binding by name is ambiguous"
    );
}

// ---------------------------------------------------------------------------------------------
// DeadCodeElimination

/// A global `@name(%a) = relu(%a)`, optionally calling `@callee` first.
fn relu_global(callee: Option<&str>) -> byoc_ir::Function {
    let mut b = FunctionBuilder::new();
    let a = b.param("a", ty(&[2]));
    let mut v = a;
    if let Some(g) = callee {
        v = b.call_global(g, &[v]).unwrap();
    }
    let r = b.call("nn.relu", &[v], none()).unwrap();
    b.finish(vec![a], r, none()).unwrap()
}

#[test]
fn dead_code_elimination_drops_unused_nodes_literals_and_functions() {
    let mut b = FunctionBuilder::new();
    let x = b.param("x", ty(&[2]));
    let unused_param = b.param("unused", ty(&[2]));
    // An unused local function literal and an unused call.
    let p = b.param("p", ty(&[2]));
    let body = b.call("nn.relu", &[p], none()).unwrap();
    b.function(&[p], body, Attrs::new().with("Composite", "t.relu"))
        .unwrap();
    b.call("add", &[x, x], none()).unwrap();
    let out = b.call_global("used", &[x]).unwrap();
    let mut m = Module::from_main(b.finish(vec![x, unused_param], out, none()).unwrap());
    m.add("used", relu_global(Some("used_by_used"))).unwrap();
    m.add("used_by_used", relu_global(None)).unwrap();
    m.add("unused", relu_global(Some("used_by_unused")))
        .unwrap();
    m.add("used_by_unused", relu_global(None)).unwrap();

    let m = run(m, vec![Box::new(DeadCodeElimination)]);

    let mut b = FunctionBuilder::new();
    let x = b.param("x", ty(&[2]));
    let unused_param = b.param("unused", ty(&[2]));
    let out = b.call_global("used", &[x]).unwrap();
    let mut expected = Module::from_main(b.finish(vec![x, unused_param], out, none()).unwrap());
    expected
        .add("used", relu_global(Some("used_by_used")))
        .unwrap();
    expected.add("used_by_used", relu_global(None)).unwrap();
    assert_same(&m, &expected);
    assert_eq!(m.main().unwrap().len(), 3, "the arena is compacted");
}

// ---------------------------------------------------------------------------------------------
// FoldConstant

#[test]
fn fold_constant_skips_ops_without_a_host_kernel() {
    register_test_ops();
    let mut b = FunctionBuilder::new();
    let c = b.constant(t(&[2], &[1.0, 2.0]));
    let n = b.call("test.no_kernel", &[c], none()).unwrap();
    let m = Module::from_main(b.finish(vec![], n, none()).unwrap());
    let mut folded = m.clone();
    let mut cx = PassContext::new();
    PassManager::new()
        .pass(FoldConstant)
        .run(&mut folded, &mut cx)
        .unwrap();
    assert_same(&folded, &m);
    assert_eq!(cx.remarks.len(), 1);
    assert_eq!(cx.remarks[0].pass, "fold-constant");
    assert_eq!(
        cx.remarks[0].message,
        "@main %1: left unfolded: test.no_kernel: host kernel does not support any input"
    );
}

#[test]
fn fold_constant_reports_kernel_failures() {
    register_test_ops();
    let mut b = FunctionBuilder::new();
    let c = b.constant(t(&[2], &[1.0, 2.0]));
    let n = b.call("test.failing", &[c], none()).unwrap();
    let mut m = Module::from_main(b.finish(vec![], n, none()).unwrap());
    let err = PassManager::new()
        .pass(FoldConstant)
        .run(&mut m, &mut PassContext::new())
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "in pass fold-constant: in @main, at %1: evaluating a constant expression failed: \
         test.failing: input out of range"
    );
}

// ---------------------------------------------------------------------------------------------
// SimplifyInference

/// `@main(%x, %gamma, %beta, %mean, %var) = nn.batch_norm(...).0` over `x_shape`, channels on
/// `axis`.
fn batch_norm_module(x_shape: &[usize], channels: usize, attrs: Attrs) -> Module {
    let mut b = FunctionBuilder::new();
    let x = b.param("x", ty(x_shape));
    let stats: Vec<ExprId> = ["gamma", "beta", "mean", "var"]
        .iter()
        .map(|n| b.param(*n, ty(&[channels])))
        .collect();
    let mut args = vec![x];
    args.extend(&stats);
    let bn = b.call("nn.batch_norm", &args, attrs).unwrap();
    let out = b.tuple_get_item(bn, 0).unwrap();
    Module::from_main(b.finish(args, out, none()).unwrap())
}

#[test]
fn simplified_batch_norm_computes_batch_norm() {
    // x: N=1, C=2, H=1, W=2; channel 0 = [1, 2], channel 1 = [3, 4].
    // gamma * (x - mean) / sqrt(var + eps) + beta with eps = 1:
    //   channel 0: 3 * (x - 1) / sqrt(3 + 1) + 1     -> [1, 2.5]
    //   channel 1: 0.5 * (x - 2) / sqrt(0 + 1) - 1   -> [-0.5, 0]
    let m = batch_norm_module(&[1, 2, 1, 2], 2, Attrs::new().with("epsilon", 1.0));
    let params = BTreeMap::from([
        ("x".to_string(), t(&[1, 2, 1, 2], &[1.0, 2.0, 3.0, 4.0])),
        ("gamma".to_string(), t(&[2], &[3.0, 0.5])),
        ("beta".to_string(), t(&[2], &[1.0, -1.0])),
        ("mean".to_string(), t(&[2], &[1.0, 2.0])),
        ("var".to_string(), t(&[2], &[3.0, 0.0])),
    ]);
    let m = run(
        m,
        vec![
            Box::new(SimplifyInference::default()),
            Box::new(BindParams::new(params)),
            Box::new(FoldConstant),
        ],
    );
    assert_close(&body_constant(&m), &[1.0, 2.5, -0.5, 0.0]);
}

#[test]
fn simplify_inference_passes_moving_stats_through_and_drops_dropout() {
    let mut b = FunctionBuilder::new();
    let x = b.param("x", ty(&[1, 2]));
    let stats: Vec<ExprId> = ["gamma", "beta", "mean", "var"]
        .iter()
        .map(|n| b.param(*n, ty(&[2])))
        .collect();
    let d = b.call("nn.dropout", &[x], none()).unwrap();
    let d0 = b.tuple_get_item(d, 0).unwrap();
    let mut args = vec![d0];
    args.extend(&stats);
    let bn = b.call("nn.batch_norm", &args, none()).unwrap();
    let m1 = b.tuple_get_item(bn, 1).unwrap();
    let v2 = b.tuple_get_item(bn, 2).unwrap();
    let out = b.tuple(&[m1, v2]).unwrap();
    let mut params = vec![x];
    params.extend(&stats);
    let m = Module::from_main(b.finish(params.clone(), out, none()).unwrap());
    let m = run(m, vec![Box::new(SimplifyInference::default())]);

    let mut b = FunctionBuilder::new();
    let x = b.param("x", ty(&[1, 2]));
    let stats: Vec<ExprId> = ["gamma", "beta", "mean", "var"]
        .iter()
        .map(|n| b.param(*n, ty(&[2])))
        .collect();
    let out = b.tuple(&[stats[2], stats[3]]).unwrap();
    let mut params = vec![x];
    params.extend(&stats);
    let expected = Module::from_main(b.finish(params, out, none()).unwrap());
    assert_same(&m, &expected);
}

#[test]
fn simplified_layer_norm_computes_layer_norm() {
    // x rows [1, 3] and [2, 6]; per row mean 2 / 4, variance 1 / 4; eps = 0:
    //   row 0: (x - 2) / 1 = [-1, 1];  row 1: (x - 4) / 2 = [-1, 1]
    //   times gamma [2, 3] plus beta [0.5, -0.5]: [-1.5, 2.5] both rows.
    let mut b = FunctionBuilder::new();
    let x = b.param("x", ty(&[2, 2]));
    let gamma = b.param("gamma", ty(&[2]));
    let beta = b.param("beta", ty(&[2]));
    let ln = b
        .call(
            "nn.layer_norm",
            &[x, gamma, beta],
            Attrs::new().with("epsilon", 0.0),
        )
        .unwrap();
    let m = Module::from_main(b.finish(vec![x, gamma, beta], ln, none()).unwrap());
    let params = BTreeMap::from([
        ("x".to_string(), t(&[2, 2], &[1.0, 3.0, 2.0, 6.0])),
        ("gamma".to_string(), t(&[2], &[2.0, 3.0])),
        ("beta".to_string(), t(&[2], &[0.5, -0.5])),
    ]);
    let m = run(
        m,
        vec![
            Box::new(SimplifyInference::default()),
            Box::new(BindParams::new(params)),
            Box::new(FoldConstant),
        ],
    );
    assert_close(&body_constant(&m), &[-1.5, 2.5, -1.5, 2.5]);
}

#[test]
fn simplify_inference_can_keep_layer_norm_whole() {
    let mut b = FunctionBuilder::new();
    let x = b.param("x", ty(&[2, 2]));
    let gamma = b.param("gamma", ty(&[2]));
    let beta = b.param("beta", ty(&[2]));
    let d = b.call("nn.dropout", &[x], none()).unwrap();
    let d0 = b.tuple_get_item(d, 0).unwrap();
    let ln = b.call("nn.layer_norm", &[d0, gamma, beta], none()).unwrap();
    let m = Module::from_main(b.finish(vec![x, gamma, beta], ln, none()).unwrap());
    let kept = run(
        m,
        vec![Box::new(SimplifyInference {
            keep_layer_norm: true,
        })],
    );
    // The dropout still goes; the layer norm stays one call on the data.
    let mut b = FunctionBuilder::new();
    let x = b.param("x", ty(&[2, 2]));
    let gamma = b.param("gamma", ty(&[2]));
    let beta = b.param("beta", ty(&[2]));
    let ln = b.call("nn.layer_norm", &[x, gamma, beta], none()).unwrap();
    let expected = Module::from_main(b.finish(vec![x, gamma, beta], ln, none()).unwrap());
    assert_same(&kept, &expected);
}
