//! One VTA layer as the compiler sees it: the geometry of an int8 `nn.conv2d` or `nn.dense`
//! (dense is a 1x1 convolution over a 1 x K x 1 x N image), and its fused epilogue as a list
//! of accumulator operations, read from a composite function in TVM's realized form.
//!
//! The epilogue chain, bottom-up from the conv2d/dense (`out_dtype="int32"`): `add` of an int32
//! tensor (a per-channel bias, a full-shape residual, or a scalar constant), `right_shift` by a
//! constant, `clip`, `nn.relu`, and `cast` to int8. After the cast only `nn.relu` / `clip` may
//! follow, and only when the value is already known to lie in int8 (a `clip` to int8 bounds
//! before the cast), so that computing them on int32 accumulators gives the same result. A chain
//! without the cast gives an int32 output ([`Layer::int32_out`]: a ResNet shortcut or a
//! residual sum that the host requantizes and also adds to a later block).
//! Host semantics are followed exactly: `right_shift` by 32 or more fills with the sign bit, by
//! a negative amount leaves the value unchanged; clip bounds are truncated to the integer type.

use std::sync::Arc;

use byoc_sdk::ir::{AttrValue, Callee, Expr, ExprId, Function, Type};
use byoc_sdk::ir::{DType, Tensor};
use serde::{Deserialize, Serialize};

use super::CompileError;

/// The convolution a layer computes, in NCHW terms, with channels not yet padded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Geometry {
    /// Images.
    pub n: usize,
    /// Input channels.
    pub c: usize,
    /// Input height.
    pub h: usize,
    /// Input width.
    pub w: usize,
    /// Output channels.
    pub o: usize,
    /// Output height.
    pub oh: usize,
    /// Output width.
    pub ow: usize,
    /// Kernel height.
    pub kh: usize,
    /// Kernel width.
    pub kw: usize,
    /// Vertical stride.
    pub sh: usize,
    /// Horizontal stride.
    pub sw: usize,
    /// Zero rows above.
    pub pt: usize,
    /// Zero columns left.
    pub pl: usize,
}

/// The op a layer comes from, which fixes how tensors map onto the geometry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum LayerKind {
    /// `nn.conv2d` NCHW / OIHW.
    Conv2d,
    /// `nn.dense`: data (N, K), weight (O, K), as a 1x1 convolution of a (1, K, 1, N) image.
    Dense,
}

/// How a tensor operand of the epilogue is laid out in the accumulators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum OperandRole {
    /// One value per output channel (a bias): one accumulator element per channel block.
    Channel,
    /// One value per output element (a residual), broadcast to the output shape.
    Full,
}

/// A tensor operand of the epilogue.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Operand {
    /// Its layout in the accumulators.
    pub role: OperandRole,
    /// Its own shape (broadcast against the output shape).
    pub shape: Vec<usize>,
    /// A constant added to every value when the operand is packed: an immediate addition
    /// that followed the operand's addition in the epilogue, folded into it (wrapping
    /// addition is associative), which saves one ALU pass over the tile.
    pub offset: i32,
}

/// One accumulator operation of the epilogue.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum EpilogueOp {
    /// Add tensor operand `k` (wrapping).
    Add(usize),
    /// Add a constant (wrapping).
    AddImm(i32),
    /// Arithmetic shift right by 0..=31.
    Shr(u32),
    /// `min(x, v)`.
    Min(i32),
    /// `max(x, v)`.
    Max(i32),
}

/// What feeds a layer input: a partition parameter, an earlier layer, or a constant.
#[derive(Clone, Debug)]
pub enum Source {
    /// Partition parameter `i`.
    Param(usize),
    /// The output of layer `i` of the partition.
    Layer(usize),
    /// A constant.
    Const(Arc<Tensor>),
}

/// A layer read from a composite call.
#[derive(Clone, Debug)]
pub struct Layer {
    /// The op.
    pub kind: LayerKind,
    /// The convolution.
    pub geometry: Geometry,
    /// The epilogue, in order.
    pub epilogue: Vec<EpilogueOp>,
    /// The tensor operands of [`EpilogueOp::Add`].
    pub operands: Vec<Operand>,
    /// Sources: data, weight, then each tensor operand.
    pub sources: Vec<Source>,
    /// Shape of the output.
    pub out_shape: Vec<usize>,
    /// The output is the int32 accumulator (no cast to int8 ends the chain).
    pub int32_out: bool,
}

fn err(msg: impl Into<String>) -> CompileError {
    CompileError::Unsupported(msg.into())
}

