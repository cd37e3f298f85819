//! The object-detection story: a detector whose NMS stays on the host while the rest is
//! offloaded; prints which ops ran where. See `detection.rs`.
//!
//! ```sh
//! cargo run --example detection
//! ```
//!
//! Exit code 0 when the partitioned run matches host-only execution, 1 when it does not,
//! 2 on an error.

#[path = "../common/mod.rs"]
mod common;
mod detection;

use std::process::ExitCode;

fn main() -> ExitCode {
    ExitCode::from(common::exit_code("detection", &detection::run()))
}
