//! Shared by the integration tests that load plugins from `.so` files: builds plugin crates
//! with the profile of the test binary, so their shared objects land next to the `byoc`
//! binary, where byoc finds plugins by default.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Builds `packages` (cargo package names) with the test binary's profile and returns the
/// directory of the `byoc` binary, which then holds their `.so` files. Panics (failing the
/// test) when the build fails.
pub fn build_next_to_byoc(root: &Path, packages: &[&str]) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_BIN_EXE_byoc"))
        .parent()
        .expect("the binary has a directory")
        .to_path_buf();
    let mut cmd = Command::new(env!("CARGO"));
    cmd.current_dir(root).arg("build");
    for package in packages {
        cmd.args(["-p", package]);
    }
    if dir.file_name().is_some_and(|n| n == "release") {
        cmd.arg("--release");
    }
    let status = cmd.status().expect("cargo runs");
    assert!(status.success(), "building {packages:?} failed");
    dir
}
