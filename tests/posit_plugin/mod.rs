//! The posit plugin, built next to `byoc` once per test binary, for the tests that load it.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::plugin_build::build_next_to_byoc;

/// The posit plugin's shared object, next to the `byoc` binary.
pub fn posit_so() -> &'static Path {
    static SO: OnceLock<PathBuf> = OnceLock::new();
    SO.get_or_init(|| {
        let dir = build_next_to_byoc(
            Path::new(env!("CARGO_MANIFEST_DIR")),
            &["byoc-plugin-posit"],
        );
        dir.join(format!(
            "{}byoc_plugin_posit{}",
            std::env::consts::DLL_PREFIX,
            std::env::consts::DLL_SUFFIX
        ))
    })
}
