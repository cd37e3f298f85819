//! Helpers shared by op definitions: axis normalization and kernel-spec checks.

#[cfg(feature = "executor")]
use crate::op::{KernelError, KernelSpec};
use crate::op::{TypeCtx, TypeError};

/// Resolves a possibly negative `axis` against `rank` (Python style: -1 is the last axis).
pub(super) fn normalize_axis(
    ctx: &TypeCtx<'_>,
    axis: i64,
    rank: usize,
) -> Result<usize, TypeError> {
    crate::dims::axis(axis, rank).ok_or_else(|| {
        ctx.err(format!(
            "axis {axis} is out of range for a tensor of rank {rank} (expected -{rank} to {})",
            rank as i128 - 1
        ))
    })
}

/// Resolves a list of axes; rejects duplicates. The result keeps the given order.
pub(super) fn normalize_axes(
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

/// Checks that a kernel spec has `inputs` input and `outputs` output tensors.
#[cfg(feature = "executor")]
pub(super) fn check_io(
    spec: &KernelSpec<'_>,
    inputs: usize,
    outputs: usize,
) -> Result<(), KernelError> {
    if spec.inputs.len() != inputs || spec.outputs.len() != outputs {
        return Err(KernelError::new(
            spec.op,
            format!(
                "expects {inputs} input(s) and {outputs} output(s), got {} and {}",
                spec.inputs.len(),
                spec.outputs.len()
            ),
        ));
    }
    Ok(())
}

/// Rebuilds a [`TypeCtx`] over a kernel spec's tensor types, so kernel builders can reuse the
/// attribute and axis logic of their type relations.
#[cfg(feature = "executor")]
pub(super) fn with_type_ctx<R>(
    spec: &KernelSpec<'_>,
    f: impl FnOnce(&TypeCtx<'_>) -> Result<R, TypeError>,
) -> Result<R, KernelError> {
    let args: Vec<crate::ir::Type> = spec.inputs.iter().cloned().map(Into::into).collect();
    let ctx = TypeCtx {
        op: spec.op,
        attrs: spec.attrs,
        args: &args,
    };
    f(&ctx).map_err(KernelError::from)
}
