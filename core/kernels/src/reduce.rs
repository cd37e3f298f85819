//! Reductions: each output element folds the input elements that share its kept coordinates.
//!
//! The reduced axes are moved innermost (a transpose, skipped when they already are), so each
//! output element reduces one contiguous row.

use std::borrow::Cow;

use rayon::prelude::*;

use super::{parallel, transform};

/// Reduces `x` (shape `shape`) over `axes` (sorted, distinct): `out[k] = f(row_k)` where
/// `row_k` lists, in row-major order of the reduced axes, the elements of output position `k`.
pub(crate) fn reduce<T, U, F>(
    x: &[T],
    shape: &[usize],
    axes: &[usize],
    out: &mut [U],
    threads: usize,
    f: F,
) where
    T: Copy + Send + Sync,
    U: Send,
    F: Fn(&[T]) -> U + Sync,
{
    let rank = shape.len();
    let trailing = axes
        .iter()
        .enumerate()
        .all(|(i, &a)| a == rank - axes.len() + i);
    let data: Cow<'_, [T]> = if trailing {
        Cow::Borrowed(x)
    } else {
        let order: Vec<usize> = (0..rank)
            .filter(|a| !axes.contains(a))
            .chain(axes.iter().copied())
            .collect();
        let mut moved = x.to_vec();
        transform::permute(x, &mut moved, shape, &order);
        Cow::Owned(moved)
    };
    let row: usize = axes.iter().map(|&a| shape[a]).product();
    let row_of = |k: usize| &data[k * row..(k + 1) * row];
    if parallel(threads, x.len()) {
        out.par_iter_mut()
            .enumerate()
            .for_each(|(k, o)| *o = f(row_of(k)));
    } else {
        out.iter_mut()
            .enumerate()
            .for_each(|(k, o)| *o = f(row_of(k)));
    }
}
