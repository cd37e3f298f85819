//! The host executor: results against hand-computed values, inlining of composites and global
//! functions, aliasing, buffer reuse, input checks, concurrency, half promotion, profiling.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use byoc_exec::{ExecError, ExecOptions, Executor};
use byoc_ir::op::{Arity, OpDef, OpImpl, OpPattern, OpRegistry, TypeCtx, TypeError};
use byoc_ir::tensor::{TensorMut, TensorRef};
use byoc_ir::{Attrs, ExprId, FunctionBuilder, Module, Type};
use byoc_ir::{DType, Tensor, TensorType};
use byoc_kernels::{register_kernel, HostKernel, KernelError};
use half::{bf16, f16};

fn f32_ty(shape: &[usize]) -> Type {
    Type::tensor(shape, DType::Float32)
}

fn t32(shape: &[usize], values: &[f32]) -> Tensor {
    Tensor::from_slice(shape.to_vec(), values).unwrap()
}

fn opts(threads: usize) -> ExecOptions {
    ExecOptions {
        threads,
        profile: false,
        memory_budget: None,
    }
}

fn values(t: &Tensor) -> Vec<f32> {
    t.as_slice::<f32>().unwrap().to_vec()
}

/// `test.flatten` (a view op: rank-1 result, same bytes), `test.fail` (a kernel that always
/// fails at run time) and `test.no_kernel` (no host kernel), registered once per process.
fn register_test_ops() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        struct Flatten;
        impl OpImpl for Flatten {
            fn infer_type(&self, ctx: &TypeCtx<'_>) -> Result<Type, TypeError> {
                let t = ctx.tensor(0)?;
                Ok(Type::tensor([t.num_elements()], t.dtype))
            }
        }
        struct Fail;
        impl OpImpl for Fail {
            fn infer_type(&self, ctx: &TypeCtx<'_>) -> Result<Type, TypeError> {
                Ok(Type::Tensor(ctx.tensor(0)?.clone()))
            }
        }
        impl HostKernel for Fail {
            fn run(
                &self,
                _inputs: &[TensorRef<'_>],
                _outputs: &mut [TensorMut<'_>],
                _threads: usize,
            ) -> Result<(), KernelError> {
                Err(KernelError::new("test.fail", "deliberate failure"))
            }
        }
        OpRegistry::register(
            OpDef::new(
                "test.flatten",
                "flatten (view)",
                Arity::Exact(1),
                OpPattern::Injective,
                Flatten,
            )
            .view(),
        )
        .unwrap();
        OpRegistry::register(OpDef::new(
            "test.fail",
            "always fails",
            Arity::Exact(1),
            OpPattern::Opaque,
            Fail,
        ))
        .unwrap();
        OpRegistry::register(OpDef::new(
            "test.no_kernel",
            "has no host kernel",
            Arity::Exact(1),
            OpPattern::Opaque,
            NoKernel,
        ))
        .unwrap();
        register_kernel("test.flatten", |spec| {
            Err(KernelError::new(spec.op, "a view op never runs a kernel"))
        })
        .unwrap();
        register_kernel("test.fail", |_| Ok(Box::new(Fail))).unwrap();
    });
}

struct NoKernel;

impl OpImpl for NoKernel {
    fn infer_type(&self, ctx: &TypeCtx<'_>) -> Result<Type, TypeError> {
        Ok(Type::Tensor(ctx.tensor(0)?.clone()))
    }
}

#[test]
fn chain_matches_hand_computed_values() {
    let mut b = FunctionBuilder::new();
    let x = b.param("x", f32_ty(&[4]));
    let y = b.param("y", f32_ty(&[4]));
    let s = b.call("add", &[x, y], Attrs::new()).unwrap();
    let r = b.call("nn.relu", &[s], Attrs::new()).unwrap();
    let f = b.finish(vec![x, y], r, Attrs::new()).unwrap();
    let exec = Executor::new(&Module::from_main(f), opts(1)).unwrap();
    let out = exec
        .run(&[
            t32(&[4], &[-1.0, 2.0, -3.0, 4.0]),
            t32(&[4], &[0.5, 1.0, 1.0, 1.0]),
        ])
        .unwrap();
    assert_eq!(out.len(), 1);
    assert_eq!(values(&out[0]), [0.0, 3.0, 0.0, 5.0]);
    assert_eq!(exec.output_names(), ["output_0"]);
    assert_eq!(exec.num_instructions(), 2);
}

