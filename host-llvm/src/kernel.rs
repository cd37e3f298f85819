//! A fused host function as a loop kernel: its output cut into boxes ([`Piece`]s), each with
//! a collapsed iteration space, the expression DAG that computes one output element, and for
//! each load its input's offset and strides over that space.
//!
//! Which input element an output element reads comes from the group's index maps
//! ([`crate::index_map`]): elementwise and broadcast ops pass the index on, the injective ops
//! `transpose`, `strided_slice`, `concatenate`, constant `nn.pad` and the reshapes (`reshape`, `squeeze`,
//! `expand_dims`, `nn.batch_flatten`) rewrite it, and `nn.bias_add` reads its bias along its
//! axis. Concatenations and pads choose per element which part (or the pad value) to read;
//! the output is cut into boxes inside which every choice is fixed, so each box is a plain
//! strided loop without branches, and the injective ops themselves emit no node: they only
//! move loads.
//!
//! Dimension collapsing, per box: dimensions of extent 1 drop out, and neighbouring dimensions
//! merge when every load and the output step across them as across one dimension (stride of
//! the outer equals stride times extent of the inner). An elementwise chain over contiguous or
//! broadcast inputs so collapses to rows with stride 1 or 0 loads, which the code generator's
//! inner loop vectorizes; a transpose keeps a strided (gathering) inner load.
//!
//! Only `float32` is compiled, and only the ops [`Unary`], [`Binary`], `clip`, `nn.bias_add`
//! and the injective ops above name; anything else is an [`Unsupported`] error that sends the
//! group back to the reference kernels.
//!
//! A group with a reduction (see HostFuse and [`crate::reduction`]) is a [`Reduction`]: a
//! folding loop over the reduction's input, its producers lowered into it like any group's
//! DAG over that input's space, accumulating into the output; then the rest of the group (the
//! average's division, the consumers) is an epilogue kernel over the output reading the
//! folded value as [`Node::Acc`]. Its producers hold no concatenation or pad (HostFuse keeps
//! them out), so the folding loop is one box, walked in the reference kernel's order.
//!
//! A group with a windowed pooling over an elementwise producer is a [`WindowFold`]: per tap
//! of the window, a folding loop over the outputs the tap reaches, its producers lowered at
//! the tap's input coordinates ([`crate::window`]); an average's divisions; then the epilogue.
//!
//! A group with a softmax is a [`Softmax`]: two folding loops over its input into scratch
//! buffers (each line's maximum, then its sum of exponentials), then the pieces compute the
//! softmax and its consumers over the output.
//!
//! A group with an anchor (conv2d, dense, windowed pooling without producers: see HostFuse) is an [`Anchor`]
//! plus an epilogue kernel: the anchor's host kernel computes the output and the kernel
//! rewrites blocks of it in place, reading the anchor's value as [`Node::Acc`]. Such a group
//! has no injective op (HostFuse keeps them apart), so its one box is the whole output.

use std::cell::RefCell;
use std::collections::HashMap;

use byoc_ir::infer_types;
use byoc_ir::op::strided_slice_window;
use byoc_ir::text::{parse_module, print_module};
use byoc_ir::{Attrs, DType, Expr, ExprId, Function, FunctionBuilder, Module, Type};
use byoc_kernels::HostKernel;
use byoc_passes::host_fuse::{is_anchor, is_reduction};

use crate::index_map::{boxes, broadcast, cuts, reshape, Affine, Map, Region, ReshapeError, Visit};
use crate::reduction::{Fold, FoldPass, ReduceOp, Reduction, WindowFold};
use crate::window::{runs, PoolWindow};

/// Why a fused function cannot be compiled: the op (or `@function` for the function
/// itself) and the reason.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{op}: {reason}")]
pub struct Unsupported {
    /// The op, or the function.
    pub op: String,
    /// Why.
    pub reason: String,
}

/// An [`Unsupported`] for `op`.
pub(crate) fn unsupported(op: &str, reason: impl Into<String>) -> Unsupported {
    Unsupported {
        op: op.to_string(),
        reason: reason.into(),
    }
}

/// Unary ops the code generator compiles, with the reference kernels' formulas.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unary {
    /// `x > 0 ? x : 0`.
    Relu,
    /// `|x|`.
    Abs,
    /// `-x`.
    Negative,
    /// `expf(x)` (libm).
    Exp,
    /// `logf(x)` (libm).
    Log,
    /// `sqrt(x)` (correctly rounded).
    Sqrt,
    /// `1 / sqrt(x)`.
    Rsqrt,
    /// `tanhf(x)` (libm).
    Tanh,
    /// `erff(x)` (libm).
    Erf,
    /// `1 / (1 + expf(-x))`.
    Sigmoid,
    /// Round half to even.
    Round,
    /// Round down.
    Floor,
    /// Round up.
    Ceil,
    /// `x`.
    Copy,
}

/// Binary ops the code generator compiles (numpy broadcasting).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Binary {
    /// `a + b`.
    Add,
    /// `a - b`.
    Subtract,
    /// `a * b`.
    Multiply,
    /// `a / b`.
    Divide,
    /// `powf(a, b)` (libm).
    Power,
    /// `a != a || a >= b ? a : b` (NaN propagates as in numpy).
    Maximum,
    /// `a != a || a <= b ? a : b`.
    Minimum,
}

/// One node of the per-element expression DAG; operands index earlier nodes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Node {
    /// The element of [`Piece::loads`]`[k]` at the current position.
    Load(usize),
    /// A unary op.
    Unary(Unary, usize),
    /// A binary op.
    Binary(Binary, usize, usize),
    /// The anchor's (or reduction's) value at the current position: the output element
    /// itself, before the epilogue rewrites it.
    Acc,
    /// A constant.
    Const(f32),
    /// `x < lo ? lo : x > hi ? hi : x`, bounds converted to `float32`.
    Clip {
        /// The operand.
        x: usize,
        /// Lower bound.
        lo: f32,
        /// Upper bound.
        hi: f32,
    },
}

/// A strided read of one input over a piece's iteration space.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Load {
    /// The input.
    pub input: usize,
    /// The element read at the piece's first position.
    pub offset: usize,
    /// Its element stride along each of the piece's dims (0 where it does not move, negative
    /// where a slice reads backwards).
    pub strides: Vec<i64>,
}

/// One box of the output, computed by one loop nest.
#[derive(Clone, Debug, PartialEq)]
pub struct Piece {
    /// The collapsed iteration space, outermost first (never empty; `[1]` for one element).
    pub dims: Vec<usize>,
    /// The output element written at the first position.
    pub out_offset: usize,
    /// The output's element stride along each of `dims`.
    pub out_strides: Vec<i64>,
    /// The distinct loads.
    pub loads: Vec<Load>,
    /// The DAG, in evaluation order; the last node is the output.
    pub nodes: Vec<Node>,
}

