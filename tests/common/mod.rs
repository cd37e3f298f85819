//! Helpers shared by the integration tests: running the `byoc` binary from the repository
//! root ([`byoc`], [`byoc_command`], [`stderr`]), fresh scratch directories ([`scratch`]),
//! and comparing byoc's outputs with reference outputs ([`compare`], with the tolerance of
//! `compare.rs`).

#![allow(
    dead_code,
    unused_imports,
    reason = "each test binary uses some of the helpers"
)]

mod compare;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub use compare::compare;

/// The repository root (the `byoc` package's directory): commands run there, and model
/// paths in the tests are relative to it.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The `byoc` binary with `args`, to run in the repository root.
pub fn byoc_command(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_byoc"));
    command.args(args).current_dir(root());
    command
}

/// Runs the `byoc` binary with `args` in the repository root, output captured.
pub fn byoc(args: &[&str]) -> Output {
    byoc_command(args).output().expect("the byoc binary starts")
}

/// A command's standard error as text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A fresh, empty directory `<base>/<process id>-<name>` for one test.
pub fn scratch(base: &Path, name: &str) -> PathBuf {
    let dir = base.join(format!("{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}
