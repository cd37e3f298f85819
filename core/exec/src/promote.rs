//! Half-precision promotion: ops over `float16` / `bfloat16` run their `float32` host kernel.
//!
//! [`host_kernel`] builds the kernel of a call site. When any input or output is a half type,
//! it builds the op's kernel for the same shapes with `float32` in place of each half type and
//! wraps it in [`Promoted`], which widens half inputs to `float32` before the run and narrows
//! the `float32` results back afterwards, rounding to nearest even (the `half` crate's
//! conversion). Tensors of other dtypes pass through untouched.

use bytemuck::Pod;
use half::slice::HalfFloatSliceExt;
use half::{bf16, f16};

use byoc_ir::op::OpDef;
use byoc_ir::tensor::{AlignedBuf, TensorMut, TensorRef};
use byoc_ir::{Attrs, DType, TensorType};
use byoc_kernels::{HostKernel, KernelError};

fn is_half(dtype: DType) -> bool {
    matches!(dtype, DType::Float16 | DType::BFloat16)
}

/// The call site's host kernel, promoted to `float32` when it touches half-precision tensors.
pub(crate) fn host_kernel(
    op: &OpDef,
    attrs: &Attrs,
    inputs: &[TensorType],
    outputs: &[TensorType],
) -> Result<Box<dyn HostKernel>, KernelError> {
    if !inputs.iter().chain(outputs).any(|t| is_half(t.dtype)) {
        return byoc_kernels::host_kernel(op, attrs, inputs, outputs);
    }
    let widen = |types: &[TensorType]| -> Vec<TensorType> {
        types
            .iter()
            .map(|t| {
                if is_half(t.dtype) {
                    TensorType::new(t.shape.clone(), DType::Float32)
                } else {
                    t.clone()
                }
            })
            .collect()
    };
    let wide_inputs = widen(inputs);
    let wide_outputs = widen(outputs);
    let inner = byoc_kernels::host_kernel(op, attrs, &wide_inputs, &wide_outputs)?;
    Ok(Box::new(Promoted {
        op: op.name.clone(),
        inner,
        wide_inputs,
        wide_outputs,
    }))
}

/// A `float32` kernel run on half-precision tensors (see the module docs).
struct Promoted {
    op: String,
    inner: Box<dyn HostKernel>,
    /// The inner kernel's input types: half types replaced by `float32`.
    wide_inputs: Vec<TensorType>,
    /// The inner kernel's output types: half types replaced by `float32`.
    wide_outputs: Vec<TensorType>,
}

/// A `float32` scratch buffer for each half-precision tensor, `None` for the others.
fn scratch(actual: &[&TensorType]) -> Vec<Option<AlignedBuf>> {
    actual
        .iter()
        .map(|t| is_half(t.dtype).then(|| AlignedBuf::zeroed(t.num_elements() * 4)))
        .collect()
}

fn widen_as<H: Pod>(src: &[u8], dst: &mut [f32])
where
    [H]: HalfFloatSliceExt,
{
    bytemuck::cast_slice::<u8, H>(src).convert_to_f32_slice(dst);
}

fn narrow_as<H: Pod>(src: &[f32], dst: &mut [u8])
where
    [H]: HalfFloatSliceExt,
{
    bytemuck::cast_slice_mut::<u8, H>(dst).convert_from_f32_slice(src);
}

impl Promoted {
    fn check(&self, what: &str, expected: usize, got: usize) -> Result<(), KernelError> {
        if expected == got {
            Ok(())
        } else {
            Err(KernelError::new(
                &self.op,
                format!("expected {expected} {what} but got {got}"),
            ))
        }
    }
}

impl HostKernel for Promoted {
    fn run(
        &self,
        inputs: &[TensorRef<'_>],
        outputs: &mut [TensorMut<'_>],
        threads: usize,
    ) -> Result<(), KernelError> {
        self.check("inputs", self.wide_inputs.len(), inputs.len())?;
        self.check("outputs", self.wide_outputs.len(), outputs.len())?;
        let mut in_bufs = scratch(&inputs.iter().map(|t| t.ty).collect::<Vec<_>>());
        for (buf, x) in in_bufs.iter_mut().zip(inputs) {
            if let Some(buf) = buf {
                let dst = bytemuck::cast_slice_mut(buf.as_bytes_mut());
                match x.ty.dtype {
                    DType::Float16 => widen_as::<f16>(x.bytes, dst),
                    _ => widen_as::<bf16>(x.bytes, dst),
                }
            }
        }
        let wide_in: Vec<TensorRef<'_>> = inputs
            .iter()
            .zip(&in_bufs)
            .zip(&self.wide_inputs)
            .map(|((x, buf), ty)| match buf {
                Some(buf) => TensorRef {
                    ty,
                    bytes: buf.as_bytes(),
                },
                None => *x,
            })
            .collect();
        let mut out_bufs = scratch(&outputs.iter().map(|t| t.ty).collect::<Vec<_>>());
        {
            let mut wide_out: Vec<TensorMut<'_>> = outputs
                .iter_mut()
                .zip(out_bufs.iter_mut())
                .zip(&self.wide_outputs)
                .map(|((y, buf), ty)| match buf {
                    Some(buf) => TensorMut {
                        ty,
                        bytes: buf.as_bytes_mut(),
                    },
                    None => TensorMut {
                        ty: y.ty,
                        bytes: &mut *y.bytes,
                    },
                })
                .collect();
            self.inner.run(&wide_in, &mut wide_out, threads)?;
        }
        for (y, buf) in outputs.iter_mut().zip(&out_bufs) {
            if let Some(buf) = buf {
                let src = bytemuck::cast_slice(buf.as_bytes());
                match y.ty.dtype {
                    DType::Float16 => narrow_as::<f16>(src, y.bytes),
                    _ => narrow_as::<bf16>(src, y.bytes),
                }
            }
        }
        Ok(())
    }
}
