//! Axis normalization shared by the op definitions: Python-style negative axes resolved
//! against a rank, with range and duplicate checks.

use crate::op::{TypeCtx, TypeError};

/// Resolves a possibly negative `axis` against `rank` (Python style: -1 is the last axis).
pub fn normalize_axis(ctx: &TypeCtx<'_>, axis: i64, rank: usize) -> Result<usize, TypeError> {
    crate::dims::axis(axis, rank).ok_or_else(|| {
        ctx.err(format!(
            "axis {axis} is out of range for a tensor of rank {rank} (expected -{rank} to {})",
            rank as i128 - 1
        ))
    })
}

/// Resolves a list of axes; rejects duplicates. The result keeps the given order.
pub fn normalize_axes(
    ctx: &TypeCtx<'_>,
    axes: &[i64],
    rank: usize,
) -> Result<Vec<usize>, TypeError> {
    let mut out = Vec::with_capacity(axes.len());
    for &a in axes {
        let n = normalize_axis(ctx, a, rank)?;
        if out.contains(&n) {
            return Err(ctx.err(format!("axis {a} is repeated in {axes:?}")));
        }
        out.push(n);
    }
    Ok(out)
}
