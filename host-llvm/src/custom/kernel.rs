//! A host function on a custom datatype as a loop kernel: which library functions it calls
//! (by lowering key, the keys `byoc_kernels::datatypes::DatatypeCalls` resolves), the constants it
//! needs (converted once, here, through the registered cast from `float32`), the tensors it
//! reads and writes, and its loop body.
//!
//! Two kinds of functions become kernels:
//! - HostFuse's elementwise/broadcast groups ([`Body::Chain`]): the ops of the interpreted
//!   loop's table (`add` ... `minimum` as `Add` ... `Min`, the intrinsics `tir.exp`,
//!   `tir.log`, `tir.sqrt`, `tir.tanh`, `tir.sigmoid`, `rsqrt` as `Div(1, Sqrt(x))`, `nn.relu`
//!   as `Max(x, 0)`, `negative` as `Sub(0, x)`, `copy`, `nn.bias_add`) and `cast` between the
//!   datatype and `float32` at the group's boundaries;
//! - single `nn.conv2d` (NCHW data, OIHW weight, any groups, strides, dilation, padding),
//!   `nn.dense`, `nn.max_pool2d`, `nn.avg_pool2d`, their global forms (NCHW) and `nn.softmax`
//!   ([`outline`](super::outline) makes each its own function), with the interpreted loop's
//!   reduction order and start values.
//!
//! Anything else is an [`Unsupported`] error, which sends the function back to the interpreted
//! loop.

use std::collections::HashMap;

use byoc_ir::{Attrs, DType, ExprId, Function, Type};
use byoc_kernels::datatypes::DatatypeCalls;
use byoc_sdk::LoweringKey;

use crate::kernel::{collapse, Unsupported};

fn unsupported(op: &str, reason: impl Into<String>) -> Unsupported {
    Unsupported {
        op: op.to_string(),
        reason: reason.into(),
    }
}

/// How a tensor's elements are stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Elem {
    /// The custom datatype's bit patterns (its storage width).
    Custom,
    /// `float32`.
    F32,
}

/// A tensor the kernel reads or writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Operand {
    /// Its element storage.
    pub elem: Elem,
    /// Its element count.
    pub len: usize,
}

/// What a library function takes and gives, from its lowering key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signature {
    /// `(uN, uN) -> uN`.
    Binary,
    /// `(uN) -> uN`.
    Unary,
    /// `(float) -> uN`.
    FromF32,
    /// `(uN) -> float`.
    ToF32,
}

/// The signature of `key`'s function (keys this module creates only).
pub fn signature(key: &LoweringKey) -> Signature {
    match key {
        LoweringKey::Op { .. } => Signature::Binary,
        LoweringKey::Cast { src, .. } if src == "float" => Signature::FromF32,
        LoweringKey::Cast { .. } => Signature::ToF32,
        _ => Signature::Unary,
    }
}

/// One node of an elementwise chain; operands index earlier nodes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Node {
    /// The element of read `r` ([`Chain::reads`]) at the current position.
    Input(usize),
    /// A constant bit pattern of the datatype.
    Const(u64),
    /// Library function `call` ([`CustomKernel::calls`]) applied to earlier nodes.
    Call {
        /// Index into the kernel's calls.
        call: usize,
        /// The operands.
        args: Vec<usize>,
    },
}

/// One way of reading an input over the output's iteration space.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Read {
    /// The input.
    pub input: usize,
    /// Its element stride along each of [`Chain::dims`] (0 where it broadcasts).
    pub strides: Vec<usize>,
}

/// An elementwise/broadcast chain: one output element per position of `dims`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chain {
    /// The collapsed iteration space ([`crate::kernel::collapse`]).
    pub dims: Vec<usize>,
    /// The reads (an input read as a bias has a read of its own).
    pub reads: Vec<Read>,
    /// The DAG in evaluation order.
    pub nodes: Vec<Node>,
    /// The node that is the output (the last one, or an input the function returns as is).
    pub output: usize,
}

/// The library functions and zero of a sum of products.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mac {
    /// `Add`.
    pub add: usize,
    /// `Mul`.
    pub mul: usize,
    /// The bit pattern of 0.
    pub zero: u64,
}

