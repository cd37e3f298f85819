//! The csource plugin as a shared library, end to end: `byoc plugins` lists it; `byoc run
//! --target csource` matches the host executor; `byoc build` + `byoc run model.byoc` work
//! without a C compiler (`CC=false` at run time); a failing compiler and a corrupt shared
//! object inside an artifact give clear errors; `byoc inspect --emit-source` writes the C of
//! each partition; and SqueezeNet (random weights, from the ONNX light models) partitioned to
//! csource matches onnxruntime (ignored by default; `./scripts/dev test` runs it with the light
//! models, see tests/onnx_light.rs).

mod common;
mod plugin_build;
#[path = "common/plugin_cli.rs"]
mod plugin_cli;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;

use anyhow::{anyhow, ensure, Context, Result};
use byoc_artifact::io::read_npz;
use byoc_artifact::Artifact;
use byoc_exec::plugin::{compile_externals, PluginRegistry, PluginSearch, Runtimes};
use byoc_exec::{ExecOptions, Executor};
use byoc_ir::Tensor;
use byoc_passes::prune::op_names;
use byoc_pipeline::inputs::{output_map, resolve_inputs};
use byoc_pipeline::pipeline::{partition, PartitionOptions};
use byoc_pipeline::target::Target;
use byoc_sdk::{CompileOptions, Plugin};
use plugin_cli::{light_model, stderr, succeeded, PluginCli};

const MODEL: &str = "examples/models/small_cnn.relay";

/// `libbyoc_plugin_csource.so`, built next to byoc, which searches there by default.
fn cli() -> &'static PluginCli {
    static CLI: OnceLock<PluginCli> = OnceLock::new();
    CLI.get_or_init(|| PluginCli::build("byoc-plugin-csource", "csource"))
}

fn scratch(name: &str) -> PathBuf {
    cli().scratch(name)
}

fn byoc(args: &[&str], env: &[(&str, &str)]) -> Output {
    cli().byoc(args, env)
}

/// Asserts exit code 2 and returns standard error.
fn refused(out: Output) -> Result<String> {
    ensure!(
        out.status.code() == Some(2),
        "expected exit code 2, got {:?}; stdout {}; stderr {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        stderr(&out)
    );
    Ok(stderr(&out))
}

/// Every output of `a` is within `1e-4 + 1e-4 |b|` of `b`'s.
fn assert_close(a: &Path, b: &Path) -> Result<()> {
    let (a, b) = (read_npz(a)?, read_npz(b)?);
    ensure!(
        a.keys().eq(b.keys()),
        "outputs differ: {:?} {:?}",
        a.keys(),
        b.keys()
    );
    for (name, x) in &a {
        let (x, y) = (x.to_f64_vec(), b[name].to_f64_vec());
        ensure!(x.len() == y.len(), "{name}: sizes differ");
        for (i, (p, q)) in x.iter().zip(&y).enumerate() {
            ensure!(
                (p - q).abs() <= 1e-4 + 1e-4 * q.abs(),
                "{name}[{i}]: {p} vs {q}"
            );
        }
    }
    Ok(())
}

#[test]
fn plugins_lists_csource() -> Result<()> {
    let out = succeeded(byoc(&["plugins"], &[]))?;
    let line = out
        .lines()
        .find(|l| l.starts_with("csource "))
        .ok_or_else(|| anyhow!("csource not listed:\n{out}"))?;
    assert!(line.contains("(ABI 2.1, SDK "), "{line}");
    assert!(
        out.contains("  pattern: csource.conv2d_bias_relu = "),
        "{out}"
    );
    assert!(out.contains("nn.conv2d, nn.dense, nn.bias_add"), "{out}");
    Ok(())
}

