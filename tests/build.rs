//! `byoc_pipeline::build`, the compiler as one call: what it compiles is what `byoc inspect
//! --stage host-fuse` and `--print-after host-fuse` show; the compiled model runs like the
//! reference kernels, becomes an artifact that runs the same, and refuses host fallbacks
//! when strict, naming the ops.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

use byoc_artifact::io::read_npz;
use byoc_artifact::Artifact;
use byoc_exec::plugin::{ReferenceRuntime, REFERENCE_RUNTIME};
use byoc_exec::{ExecOptions, Executor};
use byoc_ir::text::{parse_module, print_module};
use byoc_ir::{Module, Tensor};
use byoc_pipeline::pipeline::{partition, PartitionOptions, Stage};
use byoc_pipeline::target::Target;
use byoc_pipeline::{build, BuildError, BuildOptions, Compiled, HostCodegen};
use byoc_sdk::{CompileOptions, Plugin};

const MODEL: &str = "examples/models/small_cnn.relay";
const SPEC: &str = "examples/targets/myacc.json";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn small_cnn() -> Module {
    let text = std::fs::read_to_string(root().join(MODEL)).expect("the model is in the repo");
    parse_module(&text).expect("the model parses")
}

fn myacc() -> Target {
    Target::from_spec_file(&root().join(SPEC)).expect("the target spec loads")
}

fn inputs() -> BTreeMap<String, Tensor> {
    read_npz(root().join("tests/data/small_cnn/input.npz")).expect("the inputs load")
}

fn byoc(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_byoc"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("byoc starts")
}