fn tensor_type(f: &Function, id: ExprId) -> Result<(Vec<usize>, DType), CompileError> {
    match f.ty(id) {
        Some(Type::Tensor(t)) => Ok((t.shape.clone(), t.dtype)),
        other => Err(err(format!("{id} has type {other:?}, expected a tensor"))),
    }
}

fn ints(attrs: &byoc_sdk::ir::Attrs, name: &str) -> Result<Vec<usize>, CompileError> {
    let list = attrs
        .get(name)
        .and_then(AttrValue::as_list)
        .ok_or_else(|| err(format!("attribute {name} is not a list")))?;
    list.iter()
        .map(|v| {
            v.as_int()
                .and_then(|i| usize::try_from(i).ok())
                .ok_or_else(|| {
                    err(format!(
                        "attribute {name} holds {v}, expected a non-negative integer"
                    ))
                })
        })
        .collect()
}

/// Relay's padding forms: 1 value (all sides), 2 (top/bottom, left/right), 4 (top, left,
/// bottom, right). Returns (top, left, bottom, right).
fn padding(p: &[usize]) -> Result<[usize; 4], CompileError> {
    match *p {
        [a] => Ok([a, a, a, a]),
        [a, b] => Ok([a, b, a, b]),
        [t, l, b, r] => Ok([t, l, b, r]),
        _ => Err(err(format!("padding {p:?} has {} values", p.len()))),
    }
}

/// Resolves an expression in the composite literal to what feeds it in the partition.
pub(super) struct Resolver<'a> {
    /// The partition function.
    pub f: &'a Function,
    /// The composite call's arguments, by composite parameter.
    pub args: &'a [ExprId],
    /// The composite literal's parameters.
    pub params: &'a [ExprId],
    /// Maps partition expressions to sources.
    pub outer: &'a dyn Fn(ExprId) -> Result<Source, CompileError>,
}

impl Resolver<'_> {
    fn source(&self, id: ExprId) -> Result<Source, CompileError> {
        if let Expr::Constant(t) = self.f.expr(id) {
            return Ok(Source::Const(t.clone()));
        }
        match self.params.iter().position(|&p| p == id) {
            Some(k) => (self.outer)(self.args[k]),
            None => Err(err(format!(
                "{id} inside the composite is neither a parameter nor a constant"
            ))),
        }
    }

    fn constant(&self, id: ExprId) -> Option<Arc<Tensor>> {
        match self.source(id) {
            Ok(Source::Const(t)) => Some(t),
            _ => None,
        }
    }
}