/// `nn.conv2d`, NCHW data and OIHW weight.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conv2d {
    /// Input channels, height, width.
    pub input: [usize; 3],
    /// Output channels, height, width.
    pub output: [usize; 3],
    /// Kernel height and width.
    pub kernel: [usize; 2],
    /// Strides.
    pub strides: [usize; 2],
    /// Dilation.
    pub dilation: [usize; 2],
    /// Top and left padding.
    pub pad: [usize; 2],
    /// Groups.
    pub groups: usize,
    /// The sum of products.
    pub mac: Mac,
}

/// `nn.dense`: `y[i, j] = Σ_p a[i, p] × w[j, p]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dense {
    /// Rows, columns, reduction length.
    pub mnk: [usize; 3],
    /// The sum of products.
    pub mac: Mac,
}

/// A 2-D pooling, NCHW.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pool {
    /// Input height and width.
    pub input: [usize; 2],
    /// Output height and width.
    pub output: [usize; 2],
    /// Window height and width.
    pub kernel: [usize; 2],
    /// Strides.
    pub strides: [usize; 2],
    /// Dilation.
    pub dilation: [usize; 2],
    /// Top, left, bottom, right padding.
    pub pad: [usize; 4],
    /// `Max` (max pooling) or `Add` (average pooling).
    pub reduce: usize,
    /// The start of the reduction: the registered min value, or 0.
    pub start: u64,
    /// Average pooling: `Div`, whether padding taps count, and the bit pattern of every tap
    /// count `0..=kh*kw` (converted by the cast from `float32`).
    pub average: Option<(usize, bool, Vec<u64>)>,
}

/// `nn.softmax` along an axis viewed as `[outer, len, inner]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Softmax {
    /// Elements before, along and after the axis.
    pub view: [usize; 3],
    /// `Max`, `Sub`, `Add`, `Div`, `tir.exp`.
    pub calls: [usize; 5],
    /// The registered min value and 0.
    pub lowest_zero: [u64; 2],
}

/// The loop body of a kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Body {
    /// Elementwise/broadcast ops.
    Chain(Chain),
    /// Convolution.
    Conv2d(Conv2d),
    /// Matrix product.
    Dense(Dense),
    /// Pooling.
    Pool(Pool),
    /// Softmax.
    Softmax(Softmax),
}

/// A function on a custom datatype ready for code generation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CustomKernel {
    /// The custom datatype.
    pub dtype: DType,
    /// The library functions the kernel calls, by lowering key; the compiled code takes
    /// their addresses in this order.
    pub calls: Vec<LoweringKey>,
    /// The inputs, in parameter order.
    pub inputs: Vec<Operand>,
    /// The output.
    pub output: Operand,
    /// The loop body.
    pub body: Body,
}

impl CustomKernel {
    /// The number of independent work units the runtime splits over threads (output
    /// elements, planes, rows or softmax lines) and the least number of units per task.
    pub fn units(&self) -> (usize, usize) {
        let plane = |hw: &[usize]| hw.iter().product::<usize>().max(1);
        match &self.body {
            Body::Chain(_) => (self.output.len, 1024),
            Body::Conv2d(c) => (self.output.len / plane(&c.output[1..]), 1),
            Body::Dense(d) => (d.mnk[0], 1),
            Body::Pool(p) => (self.output.len / plane(&p.output), 1),
            Body::Softmax(s) => (s.view[0] * s.view[2], 16),
        }
    }
}

/// True when `f` computes on a custom datatype: a parameter, an op or the result is custom.
pub fn is_custom(f: &Function) -> bool {
    f.live_ids()
        .into_iter()
        .any(|id| custom_dtype(f.ty(id)).is_some())
}

fn custom_dtype(ty: Option<&Type>) -> Option<DType> {
    match ty {
        Some(Type::Tensor(t)) if t.dtype.is_custom() => Some(t.dtype),
        _ => None,
    }
}

/// The library functions a kernel calls, each key once.
struct Calls {
    dtype: DType,
    lib: DatatypeCalls,
    keys: Vec<LoweringKey>,
    index: HashMap<LoweringKey, usize>,
}

impl Calls {
    fn new(dtype: DType) -> Result<Calls, Unsupported> {
        let lib =
            DatatypeCalls::new(dtype).map_err(|e| unsupported("the function", e.to_string()))?;
        Ok(Calls {
            dtype,
            lib,
            keys: Vec::new(),
            index: HashMap::new(),
        })
    }

    fn bits(&self) -> u16 {
        self.lib.bits()
    }