impl Piece {
    /// Its number of positions (output elements).
    pub fn positions(&self) -> usize {
        self.dims.iter().product()
    }
}

/// A fused function ready for code generation.
#[derive(Clone, Debug, PartialEq)]
pub struct Kernel {
    /// The boxes, which together cover the output once; the kernel's iteration range walks
    /// them in order.
    pub pieces: Vec<Piece>,
    /// Element count of each input.
    pub input_lens: Vec<usize>,
    /// Output element count.
    pub len: usize,
    /// The op whose output this kernel rewrites as its epilogue, if any.
    pub anchor: Option<Anchor>,
    /// The folding loop that fills the output before the pieces (its epilogue) run, if the
    /// group has a reduction.
    pub reduction: Option<Reduction>,
    /// The folding loops that fill the scratch buffers before the pieces run, if the group
    /// has a softmax.
    pub softmax: Option<Softmax>,
    /// The folding loops that fill the output before the pieces (its epilogue) run, if the
    /// group has a windowed pooling.
    pub window: Option<WindowFold>,
}

/// A softmax's (or log-softmax's) lines computed as the reference kernel computes them: per
/// line, the maximum (`f32::max` from `-inf`) folded into scratch buffer `inputs` with the
/// producers of `x` computed inline; `expf(x - max)` written to the output; the sum of the
/// output's line (from 0) folded into scratch buffer `inputs + 1`; the pieces then compute
/// `e / sum` (or `x - max - logf(sum)`, the producers computed again) and the consumers.
#[derive(Clone, Debug, PartialEq)]
pub struct Softmax {
    /// The maxima.
    pub max: Reduction,
    /// The exponentials, written to the output.
    pub exp: Piece,
    /// The sums.
    pub sum: Reduction,
}

/// The anchor op of a group: one call, kept as a module in the text format (`@main` takes the
/// call's arguments and returns the call) so that an artifact can rebuild its host kernel.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Anchor {
    /// The module.
    pub ir: String,
    /// For each argument of the call, the group input it is.
    pub args: Vec<usize>,
}

impl Anchor {
    /// The anchor of call `id` in `f`, whose arguments are parameters of `f`.
    fn of(f: &Function, id: ExprId, name: &str) -> Result<Anchor, Unsupported> {
        let Expr::Call(call) = f.expr(id) else {
            return Err(unsupported(name, "not an op call"));
        };
        let mut b = FunctionBuilder::new();
        let mut params = Vec::with_capacity(call.args.len());
        let mut args = Vec::with_capacity(call.args.len());
        for &a in &call.args {
            let input = f.params.iter().position(|&p| p == a).ok_or_else(|| {
                unsupported(
                    name,
                    "an argument of the anchor is computed inside the group",
                )
            })?;
            let ty = f
                .ty(a)
                .cloned()
                .ok_or_else(|| unsupported(name, "an argument is not typed"))?;
            params.push(b.param(format!("a{}", args.len()), ty));
            args.push(input);
        }
        let ir_err = |e: &dyn std::fmt::Display| unsupported(name, e.to_string());
        let body = b
            .call(name, &params, call.attrs.clone())
            .map_err(|e| ir_err(&e))?;
        let mut module = Module::new();
        module.insert(
            "main",
            b.finish(params, body, Attrs::new())
                .map_err(|e| ir_err(&e))?,
        );
        Ok(Anchor {
            ir: print_module(&module),
            args,
        })
    }

    /// The anchor's host kernel (built as the executor builds it for a `float32` call).
    pub fn host_kernel(&self) -> Result<Box<dyn HostKernel>, String> {
        let mut module = parse_module(&self.ir).map_err(|e| format!("anchor: {e}"))?;
        infer_types(&mut module).map_err(|e| format!("anchor: {e}"))?;
        let main = module.main().map_err(|e| format!("anchor: {e}"))?;
        let (op, call) = main
            .expr(main.body)
            .as_op_call()
            .ok_or("anchor: the body is not an op call")?;
        let tensor = |id: ExprId| match main.ty(id) {
            Some(Type::Tensor(t)) => Ok(t.clone()),
            _ => Err(format!("anchor: {} is not a typed tensor", op.name())),
        };
        let inputs = call
            .args
            .iter()
            .map(|&a| tensor(a))
            .collect::<Result<Vec<_>, _>>()?;
        byoc_kernels::host_kernel(op, &call.attrs, &inputs, &[tensor(main.body)?])
            .map_err(|e| format!("anchor: {e}"))
    }
}

fn unary(name: &str) -> Option<Unary> {
    use Unary::*;
    Some(match name {
        "nn.relu" => Relu,
        "abs" => Abs,
        "negative" => Negative,
        "exp" => Exp,
        "log" => Log,
        "sqrt" => Sqrt,
        "rsqrt" => Rsqrt,
        "tanh" => Tanh,
        "erf" => Erf,
        "sigmoid" => Sigmoid,
        "round" => Round,
        "floor" => Floor,
        "ceil" => Ceil,
        "copy" => Copy,
        _ => return None,
    })
}

fn binary(name: &str) -> Option<Binary> {
    use Binary::*;
    Some(match name {
        "add" => Add,
        "subtract" => Subtract,
        "multiply" => Multiply,
        "divide" => Divide,
        "power" => Power,
        "maximum" => Maximum,
        "minimum" => Minimum,
        _ => return None,
    })
}

/// The most boxes one kernel is cut into.
const MAX_PIECES: usize = 4096;
/// The most (value, index map) pairs one kernel visits while cutting.
const MAX_VISITS: usize = 1 << 16;
/// The most elements of any value of a compiled kernel: index arithmetic (in `i64`) stays far
/// from overflow below it.
const MAX_ELEMENTS: usize = 1 << 40;

/// One value of a group, as the kernel sees it.
#[derive(Clone, Debug)]
enum Op {
    /// Input `k`.
    Param(usize),
    /// The anchor's output.
    Acc,
    /// The reduction's output: the folded value, divided by `divisor` for an average.
    Reduced(Option<f32>),
    /// A softmax of `x` along `axis` (a log-softmax when `log`), reading its maxima and sums
    /// from scratch buffers `scratch` and `scratch + 1`.
    Softmax {
        x: ExprId,
        axis: usize,
        log: bool,
        scratch: usize,
    },
    Unary(Unary, ExprId),
    Binary(Binary, ExprId, ExprId),
    /// `data + bias` with `bias` along `axis` of `data`.
    BiasAdd {
        data: ExprId,
        bias: ExprId,
        axis: usize,
    },
    Clip {
        x: ExprId,
        lo: f32,
        hi: f32,
    },
    /// Result dimension `i` is operand dimension `axes[i]`.
    Transpose(ExprId, Vec<usize>),
    /// Result index `i` along dimension `d` reads operand index `begin[d] + step[d] * i`.
    Slice {
        x: ExprId,
        begin: Vec<i64>,
        step: Vec<i64>,
    },
    /// The same elements under another shape.
    Reshape(ExprId),
    /// Part `p` covers `starts[p]..starts[p + 1]` along `axis`.
    Concat {
        parts: Vec<ExprId>,
        axis: usize,
        starts: Vec<i64>,
    },
    /// `data` sits at `before[d]..before[d] + extent` along each axis `d`; `value` elsewhere.
    Pad {
        data: ExprId,
        value: ExprId,
        before: Vec<i64>,
    },
}

