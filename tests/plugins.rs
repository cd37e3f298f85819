//! Plugins as real shared libraries: the `tinyacc` template plugin is built as a `.so`,
//! loaded, used to partition and run a model, and compared with the host executor (in process
//! and through `byoc build` + `byoc run model.byoc` in separate processes); purpose-built bad
//! plugins (panics, errors, wrong output sizes, a future ABI, no entry point) are refused or
//! reported with the plugin's name, and the host keeps working.

mod common;
mod plugin_build;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::{Arc, OnceLock};

use byoc_artifact::io::read_npz;
use byoc_exec::plugin::{
    compile_externals, load_plugin, LoadError, LoadedPlugin, PluginRegistry, PluginSearch,
    RegistryError, Runtimes,
};
use byoc_exec::{ExecOptions, Executor, ExternalModules};
use byoc_ir::text::parse_module;
use byoc_ir::{Module, Tensor};
use byoc_pipeline::pipeline::{partition, PartitionOptions};
use byoc_pipeline::target::Target;
use byoc_sdk::{CompileOptions, Plugin};
use common::{byoc_command, root, stderr};
use plugin_build::build_next_to_byoc;

/// The directory the build puts the plugins in (next to the byoc binary), after building the
/// template and the test plugins with the same profile.
fn plugin_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        build_next_to_byoc(
            &root(),
            &[
                "byoc-plugin-tinyacc",
                "byoc-testplugin-faulty",
                "byoc-testplugin-bad-abi",
                "byoc-testplugin-no-entry",
            ],
        )
    })
}

