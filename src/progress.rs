//! Progress indicators for the long steps of the `byoc` commands (importing a large model,
//! compiling partitions, benchmarking, verifying).
//!
//! Invariant: an indicator is drawn on standard error only when both standard output and
//! standard error are terminals. When either is piped or redirected the indicator is hidden,
//! so captured output holds exactly what the command prints and no control sequences.
//! Indicators are cleared when their step ends; they never replace a command's output.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

/// True when progress may be drawn: standard output and standard error are terminals.
fn interactive() -> bool {
    std::io::stdout().is_terminal() && std::io::stderr().is_terminal()
}

/// A bar of `len` steps labelled `message` (hidden when not interactive).
pub fn bar(len: u64, message: &str) -> ProgressBar {
    if !interactive() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len).with_style(
        ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} ({elapsed})")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar.set_message(message.to_string());
    bar
}

/// A spinner labelled `message` for a step of unknown length (hidden when not interactive).
pub fn spinner(message: &str) -> ProgressBar {
    if !interactive() {
        return ProgressBar::hidden();
    }
    let spinner = ProgressBar::new_spinner();
    spinner.set_message(message.to_string());
    spinner.enable_steady_tick(Duration::from_millis(120));
    spinner
}

/// Runs `step` under a spinner labelled `message`, cleared when it returns.
pub fn while_running<T>(message: &str, step: impl FnOnce() -> T) -> T {
    let spinner = spinner(message);
    let out = step();
    spinner.finish_and_clear();
    out
}
