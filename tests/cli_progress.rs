//! Progress indicators of the long `byoc` steps: absent when output is piped (standard error
//! holds nothing, standard output only the command's result), drawn on a terminal. The
//! terminal case runs the command under util-linux `script`, which gives it a
//! pseudo-terminal, and is skipped (with a message) where `script` is missing.

mod common;

use std::process::Command;

use common::{byoc as piped, root};

/// The long commands of the tour, with their progress messages.
const DETECTOR: &[&str] = &[
    "examples/models/detector.relay",
    "--target-spec",
    "examples/targets/detacc.json",
];

fn with(command: &str, rest: &[&str]) -> Vec<String> {
    std::iter::once(command)
        .chain(DETECTOR.iter().copied())
        .chain(rest.iter().copied())
        .map(str::to_string)
        .collect()
}

#[test]
fn piped_output_has_no_progress() {
    let artifact = std::env::temp_dir().join(format!("byoc-progress-{}.byoc", std::process::id()));
    let artifact_arg = artifact.display().to_string();
    let onnx = [
        "run",
        "tests/data/onnx/conv/model.onnx",
        "--random-inputs",
        "0",
    ];
    let commands: Vec<Vec<String>> = vec![
        with("build", &["-o", &artifact_arg]),
        with("verify", &[]),
        with("run", &["--random-inputs", "1"]),
        with("bench", &["--iters", "2", "--warmup", "0"]),
        onnx.iter().map(|s| s.to_string()).collect(),
    ];
    for args in &commands {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = piped(&args);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {stderr}");
        assert!(
            stderr.is_empty(),
            "{args:?}: piped stderr must be empty: {stderr:?}"
        );
        for text in [&stdout, &stderr] {
            assert!(
                !text.contains('\u{1b}') && !text.contains('\r'),
                "{args:?}: control characters in piped output: {text:?}"
            );
        }
    }
    let _ = std::fs::remove_file(&artifact);
}

#[test]
fn a_terminal_shows_progress() {
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("util-linux `script` is not installed: the terminal case is not run");
        return;
    }
    let artifact =
        std::env::temp_dir().join(format!("byoc-progress-tty-{}.byoc", std::process::id()));
    let cases = [
        (
            with("build", &["-o", &artifact.display().to_string()]),
            "compiling partitions",
        ),
        (with("verify", &[]), "running partitioned"),
    ];
    for (args, message) in cases {
        let command = std::iter::once(env!("CARGO_BIN_EXE_byoc").to_string())
            .chain(args)
            .collect::<Vec<_>>()
            .join(" ");
        let out = Command::new("script")
            .args(["-qec", &command, "/dev/null"])
            .current_dir(root())
            .output()
            .expect("script starts");
        let transcript = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{command}: {transcript}");
        assert!(
            transcript.contains(message),
            "{command}: no '{message}' indicator on the terminal: {transcript:?}"
        );
    }
    let _ = std::fs::remove_file(&artifact);
}
