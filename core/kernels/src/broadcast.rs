//! numpy-broadcasting loops for binary ops and `where`.
//!
//! A [`BroadcastPlan`] collapses the output shape into groups of adjacent dimensions that every
//! operand walks the same way (all contiguous, or all broadcast), then splits the collapsed
//! shape into rows: the innermost group. Within a row each operand is either contiguous (unit
//! stride) or one repeated element (zero stride), so the binary loop specializes into four
//! simple loops the compiler vectorizes; same-shape operands collapse to a single row.

use rayon::prelude::*;

use super::{parallel, strides};

/// How operands of given shapes map onto a broadcast output.
pub(crate) struct BroadcastPlan {
    /// Collapsed outer dimensions (all but the innermost group).
    outer: Vec<usize>,
    /// Per operand, the stride of each outer dimension (0 where broadcast).
    outer_strides: Vec<Vec<usize>>,
    /// Length of a row (the innermost group).
    row: usize,
    /// Per operand, 1 if it is contiguous along a row, 0 if broadcast.
    row_strides: Vec<usize>,
}

impl BroadcastPlan {
    /// A plan for operands of shapes `inputs` broadcast to `out` (shapes already checked).
    pub(crate) fn new(out: &[usize], inputs: &[&[usize]]) -> Self {
        let rank = out.len();
        // Per operand, right-aligned strides over the output's dimensions.
        let per_dim: Vec<Vec<usize>> = inputs
            .iter()
            .map(|shape| {
                let s = strides(shape);
                (0..rank)
                    .map(|d| match (d + shape.len()).checked_sub(rank) {
                        Some(k) if shape[k] == out[d] && out[d] != 1 => s[k],
                        _ => 0,
                    })
                    .collect()
            })
            .collect();
        let mut dims: Vec<usize> = Vec::new();
        let mut group_strides: Vec<Vec<usize>> = vec![Vec::new(); inputs.len()];
        for d in 0..rank {
            if out[d] == 1 {
                continue;
            }
            let mergeable = !dims.is_empty()
                && per_dim
                    .iter()
                    .zip(&group_strides)
                    .all(|(s, g)| g.last().copied() == Some(s[d] * out[d]));
            if mergeable {
                if let Some(last) = dims.last_mut() {
                    *last *= out[d];
                }
                for (g, s) in group_strides.iter_mut().zip(&per_dim) {
                    if let Some(last) = g.last_mut() {
                        *last = s[d];
                    }
                }
            } else {
                dims.push(out[d]);
                for (g, s) in group_strides.iter_mut().zip(&per_dim) {
                    g.push(s[d]);
                }
            }
        }
        let row = dims.pop().unwrap_or(1);
        let row_strides = group_strides
            .iter_mut()
            .map(|g| g.pop().unwrap_or(0))
            .collect();
        BroadcastPlan {
            outer: dims,
            outer_strides: group_strides,
            row,
            row_strides,
        }
    }

    /// Offsets of every operand at the start of output row `r`.
    fn row_offsets(&self, mut r: usize, offs: &mut [usize]) {
        offs.iter_mut().for_each(|o| *o = 0);
        for d in (0..self.outer.len()).rev() {
            let i = r % self.outer[d];
            r /= self.outer[d];
            for (o, s) in offs.iter_mut().zip(&self.outer_strides) {
                *o += i * s[d];
            }
        }
    }

    /// Runs `row_fn(row_index, out_row)` over every row, in parallel when large.
    fn for_rows<O: Send>(
        &self,
        out: &mut [O],
        threads: usize,
        row_fn: impl Fn(usize, &mut [O]) + Sync,
    ) {
        if out.is_empty() {
            return;
        }
        if parallel(threads, out.len()) {
            let min_rows = (4096 / self.row).max(1);
            out.par_chunks_mut(self.row)
                .with_min_len(min_rows)
                .enumerate()
                .for_each(|(r, o)| row_fn(r, o));
        } else {
            out.chunks_mut(self.row)
                .enumerate()
                .for_each(|(r, o)| row_fn(r, o));
        }
    }
}

/// `out = f(a, b)` with broadcasting.
pub(crate) fn binary<A, B, O, F>(
    plan: &BroadcastPlan,
    a: &[A],
    b: &[B],
    out: &mut [O],
    threads: usize,
    f: F,
) where
    A: Copy + Sync,
    B: Copy + Sync,
    O: Send,
    F: Fn(A, B) -> O + Sync,
{
    plan.for_rows(out, threads, |r, o| {
        let mut offs = [0usize; 2];
        plan.row_offsets(r, &mut offs);
        let n = o.len();
        match (plan.row_strides[0], plan.row_strides[1]) {
            (1, 1) => {
                let (a, b) = (&a[offs[0]..offs[0] + n], &b[offs[1]..offs[1] + n]);
                for ((d, &x), &y) in o.iter_mut().zip(a).zip(b) {
                    *d = f(x, y);
                }
            }
            (1, _) => {
                let y = b[offs[1]];
                for (d, &x) in o.iter_mut().zip(&a[offs[0]..offs[0] + n]) {
                    *d = f(x, y);
                }
            }
            (_, 1) => {
                let x = a[offs[0]];
                for (d, &y) in o.iter_mut().zip(&b[offs[1]..offs[1] + n]) {
                    *d = f(x, y);
                }
            }
            _ => {
                let (x, y) = (a[offs[0]], b[offs[1]]);
                for d in o.iter_mut() {
                    *d = f(x, y);
                }
            }
        }
    });
}

/// `out = cond ? x : y` with three-way broadcasting; `cond` holds 0 / nonzero bytes.
pub(crate) fn select<T: Copy + Send + Sync>(
    plan: &BroadcastPlan,
    cond: &[u8],
    x: &[T],
    y: &[T],
    out: &mut [T],
    threads: usize,
) {
    let s = &plan.row_strides;
    plan.for_rows(out, threads, |r, o| {
        let mut offs = [0usize; 3];
        plan.row_offsets(r, &mut offs);
        for (i, d) in o.iter_mut().enumerate() {
            *d = if cond[offs[0] + i * s[0]] != 0 {
                x[offs[1] + i * s[1]]
            } else {
                y[offs[2] + i * s[2]]
            };
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_shapes_collapse_to_one_row() {
        let p = BroadcastPlan::new(&[2, 3, 4], &[&[2, 3, 4], &[2, 3, 4]]);
        assert!(p.outer.is_empty());
        assert_eq!(p.row, 24);
        assert_eq!(p.row_strides, vec![1, 1]);
    }

    #[test]
    fn trailing_broadcast_keeps_rows() {
        let p = BroadcastPlan::new(&[2, 3, 4], &[&[2, 3, 4], &[4]]);
        assert_eq!(p.outer, vec![6]);
        assert_eq!(p.row, 4);
        assert_eq!(p.outer_strides, vec![vec![4], vec![0]]);
        assert_eq!(p.row_strides, vec![1, 1]);
    }
}
