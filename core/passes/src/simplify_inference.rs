//! SimplifyInference (`simplify-inference`): rewrites training-time ops into the arithmetic
//! they compute at inference, as TVM's `SimplifyInference` does.
//!
//! - `%bn.0` of `%bn = nn.batch_norm(%x, %gamma, %beta, %mean, %var)` becomes
//!   `add(multiply(%x, scale), shift)` with `scale = divide(1, sqrt(add(%var, eps)))`, times
//!   `%gamma` when `scale=True`, and `shift = multiply(negative(%mean), scale)`, plus `%beta`
//!   when `center=True`; `scale` and `shift` get `expand_dims(axis=1, num_newaxis=rank-axis-1)`
//!   so they broadcast along `axis`. `%bn.1` and `%bn.2` become `%mean` and `%var` (inference
//!   batch norm passes its moving statistics through). A batch norm whose tuple is used whole
//!   stays as it is for that use.
//! - `%d.0` of `%d = nn.dropout(%x)` becomes `%x`.
//! - `nn.layer_norm(%x, %gamma, %beta)` becomes `(%x - mean) / sqrt(variance + eps)` over `axis`
//!   (keeping dims), times the expanded `%gamma` when `scale=True`, plus the expanded `%beta`
//!   when `center=True`. TVM's biased `variance(%x, mean)` is written out as
//!   `mean((%x - mean) * (%x - mean))`, sharing `%x - mean` with the numerator. With
//!   `keep_layer_norm` the call stays whole (the driver sets it when a target lists
//!   `nn.layer_norm`, as dnnl does).
//!
//! Ops over non-float dtypes are left alone, as are global functions with a `Compiler`,
//! `Extern` or `SkipOptimization` attribute. The eps constant is the attribute rounded to
//! float32 and then cast to the data's dtype, as in TVM.
//!
//! Needs: a verified module (types are inferred here). Holds after: no `nn.dropout`,
//! `nn.layer_norm` (unless kept) or field of an `nn.batch_norm` over float data is left, every live
//! expression is typed. Idempotent. Cost: linear in the module size.

use std::collections::HashMap;

use byoc_ir::tensor::Tensor;
use byoc_ir::{
    rewrite::Rebuild, Attrs, Call, Expr, ExprId, Function, FunctionBuilder, IrError, Module,
    TensorType,
};

use super::pass::rewrite_host_functions;
use super::{eliminate_dead_code, Pass, PassContext, PassError};

/// The `simplify-inference` pass.
#[derive(Clone, Copy, Debug, Default)]
pub struct SimplifyInference {
    /// Leave `nn.layer_norm` whole, for targets that run it as one kernel. TVM decomposes it
    /// and its DNNL flow puts it back (`rewrite_layer_norm`); keeping it is that result in
    /// one step.
    pub keep_layer_norm: bool,
}

impl Pass for SimplifyInference {
    fn name(&self) -> &'static str {
        "simplify-inference"
    }

    fn run(&self, module: &mut Module, _cx: &mut PassContext) -> Result<(), PassError> {
        rewrite_host_functions(module, |f| Ok(simplify_function(f, self.keep_layer_norm)?))
    }
}

fn simplify_function(f: &Function, keep_layer_norm: bool) -> Result<Function, IrError> {
    // The rewritten field 0 of each batch norm, so several `%bn.0` share one rewrite.
    let mut normalized: HashMap<ExprId, ExprId> = HashMap::new();
    let rewritten = Rebuild::new(f).run(|rb, id| match f.expr(id) {
        Expr::TupleGetItem { tuple, index } => {
            let Some((op, call)) = f.expr(*tuple).as_op_call() else {
                return Ok(None);
            };
            match (op.name(), *index) {
                ("nn.dropout", 0) => rb.get(call.args[0]).map(Some),
                ("nn.batch_norm", 1 | 2) if float_data(f, call).is_some() => {
                    rb.get(call.args[index + 2]).map(Some)
                }
                ("nn.batch_norm", 0) => {
                    if let Some(&done) = normalized.get(tuple) {
                        return Ok(Some(done));
                    }
                    let Some(data) = float_data(f, call) else {
                        return Ok(None);
                    };
                    let new = batch_norm(rb, call, data)?;
                    normalized.insert(*tuple, new);
                    Ok(Some(new))
                }
                _ => Ok(None),
            }
        }
        Expr::Call(call) if call.is_op("nn.layer_norm") && !keep_layer_norm => {
            match float_data(f, call) {
                Some(data) => layer_norm(rb, call, data).map(Some),
                None => Ok(None),
            }
        }
        _ => Ok(None),
    })?;
    eliminate_dead_code(&rewritten)
}

/// The type of the call's first argument, when it is a float tensor.
fn float_data<'f>(f: &'f Function, call: &Call) -> Option<&'f TensorType> {
    let t = f.ty(*call.args.first()?)?.as_tensor()?;
    t.dtype.is_float().then_some(t)
}

/// The call's normalized attributes read back: the axis made non-negative, eps, and the
/// `center` / `scale` flags.
struct NormAttrs {
    axis: usize,
    epsilon: f64,
    center: bool,
    scale: bool,
}