    /// The index of `key`, after checking the datatype registers it.
    fn key(&mut self, op: &str, key: LoweringKey) -> Result<usize, Unsupported> {
        if let Some(&i) = self.index.get(&key) {
            return Ok(i);
        }
        self.lib
            .address(key.clone())
            .map_err(|e| unsupported(op, e.to_string()))?;
        self.index.insert(key.clone(), self.keys.len());
        self.keys.push(key);
        Ok(self.keys.len() - 1)
    }

    /// A binary op by TVM's name (`Add`).
    fn op(&mut self, op: &str, name: &str) -> Result<usize, Unsupported> {
        let bits = self.bits();
        self.key(
            op,
            LoweringKey::Op {
                op: name.to_string(),
                bits,
            },
        )
    }

    /// An intrinsic (`tir.exp`).
    fn intrinsic(&mut self, op: &str, name: &str) -> Result<usize, Unsupported> {
        let bits = self.bits();
        self.key(
            op,
            LoweringKey::Intrinsic {
                name: name.to_string(),
                bits,
            },
        )
    }

    /// The cast from (`to_custom`) or to `float32`.
    fn cast(&mut self, op: &str, to_custom: bool) -> Result<usize, Unsupported> {
        let (own, bits) = (self.lib.name().to_string(), self.bits());
        let key = if to_custom {
            LoweringKey::Cast {
                src: "float".into(),
                dst: own,
                src_bits: 32,
                dst_bits: bits,
            }
        } else {
            LoweringKey::Cast {
                src: own,
                dst: "float".into(),
                src_bits: bits,
                dst_bits: 32,
            }
        };
        self.key(op, key)
    }

    /// The bit pattern of a `float32` constant, through the registered cast (once, here).
    fn constant(&mut self, op: &str, x: f32) -> Result<u64, Unsupported> {
        self.lib
            .from_f32(x)
            .map_err(|e| unsupported(op, e.to_string()))
    }

    /// The registered min value.
    fn min_value(&self, op: &str) -> Result<u64, Unsupported> {
        self.lib
            .min_value()
            .map_err(|e| unsupported(op, e.to_string()))
    }

    /// Refuses sums of products when the datatype's exact dot product is on: the interpreted
    /// kernels accumulate those in it and round once, which these loops do not.
    fn sequential_sums(&self, op: &str) -> Result<(), Unsupported> {
        match self.lib.dot_product() {
            Some(_) => Err(unsupported(
                op,
                "the datatype's exact dot product is on; its sums run on the interpreted kernels",
            )),
            None => Ok(()),
        }
    }

    fn mac(&mut self, op: &str) -> Result<Mac, Unsupported> {
        self.sequential_sums(op)?;
        Ok(Mac {
            add: self.op(op, "Add")?,
            mul: self.op(op, "Mul")?,
            zero: self.constant(op, 0.0)?,
        })
    }
}

/// The tensor type of `id` as an operand of a kernel on `dtype`.
fn operand(
    f: &Function,
    id: ExprId,
    dtype: DType,
    op: &str,
) -> Result<(Operand, Vec<usize>), Unsupported> {
    match f.ty(id) {
        Some(Type::Tensor(t)) => {
            let elem = if t.dtype == dtype {
                Elem::Custom
            } else if t.dtype == DType::Float32 {
                Elem::F32
            } else {
                return Err(unsupported(
                    op,
                    format!(
                        "dtype {} (a {dtype} kernel reads {dtype} and float32)",
                        t.dtype
                    ),
                ));
            };
            Ok((
                Operand {
                    elem,
                    len: t.num_elements(),
                },
                t.shape.clone(),
            ))
        }
        _ => Err(unsupported(op, "not a typed tensor")),
    }
}

/// A non-negative integer list attribute with its default.
fn ints(attrs: &Attrs, key: &str, default: &[usize], op: &str) -> Result<Vec<usize>, Unsupported> {
    match attrs.get(key) {
        None => Ok(default.to_vec()),
        Some(v) if v.is_none() => Ok(default.to_vec()),
        Some(v) => v
            .as_int_list()
            .and_then(|l| l.into_iter().map(|x| usize::try_from(x).ok()).collect())
            .ok_or_else(|| unsupported(op, format!("{key} is not a list of sizes"))),
    }
}

/// A `(h, w)` attribute of 1 or 2 values.
fn pair(attrs: &Attrs, key: &str, default: usize, op: &str) -> Result<[usize; 2], Unsupported> {
    match ints(attrs, key, &[default], op)?[..] {
        [a] => Ok([a, a]),
        [a, b] => Ok([a, b]),
        _ => Err(unsupported(op, format!("{key} must have 1 or 2 values"))),
    }
}

