//! FoldScaleAxis (`fold-scale-axis`): folds per-output-channel constant scales that follow an
//! `nn.conv2d` or `nn.dense` into its constant weights, and the per-channel constant shifts
//! around them into one `nn.bias_add` (TVM's backward `FoldScaleAxis` for the chains that
//! SimplifyInference leaves after a batch norm, plus its `SimplifyExpr` merging of consecutive
//! constant adds).
//!
//! A *chain* starts at a call `y = op(x, w)`: `nn.conv2d` with `data_layout="NCHW"`,
//! `kernel_layout="OIHW"` and an NCHW output (channel axis 1), or `nn.dense` (channel axis
//! last), over float data. It grows through calls that apply one constant value per output
//! channel:
//! - `multiply(c, s)` / `multiply(s, c)`, only when `w` is a constant;
//! - `add(c, t)` / `add(t, c)`;
//! - `nn.bias_add(c, b)` on the channel axis;
//!
//! where `c` is the chain so far, used nowhere else, and `s` / `t` are constants of `c`'s dtype
//! whose every dimension is 1 except, possibly, the channel's (`(C, 1, 1)`, `(1, C, 1, 1)`,
//! `(1,)` after a conv; `(C,)`, `(1, C)` after a dense), so the call keeps `c`'s type. The top
//! of a chain computes `scale[k] * y[k] + shift[k]` per channel `k`; it becomes
//! `nn.bias_add(op(x, w'), shift, axis=<channel axis>)` with `w'[k, ...] = scale[k] * w[k, ...]`
//! (the weight stays as it is when the chain has no multiply; no bias_add when it has no add or
//! bias_add). A chain that already has that form (nothing, or one `nn.bias_add`) is left alone.
//!
//! A *free* chain is the same run of per-channel calls on any other float value `x` (a pooling
//! result, a concatenation, a conv whose weights are not constant), along the axis its first
//! constant varies on: it becomes `nn.bias_add(multiply(x, scale), shift, axis)` with a
//! `(C, 1, ..., 1)` scale and a `(C)` shift, so the two batch norms and the scale layer of a
//! pre-activation block (DenseNet's `multiply, add, multiply, add`) cost one multiply and one
//! bias_add, the form fused patterns take. A free chain of one call, or a multiply then a
//! bias_add, is left alone.
//! Folded values are computed in f64 and rounded once to the dtype.
//!
//! Left alone: weights that are not constants (multiplies then stay), intermediate values with
//! other uses, other layouts, everything inside composite or primitive function literals, and
//! global functions with a `Compiler`, `Extern` or `SkipOptimization` attribute.
//!
//! Needs: a verified module (types are inferred here); run it after SimplifyInference and
//! FoldConstant, so batch-norm scales are constants. Holds after: no chain with a multiply on
//! a constant weight or with two shifts is left, no free chain other than one call or a
//! multiply and a bias_add; every live expression is typed. Idempotent.
//! Cost: linear in the module size plus the size of the rewritten weights.

use std::sync::Arc;

use byoc_ir::tensor::Tensor;
use byoc_ir::{rewrite::Rebuild, Attrs, Call, ExprId, Function, IrError, Module, TensorType};

use super::fold_constant::frozen_nodes;
use super::pass::rewrite_host_functions;
use super::{eliminate_dead_code, Pass, PassContext, PassError};

/// The `fold-scale-axis` pass.
#[derive(Clone, Copy, Debug, Default)]
pub struct FoldScaleAxis;

impl Pass for FoldScaleAxis {
    fn name(&self) -> &'static str {
        "fold-scale-axis"
    }

    fn run(&self, module: &mut Module, _cx: &mut PassContext) -> Result<(), PassError> {
        rewrite_host_functions(module, fold_function)
    }
}

/// A conv2d or dense call, or any other value (a *free* chain), with per-channel scales and
/// shifts applied on top.
#[derive(Clone, Debug)]
struct Chain {
    /// The conv2d or dense call, or the value a free chain scales and shifts.
    root: ExprId,
    /// A free chain: nothing folds into the root; the top becomes
    /// `add(multiply(root, scale), shift)`.
    free: bool,
    /// Calls in the chain.
    len: usize,
    /// The output channel axis of the root's result.
    axis: usize,
    /// `scale[k]`, when a multiply took part.
    scale: Option<Vec<f64>>,
    /// `shift[k]`, when an add or bias_add took part.
    shift: Option<Vec<f64>>,
    /// How many adds and bias_adds took part.
    shifts: usize,
    /// Whether the top is the root or a single `nn.bias_add` on it (nothing to rewrite).
    canonical: bool,
}