#[test]
fn tuple_results_are_flattened_and_never_alias() {
    // main(x) = (x, relu(x), relu(x), (x + x).0-of-a-tuple, const)
    let mut b = FunctionBuilder::new();
    let x = b.param("x", f32_ty(&[3]));
    let r = b.call("nn.relu", &[x], Attrs::new()).unwrap();
    let s = b.call("add", &[x, x], Attrs::new()).unwrap();
    let inner = b.tuple(&[s, r]).unwrap();
    let s_again = b.tuple_get_item(inner, 0).unwrap();
    let c = b.constant(t32(&[2], &[7.0, 8.0]));
    let body = b.tuple(&[x, r, r, s_again, c]).unwrap();
    let f = b.finish(vec![x], body, Attrs::new()).unwrap();
    let exec = Executor::new(&Module::from_main(f), opts(2)).unwrap();
    assert_eq!(
        exec.output_names(),
        ["output_0", "output_1", "output_2", "output_3", "output_4"]
    );
    assert_eq!(
        exec.result_type().to_string(),
        "(Tensor[(3), float32], Tensor[(3), float32], Tensor[(3), float32], \
         Tensor[(3), float32], Tensor[(2), float32])"
    );
    let input = t32(&[3], &[-1.0, 0.5, 2.0]);
    let out = exec.run(std::slice::from_ref(&input)).unwrap();
    assert_eq!(values(&out[0]), [-1.0, 0.5, 2.0]);
    assert_eq!(values(&out[1]), [0.0, 0.5, 2.0]);
    assert_eq!(values(&out[2]), [0.0, 0.5, 2.0]);
    assert_eq!(values(&out[3]), [-2.0, 1.0, 4.0]);
    assert_eq!(values(&out[4]), [7.0, 8.0]);
    let ptrs: Vec<*const u8> = out.iter().map(|t| t.as_bytes().as_ptr()).collect();
    for (i, p) in ptrs.iter().enumerate() {
        assert_ne!(*p, input.as_bytes().as_ptr());
        assert!(!ptrs[i + 1..].contains(p), "output {i} shares memory");
    }
}

#[test]
fn composite_calls_are_inlined_per_call_site() {
    let mut b = FunctionBuilder::new();
    let x = b.param("x", f32_ty(&[2]));
    let y = b.param("y", f32_ty(&[2]));
    let pa = b.param("a", f32_ty(&[2]));
    let pb = b.param("b", f32_ty(&[2]));
    let sum = b.call("add", &[pa, pb], Attrs::new()).unwrap();
    let relu = b.call("nn.relu", &[sum], Attrs::new()).unwrap();
    let lit = b
        .function(
            &[pa, pb],
            relu,
            Attrs::new().with("Composite", "test.add_relu"),
        )
        .unwrap();
    let first = b.call_local(lit, &[x, y]).unwrap();
    let second = b.call_local(lit, &[first, x]).unwrap();
    let f = b.finish(vec![x, y], second, Attrs::new()).unwrap();
    let exec = Executor::new(&Module::from_main(f), opts(1)).unwrap();
    assert_eq!(exec.num_instructions(), 4);
    // first = relu([1, -5] + [2, 1]) = [3, 0]; second = relu([3, 0] + [1, -5]) = [4, 0]
    let out = exec
        .run(&[t32(&[2], &[1.0, -5.0]), t32(&[2], &[2.0, 1.0])])
        .unwrap();
    assert_eq!(values(&out[0]), [4.0, 0.0]);
}

/// `@f(p, q) = relu(p) + q`, and `@main(x, y) = @f(@f(x, y), x)`; returns the module and the
/// ids of main's two calls and f's add.
fn global_call_module() -> (Module, ExprId, ExprId, ExprId) {
    let mut fb = FunctionBuilder::new();
    let p = fb.param("p", f32_ty(&[2]));
    let q = fb.param("q", f32_ty(&[2]));
    let r = fb.call("nn.relu", &[p], Attrs::new()).unwrap();
    let s = fb.call("add", &[r, q], Attrs::new()).unwrap();
    let f = fb.finish(vec![p, q], s, Attrs::new()).unwrap();
    let mut b = FunctionBuilder::new();
    let x = b.param("x", f32_ty(&[2]));
    let y = b.param("y", f32_ty(&[2]));
    let c1 = b.call_global("f", &[x, y]).unwrap();
    let c2 = b.call_global("f", &[c1, x]).unwrap();
    let main = b.finish(vec![x, y], c2, Attrs::new()).unwrap();
    let mut m = Module::from_main(main);
    m.add("f", f).unwrap();
    (m, c1, c2, s)
}