/// Top, left, bottom, right padding from 1, 2 or 4 values.
fn padding(attrs: &Attrs, op: &str) -> Result<[usize; 4], Unsupported> {
    match ints(attrs, "padding", &[0], op)?[..] {
        [p] => Ok([p; 4]),
        [h, w] => Ok([h, w, h, w]),
        [t, l, b, r] => Ok([t, l, b, r]),
        _ => Err(unsupported(op, "padding must have 1, 2 or 4 values")),
    }
}

/// Refuses layouts other than `want` (the attribute absent means the default, `want`).
fn layout(attrs: &Attrs, key: &str, want: &str, op: &str) -> Result<(), Unsupported> {
    match attrs.get_str(key) {
        None | Some("") => Ok(()),
        Some(l) if l == want => Ok(()),
        Some(l) => Err(unsupported(op, format!("{key} {l} (compiled: {want})"))),
    }
}

fn nchw(shape: &[usize], what: &str, op: &str) -> Result<[usize; 4], Unsupported> {
    <[usize; 4]>::try_from(shape).map_err(|_| unsupported(op, format!("{what} is not 4-D")))
}

impl CustomKernel {
    /// The kernel of a host function on a custom datatype (typed; parameters are its inputs,
    /// in order). The datatype must be registered: its functions are looked up and its
    /// constants converted here.
    pub fn from_function(f: &Function) -> Result<CustomKernel, Unsupported> {
        let dtype = f
            .live_ids()
            .into_iter()
            .find_map(|id| custom_dtype(f.ty(id)))
            .ok_or_else(|| unsupported("the function", "no custom datatype"))?;
        let mut calls = Calls::new(dtype)?;
        let mut inputs = Vec::new();
        let mut shapes = Vec::new();
        for &p in &f.params {
            let (o, s) = operand(f, p, dtype, "an input")?;
            inputs.push(o);
            shapes.push(s);
        }
        let (output, out_shape) = operand(f, f.body, dtype, "the result")?;
        let body = match f.expr(f.body).as_op_call() {
            Some((op, call))
                if call.args.iter().copied().eq(f.params.iter().copied())
                    && REDUCTIONS.contains(&op.name()) =>
            {
                if output.elem != Elem::Custom || inputs.iter().any(|i| i.elem != Elem::Custom) {
                    return Err(unsupported(op.name(), "mixed dtypes"));
                }
                reduction(op.name(), &call.attrs, &shapes, &out_shape, &mut calls)?
            }
            _ => Body::Chain(chain(f, &shapes, &out_shape, &mut calls)?),
        };
        Ok(CustomKernel {
            dtype: calls.dtype,
            calls: calls.keys,
            inputs,
            output,
            body,
        })
    }
}

/// The ops compiled as a function of their own.
pub const REDUCTIONS: [&str; 7] = [
    "nn.conv2d",
    "nn.dense",
    "nn.max_pool2d",
    "nn.avg_pool2d",
    "nn.global_max_pool2d",
    "nn.global_avg_pool2d",
    "nn.softmax",
];

