//! The vta plugin as a shared library, end to end through the CLI on a quantized
//! ResNet-style block in the realized int8 form (`examples/models/quantized_block.relay`):
//! `byoc run --target vta` is bit-exact with the host executor, with 1 and 2 virtual threads;
//! an artifact built for vta runs the same; `byoc inspect --format json` shows the vta
//! composites; `--emit-source` writes `vta_0.asm`; and bad options or configurations are
//! refused with messages, without taking byoc down.

mod plugin_build;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use anyhow::{anyhow, ensure, Result};
use byoc_core::io::read_npz;
use plugin_build::build_next_to_byoc;

const MODEL: &str = "examples/models/quantized_block.relay";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn plugin_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| build_next_to_byoc(&root(), &["byoc-plugin-vta"]))
}

fn scratch(name: &str) -> PathBuf {
    let dir = plugin_dir()
        .join("vta-tests")
        .join(format!("{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

fn byoc(args: &[&str]) -> Output {
    plugin_dir();
    Command::new(env!("CARGO_BIN_EXE_byoc"))
        .current_dir(root())
        .args(args)
        .output()
        .expect("byoc runs")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn succeeded(out: Output) -> Result<String> {
    ensure!(out.status.success(), "byoc failed: {}", stderr(&out));
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
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
    let out = byoc(&[
        "run",
        MODEL,
        "--target",
        "vta",
        "--random-inputs",
        "1",
        "--profile",
    ]);
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
        let out = byoc(&[
            "run",
            MODEL,
            "--target",
            "vta",
            "--random-inputs",
            "1",
            "--plugin-option",
            opt,
        ]);
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