impl NormAttrs {
    fn read(call: &Call, data: &TensorType) -> Result<Self, IrError> {
        let attr = |name: &str| call.attrs.get(name);
        let rank = data.rank();
        let axis = attr("axis").and_then(|v| v.as_int()).unwrap_or(1);
        let op = call.op().map_or("", |op| op.name()).to_string();
        let axis = byoc_ir::dims::axis(axis, rank).ok_or_else(|| IrError::AttrType {
            op: op.clone(),
            attr: "axis".to_string(),
            expected: format!("an axis of a rank-{rank} tensor"),
            got: axis.to_string(),
        })?;
        Ok(NormAttrs {
            axis,
            epsilon: attr("epsilon").and_then(|v| v.as_f64()).unwrap_or(1e-5),
            center: attr("center").and_then(|v| v.as_bool()).unwrap_or(true),
            scale: attr("scale").and_then(|v| v.as_bool()).unwrap_or(true),
        })
    }
}

/// A scalar constant of `data`'s (float) dtype.
fn scalar(b: &mut FunctionBuilder, data: &TensorType, value: f64) -> ExprId {
    let t = Tensor::from_f64(TensorType::scalar(data.dtype), &[value])
        .expect("a float dtype holds any f64, rounded");
    b.constant(t)
}

/// `expand_dims(x, axis=1, num_newaxis=rank-axis-1)`, so a per-channel vector broadcasts
/// along `axis` of a rank-`rank` tensor (TVM's `ExpandBiasToMatchAxis`).
fn expand_to_axis(
    b: &mut FunctionBuilder,
    x: ExprId,
    rank: usize,
    axis: usize,
) -> Result<ExprId, IrError> {
    let pad = rank - axis - 1;
    if pad == 0 {
        return Ok(x);
    }
    let attrs = Attrs::new()
        .with("axis", 1i64)
        .with("num_newaxis", pad as i64);
    b.call("expand_dims", &[x], attrs)
}

/// TVM's `BatchNormToInferUnpack`.
fn batch_norm(rb: &mut Rebuild<'_>, call: &Call, data: &TensorType) -> Result<ExprId, IrError> {
    let a = NormAttrs::read(call, data)?;
    let args = call
        .args
        .iter()
        .map(|&x| rb.get(x))
        .collect::<Result<Vec<_>, _>>()?;
    let &[x, gamma, beta, mean, var] = args.as_slice() else {
        return Err(IrError::Arity {
            op: "nn.batch_norm".to_string(),
            expected: "5".to_string(),
            got: args.len(),
        });
    };
    let b = &mut rb.builder;
    let eps = scalar(b, data, f64::from(a.epsilon as f32));
    let var_eps = b.call("add", &[var, eps], Attrs::new())?;
    let sqrt = b.call("sqrt", &[var_eps], Attrs::new())?;
    let one = scalar(b, data, 1.0);
    let mut scale = b.call("divide", &[one, sqrt], Attrs::new())?;
    if a.scale {
        scale = b.call("multiply", &[scale, gamma], Attrs::new())?;
    }
    let neg_mean = b.call("negative", &[mean], Attrs::new())?;
    let mut shift = b.call("multiply", &[neg_mean, scale], Attrs::new())?;
    if a.center {
        shift = b.call("add", &[shift, beta], Attrs::new())?;
    }
    let scale = expand_to_axis(b, scale, data.rank(), a.axis)?;
    let shift = expand_to_axis(b, shift, data.rank(), a.axis)?;
    let out = b.call("multiply", &[x, scale], Attrs::new())?;
    b.call("add", &[out, shift], Attrs::new())
}

/// TVM's `LayerNormToInferUnpack`, with `variance` written out (see the module docs).
fn layer_norm(rb: &mut Rebuild<'_>, call: &Call, data: &TensorType) -> Result<ExprId, IrError> {
    let a = NormAttrs::read(call, data)?;
    let args = call
        .args
        .iter()
        .map(|&x| rb.get(x))
        .collect::<Result<Vec<_>, _>>()?;
    let &[x, gamma, beta] = args.as_slice() else {
        return Err(IrError::Arity {
            op: "nn.layer_norm".to_string(),
            expected: "3".to_string(),
            got: args.len(),
        });
    };
    let b = &mut rb.builder;
    let reduce = Attrs::new()
        .with("axis", vec![a.axis as i64])
        .with("keepdims", true)
        .with("exclude", false);
    let eps = scalar(b, data, f64::from(a.epsilon as f32));
    let mean = b.call("mean", &[x], reduce.clone())?;
    let centered = b.call("subtract", &[x, mean], Attrs::new())?;
    let squared = b.call("multiply", &[centered, centered], Attrs::new())?;
    let var = b.call("mean", &[squared], reduce)?;
    let var_eps = b.call("add", &[var, eps], Attrs::new())?;
    let denom = b.call("sqrt", &[var_eps], Attrs::new())?;
    let mut out = b.call("divide", &[centered, denom], Attrs::new())?;
    if a.scale {
        let g = expand_to_axis(b, gamma, data.rank(), a.axis)?;
        out = b.call("multiply", &[out, g], Attrs::new())?;
    }
    if a.center {
        let be = expand_to_axis(b, beta, data.rank(), a.axis)?;
        out = b.call("add", &[out, be], Attrs::new())?;
    }
    Ok(out)
}