/// The values of a fused function with their ops, shapes and op names.
struct Graph {
    ops: HashMap<ExprId, Op>,
    shapes: HashMap<ExprId, Vec<usize>>,
    names: HashMap<ExprId, String>,
}

/// The `float32` shape of `id`, or why not.
fn f32_shape(f: &Function, id: ExprId, op: &str) -> Result<Vec<usize>, Unsupported> {
    match f.ty(id) {
        Some(Type::Tensor(t)) if t.dtype == DType::Float32 => {
            let fits = t
                .shape
                .iter()
                .try_fold(1usize, |n, &e| n.checked_mul(e))
                .is_some_and(|n| n <= MAX_ELEMENTS);
            if fits {
                Ok(t.shape.clone())
            } else {
                Err(unsupported(op, format!("{t} has more than 2^40 elements")))
            }
        }
        Some(Type::Tensor(t)) => Err(unsupported(
            op,
            format!(
                "dtype {} (the host code generator compiles float32)",
                t.dtype
            ),
        )),
        _ => Err(unsupported(op, "not a typed tensor")),
    }
}

/// `axis` of a value of rank `rank` (negative counts from the end), or why not.
fn axis_of(axis: i64, rank: usize, op: &str) -> Result<usize, Unsupported> {
    let rank = rank as i64;
    let a = if axis < 0 { axis + rank } else { axis };
    if (0..rank).contains(&a) {
        Ok(a as usize)
    } else {
        Err(unsupported(op, format!("axis {axis} out of range")))
    }
}

impl Graph {
    /// The graph of `f`, its anchor and its reduction, if any.
    fn of(f: &Function) -> Result<(Graph, Option<Anchor>, Option<ReduceOp>), Unsupported> {
        let out_shape = f32_shape(f, f.body, "the result")?;
        let mut g = Graph {
            ops: HashMap::new(),
            shapes: HashMap::new(),
            names: HashMap::new(),
        };
        let mut anchor = None;
        let mut reduction: Option<ReduceOp> = None;
        for (k, &p) in f.params.iter().enumerate() {
            g.shapes.insert(p, f32_shape(f, p, "an input")?);
            g.ops.insert(p, Op::Param(k));
            g.names.insert(p, "an input".to_string());
        }
        for id in f.live_ids() {
            if g.ops.contains_key(&id) {
                continue;
            }
            if let Expr::Tuple(_) = f.expr(id) {
                // A concatenation's parts: read through the concatenate.
                continue;
            }
            let Some((op, call)) = f.expr(id).as_op_call() else {
                return Err(unsupported(
                    "the function",
                    format!("{id} is not an op call"),
                ));
            };
            let name = op.name();
            let shape = f32_shape(f, id, name)?;
            let arg = |i: usize| -> Result<ExprId, Unsupported> {
                call.args
                    .get(i)
                    .copied()
                    .ok_or_else(|| unsupported(name, format!("operand {i} is missing")))
            };
            let kind = if is_reduction(f, id) {
                if reduction.is_some() {
                    return Err(unsupported(name, "a second reduction in one group"));
                }
                let input = arg(0)?;
                let op = ReduceOp::of(name, &call.attrs, input, &f32_shape(f, input, name)?)?;
                let kind = match op.softmax {
                    Some(log) => Op::Softmax {
                        x: input,
                        axis: op.axes[0],
                        log,
                        scratch: f.params.len(),
                    },
                    None => Op::Reduced(op.divisor),
                };
                reduction = Some(op);
                kind
            } else if is_anchor(f, id) {
                if anchor.is_some() {
                    return Err(unsupported(name, "a second anchor in one group"));
                }
                if shape != out_shape {
                    return Err(unsupported(name, "the anchor's shape is not the output's"));
                }
                anchor = Some(Anchor::of(f, id, name)?);
                Op::Acc
            } else if name == "nn.bias_add" {
                let axis = call
                    .attrs
                    .get_int("axis")
                    .ok_or_else(|| unsupported(name, "axis is not an integer"))?;
                Op::BiasAdd {
                    data: arg(0)?,
                    bias: arg(1)?,
                    axis: axis_of(axis, shape.len(), name)?,
                }
            } else if let Some(u) = unary(name) {
                Op::Unary(u, arg(0)?)
            } else if let Some(b) = binary(name) {
                Op::Binary(b, arg(0)?, arg(1)?)
            } else if name == "clip" {
                let bound = |key: &str| {
                    call.attrs
                        .get(key)
                        .and_then(|v| v.as_f64())
                        .ok_or_else(|| unsupported(name, format!("{key} is not a number")))
                };
                Op::Clip {
                    x: arg(0)?,
                    lo: bound("a_min")? as f32,
                    hi: bound("a_max")? as f32,
                }
            } else if matches!(
                name,
                "reshape" | "squeeze" | "expand_dims" | "nn.batch_flatten"
            ) {
                Op::Reshape(arg(0)?)
            } else if name == "strided_slice" {
                let x = arg(0)?;
                let Some(Type::Tensor(input)) = f.ty(x) else {
                    return Err(unsupported(name, "its operand is not a typed tensor"));
                };
                let (begin, step) = strided_slice_window(&call.attrs, input)
                    .map_err(|e| unsupported(name, e.to_string()))?;
                Op::Slice {
                    x,
                    begin: begin.into_iter().map(|b| b as i64).collect(),
                    step: step.into_iter().map(|s| s as i64).collect(),
                }
            } else if name == "transpose" {
                let rank = shape.len();
                let axes = match call.attrs.get("axes").filter(|v| !v.is_none()) {
                    None => (0..rank).rev().collect(),
                    Some(v) => v
                        .as_int_list()
                        .ok_or_else(|| unsupported(name, "axes is not a list of integers"))?
                        .into_iter()
                        .map(|a| axis_of(a, rank, name))
                        .collect::<Result<Vec<_>, _>>()?,
                };
                Op::Transpose(arg(0)?, axes)
            } else if name == "concatenate" {
                let Expr::Tuple(parts) = f.expr(arg(0)?) else {
                    return Err(unsupported(name, "its operand is not a tuple of the group"));
                };
                let axis = axis_of(call.attrs.get_int("axis").unwrap_or(0), shape.len(), name)?;
                let mut starts = vec![0i64];
                for &p in parts {
                    let s = f32_shape(f, p, name)?;
                    let extent = *s
                        .get(axis)
                        .ok_or_else(|| unsupported(name, "a part has no such axis"))?;
                    starts.push(starts[starts.len() - 1] + extent as i64);
                }
                Op::Concat {
                    parts: parts.clone(),
                    axis,
                    starts,
                }
            } else if name == "nn.pad" {
                if call.attrs.get_str("pad_mode").unwrap_or("constant") != "constant" {
                    return Err(unsupported(name, "only constant padding is compiled"));
                }
                let rows = call
                    .attrs
                    .get("pad_width")
                    .and_then(|v| v.as_list())
                    .ok_or_else(|| unsupported(name, "pad_width is not a list"))?;
                let before = rows
                    .iter()
                    .map(|r| match r.as_int_list().as_deref() {
                        Some(&[b, _]) if b >= 0 => Ok(b),
                        _ => Err(unsupported(name, "pad_width is not [before, after] pairs")),
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                Op::Pad {
                    data: arg(0)?,
                    value: arg(1)?,
                    before,
                }
            } else {
                return Err(unsupported(
                    name,
                    "not supported by the host code generator",
                ));
            };
            g.ops.insert(id, kind);
            g.shapes.insert(id, shape);
            g.names.insert(id, name.to_string());
        }
        if anchor.is_some() && reduction.is_some() {
            return Err(unsupported(
                "the function",
                "an anchor and a reduction in one group",
            ));
        }
        Ok((g, anchor, reduction))
    }

    fn shape(&self, id: ExprId) -> Result<&[usize], Unsupported> {
        self.shapes
            .get(&id)
            .map(Vec::as_slice)
            .ok_or_else(|| unsupported("the function", format!("{id} is not a value of it")))
    }

    fn op(&self, id: ExprId) -> Result<&Op, Unsupported> {
        self.ops
            .get(&id)
            .ok_or_else(|| unsupported("the function", format!("{id} is not a value of it")))
    }

    fn name(&self, id: ExprId) -> &str {
        self.names.get(&id).map_or("the function", String::as_str)
    }

    /// The piecewise axes of `id` and where along each its choice changes.
    fn piecewise(&self, id: ExprId) -> Result<Vec<(usize, Vec<i64>)>, Unsupported> {
        Ok(match self.op(id)? {
            Op::Concat { axis, starts, .. } => vec![(*axis, starts.clone())],
            Op::Pad { data, before, .. } => before
                .iter()
                .zip(self.shape(*data)?)
                .enumerate()
                .map(|(d, (&b, &e))| (d, vec![b, b + e as i64]))
                .collect(),
            _ => Vec::new(),
        })
    }
}

/// An iteration space of a group: the output's shape (or a box of it), possibly refined (some
/// dimensions split into several, the memory order unchanged) where a reshape asks for it.
/// Every index map has one coefficient per dimension of the space.
struct Space<'g> {
    graph: &'g Graph,
    /// The extents, outermost first.
    dims: Vec<usize>,
    /// A split of a dimension a reshape asked for.
    refine: RefCell<Option<(usize, Vec<usize>)>>,
}

impl<'g> Space<'g> {
    fn new(graph: &'g Graph, dims: Vec<usize>) -> Self {
        Space {
            graph,
            dims,
            refine: RefCell::new(None),
        }
    }

