//! Unary elementwise ops (`nn.relu`, `exp`, `round`, `clip`, `cast`, ...) and the numpy
//! broadcasting rule shared by the binary ops.
//!
//! Semantics where Relay leaves room:
//! - `round` rounds half to even, as numpy and TVM's LLVM lowering (`llvm.nearbyint`) do.
//! - `round`, `floor`, `ceil` are identities on integer tensors (TVM folds them away).
//! - `abs` and `negative` wrap on integers (`abs(-128i8) == -128`), as C does.
//! - `clip` converts `a_min`/`a_max` to the tensor dtype like a C cast before clamping.
//! - `cast` follows C conversions: integer narrowing keeps the low bits, float to integer
//!   truncates toward zero and saturates at the target range (NaN becomes 0; C leaves those
//!   cases undefined), anything to bool is `x != 0`.
//! - Ops that only make sense on floats (`exp`, `log`, `sqrt`, `rsqrt`, `erf`, `tanh`,
//!   `sigmoid`) reject integer and bool tensors in their type relation.

use crate::ir::{DType, TensorType, Type};
use crate::op::{Arity, AttrDef, AttrKind, OpDef, OpImpl, OpPattern, TypeCtx, TypeError};
#[cfg(feature = "executor")]
use {
    super::support::check_io,
    crate::kernels::{self, elementwise::map, Float, Scalar},
    crate::op::{HostKernel, KernelError, KernelSpec},
    crate::tensor::Element,
};

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

