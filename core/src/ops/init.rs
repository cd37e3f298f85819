//! Tensor initializers: `zeros` and `ones` (no arguments) and `full` (a scalar `fill_value`
//! argument), each with `shape` and `dtype` attributes. `full` converts the fill value to
//! `dtype` like `cast` does; an empty `dtype` keeps the fill value's.

use crate::ir::{DType, TensorType, Type};
use crate::op::{Arity, AttrDef, AttrKind, OpDef, OpImpl, OpPattern, TypeCtx, TypeError};
#[cfg(feature = "executor")]
use {
    super::support::check_io,
    crate::kernels::{self, Scalar},
    crate::op::{HostKernel, KernelError, KernelSpec},
    crate::tensor::TensorMut,
};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum InitOp {
    Zeros,
    Ones,
    Full,
}

struct Init(InitOp);

fn shape(ctx: &TypeCtx<'_>) -> Result<Vec<usize>, TypeError> {
    ctx.ints("shape")?
        .into_iter()
        .map(|d| {
            usize::try_from(d).map_err(|_| ctx.err(format!("shape has a negative dimension {d}")))
        })
        .collect()
}

/// Fills `out` with `value` converted to its dtype (C conversion rules, see `cast`).
#[cfg(feature = "executor")]
fn fill<S: Scalar>(out: &mut TensorMut<'_>, value: S) -> Result<(), KernelError> {
    let dtype = out.ty.dtype;
    if dtype == DType::Bool {
        out.bytes.fill(u8::from(value != S::ZERO));
        return Ok(());
    }
    kernels::with_numeric!(
        dtype,
        |D| {
            let v = D::from_wide(value.to_wide());
            kernels::output::<D>(std::slice::from_mut(out), 0)?.fill(v);
            Ok(())
        },
        {
            // 16-bit floats: convert through f64.
            let v = match value.to_wide() {
                kernels::Wide::Int(i) => i as f64,
                kernels::Wide::Float(f) => f,
            };
            let n = out.ty.num_elements();
            out.fill_from_f64(&vec![v; n])
                .map_err(|e| KernelError::new("full", e.to_string()))
        }
    )
}

impl OpImpl for Init {
    fn infer_type(&self, ctx: &TypeCtx<'_>) -> Result<Type, TypeError> {
        let shape = shape(ctx)?;
        let name = ctx.str("dtype")?;
        let dtype = if self.0 == InitOp::Full {
            let v = ctx.tensor(0)?;
            if v.rank() != 0 {
                return Err(ctx.err(format!("fill_value must be a scalar, got {v}")));
            }
            if name.is_empty() {
                Ok(v.dtype)
            } else {
                name.parse::<DType>()
            }
        } else {
            name.parse::<DType>()
        }
        .map_err(|e| ctx.err(e.to_string()))?;
        Ok(Type::Tensor(TensorType::new(shape, dtype)))
    }

    #[cfg(feature = "executor")]
    fn host_kernel(&self, spec: &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> {
        let inputs = usize::from(self.0 == InitOp::Full);
        check_io(spec, inputs, 1)?;
        let out_dtype = spec.outputs[0].dtype;
        match self.0 {
            // All-zero bits are zero in every built-in dtype.
            InitOp::Zeros => Ok(kernels::kernel(
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
            InitOp::Ones => Ok(kernels::kernel(
                spec.op,
                spec.inputs,
                spec.outputs,
                |_, outs, _| fill(&mut outs[0], 1u8),
            )),
            InitOp::Full => {
                let from = spec.inputs[0].dtype;
                kernels::with_numeric_or_bool!(
                    from,
                    |S| Ok(kernels::kernel(
                        spec.op,
                        spec.inputs,
                        spec.outputs,
                        |ins, outs, _| {
                            let v = kernels::input::<S>(ins, 0)?[0];
                            fill(&mut outs[0], v)
                        }
                    )),
                    Err(spec.unsupported(format_args!("a {from} fill value")))
                )
            }
        }
    }
}

pub(super) fn register(ops: &mut Vec<OpDef>) {
    let attrs = |dtype: &str| {
        vec![
            AttrDef::new("shape", AttrKind::Ints, crate::ir::AttrValue::ints([])),
            AttrDef::new("dtype", AttrKind::Str, dtype),
        ]
    };
    for (name, summary, arity, op, dtype) in [
        ("zeros", "a tensor of zeros", 0, InitOp::Zeros, "float32"),
        ("ones", "a tensor of ones", 0, InitOp::Ones, "float32"),
        (
            "full",
            "a tensor filled with fill_value",
            1,
            InitOp::Full,
            "",
        ),
    ] {
        ops.push(
            OpDef::new(
                name,
                summary,
                Arity::Exact(arity),
                OpPattern::ElemWise,
                Init(op),
            )
            .with_attrs(attrs(dtype)),
        );
    }
}
