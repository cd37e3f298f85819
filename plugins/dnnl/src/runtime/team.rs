//! The one thread that drives oneDNN: every primitive is built and executed there.
//!
//! Debian's oneDNN runs its parallel regions on GNU OpenMP, which keeps one thread team per
//! *calling* thread. A host executor calls partitions from whichever of its worker threads
//! picks the step up, and builds them on yet another, so without care a process collects
//! several OpenMP teams whose idle workers spin on the same cores as the team doing work
//! (measured: two threads ran SqueezeNet no faster than one). Routing all oneDNN work through
//! one long-lived thread keeps exactly one team, whose workers are warm between primitives.
//!
//! Thread counts: oneDNN sizes a primitive's work split from the OpenMP thread count when the
//! primitive is created, and runs it on the count set when it executes, so [`on_team`] sets
//! the count before both. Concurrent callers queue for the thread; each run already uses
//! every thread it was given. If the thread cannot be started, work runs on the caller.

use std::sync::OnceLock;

use crate::dnnl;

/// The process-wide driver thread (a one-thread pool: `install` runs a borrowed closure there
/// and waits for it), or `None` when it could not be spawned.
fn driver() -> Option<&'static rayon::ThreadPool> {
    static DRIVER: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();
    DRIVER
        .get_or_init(|| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(1)
                .thread_name(|_| "byoc-dnnl".to_string())
                .build()
                .ok()
        })
        .as_ref()
}

/// Runs `work` on the driver thread with OpenMP's thread count set to `threads` (`None`:
/// OpenMP's default) and returns its result; the caller blocks meanwhile. Code that uses
/// oneDNN beside the runtime in one process (a benchmark's own primitives) runs there too, so
/// the process keeps one OpenMP team.
pub fn on_team<R: Send>(threads: Option<usize>, work: impl FnOnce() -> R + Send) -> R {
    let with_threads = || {
        if let Some(n) = threads {
            dnnl::set_num_threads(n);
        }
        work()
    };
    match driver() {
        Some(pool) => pool.install(with_threads),
        None => with_threads(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_from_any_thread_runs_on_the_one_driver_with_its_thread_count() {
        let seen: Vec<(Option<String>, usize)> = std::thread::scope(|s| {
            let handles: Vec<_> = (1..=3)
                .map(|n| {
                    s.spawn(move || {
                        on_team(Some(n), || {
                            let name = std::thread::current().name().map(str::to_string);
                            (name, dnnl::max_threads())
                        })
                    })
                })
                .collect();
            handles.into_iter().filter_map(|h| h.join().ok()).collect()
        });
        assert_eq!(seen.len(), 3);
        for (i, (name, threads)) in seen.into_iter().enumerate() {
            assert_eq!(name.as_deref(), Some("byoc-dnnl"));
            assert_eq!(threads, i + 1);
        }
    }
}