fn reduction(
    op: &str,
    attrs: &Attrs,
    shapes: &[Vec<usize>],
    out: &[usize],
    calls: &mut Calls,
) -> Result<Body, Unsupported> {
    Ok(match op {
        "nn.conv2d" => {
            layout(attrs, "data_layout", "NCHW", op)?;
            layout(attrs, "kernel_layout", "OIHW", op)?;
            layout(attrs, "out_layout", "NCHW", op)?;
            let [_, c, h, w] = nchw(&shapes[0], "the data", op)?;
            let [_, _, kh, kw] = nchw(&shapes[1], "the weight", op)?;
            let [_, o, oh, ow] = nchw(out, "the result", op)?;
            let pad = padding(attrs, op)?;
            Body::Conv2d(Conv2d {
                input: [c, h, w],
                output: [o, oh, ow],
                kernel: [kh, kw],
                strides: pair(attrs, "strides", 1, op)?,
                dilation: pair(attrs, "dilation", 1, op)?,
                pad: [pad[0], pad[1]],
                groups: attrs.get_int("groups").unwrap_or(1).max(1) as usize,
                mac: calls.mac(op)?,
            })
        }
        "nn.dense" => {
            let [n, k] = <[usize; 2]>::try_from(&shapes[1][..])
                .map_err(|_| unsupported(op, "the weight is not 2-D"))?;
            let m = out.iter().product::<usize>() / n.max(1);
            Body::Dense(Dense {
                mnk: [m, n, k],
                mac: calls.mac(op)?,
            })
        }
        "nn.softmax" => {
            let rank = shapes[0].len() as i64;
            let axis = attrs.get_int("axis").unwrap_or(-1);
            let axis = if axis < 0 { axis + rank } else { axis };
            let axis = usize::try_from(axis)
                .ok()
                .filter(|&a| a < shapes[0].len())
                .ok_or_else(|| unsupported(op, "axis out of range"))?;
            let s = &shapes[0];
            Body::Softmax(Softmax {
                view: [
                    s[..axis].iter().product(),
                    s[axis],
                    s[axis + 1..].iter().product(),
                ],
                calls: [
                    calls.op(op, "Max")?,
                    calls.op(op, "Sub")?,
                    calls.op(op, "Add")?,
                    calls.op(op, "Div")?,
                    calls.intrinsic(op, "tir.exp")?,
                ],
                lowest_zero: [calls.min_value(op)?, calls.constant(op, 0.0)?],
            })
        }
        _ => pool(op, attrs, &shapes[0], out, calls)?,
    })
}

fn pool(
    op: &str,
    attrs: &Attrs,
    shape: &[usize],
    out: &[usize],
    calls: &mut Calls,
) -> Result<Body, Unsupported> {
    layout(attrs, "layout", "NCHW", op)?;
    layout(attrs, "out_layout", "NCHW", op)?;
    let [_, _, h, w] = nchw(shape, "the data", op)?;
    let [_, _, oh, ow] = nchw(out, "the result", op)?;
    let global = op.starts_with("nn.global_");
    let max = op.ends_with("max_pool2d");
    let (kernel, strides, dilation, pad) = if global {
        ([h, w], [1, 1], [1, 1], [0; 4])
    } else {
        (
            pair(attrs, "pool_size", 1, op)?,
            pair(attrs, "strides", 1, op)?,
            pair(attrs, "dilation", 1, op)?,
            padding(attrs, op)?,
        )
    };
    let average = if max {
        None
    } else {
        calls.sequential_sums(op)?;
        let include_pad = !global
            && attrs
                .get("count_include_pad")
                .and_then(|v| v.as_bool())
                .unwrap_or(false);
        let taps = kernel[0]
            .checked_mul(kernel[1])
            .filter(|&t| t <= 1 << 20)
            .ok_or_else(|| unsupported(op, "the window is too large"))?;
        let counts = (0..=taps)
            .map(|c| calls.constant(op, c as f32))
            .collect::<Result<Vec<_>, _>>()?;
        Some((calls.op(op, "Div")?, include_pad, counts))
    };
    Ok(Body::Pool(Pool {
        input: [h, w],
        output: [oh, ow],
        kernel,
        strides,
        dilation,
        pad,
        reduce: calls.op(op, if max { "Max" } else { "Add" })?,
        start: if max {
            calls.min_value(op)?
        } else {
            calls.constant(op, 0.0)?
        },
        average,
    }))
}

