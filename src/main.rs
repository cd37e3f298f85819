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

/// GNU OpenMP's spin count before an idle thread sleeps, set when the user chose no OpenMP
/// wait policy: libgomp's own default (300000, about a millisecond of spinning) makes oneDNN's
/// team (the dnnl plugin) spin against the other processes of a loaded machine; 1000 is what
/// libgomp itself takes when it sees more threads than cores (docs/decisions.md).
const GOMP_SPINCOUNT: &str = "1000";

/// Bounds OpenMP's spinning unless `OMP_WAIT_POLICY` or `GOMP_SPINCOUNT` is set. Runs first in
/// `main`, before any thread or plugin exists (libgomp reads it when a plugin loads it).
fn bound_openmp_spinning() {
    if std::env::var_os("OMP_WAIT_POLICY").is_none() && std::env::var_os("GOMP_SPINCOUNT").is_none()
    {
        std::env::set_var("GOMP_SPINCOUNT", GOMP_SPINCOUNT);
    }
}

/// An error and its causes joined by ": ", as anyhow's `{:#}` does, but with each cause
/// printed once: a cause is left out when the text before it already holds it (an error that
/// shows its source in its own message, and also gives it as its source).
fn error_text(e: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in e.chain() {
        let part = cause.to_string();
        if text.contains(&part) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&part);
    }
    text
}

fn main() -> ExitCode {
    bound_openmp_spinning();
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
            eprintln!("byoc: check failed: {}", error_text(&e));
            ExitCode::from(1)
        }
        Ok(Err(e)) => {
            eprintln!("byoc: error: {}", error_text(&e));
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
