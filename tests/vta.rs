//! The vta plugin as a shared library, end to end through the CLI on a quantized
//! ResNet-style block in the realized int8 form (`examples/models/quantized_block.relay`):
//! `byoc run --target vta` is bit-exact with the host executor, with 1 and 2 virtual threads;
//! an artifact built for vta runs the same; `byoc inspect --format json` shows the vta
//! composites; `--emit-source` writes `vta_0.asm`; and bad options or configurations are
//! refused with messages, without taking byoc down. ResNet-50 from the ONNX light models
//! (random weights), quantized by the Quantize pass, runs with every int8 conv on vta and gives
//! the host's logits bit for bit (ignored by default; `./scripts/dev test` runs it with the
//! light models, see tests/onnx_light.rs).

mod common;
mod plugin_build;
#[path = "common/plugin_cli.rs"]
mod plugin_cli;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;

use anyhow::{anyhow, ensure, Context, Result};
use byoc_artifact::io::read_npz;
use byoc_exec::plugin::{compile_externals, PluginRegistry, PluginSearch, Runtimes};
use byoc_exec::{ExecOptions, Executor};
use byoc_ir::DType;
use byoc_ir::{Expr, Function};
use byoc_passes::{eliminate_dead_code, Pass, PassContext, QConfig, Quantize};
use byoc_pipeline::inputs::resolve_inputs;
use byoc_pipeline::pipeline::{partition, PartitionOptions};
use byoc_pipeline::target::Target;
use byoc_sdk::{CompileOptions, Plugin};
use plugin_cli::{light_model, stderr, succeeded, PluginCli};

const MODEL: &str = "examples/models/quantized_block.relay";

/// `libbyoc_plugin_vta.so`, built next to byoc, which searches there by default.
fn cli() -> &'static PluginCli {
    static CLI: OnceLock<PluginCli> = OnceLock::new();
    CLI.get_or_init(|| PluginCli::build("byoc-plugin-vta", "vta"))
}

fn scratch(name: &str) -> PathBuf {
    cli().scratch(name)
}

fn byoc(args: &[&str]) -> Output {
    cli().byoc(args, &[])
}

/// `byoc run MODEL --target vta` on one seeded random input, with `extra` arguments.
fn run_on_vta(extra: &[&str]) -> Output {
    let mut args = vec!["run", MODEL, "--target", "vta", "--random-inputs", "1"];
    args.extend_from_slice(extra);
    byoc(&args)
}

/// The outputs of two runs are identical, and not degenerate.
fn assert_same(a: &Path, b: &Path) -> Result<()> {
    let (a, b) = (read_npz(a)?, read_npz(b)?);
    ensure!(a == b, "outputs differ");
    for t in a.values() {
        let values: std::collections::BTreeSet<i64> =
            t.to_f64_vec().iter().map(|&v| v as i64).collect();
        ensure!(values.len() > 2, "degenerate output {values:?}");
    }
    Ok(())
}