/// The chain of an elementwise/broadcast group.
fn chain(
    f: &Function,
    shapes: &[Vec<usize>],
    out_shape: &[usize],
    calls: &mut Calls,
) -> Result<Chain, Unsupported> {
    let dtype = calls.dtype;
    let mut index: HashMap<ExprId, usize> = HashMap::new();
    let mut elems: Vec<Elem> = Vec::new();
    let mut nodes = Vec::new();
    // Read r: (input, shape as broadcast).
    let mut reads: Vec<(usize, Vec<usize>)> = Vec::new();
    for (k, &p) in f.params.iter().enumerate() {
        index.insert(p, nodes.len());
        nodes.push(Node::Input(reads.len()));
        reads.push((k, shapes[k].clone()));
        elems.push(operand(f, p, dtype, "an input")?.0.elem);
    }
    for id in f.live_ids() {
        if index.contains_key(&id) {
            continue;
        }
        let Some((op, call)) = f.expr(id).as_op_call() else {
            return Err(unsupported(
                "the function",
                format!("{id} is not an op call"),
            ));
        };
        let name = op.name();
        let elem = operand(f, id, dtype, name)?.0.elem;
        let arg = |i: usize| -> Result<usize, Unsupported> {
            call.args
                .get(i)
                .and_then(|a| index.get(a).copied())
                .ok_or_else(|| unsupported(name, format!("operand {i} is missing")))
        };
        let custom_args = |n: usize| -> Result<Vec<usize>, Unsupported> {
            let args = (0..n).map(arg).collect::<Result<Vec<_>, _>>()?;
            if elem != Elem::Custom || args.iter().any(|&a| elems[a] != Elem::Custom) {
                return Err(unsupported(
                    name,
                    format!("an op on {} inside a {dtype} group", DType::Float32),
                ));
            }
            Ok(args)
        };
        let call_node = |c: usize, args: Vec<usize>| Node::Call { call: c, args };
        let value = match name {
            "add" | "subtract" | "multiply" | "divide" | "maximum" | "minimum" => {
                let args = custom_args(2)?;
                let c = calls.op(name, binary_name(name))?;
                push(&mut nodes, &mut elems, call_node(c, args), Elem::Custom)
            }
            "exp" | "log" | "sqrt" | "erf" | "tanh" | "sigmoid" | "round" | "floor" | "ceil" => {
                let args = custom_args(1)?;
                let c = calls.intrinsic(name, &format!("tir.{name}"))?;
                push(&mut nodes, &mut elems, call_node(c, args), Elem::Custom)
            }
            // `tir.fabs`, or `max(x, 0 - x)` without it: the interpreted kernel's choice.
            "abs" => {
                let x = custom_args(1)?[0];
                match calls.intrinsic(name, "tir.fabs") {
                    Ok(c) => push(&mut nodes, &mut elems, call_node(c, vec![x]), Elem::Custom),
                    Err(direct) => {
                        let (Ok(sub), Ok(max)) = (calls.op(name, "Sub"), calls.op(name, "Max"))
                        else {
                            return Err(direct);
                        };
                        let zero = calls.constant(name, 0.0)?;
                        let zero = push(&mut nodes, &mut elems, Node::Const(zero), Elem::Custom);
                        let neg = call_node(sub, vec![zero, x]);
                        let neg = push(&mut nodes, &mut elems, neg, Elem::Custom);
                        push(
                            &mut nodes,
                            &mut elems,
                            call_node(max, vec![x, neg]),
                            Elem::Custom,
                        )
                    }
                }
            }
            // `Max(Min(x, a_max), a_min)`; an infinite bound clips nothing.
            "clip" => {
                let mut x = custom_args(1)?[0];
                for (attr, op) in [("a_max", "Min"), ("a_min", "Max")] {
                    let bound = call
                        .attrs
                        .get(attr)
                        .and_then(|v| v.as_f64())
                        .ok_or_else(|| unsupported(name, format!("{attr} is not a number")))?;
                    if bound.is_infinite() {
                        continue;
                    }
                    let c = calls.op(name, op)?;
                    let v = calls.constant(name, bound as f32)?;
                    let v = push(&mut nodes, &mut elems, Node::Const(v), Elem::Custom);
                    x = push(
                        &mut nodes,
                        &mut elems,
                        call_node(c, vec![x, v]),
                        Elem::Custom,
                    );
                }
                x
            }
            "rsqrt" => {
                let x = custom_args(1)?[0];
                let (sqrt, div) = (calls.intrinsic(name, "tir.sqrt")?, calls.op(name, "Div")?);
                let one = calls.constant(name, 1.0)?;
                let one = push(&mut nodes, &mut elems, Node::Const(one), Elem::Custom);
                let s = push(
                    &mut nodes,
                    &mut elems,
                    call_node(sqrt, vec![x]),
                    Elem::Custom,
                );
                push(
                    &mut nodes,
                    &mut elems,
                    call_node(div, vec![one, s]),
                    Elem::Custom,
                )
            }
            "nn.relu" | "negative" => {
                let x = custom_args(1)?[0];
                let zero = calls.constant(name, 0.0)?;
                let zero = push(&mut nodes, &mut elems, Node::Const(zero), Elem::Custom);
                let (c, args) = if name == "nn.relu" {
                    (calls.op(name, "Max")?, vec![x, zero])
                } else {
                    (calls.op(name, "Sub")?, vec![zero, x])
                };
                push(&mut nodes, &mut elems, call_node(c, args), Elem::Custom)
            }
            "copy" => custom_args(1)?[0],
            "nn.bias_add" => {
                let [data, bias] = custom_args(2)?[..] else {
                    return Err(unsupported(name, "two operands expected"));
                };
                let rank = shapes_of(f, call.args[0])?.len() as i64;
                let axis = call
                    .attrs
                    .get_int("axis")
                    .map(|a| if a < 0 { a + rank } else { a })
                    .filter(|a| (0..rank).contains(a))
                    .ok_or_else(|| unsupported(name, "axis out of range"))?;
                // The bias is an input, or unary ops (the entry cast) on one: it is read again
                // as `[C, 1, ..., 1]` and those ops repeated on the read.
                let k = source_input(&nodes, &reads, bias).ok_or_else(|| {
                    unsupported(
                        name,
                        "the bias is computed inside the group from several values",
                    )
                })?;
                let shape: Vec<usize> = shapes[k]
                    .iter()
                    .copied()
                    .chain(std::iter::repeat_n(1, (rank - axis - 1) as usize))
                    .collect();
                let read = reads.len();
                reads.push((k, shape));
                let bias = replay(&mut nodes, &mut elems, bias, read);
                let add = calls.op(name, "Add")?;
                push(
                    &mut nodes,
                    &mut elems,
                    call_node(add, vec![data, bias]),
                    Elem::Custom,
                )
            }
            "cast" => {
                let x = arg(0)?;
                match (elems[x], elem) {
                    (a, b) if a == b => x,
                    (Elem::F32, Elem::Custom) => {
                        let c = calls.cast(name, true)?;
                        push(&mut nodes, &mut elems, call_node(c, vec![x]), Elem::Custom)
                    }
                    _ => {
                        let c = calls.cast(name, false)?;
                        push(&mut nodes, &mut elems, call_node(c, vec![x]), Elem::F32)
                    }
                }
            }
            _ => {
                return Err(unsupported(
                    name,
                    format!("not supported by the host code generator on {dtype}"),
                ))
            }
        };
        index.insert(id, value);
    }
    let out = *index
        .get(&f.body)
        .ok_or_else(|| unsupported("the function", "the result is not an op call"))?;
    // Nodes after the output are not needed for it.
    nodes.truncate(out + 1);
    let read_shapes: Vec<Vec<usize>> = reads.iter().map(|(_, s)| s.clone()).collect();
    let (dims, strides) = collapse(out_shape, &read_shapes);
    Ok(Chain {
        dims,
        reads: reads
            .into_iter()
            .zip(strides)
            .map(|((input, _), strides)| Read { input, strides })
            .collect(),
        nodes,
        output: out,
    })
}

