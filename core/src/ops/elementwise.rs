//! Elementwise and broadcasting arithmetic ops.

use crate::ir::{TensorType, Type};
use crate::op::{
    Arity, HostKernel, KernelError, KernelSpec, OpDef, OpImpl, OpPattern, TypeCtx, TypeError,
};
use crate::tensor::{TensorMut, TensorRef};

/// numpy broadcasting of two shapes.
pub(crate) fn broadcast_shapes(
    ctx: &TypeCtx<'_>,
    a: &[usize],
    b: &[usize],
) -> Result<Vec<usize>, TypeError> {
    let rank = a.len().max(b.len());
    let mut out = vec![0; rank];
    for i in 0..rank {
        let da = if i + a.len() >= rank {
            a[i + a.len() - rank]
        } else {
            1
        };
        let db = if i + b.len() >= rank {
            b[i + b.len() - rank]
        } else {
            1
        };
        out[i] = match (da, db) {
            (x, y) if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            _ => {
                return Err(ctx.err(format!(
                    "shapes {a:?} and {b:?} do not broadcast (dimension {i}: {da} vs {db})"
                )))
            }
        };
    }
    Ok(out)
}

struct Unary(fn(f32) -> f32);

impl OpImpl for Unary {
    fn infer_type(&self, ctx: &TypeCtx<'_>) -> Result<Type, TypeError> {
        Ok(Type::Tensor(ctx.tensor(0)?.clone()))
    }

    fn host_kernel(&self, spec: &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> {
        if spec.inputs[0].dtype != crate::ir::DType::Float32 {
            return Err(spec.unsupported(spec.inputs[0].dtype));
        }
        Ok(Box::new(UnaryF32(self.0)))
    }
}

struct UnaryF32(fn(f32) -> f32);

impl HostKernel for UnaryF32 {
    fn run(
        &self,
        inputs: &[TensorRef<'_>],
        outputs: &mut [TensorMut<'_>],
        _threads: usize,
    ) -> Result<(), KernelError> {
        let x = inputs[0]
            .as_slice::<f32>()
            .map_err(|e| KernelError::new("unary", e.to_string()))?;
        let y = outputs[0]
            .as_slice_mut::<f32>()
            .map_err(|e| KernelError::new("unary", e.to_string()))?;
        for (d, &s) in y.iter_mut().zip(x) {
            *d = (self.0)(s);
        }
        Ok(())
    }
}

struct Binary(fn(f32, f32) -> f32);

impl OpImpl for Binary {
    fn infer_type(&self, ctx: &TypeCtx<'_>) -> Result<Type, TypeError> {
        let a = ctx.tensor(0)?;
        let b = ctx.tensor(1)?;
        if a.dtype != b.dtype {
            return Err(ctx.err(format!("operand dtypes differ: {} vs {}", a.dtype, b.dtype)));
        }
        Ok(Type::Tensor(TensorType::new(
            broadcast_shapes(ctx, &a.shape, &b.shape)?,
            a.dtype,
        )))
    }

    fn host_kernel(&self, spec: &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> {
        if spec.inputs[0].dtype != crate::ir::DType::Float32 {
            return Err(spec.unsupported(spec.inputs[0].dtype));
        }
        if spec.inputs[0].shape != spec.inputs[1].shape {
            return Err(spec.unsupported("broadcasting yet"));
        }
        Ok(Box::new(BinaryF32(self.0)))
    }
}

struct BinaryF32(fn(f32, f32) -> f32);

impl HostKernel for BinaryF32 {
    fn run(
        &self,
        inputs: &[TensorRef<'_>],
        outputs: &mut [TensorMut<'_>],
        _threads: usize,
    ) -> Result<(), KernelError> {
        let a = inputs[0]
            .as_slice::<f32>()
            .map_err(|e| KernelError::new("binary", e.to_string()))?;
        let b = inputs[1]
            .as_slice::<f32>()
            .map_err(|e| KernelError::new("binary", e.to_string()))?;
        let y = outputs[0]
            .as_slice_mut::<f32>()
            .map_err(|e| KernelError::new("binary", e.to_string()))?;
        for ((d, &x), &z) in y.iter_mut().zip(a).zip(b) {
            *d = (self.0)(x, z);
        }
        Ok(())
    }
}

pub(super) fn register(ops: &mut Vec<OpDef>) {
    ops.push(OpDef::new(
        "nn.relu",
        "max(x, 0)",
        Arity::Exact(1),
        OpPattern::ElemWise,
        Unary(|x| x.max(0.0)),
    ));
    ops.push(OpDef::new(
        "add",
        "a + b with broadcasting",
        Arity::Exact(2),
        OpPattern::Broadcast,
        Binary(|a, b| a + b),
    ));
}
