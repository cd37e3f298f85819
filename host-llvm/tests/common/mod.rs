//! Helpers shared by the host code generator's tests: parsing, random inputs, running a
//! module on the reference kernels or with compiled host code, and bit-exact comparison.
#![allow(
    dead_code,
    reason = "each test crate uses its own subset of the helpers"
)]

use std::sync::Arc;

use byoc_exec::{ExecOptions, Executor, ExternalModules};
use byoc_host_llvm::{compile_host, HostCode, HostCodegenError, HostLlvm};
use byoc_ir::infer_types;
use byoc_ir::tensor::Tensor;
use byoc_ir::text::parse_module;
use byoc_ir::Module;
use byoc_passes::host_fuse::group_kind;
use byoc_sdk::CompileOptions;
use byoc_sdk::Plugin;
use rand::{Rng, SeedableRng};

pub fn parse(src: &str) -> Module {
    let mut m = parse_module(src).expect("the test module parses");
    infer_types(&mut m).expect("the test module types");
    m
}

pub fn options(threads: usize) -> CompileOptions {
    CompileOptions::new().with(byoc_sdk::THREADS_OPTION, threads.to_string())
}

/// Random float32 inputs for `m`'s parameters, with a few special values mixed in.
pub fn inputs(m: &Module, seed: u64) -> Vec<Tensor> {
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

pub fn run(m: &Module, ext: &ExternalModules, threads: usize, x: &[Tensor]) -> Vec<Tensor> {
    Executor::with_externals(
        m,
        ExecOptions {
            threads,
            profile: false,
            memory_budget: None,
        },
        ext,
    )
    .expect("the module plans")
    .run(x)
    .expect("the module runs")
}

pub fn bits(t: &Tensor) -> Vec<u32> {
    t.as_slice::<f32>()
        .unwrap()
        .iter()
        .map(|v| if v.is_nan() { u32::MAX } else { v.to_bits() })
        .collect()
}

/// Compiles `src` with the host code generator and checks it against the reference kernels
/// on random inputs, with 1 and 3 threads; returns the number of compiled functions.
pub fn check(src: &str) -> usize {
    let m = parse(src);
    let x = inputs(&m, 7);
    check_with(&m, &x)
}

/// Compiles `m` with the host code generator (strict: nothing falls back) and checks it
/// against the reference kernels on inputs `x`, with 1 and 3 threads, bit for bit; returns
/// the number of compiled functions.
pub fn check_with(m: &Module, x: &[Tensor]) -> usize {
    let want = run(m, &ExternalModules::new(), 1, x);
    let mut compiled = 0;
    for threads in [1, 3] {
        let host = compile_host(m, &options(threads), true).expect("host code compiles");
        assert!(host.fallbacks.is_empty(), "{:?}", host.fallbacks);
        let got = run(&host.module, &host.externals, threads, x);
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(&want) {
            assert_eq!(g.ty(), w.ty());
            assert_eq!(bits(g), bits(w), "{}", byoc_ir::text::print_module(m));
        }
        compiled = host.externals.len();
    }
    compiled
}

/// Random finite inputs in `-2..2` (a NaN would make most sums NaN and hide their order).
pub fn finite(m: &Module, seed: u64) -> Vec<Tensor> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    inputs(m, seed)
        .into_iter()
        .map(|t| {
            let data: Vec<f32> = (0..t.ty().num_elements())
                .map(|_| rng.gen_range(-2.0f32..2.0))
                .collect();
            Tensor::from_vec(t.ty().shape.clone(), data).unwrap()
        })
        .collect()
}

/// Checks `src` bit for bit against the reference kernels on finite inputs and on inputs with
/// NaN and signed zeros, and that the host code holds one `reduction` group with `op` and no
/// reduction is left in `@main`.
pub fn check_reduction(src: &str, op: &str) {
    let m = parse(src);
    let host = compile_host(&m, &options(2), true).expect("host code compiles");
    let reductions: Vec<String> = host
        .module
        .functions()
        .filter(|(name, f)| host.externals.get(name).is_some() && group_kind(f) == "reduction")
        .flat_map(|(_, f)| f.op_names())
        .collect();
    assert!(
        reductions.contains(&op.to_string()),
        "{src}\n{reductions:?}"
    );
    let main_ops = host.module.main().unwrap().op_names();
    assert!(!main_ops.contains(&op.to_string()), "{src}\n{main_ops:?}");
    check_with(&m, &finite(&m, 5));
    check_with(&m, &inputs(&m, 9));
}

/// Runs `host` on inputs `x` with `threads`, each compiled function serialized and loaded
/// back first (no recompiling).
pub fn run_reloaded(host: &HostCode, threads: usize, x: &[Tensor]) -> Vec<Tensor> {
    let mut loaded = ExternalModules::new();
    for (name, e) in host.externals.iter() {
        let bytes = e.module.serialize().unwrap();
        let module = HostLlvm.deserialize(&bytes, &options(threads)).unwrap();
        let mut e = e.clone();
        e.module = Arc::from(module);
        loaded.insert(name, e);
    }
    run(&host.module, &loaded, threads, x)
}

/// Checks that `src` builds with its one group (of `ops`) falling back for a reason naming
/// `why`, runs bit for bit as on the reference kernels, and that strict mode refuses it.
pub fn check_fallback(src: &str, ops: &[&str], why: &str) {
    let m = parse(src);
    let host = compile_host(&m, &options(2), false).expect("fallback never fails the build");
    assert_eq!(host.fallbacks.len(), 1, "{:?}", host.fallbacks);
    assert_eq!(host.fallbacks[0].ops, ops);
    let reason = &host.fallbacks[0].reason;
    assert!(reason.contains(why), "{reason}");
    let x = finite(&m, 1);
    let want = run(&m, &ExternalModules::new(), 1, &x);
    let got = run(&host.module, &host.externals, 2, &x);
    assert_eq!(bits(&got[0]), bits(&want[0]));
    let err = compile_host(&m, &options(2), true).unwrap_err();
    assert!(matches!(err, HostCodegenError::Strict { .. }), "{err}");
}
