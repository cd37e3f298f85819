//! Host kernels of the slice ops: the kernel half of [`byoc_ir::ops::slice`].

use crate::registry::Builders;
use crate::KernelBuilder;
pub(crate) use byoc_ir::ops::slice::*;
use byoc_ir::DType;

use {
    super::support::check_io,
    crate::transform,
    crate::{HostKernel, KernelError, KernelSpec},
};

/// Maps raw indices into `0..n` according to `mode`.
fn resolve(
    op: &str,
    raw: impl Iterator<Item = i64>,
    n: usize,
    mode: TakeMode,
) -> Result<Vec<usize>, KernelError> {
    let m = n as i64;
    raw.map(|i| {
        let k = match mode {
            TakeMode::Clip => i.clamp(0, m - 1),
            TakeMode::Wrap => i.rem_euclid(m),
            TakeMode::Fast if (-m..m).contains(&i) => {
                if i < 0 {
                    i + m
                } else {
                    i
                }
            }
            TakeMode::Fast => {
                return Err(KernelError::new(
                    op,
                    format!("index {i} is out of range for an axis of size {n} (mode=\"fast\")"),
                ))
            }
        };
        Ok(k as usize)
    })
    .collect()
}

impl KernelBuilder for StridedSlice {
    fn host_kernel(&self, spec: &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> {
        check_io(spec, 1, 1)?;
        let input = &spec.inputs[0];
        let g = spec.with_type_ctx(|ctx| slice_geometry(ctx, input))?;
        let strides = crate::strides(&input.shape);
        let base: usize = g.begin.iter().zip(&strides).map(|(b, s)| b * s).sum();
        let step: Vec<isize> = g
            .step
            .iter()
            .zip(&strides)
            .map(|(&k, &s)| k * s as isize)
            .collect();
        let shape = g.shape;
        let width = input.dtype.size_bytes();
        crate::with_width!(
            width,
            |W| Ok(crate::kernel(
                spec.op,
                spec.inputs,
                spec.outputs,
                move |ins, outs, _| {
                    let x = crate::words::<W>(ins[0].bytes)?;
                    let y = crate::words_mut::<W>(outs[0].bytes)?;
                    transform::strided_gather(x, y, &shape, base, &step);
                    Ok(())
                }
            )),
            Err(spec.unsupported(format_args!("{width}-byte elements")))
        )
    }
}

impl KernelBuilder for Take {
    fn host_kernel(&self, spec: &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> {
        check_io(spec, 2, 1)?;
        let (axis, mode, _) = spec.with_type_ctx(take_type)?;
        let data = &spec.inputs[0];
        let width = data.dtype.size_bytes();
        let (outer, axis_len, block) = match axis {
            None => (1, data.num_elements(), width),
            Some(a) => (
                data.shape[..a].iter().product(),
                data.shape[a],
                data.shape[a + 1..].iter().product::<usize>() * width,
            ),
        };
        let op = spec.op.to_string();
        Ok(crate::kernel(
            spec.op,
            spec.inputs,
            spec.outputs,
            move |ins, outs, _| {
                let indices = match ins[1].ty.dtype {
                    DType::Int32 => resolve(
                        &op,
                        crate::input::<i32>(ins, 1)?.iter().map(|&i| i64::from(i)),
                        axis_len,
                        mode,
                    )?,
                    _ => resolve(
                        &op,
                        crate::input::<i64>(ins, 1)?.iter().copied(),
                        axis_len,
                        mode,
                    )?,
                };
                transform::take(
                    ins[0].bytes,
                    &indices,
                    outer,
                    axis_len,
                    block,
                    outs[0].bytes,
                );
                Ok(())
            },
        ))
    }
}

/// Registers the builders of this family.
pub(crate) fn register(builders: &mut Builders) {
    builders.add::<StridedSlice>();
    builders.add::<Take>();
}
