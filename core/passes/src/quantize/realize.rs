//! The realize step: rewrites a float function into TVM's realized int8 form, given the plan
//! and a power-of-two scale `2^e` per quantization point (a real value `v` is held as the
//! integer `q` with `v ≈ q · 2^e`).
//!
//! - quantization point, from float: `cast(clip(round(multiply(x, 2^-e)), -127, 127), int8)`;
//! - quantization point, from int32 at exponent `a` to int8 at `e` (`s = e - a`):
//!   `cast(clip(right_shift(add(x, 2^(s-1)), s), -127, 127), int8)` for `s > 0`
//!   (round-for-shift), `left_shift(x, -s)` instead of the add and shift for `s < 0`, neither
//!   for `s = 0`;
//! - quantized conv2d / dense: int8 data and an int8 weight with its own power-of-two scale
//!   (`2^ceil(log2 max|w|) / 128`), `out_dtype="int32"`, result exponent = sum of the two;
//! - bias: an int32 constant at the accumulator's exponent, `(C, 1, 1)` after a conv (`(C)`
//!   after a dense), added with `add`;
//! - residual `add`: both sides int32, the coarser one `left_shift`ed to the finer exponent;
//! - `nn.relu` runs on the integers;
//! - an integer value used by a float call: `multiply(cast(x, float32), 2^e)`.
//!
//! Weights and biases are rounded half to even, as numpy and the `round` op do. Shift
//! amounts are clamped to 31 (a larger shift of an int32 is all sign bits anyway).

use std::collections::HashMap;

use byoc_ir::tensor::Tensor;
use byoc_ir::{rewrite::Rebuild, Attrs, Call, DType, ExprId, Function, IrError, TensorType};

use super::plan::{tensor_type, Plan};
use super::QuantizeError;

/// The largest magnitude of a quantized int8 value (TVM clips to `[-127, 127]`).
pub(super) const INT8_MAX: f64 = 127.0;

/// The exponent of the power-of-two scale that maps `[-max, max]` onto int8: the smallest
/// `e` with `max <= 2^(e + 7)` (TVM's `power2` scale `2^ceil(log2 max)` divided by 128).
/// A zero, negative or non-finite `max` gives `-7` (scale 1 / 128).
pub(super) fn int8_exponent(max: f64) -> i32 {
    if max.is_finite() && max > 0.0 {
        (max.log2().ceil() as i32).saturating_sub(7)
    } else {
        -7
    }
}

/// An integer value of the realized function: its node, dtype and scale exponent.
#[derive(Clone, Copy, Debug)]
struct IntVal {
    id: ExprId,
    dtype: DType,
    exp: i32,
}

struct Realizer<'f, 'p> {
    rb: Rebuild<'f>,
    plan: &'p Plan,
    scales: &'p HashMap<ExprId, i32>,
    ints: HashMap<ExprId, IntVal>,
    int8: HashMap<ExprId, (ExprId, i32)>,
}

fn pow2(e: i32) -> f64 {
    2f64.powi(e)
}

fn clamp_shift(s: i32) -> i32 {
    s.clamp(-31, 31)
}

impl Realizer<'_, '_> {
    fn call(&mut self, op: &str, args: &[ExprId], attrs: Attrs) -> Result<ExprId, IrError> {
        self.rb.builder.call(op, args, attrs)
    }

    fn scalar_i32(&mut self, v: i32) -> ExprId {
        self.rb.builder.constant(Tensor::scalar(v))
    }

    fn cast(&mut self, x: ExprId, dtype: DType) -> Result<ExprId, IrError> {
        self.call("cast", &[x], Attrs::new().with("dtype", dtype))
    }

    fn shift(&mut self, op: &str, x: ExprId, by: i32) -> Result<ExprId, IrError> {
        let by = self.scalar_i32(by);
        self.call(op, &[x, by], Attrs::new())
    }

    /// `cast(clip(x, -127, 127), int8)`.
    fn narrow(&mut self, x: ExprId) -> Result<ExprId, IrError> {
        let clip = Attrs::new()
            .with("a_min", -INT8_MAX)
            .with("a_max", INT8_MAX);
        let x = self.call("clip", &[x], clip)?;
        self.cast(x, DType::Int8)
    }