#[test]
fn global_function_calls_are_inlined() {
    let (m, c1, c2, s) = global_call_module();
    let exec = Executor::new(
        &m,
        ExecOptions {
            threads: 1,
            profile: true,
            memory_budget: None,
        },
    )
    .unwrap();
    assert_eq!(exec.num_instructions(), 4);
    // c1 = relu([-1, 2]) + [10, 20] = [10, 22]; c2 = relu([10, 22]) + [-1, 2] = [9, 24]
    let out = exec
        .run(&[t32(&[2], &[-1.0, 2.0]), t32(&[2], &[10.0, 20.0])])
        .unwrap();
    assert_eq!(values(&out[0]), [9.0, 24.0]);

    let profile = exec.last_profile().expect("profiling is on");
    let sites: Vec<&str> = profile.calls.iter().map(|c| c.site.as_str()).collect();
    let add1 = format!("@main:{c1} > @f:{s}");
    let add2 = format!("@main:{c2} > @f:{s}");
    assert_eq!(sites[1], add1);
    assert_eq!(sites[3], add2);
    let per_op: Vec<(&str, usize)> = {
        let mut v: Vec<(&str, usize)> = profile
            .ops
            .iter()
            .map(|o| (o.op.as_str(), o.calls))
            .collect();
        v.sort();
        v
    };
    assert_eq!(per_op, [("add", 2), ("nn.relu", 2)]);
    let sum: std::time::Duration = profile.ops.iter().map(|o| o.total).sum();
    assert!(sum <= profile.total);
}

#[test]
fn view_ops_alias_instead_of_running() {
    register_test_ops();
    let mut b = FunctionBuilder::new();
    let x = b.param("x", f32_ty(&[2, 2]));
    let r = b.call("nn.relu", &[x], Attrs::new()).unwrap();
    let v = b.call("test.flatten", &[r], Attrs::new()).unwrap();
    let v2 = b.call("test.flatten", &[v], Attrs::new()).unwrap();
    let s = b.call("add", &[v2, v2], Attrs::new()).unwrap();
    let xv = b.call("test.flatten", &[x], Attrs::new()).unwrap();
    let body = b.tuple(&[s, v, xv]).unwrap();
    let f = b.finish(vec![x], body, Attrs::new()).unwrap();
    let exec = Executor::new(&Module::from_main(f), opts(1)).unwrap();
    // The view kernel (which would fail) is never built or run.
    assert_eq!(exec.num_instructions(), 2);
    let out = exec.run(&[t32(&[2, 2], &[1.0, -2.0, 3.0, -4.0])]).unwrap();
    assert_eq!(out[0].shape(), [4]);
    assert_eq!(values(&out[0]), [2.0, 0.0, 6.0, 0.0]);
    assert_eq!(out[1].shape(), [4]);
    assert_eq!(values(&out[1]), [1.0, 0.0, 3.0, 0.0]);
    assert_eq!(values(&out[2]), [1.0, -2.0, 3.0, -4.0]);
}

#[test]
fn buffers_are_reused_along_a_chain() {
    let mut b = FunctionBuilder::new();
    let x = b.param("x", f32_ty(&[1024]));
    let mut cur = x;
    for _ in 0..10 {
        cur = b.call("nn.relu", &[cur], Attrs::new()).unwrap();
    }
    let f = b.finish(vec![x], cur, Attrs::new()).unwrap();
    let exec = Executor::new(&Module::from_main(f), opts(1)).unwrap();
    let report = exec.memory_report();
    assert_eq!(report.naive_bytes, 10 * 4096);
    // Two scratch slots ping-pong; the last value is written straight into the result.
    assert_eq!(report.arena_slots, 2);
    assert_eq!(report.arena_bytes, 2 * 4096);
    assert_eq!(report.planned_bytes, 3 * 4096);
    assert!(report.planned_bytes < report.naive_bytes);
    let input: Vec<f32> = (0..1024).map(|i| i as f32 - 512.0).collect();
    let expected: Vec<f32> = input.iter().map(|v| v.max(0.0)).collect();
    let out = exec.run(&[t32(&[1024], &input)]).unwrap();
    assert_eq!(values(&out[0]), expected);
    // A second run reuses the pooled arena and gives the same result.
    let again = exec.run(&[t32(&[1024], &input)]).unwrap();
    assert_eq!(again, out);
}

#[test]
fn live_values_never_share_a_buffer() {
    // a = relu(x); b = relu(a); c = a + b: `a` must survive until `c`.
    let mut bld = FunctionBuilder::new();
    let x = bld.param("x", f32_ty(&[2]));
    let a = bld.call("nn.relu", &[x], Attrs::new()).unwrap();
    let b = bld.call("nn.relu", &[a], Attrs::new()).unwrap();
    let b2 = bld.call("add", &[b, b], Attrs::new()).unwrap();
    let c = bld.call("add", &[a, b2], Attrs::new()).unwrap();
    let f = bld.finish(vec![x], c, Attrs::new()).unwrap();
    let exec = Executor::new(&Module::from_main(f), opts(1)).unwrap();
    let out = exec.run(&[t32(&[2], &[3.0, -1.0])]).unwrap();
    assert_eq!(values(&out[0]), [9.0, 0.0]);
}

