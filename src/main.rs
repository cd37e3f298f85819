//! The `byoc` command-line tool: parses arguments, runs the command, maps errors to exit codes
//! (0 ok, 1 a check failed, 2 bad usage or bad input). Panics are caught and reported as
//! internal errors so none reaches the user as a crash.

use std::process::ExitCode;

use byoc::cli::{execute, CheckFailed, Cli};
use clap::Parser;

/// mimalloc instead of glibc's allocator: the passes allocate and free many small nodes, where
/// glibc spends a fifth of the partitioning pipeline consolidating free chunks
/// (docs/decisions.md, docs/performance.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    std::panic::set_hook(Box::new(|_| {}));
    match std::panic::catch_unwind(|| execute(cli)) {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(e)) if e.is::<CheckFailed>() => {
            eprintln!("byoc: check failed: {e:#}");
            ExitCode::from(1)
        }
        Ok(Err(e)) => {
            eprintln!("byoc: error: {e:#}");
            ExitCode::from(2)
        }
        Err(panic) => {
            let msg = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("unknown panic");
            eprintln!("byoc: internal error: {msg} (this is a bug in byoc; please report it with the input that caused it)");
            ExitCode::from(2)
        }
    }
}
