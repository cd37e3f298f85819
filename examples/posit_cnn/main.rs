//! A small CNN run in float32 and in posit32, posit16 and posit8 (the posit plugin's
//! `custom[posites2]N`), with an accuracy table against float32; see `posit_cnn.rs`.
//!
//! ```sh
//! cargo build -p byoc-plugin-posit      # the datatype plugin, next to the example
//! cargo run --example posit_cnn         # or: -- PATH/libbyoc_plugin_posit.so
//! ```
//!
//! Exit code 0 when posit32 and posit16 stay within their accuracy claims, 1 when one does
//! not, 2 on an error (the plugin not built, for one).

#[allow(
    dead_code,
    reason = "this example uses only the shared report and exit-code helpers"
)]
#[path = "../common/mod.rs"]
mod common;
mod posit_cnn;

use std::process::ExitCode;

fn main() -> ExitCode {
    let plugin = std::env::args_os().nth(1).map(Into::into);
    ExitCode::from(common::exit_code(
        "posit_cnn",
        &posit_cnn::run(plugin, posit_cnn::SAMPLES),
    ))
}