fn two_input_module() -> Module {
    let mut b = FunctionBuilder::new();
    let x = b.param("x", f32_ty(&[1, 3, 8, 8]));
    let y = b.param("y", f32_ty(&[1, 3, 8, 8]));
    let s = b.call("add", &[x, y], Attrs::new()).unwrap();
    Module::from_main(b.finish(vec![x, y], s, Attrs::new()).unwrap())
}

#[test]
fn inputs_are_checked_with_exact_messages() {
    let exec = Executor::new(&two_input_module(), opts(1)).unwrap();
    let good = Tensor::zeros(TensorType::new([1, 3, 8, 8], DType::Float32));
    let wide = Tensor::zeros(TensorType::new([1, 3, 8, 9], DType::Float32));
    let half = Tensor::zeros(TensorType::new([1, 3, 8, 8], DType::Float16));
    let err = exec.run(&[good.clone(), wide.clone()]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "input 'y': expected Tensor[(1, 3, 8, 8), float32] but got Tensor[(1, 3, 8, 9), float32]"
    );
    let err = exec.run(&[half, good.clone()]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "input 'x': expected Tensor[(1, 3, 8, 8), float32] but got Tensor[(1, 3, 8, 8), float16]"
    );
    let err = exec.run(std::slice::from_ref(&good)).unwrap_err();
    assert_eq!(err.to_string(), "expected 2 input(s) but got 1");

    let names: Vec<&str> = exec.inputs().iter().map(|i| i.name.as_str()).collect();
    assert_eq!(names, ["x", "y"]);
    let mut named = BTreeMap::new();
    named.insert("x".to_string(), good.clone());
    let err = exec.run_named(&named).unwrap_err();
    assert_eq!(err.to_string(), "missing input 'y'");
    named.insert("z".to_string(), good.clone());
    let err = exec.run_named(&named).unwrap_err();
    assert_eq!(err.to_string(), "unknown input 'z' (inputs are: x, y)");
    named.remove("z");
    named.insert(
        "y".to_string(),
        Tensor::full(good.ty().clone(), 2.0).unwrap(),
    );
    let out = exec.run_named(&named).unwrap();
    assert!(values(&out[0]).iter().all(|&v| v == 2.0));
}

