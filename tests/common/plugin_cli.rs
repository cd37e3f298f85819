//! Shared by the CLI tests of one shipped plugin (`tests/csource.rs`, `tests/vta.rs`, which
//! include it with `#[path]` beside `mod common` and `mod plugin_build`): the plugin built next to `byoc`, a
//! scratch directory per test, running `byoc` from the repository root, and where an ONNX light
//! model's data is.

use std::path::PathBuf;
use std::process::Output;

use anyhow::{ensure, Context, Result};

pub use crate::common::stderr;
use crate::common::{byoc_command, root, scratch};
use crate::plugin_build::build_next_to_byoc;

/// A plugin crate built next to the `byoc` binary (with the test binary's profile), where
/// byoc finds it by default.
pub struct PluginCli {
    dir: PathBuf,
    /// The plugin's name (scratch directories are `<name>-tests/<pid>-<test>`).
    name: &'static str,
}

impl PluginCli {
    /// Builds `package` (e.g. `byoc-plugin-vta`) for the plugin `name`.
    pub fn build(package: &str, name: &'static str) -> Self {
        PluginCli {
            dir: build_next_to_byoc(&root(), &[package]),
            name,
        }
    }

    /// The plugin's shared object built next to `byoc` (the test binary's own directory holds
    /// another copy).
    pub fn library(&self) -> PathBuf {
        self.dir.join(format!(
            "{}byoc_plugin_{}{}",
            std::env::consts::DLL_PREFIX,
            self.name,
            std::env::consts::DLL_SUFFIX
        ))
    }

    /// A fresh scratch directory for one test.
    pub fn scratch(&self, test: &str) -> PathBuf {
        scratch(&self.dir.join(format!("{}-tests", self.name)), test)
    }

    /// Runs `byoc args` from the repository root with the extra environment `env`.
    pub fn byoc(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        byoc_command(args)
            .envs(env.iter().copied())
            .output()
            .expect("byoc runs")
    }
}

/// A successful run's standard output; an error with standard error otherwise.
pub fn succeeded(out: Output) -> Result<String> {
    ensure!(out.status.success(), "byoc failed: {}", stderr(&out));
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The folder of ONNX light model `name` under `BYOC_ONNX_LIGHT_DIR` (prepared by
/// `./scripts/fetch_onnx_light.sh`); an error when the variable is unset.
pub fn light_model(name: &str) -> Result<PathBuf> {
    let light = std::env::var_os("BYOC_ONNX_LIGHT_DIR")
        .context("BYOC_ONNX_LIGHT_DIR names the prepared models (./scripts/fetch_onnx_light.sh)")?;
    Ok(PathBuf::from(light).join(name))
}
