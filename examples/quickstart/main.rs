//! The quick start on ResNet-50: import, partition for a CNN accelerator, build an artifact,
//! run it and compare with host-only execution. See `quickstart.rs`.
//!
//! ```sh
//! ./scripts/fetch_onnx_light.sh target/onnx-light     # once: ONNX's light models
//! cargo run --release --example quickstart [-- PATH/model.onnx | LIGHT_MODELS_DIR]
//! ```
//!
//! The artifact goes to `target/quickstart/resnet50.byoc`. Exit code 0 when the artifact's
//! run matches host-only execution, 1 when it does not, 2 on an error (a missing model
//! included: the message says how to fetch it).

#[path = "../common/mod.rs"]
mod common;
mod quickstart;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

fn main() -> ExitCode {
    let run = || {
        let options = quickstart::Options {
            model: quickstart::locate(std::env::args_os().nth(1).map(PathBuf::from))?,
            artifact: Path::new(env!("CARGO_MANIFEST_DIR")).join("target/quickstart/resnet50.byoc"),
        };
        quickstart::run(&options)
    };
    ExitCode::from(common::exit_code("quickstart", &run()))
}