#[test]
fn concurrent_runs_agree() {
    let (m, ..) = global_call_module();
    let exec = Executor::new(&m, opts(2)).unwrap();
    let expected = exec
        .run(&[t32(&[2], &[-1.0, 2.0]), t32(&[2], &[10.0, 20.0])])
        .unwrap();
    let results: Vec<Vec<Vec<Tensor>>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|_| {
                s.spawn(|| {
                    (0..25)
                        .map(|_| {
                            exec.run(&[t32(&[2], &[-1.0, 2.0]), t32(&[2], &[10.0, 20.0])])
                                .unwrap()
                        })
                        .collect()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for per_thread in results {
        for out in per_thread {
            assert_eq!(out, expected);
        }
    }
}

#[test]
fn half_precision_ops_are_promoted_with_round_to_nearest_even() {
    fn run_add<H: byoc_ir::tensor::Element>(a: Vec<H>, b: Vec<H>) -> Tensor {
        let ty = Type::tensor([a.len()], H::DTYPE);
        let mut bld = FunctionBuilder::new();
        let x = bld.param("x", ty.clone());
        let y = bld.param("y", ty);
        let s = bld.call("add", &[x, y], Attrs::new()).unwrap();
        let m = Module::from_main(bld.finish(vec![x, y], s, Attrs::new()).unwrap());
        let exec = Executor::new(&m, opts(1)).unwrap();
        let n = a.len();
        let mut out = exec
            .run(&[
                Tensor::from_vec([n], a).unwrap(),
                Tensor::from_vec([n], b).unwrap(),
            ])
            .unwrap();
        out.remove(0)
    }
    // float16 has 10 mantissa bits: 1 + 2^-11 is a tie that rounds to even (1.0), and
    // (1 + 2^-10) + 2^-11 is a tie that rounds up to the even 1 + 2^-9.
    let h = |v: f64| f16::from_f64(v);
    let out = run_add(
        vec![h(1.0), h(1.0 + 2f64.powi(-10)), h(1.5)],
        vec![h(2f64.powi(-11)), h(2f64.powi(-11)), h(-0.25)],
    );
    assert_eq!(out.dtype(), DType::Float16);
    assert_eq!(out.to_f64_vec(), [1.0, 1.0 + 2f64.powi(-9), 1.25]);
    // bfloat16 has 7 mantissa bits: the same ties one binade of precision coarser.
    let bh = |v: f64| bf16::from_f64(v);
    let out = run_add(
        vec![bh(1.0), bh(1.0 + 2f64.powi(-7))],
        vec![bh(2f64.powi(-8)), bh(2f64.powi(-8))],
    );
    assert_eq!(out.dtype(), DType::BFloat16);
    assert_eq!(out.to_f64_vec(), [1.0, 1.0 + 2f64.powi(-6)]);
}

#[test]
fn kernel_failures_name_op_and_site() {
    register_test_ops();
    let mut b = FunctionBuilder::new();
    let x = b.param("x", f32_ty(&[2]));
    let r = b.call("nn.relu", &[x], Attrs::new()).unwrap();
    let bad = b.call("test.fail", &[r], Attrs::new()).unwrap();
    let f = b.finish(vec![x], bad, Attrs::new()).unwrap();
    let exec = Executor::new(&Module::from_main(f), opts(1)).unwrap();
    let err = exec.run(&[t32(&[2], &[1.0, 2.0])]).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("@main:{bad}: test.fail: deliberate failure")
    );
    match err {
        ExecError::Kernel { op, .. } => assert_eq!(op, "test.fail"),
        other => panic!("unexpected error {other:?}"),
    }
    // The executor stays usable after a failed run.
    assert!(exec.run(&[t32(&[2], &[1.0, 2.0])]).is_err());
}

#[test]
fn kernel_build_failures_are_errors() {
    register_test_ops();
    let mut b = FunctionBuilder::new();
    let x = b.param("x", f32_ty(&[2]));
    let r = b.call("test.no_kernel", &[x], Attrs::new()).unwrap();
    let f = b.finish(vec![x], r, Attrs::new()).unwrap();
    let err = Executor::new(&Module::from_main(f), opts(1)).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("@main:{r}: test.no_kernel: has no host kernel")
    );
}

#[test]
fn type_errors_surface_from_planning() {
    let mut b = FunctionBuilder::new();
    let x = b.param("x", f32_ty(&[2, 3]));
    let y = b.param("y", f32_ty(&[4]));
    let s = b.call("add", &[x, y], Attrs::new()).unwrap();
    let f = b.finish(vec![x, y], s, Attrs::new()).unwrap();
    let err = Executor::new(&Module::from_main(f), opts(1)).unwrap_err();
    assert!(err
        .to_string()
        .starts_with("type inference failed: in @main"));
}

/// The threads of this process named by the executors of `threads` workers.
fn pool_threads(threads: usize) -> usize {
    let prefix = format!("byoc-{threads}x-");
    std::fs::read_dir("/proc/self/task")
        .expect("/proc/self/task lists the threads")
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .filter(|name| name.starts_with(&prefix))
        .count()
}

/// Executors of one thread count share one pool: a model with thousands of partitions on the
/// reference runtime plans a sub-executor for each, and must not start a thread for each. The
/// pool goes with the last executor. (3 workers: no other test of this file uses that count.)
#[test]
fn executors_of_one_thread_count_share_a_pool() {
    let mut b = FunctionBuilder::new();
    let x = b.param("x", Type::tensor([4], DType::Float32));
    let r = b.call("nn.relu", &[x], Attrs::new()).unwrap();
    let m = Module::from_main(b.finish(vec![x], r, Attrs::new()).unwrap());
    let executors: Vec<Executor> = (0..50)
        .map(|_| Executor::new(&m, opts(3)).expect("plans"))
        .collect();
    // The workers start asynchronously; one pool of 3, not 50.
    let started = (0..100).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(20));
        pool_threads(3) == 3
    });
    assert!(started, "{} pool thread(s)", pool_threads(3));
    let input = Tensor::from_slice(vec![4], &[-1.0f32, 2.0, -3.0, 4.0]).unwrap();
    for e in &executors {
        let out = e.run(std::slice::from_ref(&input)).expect("runs");
        assert_eq!(values(&out[0]), [0.0, 2.0, 0.0, 4.0]);
    }
    assert_eq!(pool_threads(3), 3);
    drop(executors);
    // rayon's workers leave once their pool is dropped; give them a moment.
    let gone = (0..100).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(20));
        pool_threads(3) == 0
    });
    assert!(gone, "{} pool thread(s) left", pool_threads(3));
}
