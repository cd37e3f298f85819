//! Compiled host code against the reference kernels: every supported op alone, fusion
//! patterns (chains, broadcasts, diamonds, scalars), a property test over random elementwise
//! chains and broadcast shapes, fallback of unsupported ops, strict mode, and serialized
//! modules. Results must be bit-identical (NaN compared as NaN) except for the libm calls,
//! which are the same C functions on both sides and so are bit-identical here too.

use std::sync::Arc;

use byoc_core::exec::{ExecOptions, Executor, ExternalModules};
use byoc_core::ir::Module;
use byoc_core::passes::infer_types;
use byoc_core::sdk::{CompileOptions, Plugin};
use byoc_core::tensor::Tensor;
use byoc_core::text::parse_module;
use byoc_host_llvm::{compile_host, HostCodegenError, HostLlvm};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};

fn parse(src: &str) -> Module {
    let mut m = parse_module(src).expect("the test module parses");
    infer_types(&mut m).expect("the test module types");
    m
}

fn options(threads: usize) -> CompileOptions {
    CompileOptions::new().with(byoc_core::sdk::THREADS_OPTION, threads.to_string())
}

/// Random float32 inputs for `m`'s parameters, with a few special values mixed in.
fn inputs(m: &Module, seed: u64) -> Vec<Tensor> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let main = m.main().unwrap();
    main.params
        .iter()
        .map(|&p| {
            let ty = main.var(p).unwrap().ty.clone();
            let t = ty.as_tensor().expect("tensor parameter").clone();
            let n = t.num_elements();
            let data: Vec<f32> = (0..n)
                .map(|i| match i % 97 {
                    13 => 0.0,
                    29 => -0.0,
                    41 => f32::NAN,
                    _ => rng.gen_range(-4.0f32..4.0),
                })
                .collect();
            Tensor::from_vec(t.shape.clone(), data).unwrap()
        })
        .collect()
}

fn run(m: &Module, ext: &ExternalModules, threads: usize, x: &[Tensor]) -> Vec<Tensor> {
    Executor::with_externals(
        m,
        ExecOptions {
            threads,
            profile: false,
        },
        ext,
    )
    .expect("the module plans")
    .run(x)
    .expect("the module runs")
}

fn bits(t: &Tensor) -> Vec<u32> {
    t.as_slice::<f32>()
        .unwrap()
        .iter()
        .map(|v| if v.is_nan() { u32::MAX } else { v.to_bits() })
        .collect()
}

/// Compiles `src` with the host code generator and checks it against the reference kernels
/// on random inputs, with 1 and 3 threads; returns the number of compiled functions.
fn check(src: &str) -> usize {
    let m = parse(src);
    let x = inputs(&m, 7);
    let want = run(&m, &ExternalModules::new(), 1, &x);
    let mut compiled = 0;
    for threads in [1, 3] {
        let host = compile_host(&m, &options(threads), true).expect("host code compiles");
        assert!(host.fallbacks.is_empty(), "{:?}", host.fallbacks);
        let got = run(&host.module, &host.externals, threads, &x);
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(&want) {
            assert_eq!(g.ty(), w.ty());
            assert_eq!(bits(g), bits(w), "{src}");
        }
        compiled = host.externals.len();
    }
    compiled
}

#[test]
fn each_unary_op_matches_the_reference_kernel() {
    for op in [
        "nn.relu", "abs", "negative", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "round",
        "floor", "ceil", "copy",
    ] {
        let n = check(&format!(
            "def @main(%x: Tensor[(3, 40000), float32]) {{ {op}(%x) }}"
        ));
        assert_eq!(n, 1, "{op}");
    }
    check("def @main(%x: Tensor[(5, 7), float32]) { clip(%x, a_min=-1.5f, a_max=2f) }");
}

#[test]
fn each_binary_op_matches_the_reference_kernel_with_broadcasting() {
    for op in [
        "add", "subtract", "multiply", "divide", "power", "maximum", "minimum",
    ] {
        check(&format!(
            "def @main(%a: Tensor[(2, 3, 4, 5), float32], %b: Tensor[(3, 1, 5), float32]) {{ {op}(%a, %b) }}"
        ));
        check(&format!(
            "def @main(%a: Tensor[(6), float32], %b: Tensor[(4, 1), float32]) {{ {op}(%a, %b) }}"
        ));
    }
}

#[test]
fn fusion_patterns_match_the_reference_kernels() {
    // A conv-style epilogue: per-channel scale and shift, relu, residual add.
    let n = check(
        "def @main(%x: Tensor[(1, 16, 9, 9), float32], %s: Tensor[(16, 1, 1), float32],
                   %t: Tensor[(16, 1, 1), float32], %r: Tensor[(1, 16, 9, 9), float32]) {
           %0 = multiply(%x, %s);
           %1 = add(%0, %t);
           %2 = nn.relu(%1);
           add(%2, %r)
         }",
    );
    assert_eq!(n, 1);
    // nn.bias_add along axis 1 and along the last axis, in a chain.
    check(
        "def @main(%x: Tensor[(2, 6, 3, 5), float32], %b: Tensor[(6), float32], %c: Tensor[(5), float32]) {
           %0 = nn.bias_add(%x, %b);
           %1 = nn.relu(%0);
           nn.bias_add(%1, %c, axis=-1)
         }",
    );
    // Swish (a diamond) with a scalar constant, and an output used twice.
    check(
        "def @main(%x: Tensor[(4, 1000), float32]) {
           %0 = sigmoid(%x);
           %1 = multiply(%x, %0);
           %2 = multiply(%1, 0.5f);
           (%2, exp(%2))
         }",
    );
    // A scalar result and scalar inputs.
    check("def @main(%x: Tensor[(), float32], %y: Tensor[(), float32]) { add(%x, %y) }");
    // Zero elements.
    check("def @main(%x: Tensor[(0, 3), float32]) { nn.relu(%x) }");
}

