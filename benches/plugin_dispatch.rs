//! Round-trip cost of one external call into a plugin `.so`, with tiny tensors.
//!
//! Run with `cargo build --release -p byoc-plugin-tinyacc && cargo bench --bench
//! plugin_dispatch`. Measures (a) one `run` of a compiled tinyacc module through the C ABI
//! (`nn.relu` over 4 floats: views built, the slot called, the plugin's views checked, the
//! kernel run), and (b) a whole executor run of `@main(%x) = @tinyacc_0(%x)` against the same
//! module with `nn.relu` on the host, whose difference is the executor's dispatch overhead.
//! Prints medians over batches of calls.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use byoc_exec::plugin::load_plugin;
use byoc_exec::{ExecOptions, Executor};
use byoc_ir::text::parse_module;
use byoc_ir::{Module, Tensor};
use byoc_pipeline::target::Target;
use byoc_pipeline::{build, BuildOptions, HostCodegen};
use byoc_sdk::{CompileOptions, PartitionedFunction, Plugin, TensorMut};

/// Calls per batch and batches: the full measurement under `cargo bench`, a smoke run under
/// `cargo test`.
fn sizes() -> (usize, usize) {
    if std::env::args().any(|a| a == "--bench") {
        (20_000, 15)
    } else {
        (10, 1)
    }
}

/// Median nanoseconds per call of `f` over batches of calls.
fn median_ns(mut f: impl FnMut()) -> f64 {
    let (batch, batches) = sizes();
    for _ in 0..batch {
        f();
    }
    let mut per_call: Vec<f64> = (0..batches)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..batch {
                f();
            }
            t.elapsed().as_nanos() as f64 / batch as f64
        })
        .collect();
    per_call.sort_by(f64::total_cmp);
    per_call[batches / 2]
}

fn module(text: &str) -> Module {
    parse_module(text).unwrap_or_else(|e| panic!("bench model: {e}"))
}

fn main() {
    let dir: PathBuf = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent()?.parent().map(PathBuf::from))
        .unwrap_or_default();
    let so = dir.join(format!(
        "{}byoc_plugin_tinyacc{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    ));
    let plugin = match load_plugin(&so) {
        Ok(p) => Arc::new(p),
        Err(e) => {
            eprintln!("{e}\nbuild it first: cargo build --release -p byoc-plugin-tinyacc");
            // Under `cargo test` the bench is only a smoke run; without the plugin there is
            // nothing to smoke-test.
            let measuring = std::env::args().any(|a| a == "--bench");
            std::process::exit(if measuring { 2 } else { 0 });
        }
    };
    let partitioned = module(
        "def @main(%x: Tensor[(4), float32]) {\n  @tinyacc_0(%x)\n}\n\
         def @tinyacc_0(%a: Tensor[(4), float32], Compiler=\"tinyacc\", global_symbol=\"tinyacc_0\", Primitive=1) {\n  nn.relu(%a)\n}\n",
    );
    let host = module("def @main(%x: Tensor[(4), float32]) {\n  nn.relu(%x)\n}\n");
    let x =
        Tensor::from_vec(vec![4], vec![1.0f32, -2.0, 3.0, -4.0]).unwrap_or_else(|e| panic!("{e}"));

    // (a) One call through the ABI.
    let f = PartitionedFunction::from_text(
        &partitioned
            .get("tinyacc_0")
            .map(|f| {
                let mut m = Module::new();
                m.insert("tinyacc_0", f.clone());
                m.to_string()
            })
            .unwrap_or_default(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let compiled = plugin
        .compile(&f, &CompileOptions::new())
        .unwrap_or_else(|e| panic!("{e}"));
    let mut out = Tensor::zeros(x.ty().clone());
    let abi_ns = median_ns(|| {
        let mut outs = [TensorMut {
            ty: x.ty(),
            bytes: &mut out.view_mut().bytes[..],
        }];
        compiled
            .run(&[x.view()], &mut outs)
            .unwrap_or_else(|e| panic!("{e}"));
    });

    // (b) Whole executor runs, external call versus host kernel.
    let opts = ExecOptions {
        threads: 1,
        profile: false,
        memory_budget: None,
    };
    let tinyacc = Target::from_description(&plugin.describe())
        .unwrap_or_else(|e| panic!("{e}"))
        .with_runtime(plugin.clone());
    let built = build(
        &partitioned,
        &[tinyacc],
        &BuildOptions {
            host_codegen: HostCodegen::Kernels,
            exec: opts,
            ..BuildOptions::default()
        },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let with_ext = built.executor().unwrap_or_else(|e| panic!("{e}"));
    let host_only = Executor::new(&host, opts).unwrap_or_else(|e| panic!("{e}"));
    let inputs = [x.clone()];
    let ext_ns = median_ns(|| {
        with_ext.run(&inputs).unwrap_or_else(|e| panic!("{e}"));
    });
    let host_ns = median_ns(|| {
        host_only.run(&inputs).unwrap_or_else(|e| panic!("{e}"));
    });
    println!("plugin module run through the ABI (relu, 4 floats): {abi_ns:.0} ns");
    println!("executor run, external call:                        {ext_ns:.0} ns");
    println!("executor run, host kernel:                          {host_ns:.0} ns");
    println!(
        "dispatch overhead of the external call:             {:.0} ns",
        ext_ns - host_ns
    );
}
