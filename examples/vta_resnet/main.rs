//! A quantized ResNet-style block partitioned for the vta accelerator, run on the VTA
//! simulator, checked bit-exact against the host, with cycles and GEMM utilisation per layer;
//! see `vta_resnet.rs`.
//!
//! ```sh
//! cargo run --example vta_resnet
//! ```
//!
//! Exit code 0 when the vta run matches the host bit for bit, 1 when it does not, 2 on an
//! error.

#[allow(
    dead_code,
    reason = "this example uses only the shared report and exit-code helpers"
)]
#[path = "../common/mod.rs"]
mod common;
mod vta_resnet;

use std::process::ExitCode;

fn main() -> ExitCode {
    ExitCode::from(common::exit_code("vta_resnet", &vta_resnet::run()))
}