/// Reads a layer from a composite literal's body (see the module docs).
pub(super) fn read_layer(r: &Resolver<'_>, body: ExprId) -> Result<Layer, CompileError> {
    let f = r.f;
    // Walk down from the root to the conv2d / dense, collecting the chain.
    let mut chain = Vec::new();
    let mut id = body;
    let root = loop {
        let Expr::Call(call) = f.expr(id) else {
            return Err(err(format!("{id} in the composite is not an op call")));
        };
        let Callee::Op(op) = &call.callee else {
            return Err(err(format!("{id} in the composite calls a function")));
        };
        match op.name() {
            "nn.conv2d" | "nn.dense" => break id,
            "add" => {
                let on_chain = |a: ExprId| matches!(f.expr(a), Expr::Call(_));
                let (next, other) = match (on_chain(call.args[0]), on_chain(call.args[1])) {
                    (true, false) => (call.args[0], call.args[1]),
                    (false, true) => (call.args[1], call.args[0]),
                    _ => {
                        return Err(err(format!(
                            "add {id}: exactly one operand must come from the conv2d/dense"
                        )))
                    }
                };
                chain.push((id, Some(other)));
                id = next;
            }
            "right_shift" => {
                chain.push((id, Some(call.args[1])));
                id = call.args[0];
            }
            "clip" | "nn.relu" | "cast" => {
                chain.push((id, None));
                id = call.args[0];
            }
            other => {
                return Err(err(format!(
                    "op {other} ({id}) is not part of a VTA epilogue"
                )))
            }
        }
    };
    chain.reverse();
    let Expr::Call(conv) = f.expr(root) else {
        unreachable!("the loop breaks on a call")
    };
    let is_dense = conv.is_op("nn.dense");
    let (dshape, ddt) = tensor_type(f, conv.args[0])?;
    let (wshape, wdt) = tensor_type(f, conv.args[1])?;
    let (oshape, odt) = tensor_type(f, root)?;
    if ddt != DType::Int8 || wdt != DType::Int8 || odt != DType::Int32 {
        return Err(err(format!(
            "{} {root}: needs int8 data and weight with out_dtype int32 (got {ddt}, {wdt} -> {odt})",
            if is_dense { "nn.dense" } else { "nn.conv2d" }
        )));
    }
    let (kind, geometry) = if is_dense {
        dense_geometry(&dshape, &wshape)?
    } else {
        conv_geometry(conv, &dshape, &wshape, &oshape)?
    };
    let mut layer = Layer {
        kind,
        geometry,
        epilogue: Vec::new(),
        operands: Vec::new(),
        sources: vec![r.source(conv.args[0])?, r.source(conv.args[1])?],
        out_shape: oshape.clone(),
        int32_out: false,
    };
    // The value's known range (None: any int32), and whether it was cast to int8.
    let mut range: Option<(i64, i64)> = None;
    let mut cast = false;
    for (id, other) in chain {
        let Expr::Call(call) = f.expr(id) else {
            unreachable!("chain entries are calls")
        };
        let name = call.op().map(|o| o.name().to_string()).unwrap_or_default();
        let (_, in_dt) = tensor_type(f, call.args[0])?;
        if cast && !matches!(name.as_str(), "nn.relu" | "clip") {
            return Err(err(format!("{name} {id} after the cast to int8")));
        }
        if cast && !range.is_some_and(|(lo, hi)| lo >= -128 && hi <= 127) {
            return Err(err(format!(
                "{name} {id} follows a cast to int8 of values not clipped to int8"
            )));
        }
        match name.as_str() {
            "add" => {
                let other = other.expect("add has an operand");
                add_operand(r, &mut layer, other, &oshape, id)?;
                range = None;
            }
            "right_shift" => {
                let amount = uniform_constant(r, other.expect("shift amount"), id)?;
                match amount {
                    a if a < 0 => {}
                    a => layer.epilogue.push(EpilogueOp::Shr(a.min(31) as u32)),
                }
                range = None;
            }
            "clip" => {
                let bound = |key: &str| -> Result<i64, CompileError> {
                    let v = call
                        .attrs
                        .get(key)
                        .and_then(AttrValue::as_f64)
                        .ok_or_else(|| err(format!("clip {id}: {key} is not a number")))?;
                    // The host kernel converts the bound to the element type (Rust `as`).
                    Ok(if in_dt == DType::Int8 {
                        i64::from(v as i8)
                    } else {
                        i64::from(v as i32)
                    })
                };
                let (lo, hi) = (bound("a_min")?, bound("a_max")?);
                layer.epilogue.push(EpilogueOp::Min(hi as i32));
                layer.epilogue.push(EpilogueOp::Max(lo as i32));
                range = Some(match range {
                    Some((a, b)) => (a.max(lo).min(hi), b.min(hi).max(lo)),
                    None => (lo, hi),
                });
            }
            "nn.relu" => {
                layer.epilogue.push(EpilogueOp::Max(0));
                range = range.map(|(a, b)| (a.max(0), b.max(0)));
            }
            "cast" => {
                let to = call.attrs.get_str("dtype").unwrap_or("");
                match (in_dt, to) {
                    (DType::Int32, "int32") => {}
                    (DType::Int32, "int8") => cast = true,
                    _ => return Err(err(format!("cast {id} from {in_dt} to {to}"))),
                }
            }
            other => unreachable!("the chain holds only epilogue ops, not {other}"),
        }
    }
    let (out_shape, out_dt) = tensor_type(f, body)?;
    if !cast && out_dt != DType::Int32 {
        return Err(err(format!(
            "the layer at {root} ends in {out_dt}, expected int8 (a cast) or int32"
        )));
    }
    layer.int32_out = !cast;
    layer.out_shape = out_shape;
    fold_immediate_adds(&mut layer);
    Ok(layer)
}

/// Folds an immediate addition into the tensor or immediate addition just before it:
/// `(x + t) + v = x + (t + v)` with wrapping arithmetic, so the result is unchanged and the
/// epilogue runs one ALU instruction less (the rounding constant of a requantization joins
/// the bias).
fn fold_immediate_adds(layer: &mut Layer) {
    let mut folded: Vec<EpilogueOp> = Vec::with_capacity(layer.epilogue.len());
    for &op in &layer.epilogue {
        match (folded.last_mut(), op) {
            (Some(EpilogueOp::Add(k)), EpilogueOp::AddImm(v)) => {
                let operand = &mut layer.operands[*k];
                operand.offset = operand.offset.wrapping_add(v);
            }
            (Some(EpilogueOp::AddImm(a)), EpilogueOp::AddImm(v)) => *a = a.wrapping_add(v),
            _ => folded.push(op),
        }
    }
    layer.epilogue = folded;
}