#[test]
fn run_and_artifact_are_bit_exact_with_the_host() -> Result<()> {
    let dir = scratch("run");
    let path = |f: &str| dir.join(f).display().to_string();
    let run = |extra: &[&str], out: &str| -> Result<String> {
        let mut args = vec!["run", MODEL, "--random-inputs", "5", "-o"];
        let out = path(out);
        args.push(&out);
        args.extend_from_slice(extra);
        succeeded(byoc(&args))
    };
    run(&[], "host.npz")?;
    run(&["--target", "vta"], "vta.npz")?;
    assert_same(&dir.join("vta.npz"), &dir.join("host.npz"))?;
    run(
        &[
            "--target",
            "vta",
            "--plugin-option",
            "vta.virtual_threads=1",
        ],
        "vt1.npz",
    )?;
    assert_same(&dir.join("vt1.npz"), &dir.join("host.npz"))?;
    succeeded(byoc(&[
        "build",
        MODEL,
        "--target",
        "vta",
        "-o",
        &path("m.byoc"),
    ]))?;
    succeeded(byoc(&[
        "run",
        &path("m.byoc"),
        "--random-inputs",
        "5",
        "-o",
        &path("art.npz"),
    ]))?;
    assert_same(&dir.join("art.npz"), &dir.join("host.npz"))?;
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

#[test]
fn profile_and_bench_report_accelerator_counters() -> Result<()> {
    let out = run_on_vta(&["--profile"]);
    let err = stderr(&out);
    succeeded(out)?;
    let line = err
        .lines()
        .find(|l| l.starts_with("accelerator @vta_"))
        .ok_or_else(|| anyhow!("no accelerator line in\n{err}"))?;
    for key in [
        "(vta): cycles ",
        "gemm_utilization ",
        "inp_load_nbytes ",
        "wgt_load_nbytes ",
        "acc_load_nbytes ",
        "uop_load_nbytes ",
        "out_store_nbytes ",
        "gemm_counter ",
        "alu_counter ",
    ] {
        assert!(line.contains(key), "{key} missing: {line}");
    }
    let json = succeeded(byoc(&["bench", MODEL, "--target", "vta", "--iters", "1"]))?;
    let v: serde_json::Value = serde_json::from_str(&json)?;
    let accelerators = v["accelerators"]
        .as_array()
        .ok_or_else(|| anyhow!("{json}"))?;
    ensure!(!accelerators.is_empty(), "{json}");
    for a in accelerators {
        ensure!(a["target"] == "vta", "{a}");
        ensure!(
            a["function"]
                .as_str()
                .is_some_and(|f| f.starts_with("vta_")),
            "{a}"
        );
        ensure!(a["cycles"].as_f64().is_some_and(|c| c > 0.0), "{a}");
        let u = a["gemm_utilization"].as_f64().unwrap_or(-1.0);
        ensure!((0.0..=1.0).contains(&u), "{a}");
    }
    // Host-only runs report no accelerators.
    let json = succeeded(byoc(&["bench", MODEL, "--iters", "1"]))?;
    ensure!(json.contains("\"accelerators\": []"), "{json}");
    Ok(())
}

#[test]
fn inspect_shows_composites_and_emits_assembly() -> Result<()> {
    let json = succeeded(byoc(&[
        "inspect", MODEL, "--target", "vta", "--format", "json",
    ]))?;
    let v: serde_json::Value = serde_json::from_str(&json)?;
    let functions = v["functions"].as_array().ok_or_else(|| anyhow!("{json}"))?;
    let composites: Vec<&str> = functions
        .iter()
        .flat_map(|f| f["composites"].as_array().into_iter().flatten())
        .filter_map(|c| c.as_str())
        .collect();
    assert_eq!(
        composites.iter().filter(|c| **c == "vta.conv2d").count(),
        2,
        "{json}"
    );
    assert!(composites.contains(&"vta.dense"), "{json}");
    // The 1x1 shortcut conv's int32 result feeds the residual add as it is.
    assert!(composites.contains(&"vta.conv2d_int32"), "{json}");
    // `--quantize` applies before partitioning: a float model's convs after the first reach vta.
    let json = succeeded(byoc(&[
        "inspect",
        "examples/models/small_cnn.relay",
        "--quantize",
        "--target",
        "vta",
        "--format",
        "json",
    ]))?;
    ensure!(json.contains("\"vta.conv2d"), "{json}");
    let dir = scratch("emit");
    let src = dir.join("src");
    succeeded(byoc(&[
        "inspect",
        MODEL,
        "--target",
        "vta",
        "--emit-source",
        &src.display().to_string(),
    ]))?;
    let asm = std::fs::read_to_string(src.join("vta_0.asm"))?;
    for needle in ["GEMM   mac", "LOAD   wgt", "STORE  out", "FINISH"] {
        assert!(asm.contains(needle), "{needle} missing:\n{asm}");
    }
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

#[test]
fn bad_options_and_configurations_are_refused() -> Result<()> {
    let dir = scratch("bad");
    let config = dir.join("vta_config.json");
    std::fs::write(
        &config,
        r#"{"LOG_INP_WIDTH": 3, "LOG_WGT_WIDTH": 3, "LOG_ACC_WIDTH": 5,
        "LOG_BATCH": 0, "LOG_BLOCK": 4, "LOG_UOP_BUFF_SIZE": 15, "LOG_INP_BUFF_SIZE": 15,
        "LOG_WGT_BUFF_SIZE": 18, "LOG_ACC_BUFF_SIZE": 40}"#,
    )?;
    let option = format!("vta.config={}", config.display());
    for (opt, expect) in [
        ("vta.virtual_threads=3", "expected 1 or 2"),
        (option.as_str(), "LOG_ACC_BUFF_SIZE = 40"),
    ] {
        let out = run_on_vta(&["--plugin-option", opt]);
        ensure!(!out.status.success(), "{opt} accepted");
        ensure!(
            out.status.code() != Some(101),
            "{opt}: byoc panicked: {}",
            stderr(&out)
        );
        ensure!(stderr(&out).contains(expect), "{opt}: {}", stderr(&out));
    }
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

/// The int8 `nn.conv2d` calls of `f` and the data types of all its conv2d inputs.
fn conv_inputs(f: &Function) -> Vec<DType> {
    f.ids()
        .filter_map(|id| match f.expr(id) {
            Expr::Call(call) if call.is_op("nn.conv2d") => f
                .ty(call.args[0])
                .and_then(|t| t.as_tensor())
                .map(|t| t.dtype),
            _ => None,
        })
        .collect()
}

#[test]
#[ignore = "needs the ONNX light models: ./scripts/fetch_onnx_light.sh"]
fn quantized_resnet50_runs_on_vta_bit_exact_with_the_host() -> Result<()> {
    let dir = light_model("resnet50")?;
    let mut module = byoc_pipeline::model::load_model(
        &dir.join("random.onnx"),
        &byoc_pipeline::model::LoadOptions::default(),
    )?;
    Quantize::new(QConfig::default()).run(&mut module, &mut PassContext::new())?;
    // Compare the logits, not their softmax: with random weights the softmax is uniform.
    let main = module.get_mut("main").context("no @main")?;
    let Expr::Call(softmax) = main.expr(main.body) else {
        return Err(anyhow!("@main does not end in a call"));
    };
    ensure!(
        softmax.is_op("nn.softmax"),
        "@main does not end in a softmax"
    );
    main.body = softmax.args[0];
    *main = eliminate_dead_code(main).map_err(|e| anyhow!("{e}"))?;
    let quantized = module.main().map_err(|e| anyhow!("{e}"))?;
    let convs = conv_inputs(quantized);
    let int8 = convs.iter().filter(|&&d| d == DType::Int8).count();
    // 53 convolutions; the first stays in float (TVM's skip_conv_layers=[0]).
    ensure!(convs.len() == 53 && int8 == 52, "conv2d inputs {convs:?}");

    let registry = PluginRegistry::discover(&PluginSearch::only(&[cli().library()]))?;
    let plugin = registry.get("vta")?;
    let target = Target::from_description(&plugin.describe())?;
    let result = partition(&module, &[target], &PartitionOptions::default())?;
    // The partition report: the only conv2d left on the host is the float one.
    let host = result.module.main().map_err(|e| anyhow!("{e}"))?;
    ensure!(
        conv_inputs(host) == [DType::Float32],
        "conv2d left on the host: {:?}",
        conv_inputs(host)
    );
    let rejected: Vec<_> = result
        .rejected
        .iter()
        .filter(|r| r.op == "nn.conv2d")
        .collect();
    ensure!(rejected.len() == 1, "{rejected:?}");

    let runtimes = Runtimes::new().with("vta", plugin);
    let externals = compile_externals(&result.module, &runtimes, &CompileOptions::new())?;
    let on_vta = Executor::with_externals(&result.module, ExecOptions::default(), &externals)?;
    let inputs = dir.join("random_input.npz");
    let got = on_vta
        .run_named(&resolve_inputs(&result.module, Some(&inputs), None)?)
        .context("run on vta")?;
    let want = Executor::new(&module, ExecOptions::default())?
        .run_named(&resolve_inputs(&module, Some(&inputs), None)?)
        .context("run on the host")?;
    ensure!(got == want, "the logits on vta differ from the host's");
    let logits: std::collections::BTreeSet<u32> = want[0]
        .as_slice::<f32>()?
        .iter()
        .map(|v| v.to_bits())
        .collect();
    ensure!(
        logits.len() > 100,
        "degenerate logits: {} values",
        logits.len()
    );
    Ok(())
}
