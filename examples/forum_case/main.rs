//! The TVM forum case (two identical conv2d calls, only the second offloaded), placed by a
//! Rust predicate and by manual annotation; see `forum.rs`.
//!
//! ```sh
//! cargo run --example forum_case
//! ```
//!
//! Exit code 0 when both partitioned runs match host-only execution, 1 when one does not,
//! 2 on an error.

#[path = "../common/mod.rs"]
mod common;
mod forum;

use std::process::ExitCode;

fn main() -> ExitCode {
    ExitCode::from(common::exit_code("forum_case", &forum::run()))
}
