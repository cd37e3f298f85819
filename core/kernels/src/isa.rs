//! Run-time choice among a kernel's instruction-set paths: the fastest one this CPU has,
//! unless an environment variable names another (to compare paths on one machine).

/// The path named by environment variable `var` when it is set and `available`, otherwise the
/// first available one of `all` (fastest first; the last, portable, is always available). An
/// unknown or unavailable name falls back with a warning on stderr.
pub(crate) fn choose<P: Copy>(
    var: &str,
    all: &[P],
    name: impl Fn(P) -> &'static str,
    available: impl Fn(P) -> bool,
) -> P {
    let portable = all[all.len() - 1];
    let best = all
        .iter()
        .copied()
        .find(|&p| available(p))
        .unwrap_or(portable);
    let Ok(wanted) = std::env::var(var) else {
        return best;
    };
    match all.iter().copied().find(|&p| name(p) == wanted) {
        Some(p) if available(p) => p,
        Some(p) => {
            eprintln!(
                "warning: {var}={} but this CPU lacks it; using {}",
                name(p),
                name(best)
            );
            best
        }
        None => {
            let names: Vec<&str> = all.iter().map(|&p| name(p)).collect();
            eprintln!(
                "warning: {var}='{wanted}' is not one of {}; using {}",
                names.join(", "),
                name(best)
            );
            best
        }
    }
}

/// A test override of a kernel's path choice: while a [`Forced`] guard lives, [`Forcing::get`]
/// returns the forced path's index; tests that force a path run one at a time. (Other tests
/// meanwhile get a different path, never a different result beyond each test's tolerance.)
#[cfg(test)]
pub(crate) struct Forcing {
    /// The forced path's index plus one; 0 for none.
    index: std::sync::atomic::AtomicUsize,
    lock: std::sync::Mutex<()>,
}

#[cfg(test)]
impl Forcing {
    pub(crate) const fn new() -> Forcing {
        Forcing {
            index: std::sync::atomic::AtomicUsize::new(0),
            lock: std::sync::Mutex::new(()),
        }
    }

    /// The index of the forced path, if any.
    pub(crate) fn get(&self) -> Option<usize> {
        self.index
            .load(std::sync::atomic::Ordering::SeqCst)
            .checked_sub(1)
    }

    /// Forces path `index` until the guard drops.
    pub(crate) fn force(&'static self, index: usize) -> Forced {
        let guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        self.index
            .store(index + 1, std::sync::atomic::Ordering::SeqCst);
        Forced {
            forcing: self,
            _guard: guard,
        }
    }
}

/// Holds a forced path (see [`Forcing::force`]).
#[cfg(test)]
pub(crate) struct Forced {
    forcing: &'static Forcing,
    _guard: std::sync::MutexGuard<'static, ()>,
}

#[cfg(test)]
impl Drop for Forced {
    fn drop(&mut self) {
        self.forcing
            .index
            .store(0, std::sync::atomic::Ordering::SeqCst);
    }
}