impl Chain {
    fn channels(&self, f: &Function) -> usize {
        tensor_type(f, self.root)
            .and_then(|t| t.shape.get(self.axis).copied())
            .unwrap_or(0)
    }

    /// A chain of no calls yet over `root`, along `axis`.
    fn empty(root: ExprId, axis: usize, free: bool) -> Chain {
        Chain {
            root,
            free,
            len: 0,
            axis,
            scale: None,
            shift: None,
            shifts: 0,
            canonical: true,
        }
    }

    fn multiplied(&self, s: &[f64]) -> Chain {
        let mul = |v: &Vec<f64>| v.iter().zip(s).map(|(a, b)| a * b).collect::<Vec<_>>();
        Chain {
            scale: Some(self.scale.as_ref().map_or_else(|| s.to_vec(), mul)),
            shift: self.shift.as_ref().map(mul),
            len: self.len + 1,
            // A free chain's first call may be its multiply.
            canonical: self.free && self.len == 0,
            ..self.clone()
        }
    }

    fn shifted(&self, t: &[f64], bias_add_on_root: bool) -> Chain {
        let shift = match &self.shift {
            Some(v) => v.iter().zip(t).map(|(a, b)| a + b).collect(),
            None => t.to_vec(),
        };
        let canonical = if self.free {
            // One shift alone, or `multiply` then `nn.bias_add`.
            self.len == 0 || (self.len == 1 && self.scale.is_some() && bias_add_on_root)
        } else {
            bias_add_on_root && self.shifts == 0 && self.scale.is_none()
        };
        Chain {
            shift: Some(shift),
            shifts: self.shifts + 1,
            len: self.len + 1,
            canonical,
            ..self.clone()
        }
    }
}

fn tensor_type(f: &Function, id: ExprId) -> Option<&TensorType> {
    f.ty(id)?.as_tensor()
}

fn fold_function(f: &Function) -> Result<Function, PassError> {
    let frozen = frozen_nodes(f);
    let uses = f.use_counts();
    let mut chains: Vec<Option<Chain>> = vec![None; f.len()];
    // Whether a node's chain was extended by one of its users (then it is not a top).
    let mut extended = vec![false; f.len()];
    for id in f.live_ids() {
        if frozen[id.index()] {
            continue;
        }
        let Some((op, call)) = f.expr(id).as_op_call() else {
            continue;
        };
        let chain = match op.name() {
            "nn.conv2d" | "nn.dense" => start(f, id, call),
            "multiply" | "add" | "nn.bias_add" => {
                let grown = grow(f, id, op.name(), call, &chains, &uses);
                if let Some((inner, chain)) = &grown {
                    // A free chain that starts here leaves its root's own chain a top.
                    extended[inner.index()] = chain.len > 1 || !chain.free;
                }
                grown.map(|(_, c)| c)
            }
            _ => None,
        };
        chains[id.index()] = chain;
    }
    let rewritten = Rebuild::new(f).run(|rb, id| match &chains[id.index()] {
        Some(chain) if !extended[id.index()] && !chain.canonical => rewrite(rb, chain),
        _ => Ok(None),
    })?;
    Ok(eliminate_dead_code(&rewritten)?)
}

/// A chain of length zero at a conv2d or dense call it can fold into.
fn start(f: &Function, id: ExprId, call: &Call) -> Option<Chain> {
    let out = tensor_type(f, id)?;
    if !out.dtype.is_float() {
        return None;
    }
    let axis = match call.op()?.name() {
        "nn.conv2d" => {
            let layout =
                |name: &str, default: &str| call.attrs.get_str(name).unwrap_or(default).to_string();
            let out_layout = layout("out_layout", "");
            let nchw = layout("data_layout", "NCHW") == "NCHW"
                && layout("kernel_layout", "OIHW") == "OIHW"
                && (out_layout.is_empty() || out_layout == "NCHW");
            if !nchw {
                return None;
            }
            1
        }
        _ => out.rank().checked_sub(1)?,
    };
    Some(Chain::empty(id, axis, false))
}

