//! Host kernels of the activation ops: the kernel half of [`byoc_ir::ops::activation`].

use crate::registry::Builders;
use crate::KernelBuilder;
pub(crate) use byoc_ir::ops::activation::*;
use byoc_ir::ops::norm::AxisView;

use {
    super::nn_common::{input, output, real_kernel, RealBody},
    crate::norm::per_channel,
    crate::numeric::{Acc, Real},
    crate::{HostKernel, KernelError, KernelSpec},
    byoc_ir::tensor::{TensorMut, TensorRef},
    byoc_ir::DType,
    std::marker::PhantomData,
};

struct BiasAddKernel<T>(AxisView, PhantomData<fn() -> T>);

impl<T: Acc> HostKernel for BiasAddKernel<T> {
    fn run(
        &self,
        inputs: &[TensorRef<'_>],
        outputs: &mut [TensorMut<'_>],
        threads: usize,
    ) -> Result<(), KernelError> {
        const OP: &str = "nn.bias_add";
        let x = input::<T>(OP, inputs, 0)?;
        let b = input::<T>(OP, inputs, 1)?;
        per_channel(
            self.0,
            x,
            output::<T>(OP, outputs, 0)?,
            threads,
            |c, v: T| v.add(b[c]),
        );
        Ok(())
    }
}

struct PreluKernel(AxisView);

impl RealBody for PreluKernel {
    fn run<T: Real>(
        &self,
        inputs: &[TensorRef<'_>],
        outputs: &mut [TensorMut<'_>],
        threads: usize,
    ) -> Result<(), KernelError> {
        const OP: &str = "nn.prelu";
        let x = input::<T>(OP, inputs, 0)?;
        let a = input::<T>(OP, inputs, 1)?;
        per_channel(
            self.0,
            x,
            output::<T>(OP, outputs, 0)?,
            threads,
            |c, v: T| {
                if v < T::ZERO {
                    a[c] * v
                } else {
                    v
                }
            },
        );
        Ok(())
    }
}

struct LeakyReluKernel {
    view: AxisView,
    alpha: f64,
}

impl RealBody for LeakyReluKernel {
    fn run<T: Real>(
        &self,
        inputs: &[TensorRef<'_>],
        outputs: &mut [TensorMut<'_>],
        threads: usize,
    ) -> Result<(), KernelError> {
        const OP: &str = "nn.leaky_relu";
        let x = input::<T>(OP, inputs, 0)?;
        let alpha = T::from_f64(self.alpha);
        per_channel(
            self.view,
            x,
            output::<T>(OP, outputs, 0)?,
            threads,
            |_, v: T| {
                if v < T::ZERO {
                    alpha * v
                } else {
                    v
                }
            },
        );
        Ok(())
    }
}

/// Inference dropout: the output is the input, the mask all ones.
struct DropoutKernel;

impl HostKernel for DropoutKernel {
    fn run(
        &self,
        inputs: &[TensorRef<'_>],
        outputs: &mut [TensorMut<'_>],
        _threads: usize,
    ) -> Result<(), KernelError> {
        let missing = |what: &str| KernelError::new("nn.dropout", format!("missing {what}"));
        let x = inputs.first().ok_or_else(|| missing("input"))?;
        let [out, mask] = outputs else {
            return Err(missing("outputs (out, mask)"));
        };
        out.bytes.copy_from_slice(x.bytes);
        let ones = vec![1.0; mask.ty.num_elements()];
        mask.fill_from_f64(&ones)
            .map_err(|e| KernelError::new("nn.dropout", e.to_string()))
    }
}

impl KernelBuilder for BiasAdd {
    fn host_kernel(&self, spec: &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> {
        let view = spec.with_type_ctx(|ctx| channel_view(ctx, "bias"))?;
        Ok(match spec.inputs[0].dtype {
            DType::Custom { .. } => return crate::custom::bias_add(spec, view),
            DType::Float32 => Box::new(BiasAddKernel::<f32>(view, PhantomData)),
            DType::Float64 => Box::new(BiasAddKernel::<f64>(view, PhantomData)),
            DType::Int32 => Box::new(BiasAddKernel::<i32>(view, PhantomData)),
            other => return Err(spec.unsupported(other)),
        })
    }
}

impl KernelBuilder for Prelu {
    fn host_kernel(&self, spec: &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> {
        let view = spec.with_type_ctx(|ctx| channel_view(ctx, "alpha"))?;
        if spec.inputs[0].dtype.is_custom() {
            return crate::custom::leaky(spec, crate::custom::Slope::PerChannel(view));
        }
        real_kernel(spec, spec.inputs[0].dtype, PreluKernel(view))
    }
}

impl KernelBuilder for LeakyRelu {
    fn host_kernel(&self, spec: &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> {
        let n = spec.inputs[0].num_elements();
        let alpha = spec.float("alpha")?;
        if spec.inputs[0].dtype.is_custom() {
            return crate::custom::leaky(spec, crate::custom::Slope::Constant(alpha));
        }
        let body = LeakyReluKernel {
            view: AxisView {
                outer: 1,
                len: 1,
                inner: n,
            },
            alpha,
        };
        real_kernel(spec, spec.inputs[0].dtype, body)
    }
}

impl KernelBuilder for Dropout {
    fn host_kernel(&self, spec: &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> {
        let dtype = spec.inputs[0].dtype;
        if dtype.is_custom() {
            return Err(spec.unsupported(dtype));
        }
        Ok(Box::new(DropoutKernel))
    }
}

/// Registers the builders of this family.
pub(crate) fn register(builders: &mut Builders) {
    builders.add::<BiasAdd>();
    builders.add::<Prelu>();
    builders.add::<LeakyRelu>();
    builders.add::<Dropout>();
}
