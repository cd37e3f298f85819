//! Normalizations: `nn.batch_norm` (inference semantics; Relay's 3-tuple result),
//! `nn.layer_norm` and `nn.lrn` (TVM's formula). Host kernels for float32 and float64.
//!
//! batch_norm's second and third results are the moving mean and variance passed through, as
//! TVM computes them outside training.

use super::nn_common::norm_axis;
use crate::ir::{TensorType, Type};
use crate::kernels::norm::AxisView;
use crate::op::{Arity, AttrDef, AttrKind, OpDef, OpImpl, OpPattern, TypeCtx, TypeError};
#[cfg(feature = "executor")]
use {
    super::nn_common::{input, output, real_kernel, with_kernel_ctx, RealBody},
    crate::kernels::norm::{layer_norm, per_channel, Lrn},
    crate::kernels::numeric::Real,
    crate::op::{HostKernel, KernelError, KernelSpec},
    crate::tensor::{TensorMut, TensorRef},
};

/// The data (argument 0), its normalized `axis` attribute and the view around it; checks that
/// the per-channel arguments `params` are 1-D of the axis length and of the data's dtype.
fn axis_setup(
    ctx: &TypeCtx<'_>,
    params: &[&str],
) -> Result<(TensorType, usize, AxisView), TypeError> {
    let data = ctx.tensor(0)?;
    let axis = norm_axis(ctx, ctx.int("axis")?, data.rank())?;
    let len = data.shape[axis];
    for (i, name) in params.iter().enumerate() {
        let p = ctx.tensor(i + 1)?;
        if p.shape != [len] {
            return Err(ctx.err(format!(
                "{name} has shape {:?} but the data has {len} channels on axis {axis}",
                p.shape
            )));
        }
        if p.dtype != data.dtype {
            return Err(ctx.err(format!(
                "{name} dtype {} differs from data dtype {}",
                p.dtype, data.dtype
            )));
        }
    }
    Ok((data.clone(), axis, AxisView::new(&data.shape, axis)))
}

const BATCH_NORM_PARAMS: [&str; 4] = ["gamma", "beta", "moving_mean", "moving_var"];

struct BatchNorm;

impl OpImpl for BatchNorm {
    fn infer_type(&self, ctx: &TypeCtx<'_>) -> Result<Type, TypeError> {
        let (data, axis, _) = axis_setup(ctx, &BATCH_NORM_PARAMS)?;
        let stat = Type::tensor([data.shape[axis]], data.dtype);
        Ok(Type::Tuple(vec![Type::Tensor(data), stat.clone(), stat]))
    }

    #[cfg(feature = "executor")]
    fn host_kernel(&self, spec: &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> {
        let (data, _, view) = with_kernel_ctx(spec, |ctx| axis_setup(ctx, &BATCH_NORM_PARAMS))?;
        let body = BatchNormKernel {
            view,
            epsilon: spec.float("epsilon")?,
            center: spec.bool("center")?,
            scale: spec.bool("scale")?,
        };
        real_kernel(spec, data.dtype, body)
    }
}

#[cfg(feature = "executor")]
struct BatchNormKernel {
    view: AxisView,
    epsilon: f64,
    center: bool,
    scale: bool,
}

#[cfg(feature = "executor")]
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

struct LayerNorm;

impl OpImpl for LayerNorm {
    fn infer_type(&self, ctx: &TypeCtx<'_>) -> Result<Type, TypeError> {
        Ok(Type::Tensor(axis_setup(ctx, &["gamma", "beta"])?.0))
    }

    #[cfg(feature = "executor")]
    fn host_kernel(&self, spec: &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> {
        let (data, _, view) = with_kernel_ctx(spec, |ctx| axis_setup(ctx, &["gamma", "beta"]))?;
        let body = LayerNormKernel {
            view,
            epsilon: spec.float("epsilon")?,
            center: spec.bool("center")?,
            scale: spec.bool("scale")?,
        };
        real_kernel(spec, data.dtype, body)
    }
}

#[cfg(feature = "executor")]
struct LayerNormKernel {
    view: AxisView,
    epsilon: f64,
    center: bool,
    scale: bool,
}

#[cfg(feature = "executor")]
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

struct LrnOp;

impl OpImpl for LrnOp {
    fn infer_type(&self, ctx: &TypeCtx<'_>) -> Result<Type, TypeError> {
        let (data, _, _) = axis_setup(ctx, &[])?;
        if ctx.int("size")? < 1 {
            return Err(ctx.err(format!("size must be at least 1, got {}", ctx.int("size")?)));
        }
        Ok(Type::Tensor(data))
    }

    #[cfg(feature = "executor")]
    fn host_kernel(&self, spec: &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> {
        let (data, _, view) = with_kernel_ctx(spec, |ctx| axis_setup(ctx, &[]))?;
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

#[cfg(feature = "executor")]
struct LrnKernel {
    view: AxisView,
    lrn: Lrn,
}

#[cfg(feature = "executor")]
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

fn norm_attrs(axis: i64) -> Vec<AttrDef> {
    vec![
        AttrDef::new("axis", AttrKind::Int, axis),
        AttrDef::new("epsilon", AttrKind::Float, 1e-5),
        AttrDef::new("center", AttrKind::Bool, true),
        AttrDef::new("scale", AttrKind::Bool, true),
    ]
}

pub(super) fn register(ops: &mut Vec<OpDef>) {
    ops.push(
        OpDef::new(
            "nn.batch_norm",
            "batch normalization with moving statistics; (out, moving_mean, moving_var)",
            Arity::Exact(5),
            OpPattern::Opaque,
            BatchNorm,
        )
        .with_attrs(norm_attrs(1)),
    );
    ops.push(
        OpDef::new(
            "nn.layer_norm",
            "normalization over one axis with scale gamma and shift beta",
            Arity::Exact(3),
            OpPattern::Opaque,
            LayerNorm,
        )
        .with_attrs(norm_attrs(-1)),
    );
    ops.push(
        OpDef::new(
            "nn.lrn",
            "local response normalization across an axis",
            Arity::Exact(1),
            OpPattern::Opaque,
            LrnOp,
        )
        .with_attrs(vec![
            AttrDef::new("size", AttrKind::Int, 5i64),
            AttrDef::new("axis", AttrKind::Int, 1i64),
            AttrDef::new("bias", AttrKind::Float, 2.0),
            AttrDef::new("alpha", AttrKind::Float, 1e-4),
            AttrDef::new("beta", AttrKind::Float, 0.75),
        ]),
    );
}
