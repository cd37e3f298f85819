//! Host kernels of the init ops: the kernel half of [`byoc_ir::ops::init`].

use crate::registry::Builders;
use crate::KernelBuilder;
pub(crate) use byoc_ir::ops::init::*;
use byoc_ir::DType;

use {
    super::support::check_io,
    crate::Scalar,
    crate::{HostKernel, KernelError, KernelSpec},
    byoc_ir::tensor::TensorMut,
};

/// Fills `out` with `value` converted to its dtype (C conversion rules, see `cast`).
fn fill<S: Scalar>(out: &mut TensorMut<'_>, value: S) -> Result<(), KernelError> {
    let dtype = out.ty.dtype;
    if dtype == DType::Bool {
        out.bytes.fill(u8::from(value != S::ZERO));
        return Ok(());
    }
    crate::with_numeric!(
        dtype,
        |D| {
            let v = D::from_wide(value.to_wide());
            crate::output::<D>(std::slice::from_mut(out), 0)?.fill(v);
            Ok(())
        },
        {
            // 16-bit floats: convert through f64.
            let v = match value.to_wide() {
                crate::Wide::Int(i) => i as f64,
                crate::Wide::Float(f) => f,
            };
            let n = out.ty.num_elements();
            out.fill_from_f64(&vec![v; n])
                .map_err(|e| KernelError::new("full", e.to_string()))
        }
    )
}

impl KernelBuilder for Init {
    fn host_kernel(&self, spec: &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> {
        let inputs = usize::from(self.0 == InitOp::Full);
        check_io(spec, inputs, 1)?;
        let out_dtype = spec.outputs[0].dtype;
        match self.0 {
            // All-zero bits are zero in every built-in dtype.
            InitOp::Zeros => Ok(crate::kernel(
                spec.op,
                spec.inputs,
                spec.outputs,
                |_, outs, _| {
                    outs[0].bytes.fill(0);
                    Ok(())
                },
            )),
            InitOp::Ones | InitOp::Full if out_dtype.is_custom() => {
                Err(spec.unsupported(out_dtype))
            }
            InitOp::Ones => Ok(crate::kernel(
                spec.op,
                spec.inputs,
                spec.outputs,
                |_, outs, _| fill(&mut outs[0], 1u8),
            )),
            InitOp::Full => {
                let from = spec.inputs[0].dtype;
                crate::with_numeric_or_bool!(
                    from,
                    |S| Ok(crate::kernel(
                        spec.op,
                        spec.inputs,
                        spec.outputs,
                        |ins, outs, _| {
                            let v = crate::input::<S>(ins, 0)?[0];
                            fill(&mut outs[0], v)
                        }
                    )),
                    Err(spec.unsupported(format_args!("a {from} fill value")))
                )
            }
        }
    }
}

/// Registers the builders of this family.
pub(crate) fn register(builders: &mut Builders) {
    builders.add::<Init>();
}