    /// Runs `build` until no reshape asks for a finer space (fewer than 64 times: each split
    /// turns a dimension of at least 2 into factors of at least 2).
    fn refining<T>(
        &mut self,
        mut build: impl FnMut(&Space<'g>) -> Result<T, Unsupported>,
    ) -> Result<T, Unsupported> {
        let mut splits = 0;
        loop {
            match build(self) {
                Ok(t) => return Ok(t),
                Err(e) => {
                    let Some((dim, factors)) = self.refine.take() else {
                        return Err(e);
                    };
                    splits += 1;
                    if splits > 64 {
                        return Err(e);
                    }
                    self.dims.splice(dim..=dim, factors);
                }
            }
        }
    }

    fn rank(&self) -> usize {
        self.dims.len()
    }

    /// The map of a value of shape `shape` (which this space refines) read in this space's
    /// order.
    fn merged(&self, shape: &[usize]) -> Result<Map, Unsupported> {
        reshape(
            &Affine::identity(self.rank()),
            &self.dims,
            shape,
            &self.dims,
            "the result",
        )
        .map_err(|_| {
            unsupported(
                "the function",
                "the iteration space does not refine the output",
            )
        })
    }

    /// The operands of `id` (whose map is `map`) with their maps: the one rule for index maps.
    /// Within a box (`lo..hi` of the output), a concatenation or pad yields the one operand
    /// that box reads; without one (while cutting), every operand some element may read.
    fn operands(
        &self,
        id: ExprId,
        map: &Map,
        within: Option<(&[usize], &[usize])>,
    ) -> Result<Vec<(ExprId, Map)>, Unsupported> {
        let name = self.graph.name(id);
        let shape = self.graph.shape(id)?;
        let same = |x: ExprId| -> Result<(ExprId, Map), Unsupported> {
            Ok((x, broadcast(map, shape, self.graph.shape(x)?, self.rank())))
        };
        Ok(match self.graph.op(id)? {
            Op::Param(_) | Op::Acc | Op::Reduced(_) => Vec::new(),
            Op::Unary(_, x) | Op::Clip { x, .. } | Op::Softmax { x, log: true, .. } => {
                vec![same(*x)?]
            }
            Op::Softmax { log: false, .. } => Vec::new(),
            Op::Binary(_, x, y) => vec![same(*x)?, same(*y)?],
            Op::BiasAdd { data, bias, axis } => {
                if self.graph.shape(*bias)?.len() != 1 {
                    return Err(unsupported(name, "the bias is not a vector"));
                }
                vec![same(*data)?, (*bias, vec![map[*axis].clone()])]
            }
            Op::Slice { x, begin, step } => {
                let m = map
                    .iter()
                    .zip(begin.iter().zip(step))
                    .map(|(a, (&b, &s))| a.scaled(s).shifted(b))
                    .collect();
                vec![(*x, m)]
            }
            Op::Transpose(x, axes) => {
                let mut m = vec![Affine::constant(0, self.rank()); axes.len()];
                for (i, &a) in axes.iter().enumerate() {
                    m[a] = map[i].clone();
                }
                vec![(*x, m)]
            }
            Op::Reshape(x) => match reshape(map, shape, self.graph.shape(*x)?, &self.dims, name) {
                Ok(m) => vec![(*x, m)],
                // While cutting, stop here: a smaller box may make the map affine.
                Err(ReshapeError::Unsupported(_)) if within.is_none() => Vec::new(),
                Err(ReshapeError::Unsupported(e)) => return Err(e),
                Err(ReshapeError::Refine { dim, factors }) => {
                    self.refine.replace(Some((dim, factors)));
                    return Err(unsupported(name, "it needs a finer iteration space"));
                }
            },
            Op::Concat {
                parts,
                axis,
                starts,
            } => {
                let part = |p: usize| {
                    let mut m = map.clone();
                    m[*axis] = map[*axis].shifted(-starts[p]);
                    (parts[p], m)
                };
                let zeros = vec![0; self.rank()];
                let (min, max) = map[*axis].range(
                    within.map_or(&zeros, |w| w.0),
                    within.map_or(&self.dims, |w| w.1),
                );
                let total = starts[parts.len()];
                if within.is_none() && min < total && max >= 0 {
                    // While cutting: every part this space reaches.
                    return Ok((0..parts.len())
                        .filter(|&p| starts[p] <= max && min < starts[p + 1])
                        .map(part)
                        .collect());
                }
                let p = (0..parts.len())
                    .find(|&p| starts[p] <= min && max < starts[p + 1])
                    .ok_or_else(|| unsupported(name, "a box reads several parts"));
                match (p, within) {
                    (Ok(p), _) => vec![part(p)],
                    // While cutting, a constant index past every part is in a pad around.
                    (Err(_), None) => Vec::new(),
                    (Err(e), Some(_)) => return Err(e),
                }
            }
            Op::Pad {
                data,
                value,
                before,
            } => {
                let extents = self.graph.shape(*data)?;
                let inner: Map = map
                    .iter()
                    .zip(before)
                    .map(|(a, &b)| a.shifted(-b))
                    .collect();
                let Some((lo, hi)) = within else {
                    // While cutting: the data unless a constant index is in the padding.
                    let zeros = vec![0; self.rank()];
                    let padding = inner.iter().zip(extents).any(|(a, &e)| {
                        let (min, max) = a.range(&zeros, &self.dims);
                        max < 0 || min >= e as i64
                    });
                    return Ok(if padding {
                        vec![(*value, Vec::new())]
                    } else {
                        vec![(*data, inner), (*value, Vec::new())]
                    });
                };
                let mut inside = true;
                for (a, &e) in inner.iter().zip(extents) {
                    let (min, max) = a.range(lo, hi);
                    if max < 0 || min >= e as i64 {
                        return Ok(vec![(*value, Vec::new())]);
                    }
                    inside &= min >= 0 && max < e as i64;
                }
                if !inside {
                    return Err(unsupported(name, "a box reads both data and padding"));
                }
                vec![(*data, inner)]
            }
        })
    }

    /// The node of `id` read with `map` over this whole space (a box of the output, inside
    /// which every piecewise choice is fixed), pushed into `piece` (with its operands) unless
    /// `piece` has it.
    fn lower(&self, id: ExprId, map: Map, piece: &mut PieceBuilder) -> Result<usize, Unsupported> {
        if let Some(&n) = piece.memo.get(&(id, map.clone())) {
            return Ok(n);
        }
        let zeros = vec![0; self.rank()];
        let operands = self.operands(id, &map, Some((&zeros, &self.dims)))?;
        let mut args = Vec::with_capacity(operands.len());
        for (x, m) in operands {
            args.push(self.lower(x, m, piece)?);
        }
        let node = match *self.graph.op(id)? {
            Op::Param(input) => {
                let (offset, strides) = self.strided(self.graph.shape(id)?, &map)?;
                let n = piece.load(Load {
                    input,
                    offset,
                    strides,
                });
                piece.memo.insert((id, map), n);
                return Ok(n);
            }
            Op::Acc | Op::Reduced(None) => Some(Node::Acc),
            Op::Reduced(Some(divisor)) => {
                piece.nodes.push(Node::Acc);
                piece.nodes.push(Node::Const(divisor));
                let n = piece.nodes.len();
                Some(Node::Binary(Binary::Divide, n - 2, n - 1))
            }
            Op::Softmax {
                axis, log, scratch, ..
            } => {
                // The line's maximum and sum, where the folding loops left them; the output
                // holds the exponentials.
                let shape = self.graph.shape(id)?.to_vec();
                let sum = self.line_load(&shape, axis, &map, scratch + 1, piece)?;
                if log {
                    let max = self.line_load(&shape, axis, &map, scratch, piece)?;
                    piece
                        .nodes
                        .push(Node::Binary(Binary::Subtract, args[0], max));
                    piece.nodes.push(Node::Unary(Unary::Log, sum));
                    let n = piece.nodes.len();
                    Some(Node::Binary(Binary::Subtract, n - 2, n - 1))
                } else {
                    piece.nodes.push(Node::Acc);
                    Some(Node::Binary(Binary::Divide, piece.nodes.len() - 1, sum))
                }
            }
            Op::Unary(u, _) => Some(Node::Unary(u, args[0])),
            Op::Binary(b, ..) => Some(Node::Binary(b, args[0], args[1])),
            Op::BiasAdd { .. } => Some(Node::Binary(Binary::Add, args[0], args[1])),
            Op::Clip { lo, hi, .. } => Some(Node::Clip { x: args[0], lo, hi }),
            // Injective ops only move loads.
            Op::Transpose(..)
            | Op::Slice { .. }
            | Op::Reshape(_)
            | Op::Concat { .. }
            | Op::Pad { .. } => None,
        };
        let n = match node {
            Some(node) => {
                piece.nodes.push(node);
                piece.nodes.len() - 1
            }
            None => args[0],
        };
        piece.memo.insert((id, map), n);
        Ok(n)
    }

    /// The node reading, for a value of shape `shape` read with `map`, its line's entry of
    /// scratch buffer `input` (one entry per line along `axis`).
    fn line_load(
        &self,
        shape: &[usize],
        axis: usize,
        map: &Map,
        input: usize,
        piece: &mut PieceBuilder,
    ) -> Result<usize, Unsupported> {
        let mut lines = shape.to_vec();
        lines[axis] = 1;
        let mut at = map.clone();
        at[axis] = Affine::constant(0, self.rank());
        let (offset, strides) = self.strided(&lines, &at)?;
        Ok(piece.load(Load {
            input,
            offset,
            strides,
        }))
    }

    /// The element of a row-major buffer of shape `shape` read with `map` at this space's
    /// first position, and its stride along each dimension of the space; an error when some
    /// position would read before the buffer's start.
    fn strided(&self, shape: &[usize], map: &Map) -> Result<(usize, Vec<i64>), Unsupported> {
        let mut offset = 0i64;
        let mut strides = vec![0i64; self.rank()];
        let mut run = 1i64;
        for (a, &extent) in map.iter().zip(shape).rev() {
            offset += run * a.off;
            for (s, &c) in strides.iter_mut().zip(&a.coef) {
                *s += run * c;
            }
            run *= extent as i64;
        }
        let lowest = strides
            .iter()
            .zip(&self.dims)
            .map(|(&s, &e)| s.min(0) * (e as i64 - 1))
            .sum::<i64>();
        match usize::try_from(offset) {
            Ok(first) if offset + lowest >= 0 => Ok((first, strides)),
            _ => Err(unsupported(
                "the function",
                "an index map reads before the start of a buffer",
            )),
        }
    }
}

/// A piece under construction.
#[derive(Default)]
struct PieceBuilder {
    loads: Vec<Load>,
    nodes: Vec<Node>,
    memo: HashMap<(ExprId, Map), usize>,
}

impl PieceBuilder {
    /// The node reading `load` (one load node per distinct load).
    fn load(&mut self, load: Load) -> usize {
        let k = match self.loads.iter().position(|l| *l == load) {
            Some(k) => k,
            None => {
                self.loads.push(load);
                self.loads.len() - 1
            }
        };
        let node = Node::Load(k);
        match self.nodes.iter().position(|n| *n == node) {
            Some(n) => n,
            None => {
                self.nodes.push(node);
                self.nodes.len() - 1
            }
        }
    }
}

/// Row-major strides of `shape`.
fn row_major(shape: &[usize]) -> Vec<usize> {
    let mut strides = vec![0; shape.len()];
    let mut run = 1;
    for (s, &e) in strides.iter_mut().zip(shape).rev() {
        *s = run;
        run *= e;
    }
    strides
}

impl Kernel {
    /// The kernel of a fused function (typed; parameters are its inputs, in order).
    pub fn from_function(f: &Function) -> Result<Kernel, Unsupported> {
        let (graph, anchor, reduce) = Graph::of(f)?;
        let out_shape = graph.shape(f.body)?.to_vec();
        let len: usize = out_shape.iter().product();
        let window = match &reduce {
            Some(op) if len > 0 => match &op.window {
                Some(w) => Some(window_loops(&graph, op, w, &out_shape)?),
                None => None,
            },
            _ => None,
        };
        let reduction = match &reduce {
            Some(op) if len > 0 && op.softmax.is_none() && op.window.is_none() => {
                Some(folding_loop(&graph, op, &out_shape, None)?)
            }
            _ => None,
        };
        let softmax = match &reduce {
            Some(
                op @ ReduceOp {
                    softmax: Some(_), ..
                },
            ) if len > 0 => Some(softmax_loops(&graph, op, f.params.len())?),
            _ => None,
        };
        if matches!(graph.op(f.body)?, Op::Param(_) | Op::Acc) {
            return Err(unsupported(
                "the function",
                "the result must be computed by the group",
            ));
        }
        let input_lens = f
            .params
            .iter()
            .map(|&p| graph.shape(p).map(|s| s.iter().product()))
            .collect::<Result<_, _>>()?;
        let mut pieces = Vec::new();
        // A sum, product, maximum or minimum is its own result: no epilogue.
        let folded_only = matches!(graph.op(f.body)?, Op::Reduced(None));
        if len > 0 && !folded_only {
            let rank = out_shape.len();
            let root = Affine::identity(rank);
            box_pieces(
                &graph,
                f.body,
                &root,
                &vec![0; rank],
                &out_shape,
                &mut pieces,
            )?;
            if anchor.is_some() && pieces.len() != 1 {
                return Err(unsupported(
                    "the function",
                    "an anchored group with a piecewise op",
                ));
            }
        }
        Ok(Kernel {
            pieces,
            input_lens,
            len,
            anchor,
            reduction,
            softmax,
            window,
        })
    }

