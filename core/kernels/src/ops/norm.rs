//! Host kernels of the norm ops: the kernel half of [`byoc_ir::ops::norm`].

use crate::registry::Builders;
use crate::KernelBuilder;
pub(crate) use byoc_ir::ops::norm::*;

use {
    super::nn_common::{input, output, real_kernel, RealBody},
    crate::norm::{layer_norm, per_channel, Lrn},
    crate::numeric::Real,
    crate::{HostKernel, KernelError, KernelSpec},
    byoc_ir::tensor::{TensorMut, TensorRef},
};

struct BatchNormKernel {
    view: AxisView,
    epsilon: f64,
    center: bool,
    scale: bool,
}

impl RealBody for BatchNormKernel {
    fn run<T: Real>(
        &self,
        inputs: &[TensorRef<'_>],
        outputs: &mut [TensorMut<'_>],
        threads: usize,
    ) -> Result<(), KernelError> {
        const OP: &str = "nn.batch_norm";
        let x = input::<T>(OP, inputs, 0)?;
        let [gamma, beta, mean, var] = [1, 2, 3, 4].map(|i| input::<T>(OP, inputs, i));
        let (gamma, beta, mean, var) = (gamma?, beta?, mean?, var?);
        let eps = T::from_f64(self.epsilon);
        // y = x · s[c] + t[c] with s = γ / sqrt(var + ε), t = β − mean · s.
        let (mut s, mut t) = (Vec::new(), Vec::new());
        for c in 0..self.view.len {
            let g = if self.scale { gamma[c] } else { T::ONE };
            let b = if self.center { beta[c] } else { T::ZERO };
            let sc = g / (var[c] + eps).sqrt();
            s.push(sc);
            t.push(b - mean[c] * sc);
        }
        per_channel(
            self.view,
            x,
            output::<T>(OP, outputs, 0)?,
            threads,
            |c, v| v * s[c] + t[c],
        );
        output::<T>(OP, outputs, 1)?.copy_from_slice(mean);
        output::<T>(OP, outputs, 2)?.copy_from_slice(var);
        Ok(())
    }
}

struct LayerNormKernel {
    view: AxisView,
    epsilon: f64,
    center: bool,
    scale: bool,
}

impl RealBody for LayerNormKernel {
    fn run<T: Real>(
        &self,
        inputs: &[TensorRef<'_>],
        outputs: &mut [TensorMut<'_>],
        threads: usize,
    ) -> Result<(), KernelError> {
        const OP: &str = "nn.layer_norm";
        let x = input::<T>(OP, inputs, 0)?;
        let gamma = input::<T>(OP, inputs, 1)?;
        let beta = input::<T>(OP, inputs, 2)?;
        let y = output::<T>(OP, outputs, 0)?;
        layer_norm(
            self.view,
            x,
            self.scale.then_some(gamma),
            self.center.then_some(beta),
            self.epsilon,
            y,
            threads,
        );
        Ok(())
    }
}

struct LrnKernel {
    view: AxisView,
    lrn: Lrn,
}

impl RealBody for LrnKernel {
    fn run<T: Real>(
        &self,
        inputs: &[TensorRef<'_>],
        outputs: &mut [TensorMut<'_>],
        threads: usize,
    ) -> Result<(), KernelError> {
        let x = input::<T>("nn.lrn", inputs, 0)?;
        let y = output::<T>("nn.lrn", outputs, 0)?;
        self.lrn.run(self.view, x, y, threads);
        Ok(())
    }
}

impl KernelBuilder for BatchNorm {
    fn host_kernel(&self, spec: &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> {
        let (data, _, view) = spec.with_type_ctx(|ctx| axis_setup(ctx, &BATCH_NORM_PARAMS))?;
        let body = BatchNormKernel {
            view,
            epsilon: spec.float("epsilon")?,
            center: spec.bool("center")?,
            scale: spec.bool("scale")?,
        };
        real_kernel(spec, data.dtype, body)
    }
}

impl KernelBuilder for LayerNorm {
    fn host_kernel(&self, spec: &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> {
        let (data, _, view) = spec.with_type_ctx(|ctx| axis_setup(ctx, &["gamma", "beta"]))?;
        let body = LayerNormKernel {
            view,
            epsilon: spec.float("epsilon")?,
            center: spec.bool("center")?,
            scale: spec.bool("scale")?,
        };
        real_kernel(spec, data.dtype, body)
    }
}

impl KernelBuilder for LrnOp {
    fn host_kernel(&self, spec: &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> {
        let (data, _, view) = spec.with_type_ctx(|ctx| axis_setup(ctx, &[]))?;
        let size = usize::try_from(spec.int("size")?)
            .ok()
            .filter(|&s| s >= 1)
            .ok_or_else(|| spec.unsupported("size < 1"))?;
        let body = LrnKernel {
            view,
            lrn: Lrn {
                size,
                bias: spec.float("bias")?,
                alpha: spec.float("alpha")?,
                beta: spec.float("beta")?,
            },
        };
        real_kernel(spec, data.dtype, body)
    }
}

/// Registers the builders of this family.
pub(crate) fn register(builders: &mut Builders) {
    builders.add::<BatchNorm>();
    builders.add::<LayerNorm>();
    builders.add::<LrnOp>();
}