/// The single value of a constant whose elements are all equal.
fn uniform_constant(r: &Resolver<'_>, id: ExprId, user: ExprId) -> Result<i64, CompileError> {
    let t = r.constant(id).ok_or_else(|| {
        err(format!(
            "right_shift {user}: the shift amount must be a constant"
        ))
    })?;
    let v = t.to_f64_vec();
    match v.first() {
        Some(&first) if v.iter().all(|&x| x == first) => Ok(first as i64),
        _ => Err(err(format!(
            "right_shift {user}: per-element shift amounts are not supported"
        ))),
    }
}

/// Classifies and records the non-chain operand of an `add`.
fn add_operand(
    r: &Resolver<'_>,
    layer: &mut Layer,
    other: ExprId,
    out: &[usize],
    user: ExprId,
) -> Result<(), CompileError> {
    let (shape, dt) = tensor_type(r.f, other)?;
    if dt != DType::Int32 {
        return Err(err(format!("add {user}: operand is {dt}, expected int32")));
    }
    let numel: usize = shape.iter().product();
    if numel == 1 {
        if let Some(t) = r.constant(other) {
            let v = t.to_f64_vec()[0] as i64 as i32;
            layer.epilogue.push(EpilogueOp::AddImm(v));
            return Ok(());
        }
    }
    if shape.len() > out.len() {
        return Err(err(format!(
            "add {user}: operand rank exceeds the output rank"
        )));
    }
    let offset = out.len() - shape.len();
    let channel_only = shape
        .iter()
        .enumerate()
        .all(|(d, &s)| s == 1 || d + offset == 1);
    let role = if channel_only {
        OperandRole::Channel
    } else {
        OperandRole::Full
    };
    layer.operands.push(Operand {
        role,
        shape,
        offset: 0,
    });
    layer.sources.push(r.source(other)?);
    layer
        .epilogue
        .push(EpilogueOp::Add(layer.operands.len() - 1));
    Ok(())
}

fn dense_geometry(d: &[usize], w: &[usize]) -> Result<(LayerKind, Geometry), CompileError> {
    let ([n, k], [o, k2]) = (d, w) else {
        return Err(err(format!(
            "nn.dense of shapes {d:?} x {w:?}: expected 2-D data and weight"
        )));
    };
    if k != k2 {
        return Err(err(format!("nn.dense: data has {k} features, weight {k2}")));
    }
    Ok((
        LayerKind::Dense,
        Geometry {
            n: 1,
            c: *k,
            h: 1,
            w: *n,
            o: *o,
            oh: 1,
            ow: *n,
            kh: 1,
            kw: 1,
            sh: 1,
            sw: 1,
            pt: 0,
            pl: 0,
        },
    ))
}

fn conv_geometry(
    call: &byoc_sdk::ir::Call,
    d: &[usize],
    w: &[usize],
    out: &[usize],
) -> Result<(LayerKind, Geometry), CompileError> {
    let a = &call.attrs;
    for (key, want) in [("data_layout", "NCHW"), ("kernel_layout", "OIHW")] {
        if a.get_str(key).unwrap_or(want) != want {
            return Err(err(format!("nn.conv2d with {key}={:?}", a.get_str(key))));
        }
    }
    if a.get_int("groups").unwrap_or(1) != 1 {
        return Err(err("nn.conv2d with groups != 1"));
    }
    if ints(a, "dilation")?.iter().any(|&x| x != 1) {
        return Err(err("nn.conv2d with dilation != 1"));
    }
    let strides = ints(a, "strides")?;
    let [t, l, _, _] = padding(&ints(a, "padding")?)?;
    let ([n, c, h, wd], [o, c2, kh, kw], [_, _, oh, ow], [sh, sw]) =
        (d, w, out, strides.as_slice())
    else {
        return Err(err(format!(
            "nn.conv2d of shapes {d:?} x {w:?}: expected 4-D NCHW/OIHW"
        )));
    };
    if c != c2 {
        return Err(err(format!(
            "nn.conv2d: data has {c} channels, weight {c2}"
        )));
    }
    Ok((
        LayerKind::Conv2d,
        Geometry {
            n: *n,
            c: *c,
            h: *h,
            w: *wd,
            o: *o,
            oh: *oh,
            ow: *ow,
            kh: *kh,
            kw: *kw,
            sh: *sh,
            sw: *sw,
            pt: t,
            pl: l,
        },
    ))
}