    /// The output positions one call of the kernel must start and end at (multiples of it,
    /// or the end): 1, a reduction's accumulator row, or a softmax's lines of one outer
    /// position.
    pub fn grain(&self) -> usize {
        match (&self.reduction, &self.softmax, &self.window) {
            (Some(r), _, _) => r.row.max(1),
            (_, Some(s), _) => (s.max.row * s.max.count).max(1),
            (_, _, Some(w)) => w.plane.max(1),
            _ => 1,
        }
    }

    /// Loop positions per output element, for sizing parallel tasks: 1, the elements a
    /// reduction folds into each, or a softmax's three passes.
    pub fn work(&self) -> usize {
        match (&self.reduction, &self.softmax, &self.window) {
            (Some(r), _, _) => r.count,
            (_, Some(_), _) => 3,
            (_, _, Some(w)) => w.taps,
            _ => 1,
        }
    }

    /// The `float32` scratch buffers the runtime passes after the inputs, by element count: a
    /// softmax's maxima and sums, one per line.
    pub fn scratch(&self) -> Vec<usize> {
        match &self.softmax {
            Some(s) => vec![self.len / s.max.count; 2],
            None => Vec::new(),
        }
    }
}

/// The two folding loops of a softmax (see [`Softmax`]) over its line axis, into scratch
/// buffers `inputs` (maxima) and `inputs + 1` (sums).
fn softmax_loops(graph: &Graph, op: &ReduceOp, inputs: usize) -> Result<Softmax, Unsupported> {
    let mut lines = graph.shape(op.input)?.to_vec();
    for &a in &op.axes {
        lines[a] = 1;
    }
    let max = ReduceOp {
        fold: Fold::MaxNum,
        init: f32::NEG_INFINITY,
        ..op.clone()
    };
    let sum = ReduceOp {
        fold: Fold::Sum,
        init: 0.0,
        ..op.clone()
    };
    let shape = graph.shape(op.input)?.to_vec();
    let axis = op.axes[0];
    let rank = shape.len();
    let mut space = Space::new(graph, shape.clone());
    let exp = space.refining(|s| {
        let map = s.box_map(&Affine::identity(rank), &vec![0; rank], &shape)?;
        let mut b = PieceBuilder::default();
        let x = s.lower(op.input, map.clone(), &mut b)?;
        let max = s.line_load(&shape, axis, &map, inputs, &mut b)?;
        b.nodes.push(Node::Binary(Binary::Subtract, x, max));
        b.nodes.push(Node::Unary(Unary::Exp, b.nodes.len() - 1));
        let (out_offset, out_strides) = s.strided(&shape, &map)?;
        Ok(Piece::collapsed(
            &s.dims,
            out_offset,
            &out_strides,
            b.loads,
            b.nodes,
        ))
    })?;
    Ok(Softmax {
        max: folding_loop(graph, &max, &lines, None)?,
        exp,
        sum: folding_loop(graph, &sum, &lines, Some(inputs + 2))?,
    })
}

/// The folding loop of reduction `op` (see [`crate::reduction`]) whose output has shape
/// `out_shape`: the reduction's input in loop order is the iteration space, its producers are
/// lowered over it, and the output is written through the map that drops (or pins to 0, with
/// `keepdims`) the reduced axes.
///
/// With `buffer` (a softmax's sum), the value folded is read from input `buffer` (the
/// softmax's output, holding the exponentials) instead of computed.
fn folding_loop(
    graph: &Graph,
    op: &ReduceOp,
    out_shape: &[usize],
    buffer: Option<usize>,
) -> Result<Reduction, Unsupported> {
    let shape = graph.shape(op.input)?.to_vec();
    let rank = shape.len();
    let (order, row) = op.loop_order(&shape);
    let dims: Vec<usize> = order.iter().map(|&a| shape[a]).collect();
    let mut position = vec![0; rank];
    for (p, &a) in order.iter().enumerate() {
        position[a] = p;
    }
    let mut space = Space::new(graph, dims.clone());
    let piece = space.refining(|s| {
        let ordered = s.box_map(&Affine::identity(rank), &vec![0; rank], &dims)?;
        let input: Map = (0..rank).map(|a| ordered[position[a]].clone()).collect();
        let output: Map = (0..rank)
            .filter_map(|a| match (op.axes.contains(&a), op.keepdims) {
                (false, _) => Some(ordered[position[a]].clone()),
                (true, true) => Some(Affine::constant(0, s.rank())),
                (true, false) => None,
            })
            .collect();
        let mut b = PieceBuilder::default();
        let value = match buffer {
            Some(k) => {
                let (offset, strides) = s.strided(&shape, &input)?;
                b.load(Load {
                    input: k,
                    offset,
                    strides,
                })
            }
            None => s.lower(op.input, input, &mut b)?,
        };
        s.finished_piece(b, value, out_shape, &output)
    })?;
    Ok(Reduction {
        fold: op.fold,
        init: op.init,
        piece,
        count: op.axes.iter().map(|&a| shape[a]).product(),
        row,
    })
}

/// The folding loops of windowed pooling `op` with window `w` (see [`WindowFold`]) whose
/// output has shape `out_shape`: per tap, the box of the output planes it reaches, the
/// pooling's input (its producers lowered) read at the tap's input coordinates; for an
/// average, per box of outputs sharing a nonzero divisor, the division by it (a divisor of 0
/// leaves the sum of no taps, 0, as the reference kernel returns).
fn window_loops(
    graph: &Graph,
    op: &ReduceOp,
    w: &PoolWindow,
    out_shape: &[usize],
) -> Result<WindowFold, Unsupported> {
    let shape = graph.shape(op.input)?.to_vec();
    let &[n, c, h, wd] = shape.as_slice() else {
        return Err(unsupported("the pooling", "the data is not 4-D"));
    };
    let &[_, _, oh, ow] = out_shape else {
        return Err(unsupported("the pooling", "the result is not 4-D"));
    };
    let plane = oh * ow;
    let out_strides = [(c * plane) as i64, plane as i64, ow as i64, 1];
    let (ys, xs) = (w.taps(0, h, oh), w.taps(1, wd, ow));
    let mut passes = Vec::new();
    for (ry, iy) in &ys {
        for (rx, ix) in &xs {
            if ry.is_empty() || rx.is_empty() {
                continue;
            }
            let dims = vec![n, c, ry.len(), rx.len()];
            let mut space = Space::new(graph, dims.clone());
            let piece = space.refining(|s| {
                let m = s.box_map(&Affine::identity(4), &[0; 4], &dims)?;
                let input: Map = vec![
                    m[0].clone(),
                    m[1].clone(),
                    m[2].scaled(w.strides[0] as i64).shifted(*iy as i64),
                    m[3].scaled(w.strides[1] as i64).shifted(*ix as i64),
                ];
                let output: Map = vec![
                    m[0].clone(),
                    m[1].clone(),
                    m[2].shifted(ry.start as i64),
                    m[3].shifted(rx.start as i64),
                ];
                let mut b = PieceBuilder::default();
                let value = s.lower(op.input, input, &mut b)?;
                s.finished_piece(b, value, out_shape, &output)
            })?;
            passes.push(FoldPass {
                fold: op.fold,
                piece,
                per_plane: ry.len() * rx.len(),
            });
        }
    }
    if w.count_include_pad.is_some() {
        for (dy, ry) in runs(&w.counts(0, h, oh)) {
            for (dx, rx) in runs(&w.counts(1, wd, ow)) {
                if dy * dx == 0 {
                    continue;
                }
                // The reference divides by the count converted through f64.
                let divisor = (dy * dx) as f64 as f32;
                passes.push(FoldPass {
                    fold: Fold::Div,
                    piece: Piece::collapsed(
                        &[n, c, ry.len(), rx.len()],
                        ry.start * ow + rx.start,
                        &out_strides,
                        Vec::new(),
                        vec![Node::Const(divisor)],
                    ),
                    per_plane: ry.len() * rx.len(),
                });
            }
        }
    }
    if passes.len() > MAX_PIECES {
        return Err(unsupported(
            "the pooling",
            format!("its window needs more than {MAX_PIECES} folding loops"),
        ));
    }
    Ok(WindowFold {
        init: op.init,
        plane,
        taps: w.kernel[0] * w.kernel[1],
        passes,
    })
}

/// Appends the pieces of the box at `lo` with `extents` of a space whose output map is `root`
/// to `pieces`: the box is cut where the piecewise choices of the group with output `out`
/// change (over its own space, refined as reshapes ask), and each part cut again until one
/// is left, which is lowered. A reshape whose map is not affine stops the cutting below it
/// until a smaller box (with other offsets) makes it affine.
fn box_pieces(
    graph: &Graph,
    out: ExprId,
    root: &Map,
    lo: &[usize],
    extents: &[usize],
    pieces: &mut Vec<Piece>,
) -> Result<(), Unsupported> {
    let mut space = Space::new(graph, extents.to_vec());
    let (map, boxes) = space.refining(|s| {
        let map = s.box_map(root, lo, extents)?;
        let boxes = s.boxes(out, &map)?;
        Ok((map, boxes))
    })?;
    if boxes.len() == 1 {
        pieces.push(space.refining(|s| s.piece(out, root, lo, extents))?);
    } else {
        for (blo, bhi) in boxes {
            let bext: Vec<usize> = blo.iter().zip(&bhi).map(|(l, h)| h - l).collect();
            box_pieces(graph, out, &map, &blo, &bext, pieces)?;
        }
    }
    if pieces.len() > MAX_PIECES {
        return Err(unsupported(
            "the function",
            format!("its piecewise ops cut the output into more than {MAX_PIECES} boxes"),
        ));
    }
    Ok(())
}

impl Space<'_> {
    /// The piece over this space whose built DAG `b` computes node `value`, stored (or
    /// folded) into the output of shape `out_shape` through `output`. A value read earlier
    /// (a load) is copied, so that it is the last node.
    fn finished_piece(
        &self,
        mut b: PieceBuilder,
        value: usize,
        out_shape: &[usize],
        output: &Map,
    ) -> Result<Piece, Unsupported> {
        if value + 1 != b.nodes.len() {
            b.nodes.push(Node::Unary(Unary::Copy, value));
        }
        let (out_offset, out_strides) = self.strided(out_shape, output)?;
        Ok(Piece::collapsed(
            &self.dims,
            out_offset,
            &out_strides,
            b.loads,
            b.nodes,
        ))
    }

