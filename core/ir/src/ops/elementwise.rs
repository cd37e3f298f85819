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

use crate::op::{Arity, AttrDef, AttrKind, OpDef, OpImpl, OpPattern, TypeCtx, TypeError};
use crate::{DType, TensorType, Type};

/// numpy broadcasting of two shapes.
pub fn broadcast_shapes(
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

/// Which op a [`Unary`] computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnaryOp {
    /// `nn.relu`: `max(x, 0)`.
    Relu,
    /// `abs`: `|x|` (wraps on integers).
    Abs,
    /// `negative`: `-x` (wraps on integers).
    Negative,
    /// `exp`: `e^x`.
    Exp,
    /// `log`: the natural logarithm.
    Log,
    /// `sqrt`: the square root.
    Sqrt,
    /// `rsqrt`: `1 / sqrt(x)`.
    Rsqrt,
    /// `erf`: the error function.
    Erf,
    /// `tanh`: the hyperbolic tangent.
    Tanh,
    /// `sigmoid`: `1 / (1 + e^-x)`.
    Sigmoid,
    /// `round`: to nearest, ties to even (the identity on integers).
    Round,
    /// `floor`: round down (the identity on integers).
    Floor,
    /// `ceil`: round up (the identity on integers).
    Ceil,
    /// `copy`: the input unchanged.
    Copy,
}

impl UnaryOp {
    /// True for ops defined on floating-point tensors only (`exp`, `log`, `sqrt`, `tanh`, ...).
    pub fn float_only(self) -> bool {
        use UnaryOp::*;
        matches!(self, Exp | Log | Sqrt | Rsqrt | Erf | Tanh | Sigmoid)
    }
}

/// A unary elementwise op (`nn.relu`, `exp`, `round`, ...); the result has the input's type.
pub struct Unary(pub UnaryOp);

impl OpImpl for Unary {
    fn infer_type(&self, ctx: &TypeCtx<'_>) -> Result<Type, TypeError> {
        let t = ctx.tensor(0)?;
        if self.0.float_only() && (t.dtype.is_int() || t.dtype == DType::Bool) {
            return Err(ctx.err(format!("requires a floating-point tensor, got {}", t.dtype)));
        }
        Ok(Type::Tensor(t.clone()))
    }
}

/// `clip(x, a_min, a_max)`.
pub struct Clip;

/// `clip`'s `(a_min, a_max)` attributes; errors when `a_min > a_max`.
pub fn bounds(ctx: &TypeCtx<'_>) -> Result<(f64, f64), TypeError> {
    let (lo, hi) = (ctx.float("a_min")?, ctx.float("a_max")?);
    if lo > hi {
        return Err(ctx.err(format!("a_min ({lo}) is greater than a_max ({hi})")));
    }
    Ok((lo, hi))
}

impl OpImpl for Clip {
    fn infer_type(&self, ctx: &TypeCtx<'_>) -> Result<Type, TypeError> {
        bounds(ctx)?;
        Ok(Type::Tensor(ctx.tensor(0)?.clone()))
    }
}

/// `cast(x, dtype)`.
pub struct Cast;

fn target_dtype(ctx: &TypeCtx<'_>) -> Result<DType, TypeError> {
    let name = ctx.str("dtype")?;
    name.parse::<DType>().map_err(|e| ctx.err(e.to_string()))
}

impl OpImpl for Cast {
    fn infer_type(&self, ctx: &TypeCtx<'_>) -> Result<Type, TypeError> {
        let t = ctx.tensor(0)?;
        Ok(Type::Tensor(TensorType::new(
            t.shape.clone(),
            target_dtype(ctx)?,
        )))
    }
}

pub(crate) fn register(ops: &mut Vec<OpDef>) {
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