/// The chain `id` continues, when it is a per-channel multiply, add or bias_add on a chain
/// used only here, or the free chain it starts on a float value with no chain to grow: the
/// inner node and the grown chain.
fn grow(
    f: &Function,
    id: ExprId,
    op: &str,
    call: &Call,
    chains: &[Option<Chain>],
    uses: &[u32],
) -> Option<(ExprId, Chain)> {
    let &[a, b] = call.args.as_slice() else {
        return None;
    };
    let out = tensor_type(f, id)?;
    let orders: &[(ExprId, ExprId)] = if op == "nn.bias_add" {
        &[(a, b)]
    } else {
        &[(a, b), (b, a)]
    };
    for &(inner, constant) in orders {
        let Some(c) = f.expr(constant).as_constant() else {
            continue;
        };
        if tensor_type(f, inner) != Some(out) || !out.dtype.is_float() {
            continue;
        }
        let owned = chains[inner.index()]
            .as_ref()
            .filter(|chain| uses[inner.index()] == 1 && absorbs(f, chain, op));
        let fresh;
        let chain = match owned {
            Some(chain) => chain,
            None => match free_axis(call, op, c, out) {
                Some(axis) => {
                    fresh = Chain::empty(inner, axis, true);
                    &fresh
                }
                None => continue,
            },
        };
        let channels = chain.channels(f);
        let values = if op == "nn.bias_add" {
            // Its type relation makes the bias a (C) vector along `axis`.
            let on_channels = bias_axis_is(call, out.rank(), chain.axis)
                && c.dtype() == out.dtype
                && c.shape() == [channels];
            on_channels.then(|| c.to_f64_vec())
        } else {
            per_channel(c, out, chain.axis, channels)
        };
        let Some(values) = values else {
            continue;
        };
        let grown = match op {
            "multiply" => chain.multiplied(&values),
            _ => chain.shifted(&values, op == "nn.bias_add"),
        };
        return Some((inner, grown));
    }
    None
}

/// Whether `chain` can take a call of `op`: a multiply folds into a root's weights only when
/// they are a constant.
fn absorbs(f: &Function, chain: &Chain, op: &str) -> bool {
    chain.free || op != "multiply" || weight_constant(f, chain).is_some()
}

/// The axis of a free chain started by a per-channel call with constant `c` on a value of
/// type `out`: `nn.bias_add`'s axis, else the one dimension of `c` that is not 1 (axis 1, or 0
/// for vectors, when every dimension is 1).
fn free_axis(call: &Call, op: &str, c: &Tensor, out: &TensorType) -> Option<usize> {
    let rank = out.rank();
    if op == "nn.bias_add" {
        let a = call.attrs.get("axis").and_then(|v| v.as_int()).unwrap_or(1);
        return byoc_ir::dims::axis(a, rank);
    }
    let offset = rank.checked_sub(c.shape().len())?;
    let mut wide = c
        .shape()
        .iter()
        .enumerate()
        .filter(|(_, &d)| d != 1)
        .map(|(i, _)| offset + i);
    match (wide.next(), wide.next()) {
        (Some(axis), None) => Some(axis),
        (None, None) => Some(usize::from(rank > 1)).filter(|&a| a < rank),
        _ => None,
    }
}

/// Whether a bias_add's `axis` attribute names `axis` of a rank-`rank` tensor.
fn bias_axis_is(call: &Call, rank: usize, axis: usize) -> bool {
    let a = call.attrs.get("axis").and_then(|v| v.as_int()).unwrap_or(1);
    byoc_ir::dims::axis(a, rank) == Some(axis)
}

/// The constant's value per channel when it has `out`'s dtype and broadcasts along `axis` of
/// `out` only (every other dimension 1, no dimension added).
fn per_channel(c: &Tensor, out: &TensorType, axis: usize, channels: usize) -> Option<Vec<f64>> {
    let shape = c.shape();
    if c.dtype() != out.dtype || shape.len() > out.rank() {
        return None;
    }
    let offset = out.rank() - shape.len();
    let fits = shape
        .iter()
        .enumerate()
        .all(|(i, &d)| d == 1 || (offset + i == axis && d == channels));
    if !fits {
        return None;
    }
    let values = c.to_f64_vec();
    match values.len() {
        1 => Some(vec![values[0]; channels]),
        n if n == channels => Some(values),
        _ => None,
    }
}