    /// The output's map over this space, a refinement of the box at `lo` with `extents` of a
    /// space whose output map is `root`.
    fn box_map(&self, root: &Map, lo: &[usize], extents: &[usize]) -> Result<Map, Unsupported> {
        let outer: Map = self
            .merged(extents)?
            .into_iter()
            .zip(lo)
            .map(|(a, &l)| a.shifted(l as i64))
            .collect();
        Ok(root.iter().map(|a| a.compose(&outer)).collect())
    }

    /// The boxes of this space inside which every piecewise choice of the group with output
    /// `out` (read with `map`) is fixed, as far as the index maps are affine.
    fn boxes(&self, out: ExprId, map: &Map) -> Result<Vec<Region>, Unsupported> {
        let cuts = cuts(out, map.clone(), &self.dims, MAX_VISITS, |id, map| {
            Ok(Visit {
                op: self.graph.name(id).to_string(),
                operands: self.operands(id, map, None)?,
                piecewise: self.graph.piecewise(id)?,
            })
        })?;
        boxes(&self.dims, &cuts, MAX_PIECES)
    }

    /// The piece of the box at `lo` with `extents` of an outer space whose output map is
    /// `root`, over this space (a refinement of the box).
    fn piece(
        &self,
        out: ExprId,
        root: &Map,
        lo: &[usize],
        extents: &[usize],
    ) -> Result<Piece, Unsupported> {
        let map = self.box_map(root, lo, extents)?;
        let mut b = PieceBuilder::default();
        let value = self.lower(out, map.clone(), &mut b)?;
        self.finished_piece(b, value, self.graph.shape(out)?, &map)
    }
}

impl Piece {
    /// The piece over a box of `extents` with its loads' strides per output dimension,
    /// collapsed (see the module docs).
    fn collapsed(
        extents: &[usize],
        out_offset: usize,
        out_strides: &[i64],
        loads: Vec<Load>,
        nodes: Vec<Node>,
    ) -> Piece {
        let mut all: Vec<Vec<i64>> = vec![out_strides.to_vec()];
        all.extend(loads.iter().map(|l| l.strides.clone()));
        let (dims, strides) = merge_dims(extents, &all);
        let mut strides = strides.into_iter();
        let out_strides = strides.next().unwrap_or_default();
        let loads = loads
            .into_iter()
            .zip(strides)
            .map(|(l, strides)| Load { strides, ..l })
            .collect();
        Piece {
            dims,
            out_offset,
            out_strides,
            loads,
            nodes,
        }
    }
}

/// `extents` with each access's `strides` collapsed: extent-1 dimensions dropped, and
/// neighbours merged where every access steps across them as across one dimension. Never
/// empty (`[1]` with stride 0 for a single element).
pub fn merge_dims(extents: &[usize], strides: &[Vec<i64>]) -> (Vec<usize>, Vec<Vec<i64>>) {
    let mut dims: Vec<usize> = Vec::new();
    let mut out: Vec<Vec<i64>> = vec![Vec::new(); strides.len()];
    for (d, &extent) in extents.iter().enumerate() {
        if extent == 1 {
            continue;
        }
        let merges = !dims.is_empty()
            && strides
                .iter()
                .zip(&out)
                .all(|(s, o)| o[o.len() - 1] == s[d] * extent as i64);
        if merges {
            let last = dims.len() - 1;
            dims[last] *= extent;
            for (s, o) in strides.iter().zip(out.iter_mut()) {
                let last = o.len() - 1;
                o[last] = s[d];
            }
        } else {
            dims.push(extent);
            for (s, o) in strides.iter().zip(out.iter_mut()) {
                o.push(s[d]);
            }
        }
    }
    if dims.is_empty() {
        return (vec![1], vec![vec![0]; strides.len()]);
    }
    (dims, out)
}

/// The collapsed iteration space of an output of shape `out` and each input's strides over it,
/// inputs broadcast to `out` under numpy's rule (type inference checked it): [`merge_dims`]
/// over the inputs' broadcast strides.
pub fn collapse(out: &[usize], inputs: &[Vec<usize>]) -> (Vec<usize>, Vec<Vec<usize>>) {
    let rank = out.len();
    let strides: Vec<Vec<i64>> = inputs
        .iter()
        .map(|s| {
            let own = row_major(s);
            (0..rank)
                .map(|d| {
                    let pad = rank - s.len().min(rank);
                    if d < pad || s[d - pad] == 1 {
                        0
                    } else {
                        own[d - pad] as i64
                    }
                })
                .collect()
        })
        .collect();
    let (dims, strides) = merge_dims(out, &strides);
    // Row-major strides of broadcast inputs are never negative.
    let strides = strides
        .into_iter()
        .map(|s| s.into_iter().map(|v| v.unsigned_abs() as usize).collect())
        .collect();
    (dims, strides)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcast_dimensions_collapse() {
        // NCHW plus a per-channel bias: N drops (extent 1), H and W merge.
        let (dims, strides) = collapse(&[1, 8, 4, 5], &[vec![1, 8, 4, 5], vec![8, 1, 1]]);
        assert_eq!(dims, [8, 20]);
        assert_eq!(strides, [vec![20, 1], vec![1, 0]]);
        // Same shapes: one dimension.
        let (dims, strides) = collapse(&[3, 4], &[vec![3, 4], vec![3, 4]]);
        assert_eq!((dims, strides), (vec![12], vec![vec![1], vec![1]]));
        // A scalar operand and a row vector.
        let (dims, strides) = collapse(&[3, 4], &[vec![], vec![4]]);
        assert_eq!((dims, strides), (vec![3, 4], vec![vec![0, 0], vec![0, 1]]));
        // A scalar output.
        assert_eq!(collapse(&[], &[vec![]]), (vec![1], vec![vec![0]]));
    }
}