/// A host kernel computing `y[i] = f(x[i])`.
#[cfg(feature = "executor")]
pub(super) fn map_kernel<T: Element, U: Element>(
    spec: &KernelSpec<'_>,
    f: impl Fn(T) -> U + Copy + Send + Sync + 'static,
) -> Box<dyn HostKernel> {
    kernels::kernel(
        spec.op,
        spec.inputs,
        spec.outputs,
        move |ins, outs, threads| {
            let x = kernels::input::<T>(ins, 0)?;
            let y = kernels::output::<U>(outs, 0)?;
            map(x, y, threads, f);
            Ok(())
        },
    )
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum UnaryOp {
    Relu,
    Abs,
    Negative,
    Exp,
    Log,
    Sqrt,
    Rsqrt,
    Erf,
    Tanh,
    Sigmoid,
    Round,
    Floor,
    Ceil,
    Copy,
}

impl UnaryOp {
    fn float_only(self) -> bool {
        use UnaryOp::*;
        matches!(self, Exp | Log | Sqrt | Rsqrt | Erf | Tanh | Sigmoid)
    }

    /// The op on custom datatypes, if it has a lowering (see [`kernels::custom`]).
    #[cfg(feature = "executor")]
    fn on_custom(self) -> Option<kernels::custom::Unary> {
        use kernels::custom::Unary as C;
        use UnaryOp::*;
        Some(match self {
            Exp => C::Intrinsic("tir.exp"),
            Log => C::Intrinsic("tir.log"),
            Sqrt => C::Intrinsic("tir.sqrt"),
            Tanh => C::Intrinsic("tir.tanh"),
            Sigmoid => C::Intrinsic("tir.sigmoid"),
            Rsqrt => C::Rsqrt,
            Relu => C::Relu,
            Negative => C::Negative,
            Copy => C::Copy,
            Abs | Erf | Round | Floor | Ceil => return None,
        })
    }
}

struct Unary(UnaryOp);

#[cfg(feature = "executor")]
fn float_kernel<T: Float>(spec: &KernelSpec<'_>, op: UnaryOp) -> Box<dyn HostKernel> {
    use UnaryOp::*;
    match op {
        Exp => map_kernel(spec, |x: T| x.exp()),
        Log => map_kernel(spec, |x: T| x.ln()),
        Sqrt => map_kernel(spec, |x: T| x.sqrt()),
        Rsqrt => map_kernel(spec, |x: T| T::ONE.div(x.sqrt())),
        Erf => map_kernel(spec, |x: T| x.erf()),
        Tanh => map_kernel(spec, |x: T| x.tanh()),
        Sigmoid => map_kernel(spec, |x: T| T::ONE.div(T::ONE.add(x.neg().exp()))),
        Round => map_kernel(spec, |x: T| x.round_ties_even()),
        Floor => map_kernel(spec, |x: T| x.floor()),
        Ceil => map_kernel(spec, |x: T| x.ceil()),
        Relu | Abs | Negative | Copy => scalar_kernel::<T>(spec, op),
    }
}

/// Kernels of the ops defined for every numeric dtype.
#[cfg(feature = "executor")]
fn scalar_kernel<T: Scalar>(spec: &KernelSpec<'_>, op: UnaryOp) -> Box<dyn HostKernel> {
    match op {
        UnaryOp::Relu => map_kernel(spec, |x: T| if x > T::ZERO { x } else { T::ZERO }),
        UnaryOp::Abs => map_kernel(spec, |x: T| x.abs()),
        UnaryOp::Negative => map_kernel(spec, |x: T| x.neg()),
        // Rounding is the identity on integers; float-only ops never reach here for them.
        _ => map_kernel(spec, |x: T| x),
    }
}

impl OpImpl for Unary {
    fn infer_type(&self, ctx: &TypeCtx<'_>) -> Result<Type, TypeError> {
        let t = ctx.tensor(0)?;
        if self.0.float_only() && (t.dtype.is_int() || t.dtype == DType::Bool) {
            return Err(ctx.err(format!("requires a floating-point tensor, got {}", t.dtype)));
        }
        Ok(Type::Tensor(t.clone()))
    }

    #[cfg(feature = "executor")]
    fn host_kernel(&self, spec: &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> {
        check_io(spec, 1, 1)?;
        let dtype = spec.inputs[0].dtype;
        if dtype.is_custom() {
            return match self.0.on_custom() {
                Some(op) => kernels::custom::unary(spec, op),
                None => Err(spec.unsupported(dtype)),
            };
        }
        if self.0.float_only() && !dtype.is_float() {
            return Err(spec.unsupported(dtype));
        }
        if self.0 == UnaryOp::Copy {
            return Ok(kernels::kernel(
                spec.op,
                spec.inputs,
                spec.outputs,
                |ins, outs, _| {
                    for (i, o) in ins.iter().zip(outs.iter_mut()) {
                        o.bytes.copy_from_slice(i.bytes);
                    }
                    Ok(())
                },
            ));
        }
        kernels::with_float!(
            dtype,
            |T| Ok(float_kernel::<T>(spec, self.0)),
            kernels::with_int!(
                dtype,
                |T| Ok(scalar_kernel::<T>(spec, self.0)),
                Err(spec.unsupported(dtype))
            )
        )
    }
}

/// `clip(x, a_min, a_max)`.
struct Clip;

fn bounds(ctx: &TypeCtx<'_>) -> Result<(f64, f64), TypeError> {
    let (lo, hi) = (ctx.float("a_min")?, ctx.float("a_max")?);
    if lo > hi {
        return Err(ctx.err(format!("a_min ({lo}) is greater than a_max ({hi})")));
    }
    Ok((lo, hi))
}

#[cfg(feature = "executor")]
fn clip_kernel<T: Scalar>(spec: &KernelSpec<'_>, lo: f64, hi: f64) -> Box<dyn HostKernel> {
    let lo = T::from_wide(kernels::Wide::Float(lo));
    let hi = T::from_wide(kernels::Wide::Float(hi));
    map_kernel(spec, move |x: T| {
        if x < lo {
            lo
        } else if x > hi {
            hi
        } else {
            x
        }
    })
}

impl OpImpl for Clip {
    fn infer_type(&self, ctx: &TypeCtx<'_>) -> Result<Type, TypeError> {
        bounds(ctx)?;
        Ok(Type::Tensor(ctx.tensor(0)?.clone()))
    }

    #[cfg(feature = "executor")]
    fn host_kernel(&self, spec: &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> {
        check_io(spec, 1, 1)?;
        let (lo, hi) = super::support::with_type_ctx(spec, bounds)?;
        let dtype = spec.inputs[0].dtype;
        kernels::with_numeric!(
            dtype,
            |T| Ok(clip_kernel::<T>(spec, lo, hi)),
            Err(spec.unsupported(dtype))
        )
    }
}

/// `cast(x, dtype)`.
struct Cast;

fn target_dtype(ctx: &TypeCtx<'_>) -> Result<DType, TypeError> {
    let name = ctx.str("dtype")?;
    name.parse::<DType>().map_err(|e| ctx.err(e.to_string()))
}

#[cfg(feature = "executor")]
fn cast_kernel<S: Scalar>(
    spec: &KernelSpec<'_>,
    to: DType,
) -> Result<Box<dyn HostKernel>, KernelError> {
    if to == DType::Bool {
        return Ok(map_kernel(spec, |x: S| u8::from(x != S::ZERO)));
    }
    kernels::with_numeric!(
        to,
        |D| Ok(map_kernel(spec, |x: S| D::from_wide(x.to_wide()))),
        Err(spec.unsupported(format_args!("casting to {to}")))
    )
}

impl OpImpl for Cast {
    fn infer_type(&self, ctx: &TypeCtx<'_>) -> Result<Type, TypeError> {
        let t = ctx.tensor(0)?;
        Ok(Type::Tensor(TensorType::new(
            t.shape.clone(),
            target_dtype(ctx)?,
        )))
    }

    #[cfg(feature = "executor")]
    fn host_kernel(&self, spec: &KernelSpec<'_>) -> Result<Box<dyn HostKernel>, KernelError> {
        check_io(spec, 1, 1)?;
        let (from, to) = (spec.inputs[0].dtype, spec.outputs[0].dtype);
        if from.is_custom() || to.is_custom() {
            return kernels::custom::cast(spec);
        }
        kernels::with_numeric_or_bool!(
            from,
            |S| cast_kernel::<S>(spec, to),
            Err(spec.unsupported(format_args!("casting from {from}")))
        )
    }
}

pub(super) fn register(ops: &mut Vec<OpDef>) {
    use UnaryOp::*;
    let unary: [(&str, &'static str, UnaryOp); 14] = [
        ("nn.relu", "max(x, 0)", Relu),
        ("abs", "|x|", Abs),
        ("negative", "-x", Negative),
        ("exp", "e^x", Exp),
        ("log", "natural logarithm", Log),
        ("sqrt", "square root", Sqrt),
        ("rsqrt", "1 / sqrt(x)", Rsqrt),
        ("erf", "the error function", Erf),
        ("tanh", "hyperbolic tangent", Tanh),
        ("sigmoid", "1 / (1 + e^-x)", Sigmoid),
        ("round", "round to nearest, ties to even", Round),
        ("floor", "round down", Floor),
        ("ceil", "round up", Ceil),
        ("copy", "a copy of x", Copy),
    ];
    for (name, summary, op) in unary {
        ops.push(OpDef::new(
            name,
            summary,
            Arity::Exact(1),
            OpPattern::ElemWise,
            Unary(op),
        ));
    }
    ops.push(
        OpDef::new(
            "clip",
            "min(max(x, a_min), a_max)",
            Arity::Exact(1),
            OpPattern::ElemWise,
            Clip,
        )
        .with_attrs(vec![
            AttrDef::optional("a_min", AttrKind::Float),
            AttrDef::optional("a_max", AttrKind::Float),
        ]),
    );
    ops.push(
        OpDef::new(
            "cast",
            "x converted to dtype",
            Arity::Exact(1),
            OpPattern::ElemWise,
            Cast,
        )
        .with_attrs(vec![AttrDef::optional("dtype", AttrKind::Str)]),
    );
}
