//! Channel-wise and parametric activations: `nn.bias_add` (float32, float64, int32),
//! `nn.prelu`, `nn.leaky_relu` (float32, float64) and `nn.dropout` (identity at inference;
//! Relay types it as the 2-tuple `(out, mask)`, and the mask here is all ones).

use super::nn_common::norm_axis;
use crate::ir::Type;
use crate::kernels::norm::AxisView;
use crate::op::{Arity, AttrDef, AttrKind, OpDef, OpImpl, OpPattern, TypeCtx, TypeError};
#[cfg(feature = "executor")]
use {
    super::nn_common::{input, output, real_kernel, with_kernel_ctx, RealBody},
    crate::ir::DType,
    crate::kernels::norm::per_channel,
    crate::kernels::numeric::{Acc, Real},
    crate::op::{HostKernel, KernelError, KernelSpec},
    crate::tensor::{TensorMut, TensorRef},
    std::marker::PhantomData,
};

/// The view of the data around `axis` after checking that argument 1 (`what`) is a vector of
/// the axis length and the data's dtype.
fn channel_view(ctx: &TypeCtx<'_>, what: &str) -> Result<AxisView, TypeError> {
    let data = ctx.tensor(0)?;
    let axis = norm_axis(ctx, ctx.int("axis")?, data.rank())?;
    let p = ctx.tensor(1)?;
    if p.shape != [data.shape[axis]] {
        return Err(ctx.err(format!(
            "{what} has shape {:?} but the data has {} channels on axis {axis}",
            p.shape, data.shape[axis]
        )));
    }
    if p.dtype != data.dtype {
        return Err(ctx.err(format!(
            "{what} dtype {} differs from data dtype {}",
            p.dtype, data.dtype
        )));
    }
    Ok(AxisView::new(&data.shape, axis))
}

struct BiasAdd;

impl OpImpl for BiasAdd {
    fn infer_type(&self, ctx: &TypeCtx<'_>) -> Result<Type, TypeError> {
        channel_view(ctx, "bias")?;
        Ok(Type::Tensor(ctx.tensor(0)?.clone()))
    }

    #[cfg(feature = "executor")]
    fn host_kernel(&self, spec: &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> {
        let view = with_kernel_ctx(spec, |ctx| channel_view(ctx, "bias"))?;
        Ok(match spec.inputs[0].dtype {
            DType::Custom { .. } => return crate::kernels::custom::bias_add(spec, view),
            DType::Float32 => Box::new(BiasAddKernel::<f32>(view, PhantomData)),
            DType::Float64 => Box::new(BiasAddKernel::<f64>(view, PhantomData)),
            DType::Int32 => Box::new(BiasAddKernel::<i32>(view, PhantomData)),
            other => return Err(spec.unsupported(other)),
        })
    }
}

#[cfg(feature = "executor")]
struct BiasAddKernel<T>(AxisView, PhantomData<fn() -> T>);

#[cfg(feature = "executor")]
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

struct Prelu;

impl OpImpl for Prelu {
    fn infer_type(&self, ctx: &TypeCtx<'_>) -> Result<Type, TypeError> {
        channel_view(ctx, "alpha")?;
        Ok(Type::Tensor(ctx.tensor(0)?.clone()))
    }

    #[cfg(feature = "executor")]
    fn host_kernel(&self, spec: &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> {
        let view = with_kernel_ctx(spec, |ctx| channel_view(ctx, "alpha"))?;
        real_kernel(spec, spec.inputs[0].dtype, PreluKernel(view))
    }
}

#[cfg(feature = "executor")]
struct PreluKernel(AxisView);

#[cfg(feature = "executor")]
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

struct LeakyRelu;

impl OpImpl for LeakyRelu {
    fn infer_type(&self, ctx: &TypeCtx<'_>) -> Result<Type, TypeError> {
        ctx.float("alpha")?;
        Ok(Type::Tensor(ctx.tensor(0)?.clone()))
    }

    #[cfg(feature = "executor")]
    fn host_kernel(&self, spec: &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> {
        let n = spec.inputs[0].num_elements();
        let body = LeakyReluKernel {
            view: AxisView {
                outer: 1,
                len: 1,
                inner: n,
            },
            alpha: spec.float("alpha")?,
        };
        real_kernel(spec, spec.inputs[0].dtype, body)
    }
}

#[cfg(feature = "executor")]
struct LeakyReluKernel {
    view: AxisView,
    alpha: f64,
}

#[cfg(feature = "executor")]
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

struct Dropout;

impl OpImpl for Dropout {
    fn infer_type(&self, ctx: &TypeCtx<'_>) -> Result<Type, TypeError> {
        let rate = ctx.float("rate")?;
        if !(0.0..1.0).contains(&rate) {
            return Err(ctx.err(format!("rate must be in [0, 1), got {rate}")));
        }
        let t = Type::Tensor(ctx.tensor(0)?.clone());
        Ok(Type::Tuple(vec![t.clone(), t]))
    }

    #[cfg(feature = "executor")]
    fn host_kernel(&self, spec: &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> {
        let dtype = spec.inputs[0].dtype;
        if dtype.is_custom() {
            return Err(spec.unsupported(dtype));
        }
        Ok(Box::new(DropoutKernel))
    }
}

/// Inference dropout: the output is the input, the mask all ones.
#[cfg(feature = "executor")]
struct DropoutKernel;

#[cfg(feature = "executor")]
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

pub(super) fn register(ops: &mut Vec<OpDef>) {
    ops.push(
        OpDef::new(
            "nn.bias_add",
            "adds a vector along axis (default 1, the channels)",
            Arity::Exact(2),
            OpPattern::Broadcast,
            BiasAdd,
        )
        .with_attrs(vec![AttrDef::new("axis", AttrKind::Int, 1i64)]),
    );
    ops.push(
        OpDef::new(
            "nn.prelu",
            "x if x >= 0 else alpha[c] * x, c the index along axis",
            Arity::Exact(2),
            OpPattern::Broadcast,
            Prelu,
        )
        .with_attrs(vec![AttrDef::new("axis", AttrKind::Int, 1i64)]),
    );
    ops.push(
        OpDef::new(
            "nn.leaky_relu",
            "x if x >= 0 else alpha * x",
            Arity::Exact(1),
            OpPattern::ElemWise,
            LeakyRelu,
        )
        .with_attrs(vec![AttrDef::new("alpha", AttrKind::Float, 0.01)]),
    );
    ops.push(
        OpDef::new(
            "nn.dropout",
            "dropout; identity at inference, typed (out, mask)",
            Arity::Exact(1),
            OpPattern::Opaque,
            Dropout,
        )
        .with_attrs(vec![AttrDef::new("rate", AttrKind::Float, 0.5)]),
    );
}
