//! Host kernels of the pad ops: the kernel half of [`byoc_ir::ops::pad`].

use crate::registry::Builders;
use crate::KernelBuilder;
pub(crate) use byoc_ir::ops::pad::*;
use byoc_ir::TensorType;

use {
    crate::pad::pad,
    crate::{HostKernel, KernelError, KernelSpec},
    byoc_ir::tensor::{Tensor, TensorMut, TensorRef},
};

struct PadKernel(PadSetup);

impl HostKernel for PadKernel {
    fn run(
        &self,
        inputs: &[TensorRef<'_>],
        outputs: &mut [TensorMut<'_>],
        _threads: usize,
    ) -> Result<(), KernelError> {
        let err = |m: String| KernelError::new("nn.pad", m);
        let s = &self.0;
        let [x, v] = inputs else {
            return Err(err(format!("expected 2 inputs, got {}", inputs.len())));
        };
        let y = outputs
            .first_mut()
            .ok_or_else(|| err("missing output".into()))?;
        // The pad value as one element of the data dtype.
        let value = if v.ty.dtype == s.data.dtype {
            v.to_tensor()
        } else {
            Tensor::from_f64(TensorType::scalar(s.data.dtype), &v.to_f64_vec())
                .map_err(|e| err(e.to_string()))?
        };
        pad(
            s.mode,
            &s.data.shape,
            &s.widths,
            s.data.dtype.size_bytes(),
            value.as_bytes(),
            x.bytes,
            y.bytes,
        );
        Ok(())
    }
}

impl KernelBuilder for Pad {
    fn host_kernel(&self, spec: &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> {
        let s = spec.with_type_ctx(setup)?;
        let value = &spec.inputs[1];
        if value.dtype != s.data.dtype && (value.dtype.is_custom() || s.data.dtype.is_custom()) {
            return Err(spec.unsupported(format!(
                "a {} pad value for {} data",
                value.dtype, s.data.dtype
            )));
        }
        Ok(Box::new(PadKernel(s)))
    }
}

/// Registers the builders of this family.
pub(crate) fn register(builders: &mut Builders) {
    builders.add::<Pad>();
}