#[test]
fn run_build_and_artifact_without_compiler_match_the_host() -> Result<()> {
    let dir = scratch("run");
    let path = |f: &str| dir.join(f).display().to_string();
    succeeded(byoc(
        &[
            "run",
            MODEL,
            "--random-inputs",
            "7",
            "-o",
            &path("host.npz"),
        ],
        &[],
    ))?;
    succeeded(byoc(
        &[
            "run",
            MODEL,
            "--target",
            "csource",
            "--random-inputs",
            "7",
            "-o",
            &path("cs.npz"),
        ],
        &[],
    ))?;
    assert_close(&dir.join("cs.npz"), &dir.join("host.npz"))?;
    let built = succeeded(byoc(
        &["build", MODEL, "--target", "csource", "-o", &path("m.byoc")],
        &[],
    ))?;
    assert!(built.contains("target csource: plugin csource "), "{built}");
    // The artifact carries the compiled shared objects: no compiler is needed to run it.
    succeeded(byoc(
        &[
            "run",
            &path("m.byoc"),
            "--random-inputs",
            "7",
            "-o",
            &path("art.npz"),
        ],
        &[("CC", "false")],
    ))?;
    assert_eq!(
        read_npz(dir.join("art.npz"))?,
        read_npz(dir.join("cs.npz"))?
    );
    // Passing the constants as arguments gives the same results.
    succeeded(byoc(
        &[
            "run",
            MODEL,
            "--target",
            "csource",
            "--plugin-option",
            "csource.embed_constants=false",
            "--random-inputs",
            "7",
            "-o",
            &path("args.npz"),
        ],
        &[],
    ))?;
    assert_close(&dir.join("args.npz"), &dir.join("host.npz"))?;
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

#[test]
fn failing_compiler_is_reported_with_the_kept_file() -> Result<()> {
    let err = refused(byoc(
        &["run", MODEL, "--target", "csource", "--random-inputs", "1"],
        &[("CC", "false")],
    ))?;
    assert!(
        err.contains("plugin 'csource' failed during compile of @"),
        "{err}"
    );
    let tail = err
        .split("csource: 'false' failed (exit status: 1) on ")
        .nth(1)
        .ok_or_else(|| anyhow!("no compiler failure in {err}"))?;
    let kept = PathBuf::from(
        tail.split(" (kept for inspection)")
            .next()
            .ok_or_else(|| anyhow!("no kept file in {err}"))?,
    );
    assert!(kept.is_file(), "{}", kept.display());
    std::fs::remove_dir_all(kept.parent().ok_or_else(|| anyhow!("no dir"))?)?;
    Ok(())
}

/// Code that needs a symbol nothing defines (here the partition's arena `malloc`, wrapped by
/// the user's linker flags) is refused when it is compiled, naming the symbol, so `build` never signs
/// an artifact whose every run would end at the first call of the partition.
#[test]
fn partitions_with_undefined_symbols_are_refused_before_they_are_signed() -> Result<()> {
    let dir = scratch("undefined-symbol");
    let artifact = dir.join("m.byoc");
    let err = refused(byoc(
        &[
            "build",
            MODEL,
            "--target",
            "csource",
            "--plugin-option",
            "csource.cflags=-Wl,--wrap=malloc",
            "-o",
            &artifact.display().to_string(),
        ],
        &[],
    ))?;
    assert!(err.contains("__wrap_malloc"), "{err}");
    assert!(!artifact.exists(), "an artifact was written");
    Ok(())
}

/// Flags that would change the ABI byoc calls the compiled code through are refused before
/// the compiler runs, from the option or the environment, naming the flag.
#[test]
fn compiler_flags_that_change_the_abi_are_refused() -> Result<()> {
    let dir = scratch("abi-flags");
    let artifact = dir.join("m.byoc");
    let build = |option: &str, env: &[(&str, &str)]| {
        let mut args = vec!["build", MODEL, "--target", "csource"];
        if !option.is_empty() {
            args.extend(["--plugin-option", option]);
        }
        let out = artifact.display().to_string();
        args.extend(["-o", &out]);
        refused(byoc(&args, env))
    };
    let err = build("csource.cflags=-O3 -Dfloat=double", &[])?;
    assert!(
        err.contains("the compiler flag '-Dfloat=double' defines the C keyword 'float'"),
        "{err}"
    );
    let err = build("", &[("BYOC_CSOURCE_CFLAGS", "-fsanitize=address")])?;
    assert!(
        err.contains("'-fsanitize=address' sanitized code needs its runtime"),
        "{err}"
    );
    let err = build("csource.cflags=-D malloc=my_alloc", &[])?;
    assert!(
        err.contains("'-D malloc=my_alloc' defines 'malloc', which the generated code uses"),
        "{err}"
    );
    assert!(!artifact.exists(), "an artifact was written");
    Ok(())
}

/// `byoc` bounds GNU OpenMP's spinning (`GOMP_SPINCOUNT=1000`) unless the user chose an
/// OpenMP wait policy or spin count, which are passed on as given: seen from the environment a
/// compiler started by byoc inherits, as oneDNN's libgomp in the same process would.
#[test]
fn openmp_spinning_is_bounded_unless_the_user_chose() -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch("openmp-env");
    let seen = dir.join("seen");
    let compiler = dir.join("cc.sh");
    std::fs::write(
        &compiler,
        format!(
            "#!/bin/sh\necho \"spin=${{GOMP_SPINCOUNT-unset}} policy=${{OMP_WAIT_POLICY-unset}}\" > '{}'\nexit 1\n",
            seen.display()
        ),
    )?;
    std::fs::set_permissions(&compiler, std::fs::Permissions::from_mode(0o755))?;
    let seen_with = |env: &[(&str, &str)]| -> Result<String> {
        let mut command =
            common::byoc_command(&["run", MODEL, "--target", "csource", "--random-inputs", "0"]);
        command
            .env_remove("GOMP_SPINCOUNT")
            .env_remove("OMP_WAIT_POLICY")
            .env("CC", &compiler)
            .envs(env.iter().copied());
        refused(command.output()?)?;
        Ok(std::fs::read_to_string(&seen)?.trim().to_owned())
    };
    assert_eq!(seen_with(&[])?, "spin=1000 policy=unset");
    assert_eq!(
        seen_with(&[("GOMP_SPINCOUNT", "50000")])?,
        "spin=50000 policy=unset"
    );
    assert_eq!(
        seen_with(&[("OMP_WAIT_POLICY", "passive")])?,
        "spin=unset policy=passive"
    );
    Ok(())
}