/// `byoc inspect MODEL --target-spec SPEC --stage host-fuse` with `extra`, which must succeed.
fn inspect_host_fuse(extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "inspect",
        MODEL,
        "--target-spec",
        SPEC,
        "--stage",
        "host-fuse",
    ];
    args.extend_from_slice(extra);
    let out = byoc(&args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn built(options: &BuildOptions) -> Compiled {
    build(&small_cnn(), &[myacc()], options).expect("small_cnn builds for myacc")
}

#[test]
fn build_compiles_what_inspect_host_fuse_shows() {
    let compiled = built(&BuildOptions::default());
    assert!(
        compiled.fallbacks().is_empty(),
        "every fused group compiles: {:?}",
        compiled.fallbacks()
    );
    let compiled_text = print_module(compiled.module());
    assert!(
        compiled_text.contains("Compiler=\"llvm\""),
        "{compiled_text}"
    );
    assert!(
        compiled_text.contains("Compiler=\"myacc\""),
        "{compiled_text}"
    );

    // The library's stage is the same module.
    let staged = partition(
        &small_cnn(),
        &[myacc()],
        &PartitionOptions {
            stop_after: Stage::HostFuse,
            ..PartitionOptions::default()
        },
    )
    .expect("the pipeline runs to host-fuse");
    assert_eq!(print_module(&staged.module), compiled_text);

    // `inspect --stage host-fuse` prints it, then one comment per fused group.
    let out = inspect_host_fuse(&[]);
    let shown = String::from_utf8_lossy(&out.stdout);
    let module_part: String = shown
        .lines()
        .filter(|l| !l.starts_with("// @host_fused_"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(module_part, compiled_text);

    // `--print-after host-fuse` shows it on standard error, under its header.
    let out = inspect_host_fuse(&["--print-after", "host-fuse"]);
    let printed = String::from_utf8_lossy(&out.stderr);
    let after = printed
        .split_once("// after host-fuse\n")
        .map(|(_, rest)| rest)
        .unwrap_or_else(|| panic!("no '// after host-fuse' header: {printed}"));
    assert!(
        after.starts_with(&compiled_text),
        "--print-after host-fuse differs from what build compiles:\n{after}"
    );
}

#[test]
fn the_host_passes_are_the_last_stage_of_the_pipeline() {
    let names: Vec<&str> = byoc_pipeline::pipeline::pass_names().collect();
    let tail = &names[names.len() - 2..];
    assert_eq!(tail, ["outline-custom-reductions", "host-fuse"]);
}

/// Max |a - b| over two outputs of the same type.
fn max_abs_diff(a: &Tensor, b: &Tensor) -> f64 {
    assert_eq!(a.ty(), b.ty());
    a.to_f64_vec()
        .iter()
        .zip(b.to_f64_vec())
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max)
}

#[test]
fn a_compiled_model_runs_like_the_reference_kernels_and_as_an_artifact() {
    let inputs = inputs();
    let reference = Executor::new(&small_cnn(), ExecOptions::default())
        .and_then(|e| e.run_named(&inputs))
        .expect("the reference kernels run");
    for host_codegen in [HostCodegen::Kernels, HostCodegen::Llvm] {
        let compiled = built(&BuildOptions {
            host_codegen,
            ..BuildOptions::default()
        });
        let got = compiled.run(&inputs).expect("the compiled model runs");
        assert_eq!(got.len(), reference.len());
        for (g, r) in got.iter().zip(&reference) {
            let diff = max_abs_diff(g, r);
            assert!(diff <= 1e-4, "{host_codegen:?}: max |diff| {diff}");
        }

        // Saved and loaded back, the artifact runs the same.
        let bytes = compiled
            .to_artifact()
            .and_then(|a| a.to_bytes())
            .expect("the artifact is written");
        let artifact = Artifact::from_bytes(&bytes).expect("the artifact reads back");
        let externals = artifact
            .load_externals(
                |plugin| -> Result<std::sync::Arc<dyn Plugin>, String> {
                    match plugin {
                        REFERENCE_RUNTIME => Ok(std::sync::Arc::new(ReferenceRuntime)),
                        byoc_host_llvm::PLUGIN_NAME => Ok(byoc_host_llvm::plugin()),
                        other => Err(format!("no plugin {other}")),
                    }
                },
                &CompileOptions::new(),
            )
            .expect("the artifact's partitions load");
        let reloaded = Compiled::from_artifact(artifact.module, externals, ExecOptions::default());
        let again = reloaded.run(&inputs).expect("the artifact runs");
        for (a, g) in again.iter().zip(&got) {
            assert_eq!(
                max_abs_diff(a, g),
                0.0,
                "{host_codegen:?}: artifact run differs"
            );
        }
    }
}

#[test]
fn a_target_carries_its_runtime() {
    assert_eq!(myacc().runtime.name(), REFERENCE_RUNTIME);
    let compiled = built(&BuildOptions::default());
    let myacc_parts: Vec<&str> = compiled
        .module()
        .partitions()
        .filter(|(_, target, _)| *target == "myacc")
        .map(|(name, _, _)| name)
        .collect();
    assert!(!myacc_parts.is_empty());
    for name in myacc_parts {
        let compiled_by = compiled.externals().get(name).map(|m| m.plugin.as_str());
        assert_eq!(compiled_by, Some(REFERENCE_RUNTIME), "@{name}");
    }
}

#[test]
fn a_strict_build_names_the_ops_left_on_the_host() {
    let err = build(
        &small_cnn(),
        &[myacc()],
        &BuildOptions {
            no_host_fallback: true,
            ..BuildOptions::default()
        },
    )
    .expect_err("small_cnn keeps ops on the host for myacc");
    assert!(matches!(err, BuildError::HostFallback { .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains("would fall back to the host"), "{text}");
    assert!(text.contains("  nn."), "names the ops: {text}");
}

#[test]
fn strict_host_codegen_needs_llvm() {
    let err = build(
        &small_cnn(),
        &[],
        &BuildOptions {
            host_codegen: HostCodegen::Kernels,
            strict_host_codegen: true,
            ..BuildOptions::default()
        },
    )
    .expect_err("refused");
    assert!(matches!(err, BuildError::StrictNeedsLlvm), "{err}");
}

#[test]
fn a_build_without_targets_runs_only_the_host_passes() {
    let compiled = build(&small_cnn(), &[], &BuildOptions::default()).expect("builds");
    assert!(compiled
        .module()
        .partitions()
        .all(|(_, target, _)| target == "llvm"));
    assert!(compiled.summary().functions.is_empty());
}