fn so(name: &str) -> PathBuf {
    plugin_dir().join(format!(
        "{}{name}{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    ))
}

/// A fresh directory on the plugins' file system (so files can be hard-linked).
fn scratch(name: &str) -> PathBuf {
    common::scratch(&plugin_dir().join("plugin-tests"), name)
}

/// Places `src` in `dir` under the plugin file name of `name`.
fn place(src: &Path, dir: &Path, name: &str) -> PathBuf {
    let dst = dir.join(format!(
        "{}byoc_plugin_{name}{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    ));
    if std::fs::hard_link(src, &dst).is_err() {
        std::fs::copy(src, &dst).expect("copy plugin");
    }
    dst
}

fn tinyacc() -> Arc<LoadedPlugin> {
    let reg = PluginRegistry::discover(&PluginSearch::only(&[so("byoc_plugin_tinyacc")]))
        .expect("tinyacc loads");
    reg.get("tinyacc").expect("tinyacc is registered")
}

fn faulty() -> Arc<LoadedPlugin> {
    Arc::new(load_plugin(&so("byoc_testplugin_faulty")).expect("faulty loads"))
}

fn model(path: &str) -> Module {
    let text = std::fs::read_to_string(root().join(path)).expect("model file");
    parse_module(&text).expect("model parses")
}

fn inputs(module: &Module) -> Vec<Tensor> {
    let main = module.main().expect("@main");
    main.params
        .iter()
        .enumerate()
        .map(|(k, &p)| {
            let ty = main
                .var(p)
                .expect("param")
                .ty
                .as_tensor()
                .expect("tensor")
                .clone();
            let n = ty.num_elements();
            let values: Vec<f64> = (0..n)
                .map(|i| ((i * 7 + k * 3) % 11) as f64 / 2.0 - 2.5)
                .collect();
            Tensor::from_f64(ty, &values).expect("input")
        })
        .collect()
}

fn host_run(module: &Module, inputs: &[Tensor]) -> Vec<Tensor> {
    Executor::new(module, ExecOptions::default())
        .expect("host plan")
        .run(inputs)
        .expect("host run")
}

fn assert_close(got: &[Tensor], want: &[Tensor]) {
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(want) {
        assert_eq!(g.ty(), w.ty());
        for (a, b) in g.to_f64_vec().iter().zip(w.to_f64_vec()) {
            assert!((a - b).abs() <= 1e-6 * b.abs().max(1.0), "{a} vs {b}");
        }
    }
}

/// Partitions `module` for `plugin`'s target and compiles the partitions with it.
fn partition_for(
    module: &Module,
    plugin: Arc<dyn Plugin>,
    options: &CompileOptions,
) -> (Module, Result<ExternalModules, String>) {
    let target = Target::from_description(&plugin.describe()).expect("valid description");
    let name = target.name().to_string();
    let parts = partition(module, &[target], &PartitionOptions::default()).expect("partitions");
    let runtimes = Runtimes::new().with(name, plugin);
    let compiled = compile_externals(&parts.module, &runtimes, options).map_err(|e| e.to_string());
    (parts.module, compiled)
}

fn run_with(
    module: &Module,
    externals: &ExternalModules,
    inputs: &[Tensor],
) -> Result<Vec<Tensor>, String> {
    Executor::with_externals(
        module,
        ExecOptions {
            threads: 1,
            profile: true,
            memory_budget: None,
        },
        externals,
    )
    .map_err(|e| e.to_string())?
    .run(inputs)
    .map_err(|e| e.to_string())
}

#[test]
fn tinyacc_partitions_run_through_the_so_and_match_the_host() {
    let m = model("tests/data/plugins/tinyacc.relay");
    let x = inputs(&m);
    let want = host_run(&m, &x);
    let plugin = tinyacc();
    assert_eq!(plugin.abi_version(), (2, 1));
    let target = Target::from_description(&plugin.describe()).unwrap();
    let parts = partition(&m, &[target], &PartitionOptions::default()).unwrap();
    // The broadcasting add is declined by the plugin's predicate, across the ABI.
    assert!(
        parts
            .rejected
            .iter()
            .any(|r| r.reason.contains("tinyacc does not broadcast")),
        "{:?}",
        parts.rejected
    );
    let text = parts.module.to_string();
    assert!(text.contains("Composite=\"tinyacc.add_relu\""), "{text}");
    assert!(text.contains("Compiler=\"tinyacc\""), "{text}");
    let runtimes = Runtimes::new().with("tinyacc", plugin.clone());
    let ext = compile_externals(&parts.module, &runtimes, &CompileOptions::new()).unwrap();
    assert_eq!(ext.len(), 2);
    let exec = Executor::with_externals(
        &parts.module,
        ExecOptions {
            threads: 1,
            profile: true,
            memory_budget: None,
        },
        &ext,
    )
    .unwrap();
    let got = exec.run(&x).unwrap();
    assert_close(&got, &want);
    let profile = exec.last_profile().unwrap();
    let tiny = profile
        .targets
        .iter()
        .find(|t| t.target == "tinyacc")
        .unwrap();
    assert_eq!(tiny.calls, 2);
    assert!(profile
        .ops
        .iter()
        .any(|o| o.op == "@tinyacc_0" && o.calls == 1));
    // Serialized modules (the JSON runtime's byte record: graph + constants) come back
    // through the plugin and run the same; damaged bytes are refused across the ABI.
    let mut again = ExternalModules::new();
    for (name, e) in ext.iter() {
        let bytes = e.module.serialize().unwrap();
        assert!(bytes.starts_with(b"BYOCJSON"), "{name}");
        let err = plugin
            .deserialize(&bytes[..bytes.len() - 1], &CompileOptions::new())
            .err()
            .expect("truncated bytes are refused")
            .to_string();
        assert!(err.contains("JSON graph record truncated"), "{err}");
        let mut copy = e.clone();
        copy.module = Arc::from(plugin.deserialize(&bytes, &CompileOptions::new()).unwrap());
        again.insert(name, copy);
    }
    assert_close(&run_with(&parts.module, &again, &x).unwrap(), &want);
}

#[test]
fn tinyacc_errors_through_the_so_name_the_node() {
    let f = byoc_sdk::PartitionedFunction::from_text(
        "def @tinyacc_5(%x: Tensor[(2, 3), float32], Compiler=\"tinyacc\", global_symbol=\"tinyacc_5\") {\n  %0 = nn.relu(%x);\n  nn.softmax(%0)\n}\n",
    )
    .unwrap();
    let err = tinyacc()
        .compile(&f, &CompileOptions::new())
        .err()
        .expect("tinyacc has no softmax kernel")
        .to_string();
    assert!(
        err.contains("tinyacc_5: node 2 ('nn.softmax'): building the kernel failed: tinyacc cannot run nn.softmax"),
        "{err}"
    );
}

#[test]
fn an_external_function_without_a_runtime_is_an_error() {
    let m = model("tests/data/plugins/tinyacc.relay");
    let (parts, _) = partition_for(&m, tinyacc(), &CompileOptions::new());
    let err = Executor::new(&parts, ExecOptions::default()).unwrap_err();
    assert!(
        err.to_string().contains(
            "@tinyacc_0 is an external function for target 'tinyacc' but no runtime was given"
        ),
        "{err}"
    );
    let err = compile_externals(&parts, &Runtimes::new(), &CompileOptions::new()).unwrap_err();
    assert!(
        err.to_string().contains("no runtime for target 'tinyacc'"),
        "{err}"
    );
}

/// `relu(add(x, y))` for the faulty plugin.
fn faulty_model() -> Module {
    model("tests/data/plugins/faulty.relay")
}

fn fault(kind: &str) -> CompileOptions {
    CompileOptions::new().with("faulty.fault", kind)
}

#[test]
fn plugin_failures_in_compile_are_reported_and_the_host_goes_on() {
    let m = faulty_model();
    for (kind, fragment) in [
        (
            "panic_compile",
            "panicked: compile exploded on @faulty_0 at tests/plugins/faulty/src/lib.rs",
        ),
        (
            "error_compile",
            "cannot compile @faulty_0: the device is busy",
        ),
    ] {
        let (_, compiled) = partition_for(&m, faulty(), &fault(kind));
        let err = compiled.expect_err("compile fails");
        assert!(
            err.contains("plugin 'faulty' failed during compile of @faulty_0")
                && err.contains(fragment),
            "{kind}: {err}"
        );
    }
    // The same plugin still compiles and runs a healthy module afterwards.
    let (parts, compiled) = partition_for(&m, faulty(), &CompileOptions::new());
    let x = inputs(&m);
    assert_close(
        &run_with(&parts, &compiled.unwrap(), &x).unwrap(),
        &host_run(&m, &x),
    );
}

#[test]
fn plugin_failures_in_run_are_reported_and_the_host_goes_on() {
    let m = faulty_model();
    let x = inputs(&m);
    for (kind, fragment) in [
        ("panic_run", "panicked: run exploded"),
        ("error_run", "the device reported error 7"),
        (
            "wrong_size",
            "fill: shape [2, 4] holds 8 elements but 4 were given",
        ),
    ] {
        let (parts, compiled) = partition_for(&m, faulty(), &fault(kind));
        let err = run_with(&parts, &compiled.unwrap(), &x).unwrap_err();
        assert!(
            err.contains("plugin 'faulty' failed running @faulty_0 (target 'faulty')")
                && err.contains(fragment),
            "{kind}: {err}"
        );
    }
    let (parts, compiled) = partition_for(&m, faulty(), &CompileOptions::new());
    assert_close(
        &run_with(&parts, &compiled.unwrap(), &x).unwrap(),
        &host_run(&m, &x),
    );
}

#[test]
fn a_panicking_predicate_declines_the_call() {
    let m =
        parse_module("def @main(%x: Tensor[(1, 2, 4), float32]) {\n  nn.relu(%x)\n}\n").unwrap();
    let target = Target::from_description(&faulty().describe()).unwrap();
    let parts = partition(&m, &[target], &PartitionOptions::default()).unwrap();
    let reason = &parts.rejected.first().expect("relu rejected").reason;
    assert!(
        reason.contains(
            "plugin 'faulty' failed deciding: panicked: predicate exploded on a rank-3 tensor"
        ),
        "{reason}"
    );
    assert!(!parts.module.to_string().contains("Compiler="));
}

#[test]
fn bad_plugin_files_are_refused_with_clear_messages() {
    let dir = scratch("bad");
    let future = place(&so("byoc_testplugin_bad_abi"), &dir, "future");
    let no_entry = place(&so("byoc_testplugin_no_entry"), &dir, "noentry");
    let fake = dir.join(format!(
        "{}byoc_plugin_fake{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    ));
    std::fs::write(&fake, "not a library").unwrap();
    place(&so("byoc_plugin_tinyacc"), &dir, "tinyacc");

    let err = load_plugin(&future).unwrap_err().to_string();
    assert!(
        err.contains("incompatible SDK version")
            && err.contains("byoc SDK 99.0.0 (plugin ABI 99.3)")
            && err.contains("this byoc has SDK 0.1.0 (plugin ABI 2.1)"),
        "{err}"
    );
    let err = load_plugin(&no_entry).unwrap_err();
    assert!(matches!(err, LoadError::NoEntry { .. }), "{err}");
    assert!(err.to_string().contains("is not a byoc plugin"), "{err}");
    let err = load_plugin(&fake).unwrap_err();
    assert!(matches!(err, LoadError::Open { .. }), "{err}");
    let err = load_plugin(&dir.join("missing.so")).unwrap_err();
    assert!(err.to_string().contains("not found"), "{err}");

    // Discovery keeps going: the good plugin loads, the bad files are listed with reasons.
    let reg = PluginRegistry::discover(&PluginSearch::only(std::slice::from_ref(&dir))).unwrap();
    assert_eq!(reg.refused().len(), 3, "{:?}", reg.refused());
    assert!(reg.get("tinyacc").is_ok());
    let err = reg.get("nope").unwrap_err().to_string();
    assert!(
        err.contains("no plugin named 'nope' (loaded: tinyacc)") && err.contains("refused:"),
        "{err}"
    );
    // An explicitly named bad file is an error of its own.
    let err = PluginRegistry::discover(&PluginSearch::only(&[future])).unwrap_err();
    assert!(
        matches!(err, RegistryError::Load(LoadError::Incompatible { .. })),
        "{err}"
    );
}

#[test]
fn two_plugins_claiming_one_name_are_an_error() {
    let dir = scratch("dup");
    place(&so("byoc_plugin_tinyacc"), &dir, "one");
    place(&so("byoc_plugin_tinyacc"), &dir, "two");
    let reg = PluginRegistry::discover(&PluginSearch::only(&[dir])).unwrap();
    let err = reg.get("tinyacc").unwrap_err();
    assert!(matches!(err, RegistryError::Duplicate { .. }), "{err}");
    assert!(
        err.to_string()
            .contains("two plugins claim the name 'tinyacc'"),
        "{err}"
    );
}

fn byoc_with(args: &[&str], plugin_path_env: Option<&Path>) -> Output {
    let mut cmd = byoc_command(args);
    match plugin_path_env {
        Some(p) => cmd.env("BYOC_PLUGIN_PATH", p),
        None => cmd.env_remove("BYOC_PLUGIN_PATH"),
    };
    cmd.output().expect("the byoc binary starts")
}

fn byoc(args: &[&str]) -> Output {
    byoc_with(args, None)
}

fn path_str(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

#[test]
fn cli_lists_builds_and_runs_artifacts_in_separate_processes() {
    let dir = scratch("cli");
    let tiny = so("byoc_plugin_tinyacc");
    let out = byoc(&["plugins", "--plugin-path", path_str(&tiny)]);
    let listing = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        listing.contains("tinyacc 0.1.0 (ABI 2.1, SDK 0.1.0)"),
        "{listing}"
    );
    assert!(
        listing.contains("ops: add, multiply, nn.relu, clip"),
        "{listing}"
    );
    assert!(
        listing.contains("pattern: tinyacc.add_relu = nn.relu(add(*, *))"),
        "{listing}"
    );

    // BYOC_PLUGIN_PATH adds directories to the search.
    let env_dir = scratch("env");
    place(&so("byoc_testplugin_faulty"), &env_dir, "faulty");
    let out = byoc_with(&["plugins"], Some(&env_dir));
    let listing = String::from_utf8_lossy(&out.stdout);
    assert!(
        listing.contains("faulty 0.0.1 (ABI 2.1, SDK 0.1.0)"),
        "{listing}"
    );

    let model = "tests/data/plugins/tinyacc.relay";
    let artifact = dir.join("model.byoc");
    let out = byoc(&[
        "build",
        model,
        "--target",
        "tinyacc",
        "--plugin-path",
        path_str(&tiny),
        "-o",
        path_str(&artifact),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let host_out = dir.join("host.npz");
    let out = byoc(&[
        "run",
        model,
        "--random-inputs",
        "3",
        "-o",
        path_str(&host_out),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let art_out = dir.join("artifact.npz");
    // The artifact finds tinyacc by name next to the byoc binary.
    let out = byoc(&[
        "run",
        path_str(&artifact),
        "--random-inputs",
        "3",
        "-o",
        path_str(&art_out),
        "--profile",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("target tinyacc: 2 call(s)"),
        "{}",
        stderr(&out)
    );
    let (got, want) = (read_npz(&art_out).unwrap(), read_npz(&host_out).unwrap());
    let got: Vec<Tensor> = got.into_values().collect();
    let want: Vec<Tensor> = want.into_values().collect();
    assert_close(&got, &want);

    // Damaged artifacts: the signature refuses any change; with --allow-unsigned the
    // checksums and the header checks still catch damage.
    let bytes = std::fs::read(&artifact).unwrap();
    let truncated = dir.join("truncated.byoc");
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    let out = byoc(&["run", path_str(&truncated), "--random-inputs", "3"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("truncated.byoc: cannot load"),
        "{}",
        stderr(&out)
    );
    let mut tampered_bytes = bytes.clone();
    let last = tampered_bytes.len() - 3;
    tampered_bytes[last] ^= 0x20;
    let tampered = dir.join("tampered.byoc");
    std::fs::write(&tampered, &tampered_bytes).unwrap();
    let out = byoc(&["run", path_str(&tampered), "--random-inputs", "3"]);
    assert!(
        stderr(&out).contains("signature does not match its contents"),
        "{}",
        stderr(&out)
    );
    // The byte 3 from the end is in the signature block; one before it is in the payload.
    tampered_bytes[last] ^= 0x20;
    tampered_bytes[last - 104] ^= 0x20;
    std::fs::write(&tampered, &tampered_bytes).unwrap();
    let out = byoc(&[
        "run",
        path_str(&tampered),
        "--random-inputs",
        "3",
        "--allow-unsigned",
    ]);
    assert!(
        stderr(&out).contains("checksum mismatch"),
        "{}",
        stderr(&out)
    );
    let mut old = bytes.clone();
    old[8] = 9;
    let wrong_version = dir.join("version.byoc");
    std::fs::write(&wrong_version, &old).unwrap();
    let out = byoc(&[
        "run",
        path_str(&wrong_version),
        "--random-inputs",
        "3",
        "--allow-unsigned",
    ]);
    assert!(
        stderr(&out).contains("artifact format version 9 is not supported"),
        "{}",
        stderr(&out)
    );

    // An artifact whose plugin is not on the search path.
    let faulty_so = so("byoc_testplugin_faulty");
    let needs_faulty = dir.join("faulty.byoc");
    let out = byoc(&[
        "build",
        "tests/data/plugins/faulty.relay",
        "--target",
        "faulty",
        "--plugin-path",
        path_str(&faulty_so),
        "-o",
        path_str(&needs_faulty),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = byoc(&["run", path_str(&needs_faulty), "--random-inputs", "1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("needs plugin 'faulty' (target 'faulty'), which is not available: no plugin named 'faulty'"),
        "{}",
        stderr(&out)
    );
    // A plugin panic during a CLI run is an error message, not a crash.
    let out = byoc(&[
        "run",
        "tests/data/plugins/faulty.relay",
        "--target",
        "faulty",
        "--plugin-path",
        path_str(&faulty_so),
        "--plugin-option",
        "faulty.fault=panic_run",
        "--random-inputs",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains(
            "plugin 'faulty' failed running @faulty_0 (target 'faulty'): panicked: run exploded"
        ),
        "{err}"
    );
    assert!(
        !err.contains("internal error") && !err.contains("stack backtrace"),
        "{err}"
    );
}

#[test]
fn verify_compares_partitioned_and_host_runs() {
    let faulty = so("byoc_testplugin_faulty");
    let model = "tests/data/plugins/faulty.relay";
    let verify = |extra: &[&str]| {
        let mut args = vec![
            "verify",
            model,
            "--target",
            "faulty",
            "--plugin-path",
            path_str(&faulty),
        ];
        args.extend_from_slice(extra);
        byoc(&args)
    };
    let ok = verify(&[]);
    assert!(ok.status.success(), "{}", stderr(&ok));
    let report = String::from_utf8_lossy(&ok.stdout);
    assert!(
        report.contains("max_abs_err=0.000e0") && report.contains(" ok"),
        "{report}"
    );

    // Several seeded input samples: the largest errors over all, and the top-1 agreement of
    // the (2, 4) output's two rows per sample.
    let samples = verify(&["--samples", "3"]);
    assert!(samples.status.success(), "{}", stderr(&samples));
    let report = String::from_utf8_lossy(&samples.stdout);
    assert!(
        report.contains("max_abs_err=0.000e0 max_rel_err=0.000e0 top1_agree=6/6 over 3 samples ok"),
        "{report}"
    );

    // A plugin computing wrong values: every output is off by one, exit code 1.
    let bad = verify(&["--plugin-option", "faulty.fault=wrong_values"]);
    assert_eq!(bad.status.code(), Some(1), "{}", stderr(&bad));
    let report = String::from_utf8_lossy(&bad.stdout);
    assert!(
        report.contains("max_abs_err=1.000e0") && report.contains("FAILED"),
        "{report}"
    );
    assert!(
        stderr(&bad).contains("exceed rtol=0.0001"),
        "{}",
        stderr(&bad)
    );

    // A plugin writing half of its output is refused as a plugin failure, not a crash or a
    // silently short result.
    let short = verify(&["--plugin-option", "faulty.fault=wrong_size"]);
    assert_eq!(short.status.code(), Some(2), "{}", stderr(&short));
    let err = stderr(&short);
    assert!(
        err.contains("plugin 'faulty' failed running @faulty_0") && !err.contains("panicked"),
        "{err}"
    );

    // Without a target and with the reference kernels on both sides there is nothing to
    // compare: bad usage.
    let none = byoc(&["verify", model, "--host-codegen", "kernels"]);
    assert_eq!(none.status.code(), Some(2));
    assert!(stderr(&none).contains("give at least one --target"));
}

#[test]
fn plugin_options_no_plugin_in_use_reads_are_refused() {
    let faulty = so("byoc_testplugin_faulty");
    let run = |option: &str| {
        byoc(&[
            "run",
            "tests/data/plugins/faulty.relay",
            "--target",
            "faulty",
            "--plugin-path",
            path_str(&faulty),
            "--plugin-option",
            option,
            "--random-inputs",
            "1",
        ])
    };
    // Datatype plugins found beside byoc (posit) read their options in every run, so they are
    // listed after the targets when present.
    for (option, fragments) in [
        (
            "fault=garbage",
            &[
                "--plugin-option: option 'fault' is not read by any plugin in use (faulty",
                "plugin options are <plugin>.<name>, or threads",
            ][..],
        ),
        (
            "csource.cc=gcc",
            &["option 'csource.cc' is not read by any plugin in use (faulty"][..],
        ),
        (
            "faulty.nonsense=1",
            &["unknown faulty option 'faulty.nonsense' (declared: faulty.fault)"][..],
        ),
        (
            "faulty.fault=garbage",
            &["unknown fault 'faulty.fault=garbage' (one of: panic_compile, error_compile,"][..],
        ),
        (
            "threads=two",
            &["option 'threads=two': expected a non-negative integer"][..],
        ),
    ] {
        let out = run(option);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{option}: {err}");
        assert!(
            fragments.iter().all(|f| err.contains(f)) && !err.contains("panicked"),
            "{option}: {err}"
        );
    }
    let ok = run("faulty.fault=");
    assert!(ok.status.success(), "{}", stderr(&ok));
}