#[test]
fn unsupported_ops_fall_back_to_the_reference_kernels_and_strict_mode_refuses_them() {
    let src = "def @main(%x: Tensor[(8), float32], %y: Tensor[(8), int32]) {
                 %0 = erf(%x);
                 %1 = add(%y, 1);
                 (exp(%0), %1)
               }";
    let m = parse(src);
    let host = compile_host(&m, &options(2), false).expect("fallback never fails the build");
    let reasons: Vec<String> = host.fallbacks.iter().map(|f| f.to_string()).collect();
    assert_eq!(host.fallbacks.len(), 2, "{reasons:?}");
    assert!(reasons.iter().any(|r| r.contains("erf")), "{reasons:?}");
    assert!(reasons.iter().any(|r| r.contains("int32")), "{reasons:?}");
    let x = inputs(&m, 3);
    let x = vec![
        x[0].clone(),
        Tensor::from_vec(vec![8], (0..8).collect::<Vec<i32>>()).unwrap(),
    ];
    let want = run(&m, &ExternalModules::new(), 1, &x);
    let got = run(&host.module, &host.externals, 2, &x);
    assert_eq!(bits(&got[0]), bits(&want[0]));
    assert_eq!(got[1], want[1]);
    let err = compile_host(&m, &options(2), true).unwrap_err();
    assert!(matches!(err, HostCodegenError::Strict { .. }), "{err}");
}

#[test]
fn compiled_modules_serialize_and_load_without_recompiling() {
    let m = parse(
        "def @main(%a: Tensor[(3, 50), float32], %b: Tensor[(50), float32]) {
           %0 = add(%a, %b);
           tanh(%0)
         }",
    );
    let host = compile_host(&m, &options(2), true).unwrap();
    let x = inputs(&m, 11);
    let want = run(&host.module, &host.externals, 2, &x);
    let mut loaded = ExternalModules::new();
    for (name, e) in host.externals.iter() {
        let bytes = e.module.serialize().unwrap();
        let module = HostLlvm.deserialize(&bytes, &options(2)).unwrap();
        let mut e = e.clone();
        e.module = Arc::from(module);
        loaded.insert(name, e);
        // Damaged bytes are an error, never a crash.
        for cut in [0, 7, 12, 19, 40] {
            assert!(HostLlvm.deserialize(&bytes[..cut], &options(1)).is_err());
        }
    }
    let got = run(&host.module, &loaded, 2, &x);
    assert_eq!(bits(&got[0]), bits(&want[0]));
}

/// A random elementwise chain over two inputs whose shapes broadcast.
fn chain_strategy() -> impl Strategy<Value = String> {
    let shape = prop::collection::vec(1usize..5, 0..4);
    let ops = prop::collection::vec((0usize..12, any::<bool>()), 1..8);
    (shape, prop::collection::vec(any::<bool>(), 4), ops).prop_map(|(out, keep, ops)| {
        // The second input keeps some dimensions of the first and sets the others to 1.
        let b: Vec<usize> = out
            .iter()
            .zip(keep.iter().cycle())
            .map(|(&d, &k)| if k { d } else { 1 })
            .collect();
        let dims = |s: &[usize]| {
            s.iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let shape_text = |s: &[usize]| format!("({})", dims(s));
        let mut body = String::new();
        let mut last = "%a".to_string();
        for (i, (op, use_b)) in ops.iter().enumerate() {
            let other = if *use_b { "%b" } else { "%a" };
            let expr = match op {
                0 => format!("add({last}, {other})"),
                1 => format!("subtract({last}, {other})"),
                2 => format!("multiply({last}, {other})"),
                3 => format!("divide({last}, {other})"),
                4 => format!("maximum({last}, {other})"),
                5 => format!("minimum({other}, {last})"),
                6 => format!("nn.relu({last})"),
                7 => format!("negative({last})"),
                8 => format!("sigmoid({last})"),
                9 => format!("tanh({last})"),
                10 => format!("clip({last}, a_min=-2f, a_max=3f)"),
                _ => format!("add({last}, 0.25f)"),
            };
            body.push_str(&format!("%{i} = {expr};\n"));
            last = format!("%{i}");
        }
        format!(
            "def @main(%a: Tensor[{}, float32], %b: Tensor[{}, float32]) {{\n{body}{last}\n}}",
            shape_text(&out),
            shape_text(&b)
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn random_elementwise_chains_match_the_reference_kernels(src in chain_strategy()) {
        check(&src);
    }
}