#[test]
fn corrupt_shared_object_in_an_artifact_is_a_clear_error() -> Result<()> {
    let dir = scratch("corrupt");
    let good = dir.join("m.byoc");
    succeeded(byoc(
        &[
            "build",
            MODEL,
            "--target",
            "csource",
            "-o",
            &good.display().to_string(),
        ],
        &[],
    ))?;
    let mut artifact = Artifact::read(&good)?;
    let part = artifact
        .partitions
        .iter_mut()
        .find(|p| p.target.plugin == "csource")
        .ok_or_else(|| anyhow!("no csource partition"))?;
    // The csource module layout: magic, version, header length, header, then the object.
    let b = &mut part.bytes;
    let header = u32::from_le_bytes([b[12], b[13], b[14], b[15]]) as usize;
    b[16 + header..16 + header + 64].fill(0xAB);
    let function = part.function.clone();
    let bad = dir.join("bad.byoc");
    std::fs::write(&bad, artifact.to_bytes()?)?;
    let err = refused(byoc(
        &[
            "run",
            &bad.display().to_string(),
            "--random-inputs",
            "1",
            "--allow-unsigned",
        ],
        &[],
    ))?;
    assert!(
        err.contains(&format!(
            "plugin 'csource' failed to deserialize partition @{function}: partition {function}: the compiled module ("
        )) && err.contains("is not a loadable shared object"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

#[test]
fn inspect_emits_the_c_of_each_partition() -> Result<()> {
    let dir = scratch("emit");
    let src = dir.join("src");
    let out = byoc(
        &[
            "inspect",
            MODEL,
            "--target",
            "csource",
            "--emit-source",
            &src.display().to_string(),
        ],
        &[],
    );
    let err = stderr(&out);
    succeeded(out)?;
    let mut files: Vec<PathBuf> = std::fs::read_dir(&src)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    files.sort();
    ensure!(!files.is_empty(), "no files written; {err}");
    for f in &files {
        let symbol = f
            .file_stem()
            .and_then(|s| s.to_str())
            .ok_or_else(|| anyhow!("bad name"))?;
        assert_eq!(f.extension().and_then(|e| e.to_str()), Some("c"));
        let code = std::fs::read_to_string(f)?;
        assert!(
            code.contains(&format!("int32_t {symbol}(const byoc_tensor")),
            "{code}"
        );
        assert!(err.contains(&format!("wrote {}", f.display())), "{err}");
    }
    // A directory that cannot be created.
    let file = dir.join("a-file");
    std::fs::write(&file, "x")?;
    let under = file.join("src").display().to_string();
    let err = refused(byoc(
        &[
            "inspect",
            MODEL,
            "--target",
            "csource",
            "--emit-source",
            &under,
        ],
        &[],
    ))?;
    assert!(
        err.contains(&format!(
            "--emit-source: cannot create the directory '{under}'"
        )),
        "{err}"
    );
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

#[test]
#[ignore = "needs the ONNX light models: ./scripts/fetch_onnx_light.sh"]
fn squeezenet_partitioned_to_csource_matches_onnxruntime() -> Result<()> {
    let dir = light_model("squeezenet")?;
    let model = dir.join("random.onnx");
    let module =
        byoc_pipeline::model::load_model(&model, &byoc_pipeline::model::LoadOptions::default())?;
    let registry = PluginRegistry::discover(&PluginSearch::only(&[cli().library()]))?;
    let plugin = registry.get("csource")?;
    let target = Target::from_description(&plugin.describe())?;
    let runtimes = Runtimes::new().with("csource", plugin);
    let result = partition(&module, &[target], &PartitionOptions::default())?;
    let main = result.module.main().map_err(|e| anyhow!("{e}"))?;
    let host_ops = op_names(main);
    // Every conv2d, relu and pool runs as C; concatenate (not a csource op) stays on the host.
    for op in ["nn.conv2d", "nn.relu", "nn.max_pool2d"] {
        assert!(!host_ops.contains(&op), "{op} on the host: {host_ops:?}");
    }
    let externals = compile_externals(&result.module, &runtimes, &CompileOptions::new())?;
    assert!(externals.len() >= 2);
    let executor = Executor::with_externals(&result.module, ExecOptions::default(), &externals)?;
    let feeds = resolve_inputs(&result.module, Some(&dir.join("random_input.npz")), None)?;
    let outputs = executor.run_named(&feeds).context("run failed")?;
    let got: BTreeMap<String, Tensor> = output_map(&result.module, outputs);
    let want = read_npz(dir.join("random_expected.npz"))?;
    ensure!(
        got.keys().eq(want.keys()),
        "outputs {:?}",
        got.keys().collect::<Vec<_>>()
    );
    for (name, reference) in &want {
        common::compare(&model, name, &got[name], reference)?;
    }
    Ok(())
}