/// The root's weight, when it is a constant.
fn weight_constant<'f>(f: &'f Function, chain: &Chain) -> Option<&'f Arc<Tensor>> {
    let (_, call) = f.expr(chain.root).as_op_call()?;
    f.expr(*call.args.get(1)?).as_constant()
}

/// Emits `nn.bias_add(op(x, w'), shift)` for a chain on a conv2d or dense, and
/// `add(multiply(x, scale), shift)` for a free one; `None` (copy as is) when a folded constant
/// cannot be built (a dtype without f64 conversion).
fn rewrite(rb: &mut Rebuild<'_>, chain: &Chain) -> Result<Option<ExprId>, IrError> {
    if chain.free {
        return rewrite_free(rb, chain);
    }
    let f = rb.src;
    let (op, call) = f
        .expr(chain.root)
        .as_op_call()
        .ok_or(IrError::BadId(chain.root))?;
    let (&[data, weight], Some(out)) = (call.args.as_slice(), tensor_type(f, chain.root)) else {
        return Err(IrError::BadId(chain.root));
    };
    let scaled = match (&chain.scale, weight_constant(f, chain)) {
        (Some(scale), Some(w)) => {
            let per_row = w.ty().num_elements() / scale.len().max(1);
            let values: Vec<f64> = w
                .to_f64_vec()
                .iter()
                .enumerate()
                .map(|(i, v)| v * scale[i / per_row.max(1)])
                .collect();
            match Tensor::from_f64(w.ty().clone(), &values) {
                Ok(t) => Some(t),
                Err(_) => return Ok(None),
            }
        }
        _ => None,
    };
    let bias = match &chain.shift {
        Some(shift) => match Tensor::from_f64(TensorType::new(vec![shift.len()], out.dtype), shift)
        {
            Ok(t) => Some(t),
            Err(_) => return Ok(None),
        },
        None => None,
    };
    let new_weight = match scaled {
        Some(t) => rb.builder.constant(t),
        None => rb.get(weight)?,
    };
    let data = rb.get(data)?;
    let mut top = rb
        .builder
        .call_op(op, &[data, new_weight], call.attrs.clone())?;
    rb.builder.set_ty(top, out.clone().into());
    if let Some(bias) = bias {
        let bias = rb.builder.constant(bias);
        let attrs = Attrs::new().with("axis", chain.axis as i64);
        top = rb.builder.call("nn.bias_add", &[top, bias], attrs)?;
        rb.builder.set_ty(top, out.clone().into());
    }
    Ok(Some(top))
}

/// Emits `nn.bias_add(multiply(x, scale), shift, axis)` (either call only when the chain has
/// it): the scale of shape `(C, 1, ..., 1)`, broadcasting along the chain's axis, the shift a
/// `(C)` vector.
fn rewrite_free(rb: &mut Rebuild<'_>, chain: &Chain) -> Result<Option<ExprId>, IrError> {
    let out = tensor_type(rb.src, chain.root)
        .ok_or(IrError::BadId(chain.root))?
        .clone();
    let channels = chain.channels(rb.src);
    let mut scale_shape = vec![channels];
    scale_shape.resize(out.rank() - chain.axis, 1);
    let calls = [
        ("multiply", &chain.scale, scale_shape, Attrs::new()),
        (
            "nn.bias_add",
            &chain.shift,
            vec![channels],
            Attrs::new().with("axis", chain.axis as i64),
        ),
    ];
    let mut top = rb.get(chain.root)?;
    for (op, values, shape, attrs) in calls {
        let Some(values) = values else {
            continue;
        };
        let Ok(t) = Tensor::from_f64(TensorType::new(shape, out.dtype), values) else {
            return Ok(None);
        };
        let c = rb.builder.constant(t);
        top = rb.builder.call(op, &[top, c], attrs)?;
        rb.builder.set_ty(top, out.clone().into());
    }
    Ok(Some(top))
}
