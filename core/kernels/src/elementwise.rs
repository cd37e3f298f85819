//! Elementwise maps: one output element from the input element at the same position.

use rayon::prelude::*;

use super::parallel;

/// Elements per parallel task.
const CHUNK: usize = 1 << 14;

/// `y[i] = f(x[i])` for every `i`; in parallel chunks when the tensor is large.
pub(crate) fn map<T, U, F>(x: &[T], y: &mut [U], threads: usize, f: F)
where
    T: Copy + Sync,
    U: Send,
    F: Fn(T) -> U + Sync,
{
    let seq = |x: &[T], y: &mut [U]| {
        for (d, &s) in y.iter_mut().zip(x) {
            *d = f(s);
        }
    };
    if parallel(threads, y.len()) {
        y.par_chunks_mut(CHUNK)
            .zip(x.par_chunks(CHUNK))
            .for_each(|(y, x)| seq(x, y));
    } else {
        seq(x, y);
    }
}