    fn int(&self, old: ExprId) -> Result<IntVal, IrError> {
        self.ints.get(&old).copied().ok_or(IrError::BadId(old))
    }

    /// The float value of source node `old`, dequantizing an integer one once.
    fn float_of(&mut self, old: ExprId) -> Result<ExprId, IrError> {
        if let Some(id) = self.rb.mapped(old) {
            return Ok(id);
        }
        let v = self.int(old)?;
        let x = self.cast(v.id, DType::Float32)?;
        let s = self.rb.builder.constant(Tensor::scalar(pow2(v.exp) as f32));
        let y = self.call("multiply", &[x, s], Attrs::new())?;
        self.rb.set(old, y);
        Ok(y)
    }

    /// `v` as int32 at exponent `exp <= v.exp`.
    fn int32_at(&mut self, v: IntVal, exp: i32) -> Result<ExprId, IrError> {
        let mut x = v.id;
        if v.dtype != DType::Int32 {
            x = self.cast(x, DType::Int32)?;
        }
        if v.exp > exp {
            x = self.shift("left_shift", x, clamp_shift(v.exp - exp))?;
        }
        Ok(x)
    }

    /// Source node `old` (a quantization point) as int8, and its exponent.
    fn int8_of(&mut self, old: ExprId) -> Result<(ExprId, i32), QuantizeError> {
        if let Some(&done) = self.int8.get(&old) {
            return Ok(done);
        }
        let e = *self.scales.get(&old).ok_or(IrError::BadId(old))?;
        let id = match self.ints.get(&old).copied() {
            Some(v) if v.dtype == DType::Int8 && v.exp == e => v.id,
            Some(v) => {
                let mut x = self.int32_at(v, v.exp)?;
                let s = clamp_shift(e - v.exp);
                if s > 0 {
                    let half = self.scalar_i32(1 << (s - 1));
                    x = self.call("add", &[x, half], Attrs::new())?;
                    x = self.shift("right_shift", x, s)?;
                } else if s < 0 {
                    x = self.shift("left_shift", x, -s)?;
                }
                self.narrow(x)?
            }
            None => {
                let x = self.float_of(old)?;
                let inv = self.rb.builder.constant(Tensor::scalar(pow2(-e) as f32));
                let x = self.call("multiply", &[x, inv], Attrs::new())?;
                let x = self.call("round", &[x], Attrs::new())?;
                self.narrow(x)?
            }
        };
        self.int8.insert(old, (id, e));
        Ok((id, e))
    }

    /// A float constant as integers at exponent `exp` in `dtype`, shaped `shape`.
    fn quantized_constant(
        &mut self,
        c: &Tensor,
        exp: i32,
        dtype: DType,
        shape: Vec<usize>,
    ) -> Result<ExprId, QuantizeError> {
        let (lo, hi) = match dtype {
            DType::Int8 => (-INT8_MAX, INT8_MAX),
            _ => (f64::from(i32::MIN), f64::from(i32::MAX)),
        };
        let values: Vec<f64> = c
            .to_f64_vec()
            .iter()
            .map(|v| (v / pow2(exp)).round_ties_even().clamp(lo, hi))
            .collect();
        let t = Tensor::from_f64(TensorType::new(shape, dtype), &values)
            .map_err(|e| QuantizeError::Constant(e.to_string()))?;
        Ok(self.rb.builder.constant(t))
    }