/// The input node `at` reads through unary calls only, if any.
fn source_input(nodes: &[Node], reads: &[(usize, Vec<usize>)], at: usize) -> Option<usize> {
    match &nodes[at] {
        Node::Input(r) => Some(reads[*r].0),
        Node::Call { args, .. } if args.len() == 1 => source_input(nodes, reads, args[0]),
        _ => None,
    }
}

/// Repeats the unary calls leading to node `at` on read `read` instead of the read they
/// started from; returns the new node.
fn replay(nodes: &mut Vec<Node>, elems: &mut Vec<Elem>, at: usize, read: usize) -> usize {
    match nodes[at].clone() {
        Node::Call { call, args } if args.len() == 1 => {
            let x = replay(nodes, elems, args[0], read);
            let elem = elems[at];
            push(
                nodes,
                elems,
                Node::Call {
                    call,
                    args: vec![x],
                },
                elem,
            )
        }
        _ => {
            let elem = elems[at];
            push(nodes, elems, Node::Input(read), elem)
        }
    }
}

/// Appends `node` (stored as `elem`) and returns its index.
fn push(nodes: &mut Vec<Node>, elems: &mut Vec<Elem>, node: Node, elem: Elem) -> usize {
    nodes.push(node);
    elems.push(elem);
    nodes.len() - 1
}

fn shapes_of(f: &Function, id: ExprId) -> Result<Vec<usize>, Unsupported> {
    match f.ty(id) {
        Some(Type::Tensor(t)) => Ok(t.shape.clone()),
        _ => Err(unsupported("nn.bias_add", "the data is not a typed tensor")),
    }
}

/// TVM's lowering name of a binary op.
fn binary_name(op: &str) -> &'static str {
    match op {
        "add" => "Add",
        "subtract" => "Sub",
        "multiply" => "Mul",
        "divide" => "Div",
        "maximum" => "Max",
        _ => "Min",
    }
}