    fn constant(&self, old: ExprId) -> Result<&'_ std::sync::Arc<Tensor>, IrError> {
        self.rb
            .src
            .expr(old)
            .as_constant()
            .ok_or(IrError::BadId(old))
    }

    /// A quantized conv2d or dense.
    fn gemm(&mut self, op: &str, call: &Call) -> Result<IntVal, QuantizeError> {
        let (data, exp_in) = self.int8_of(call.args[0])?;
        let w = self.constant(call.args[1])?.clone();
        let max = w.to_f64_vec().iter().fold(0f64, |m, v| m.max(v.abs()));
        let exp_w = int8_exponent(max);
        let wq = self.quantized_constant(&w, exp_w, DType::Int8, w.shape().to_vec())?;
        let attrs = call.attrs.clone().with("out_dtype", "int32");
        let id = self.call(op, &[data, wq], attrs)?;
        Ok(IntVal {
            id,
            dtype: DType::Int32,
            exp: exp_in + exp_w,
        })
    }

    /// `add` / `nn.bias_add` of integer `x` and float constant `c`.
    fn bias(
        &mut self,
        old: ExprId,
        x: ExprId,
        c: ExprId,
        axis: Option<i64>,
    ) -> Result<IntVal, QuantizeError> {
        let v = self.int(x)?;
        let x32 = self.int32_at(v, v.exp)?;
        let t = self.constant(c)?.clone();
        let shape = match axis {
            Some(axis) => {
                let rank = tensor_type(self.rb.src, old).map_or(0, |t| t.rank());
                let axis = byoc_ir::dims::axis(axis, rank)
                    .ok_or(QuantizeError::BiasAxis { at: old, axis })?;
                let mut shape = vec![t.ty().num_elements()];
                shape.resize(rank - axis, 1);
                shape
            }
            None => t.shape().to_vec(),
        };
        let cq = self.quantized_constant(&t, v.exp, DType::Int32, shape)?;
        let id = self.call("add", &[x32, cq], Attrs::new())?;
        Ok(IntVal {
            id,
            dtype: DType::Int32,
            exp: v.exp,
        })
    }

    /// The integer form of planned-integer source node `old`.
    fn int_node(&mut self, old: ExprId) -> Result<IntVal, QuantizeError> {
        let f = self.rb.src;
        let (op, call) = f.expr(old).as_op_call().ok_or(IrError::BadId(old))?;
        let is_const = |id: ExprId| f.expr(id).as_constant().is_some();
        match (op.name(), &call.args[..]) {
            (name @ ("nn.conv2d" | "nn.dense"), _) => self.gemm(name, call),
            ("nn.relu", &[x]) => {
                let v = self.int(x)?;
                let id = self.call("nn.relu", &[v.id], Attrs::new())?;
                Ok(IntVal { id, ..v })
            }
            ("nn.bias_add", &[x, c]) => {
                let axis = call.attrs.get_int("axis").unwrap_or(1);
                self.bias(old, x, c, Some(axis))
            }
            ("add", &[a, c]) if is_const(c) => self.bias(old, a, c, None),
            ("add", &[c, a]) if is_const(c) => self.bias(old, a, c, None),
            ("add", &[a, b]) => {
                let (va, vb) = (self.int(a)?, self.int(b)?);
                let exp = va.exp.min(vb.exp);
                let (xa, xb) = (self.int32_at(va, exp)?, self.int32_at(vb, exp)?);
                let id = self.call("add", &[xa, xb], Attrs::new())?;
                Ok(IntVal {
                    id,
                    dtype: DType::Int32,
                    exp,
                })
            }
            (name, _) => Err(QuantizeError::NoIntegerForm {
                at: old,
                op: name.to_string(),
            }),
        }
    }
}

/// The realized form of typed function `f` under `plan`, with exponent `scales[p]` for each
/// quantization point `p`. The result's new nodes are untyped: infer types afterwards.
pub(super) fn realize(
    f: &Function,
    plan: &Plan,
    scales: &HashMap<ExprId, i32>,
) -> Result<Function, QuantizeError> {
    let mut r = Realizer {
        rb: Rebuild::new(f),
        plan,
        scales,
        ints: HashMap::new(),
        int8: HashMap::new(),
    };
    for old in f.live_ids() {
        if r.plan.is_int(old) {
            let v = r.int_node(old)?;
            r.ints.insert(old, v);
            continue;
        }
        for operand in f.expr(old).operands() {
            if r.plan.is_int(operand) {
                r.float_of(operand)?;
            }
        }
        r.rb.copy(old)?;
    }
    r.float_of(f.body)?;
    Ok(r.rb.finish()?)
}
