//! A fused host function as a loop kernel: its output's iteration space with broadcast
//! dimensions collapsed, each input's strides over that space, and the expression DAG that
//! computes one output element.
//!
//! Dimension collapsing: dimensions of extent 1 drop out, and neighbouring dimensions merge
//! when every input broadcasts along both or along neither. The innermost collapsed
//! dimension then has stride 1 or 0 for every input, which the code generator's inner loop
//! relies on (contiguous or loop-invariant loads, so the loop vectorizes).
//!
//! Only `float32` is compiled, and only the ops [`Unary`], [`Binary`], `clip` and `nn.bias_add`
//! (an add whose bias input is read as `[C, 1, ..., 1]`) name; anything else is an
//! [`Unsupported`] error that sends the group back to the reference kernels.
//!
//! A group with an anchor (conv2d, dense, pooling, softmax: see HostFuse) is an [`Anchor`]
//! plus an epilogue kernel: the anchor's host kernel computes the output and the kernel
//! rewrites blocks of it in place, reading the anchor's value as [`Node::Acc`].

use byoc_core::ir::{Attrs, DType, Expr, ExprId, Function, FunctionBuilder, Module, Type};
use byoc_core::op::HostKernel;
use byoc_core::passes::host_fuse::is_anchor;
use byoc_core::passes::infer_types;
use byoc_core::text::{parse_module, print_module};

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

fn unsupported(op: &str, reason: impl Into<String>) -> Unsupported {
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
    /// The element of input `k` at the current position.
    Input(usize),
    /// A unary op.
    Unary(Unary, usize),
    /// A binary op.
    Binary(Binary, usize, usize),
    /// The anchor's value at the current position: the output element itself, before the
    /// epilogue rewrites it.
    Acc,
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

/// A fused function ready for code generation.
#[derive(Clone, Debug, PartialEq)]
pub struct Kernel {
    /// The collapsed iteration space, outermost first (never empty; `[1]` for a scalar).
    pub dims: Vec<usize>,
    /// For each input, its element stride along each of `dims` (0 where it broadcasts).
    pub strides: Vec<Vec<usize>>,
    /// Element count of each input.
    pub input_lens: Vec<usize>,
    /// The DAG, in evaluation order; the last node is the output.
    pub nodes: Vec<Node>,
    /// Output element count.
    pub len: usize,
    /// The op whose output this kernel rewrites as its epilogue, if any.
    pub anchor: Option<Anchor>,
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
        op.host_kernel(&call.attrs, &inputs, &[tensor(main.body)?])
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

/// The `float32` shape of `id`, or why not.
fn f32_shape(f: &Function, id: ExprId, op: &str) -> Result<Vec<usize>, Unsupported> {
    match f.ty(id) {
        Some(Type::Tensor(t)) if t.dtype == DType::Float32 => Ok(t.shape.clone()),
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

impl Kernel {
    /// The kernel of a fused function (typed; parameters are its inputs, in order).
    pub fn from_function(f: &Function) -> Result<Kernel, Unsupported> {
        let out_shape = f32_shape(f, f.body, "the result")?;
        let mut index: std::collections::HashMap<ExprId, usize> = Default::default();
        let mut nodes = Vec::new();
        let mut shapes = Vec::new();
        // Inputs read as a bias (nn.bias_add): their shape as broadcast, and the bias nodes.
        let mut bias_shapes: Vec<Option<Vec<usize>>> = vec![None; f.params.len()];
        let mut bias_sites = Vec::new();
        let mut anchor = None;
        for (k, &p) in f.params.iter().enumerate() {
            shapes.push(f32_shape(f, p, "an input")?);
            index.insert(p, nodes.len());
            nodes.push(Node::Input(k));
        }
        for id in f.live_ids() {
            if index.contains_key(&id) {
                continue;
            }
            let Expr::Call(call) = f.expr(id) else {
                return Err(unsupported(
                    "the function",
                    format!("{id} is not an op call"),
                ));
            };
            let Some(op) = call.op() else {
                return Err(unsupported(
                    "the function",
                    format!("{id} is not an op call"),
                ));
            };
            let name = op.name();
            let shape = f32_shape(f, id, name)?;
            if is_anchor(f, id) {
                if anchor.is_some() {
                    return Err(unsupported(name, "a second anchor in one group"));
                }
                if shape != out_shape {
                    return Err(unsupported(name, "the anchor's shape is not the output's"));
                }
                anchor = Some(Anchor::of(f, id, name)?);
                index.insert(id, nodes.len());
                nodes.push(Node::Acc);
                continue;
            }
            let arg = |i: usize| -> Result<usize, Unsupported> {
                call.args
                    .get(i)
                    .and_then(|a| index.get(a).copied())
                    .ok_or_else(|| unsupported(name, format!("operand {i} is missing")))
            };
            let node = if name == "nn.bias_add" {
                // data + bias along `axis`: the bias input is read as [C, 1, ..., 1].
                let rank = f32_shape(f, call.args[0], name)?.len() as i64;
                let axis = call
                    .attrs
                    .get_int("axis")
                    .map(|a| if a < 0 { a + rank } else { a })
                    .filter(|a| (0..rank).contains(a))
                    .ok_or_else(|| unsupported(name, "axis out of range"))?;
                let bias = arg(1)?;
                if bias >= f.params.len() {
                    return Err(unsupported(name, "the bias is computed inside the group"));
                }
                let channels = shapes[bias].clone();
                let trailing = (rank - axis - 1) as usize;
                let shape: Vec<usize> = channels
                    .into_iter()
                    .chain(std::iter::repeat_n(1, trailing))
                    .collect();
                if bias_shapes[bias].as_ref().is_some_and(|s| *s != shape) {
                    return Err(unsupported(name, "one bias input used along two axes"));
                }
                bias_shapes[bias] = Some(shape);
                bias_sites.push(nodes.len());
                Node::Binary(Binary::Add, arg(0)?, bias)
            } else if let Some(u) = unary(name) {
                Node::Unary(u, arg(0)?)
            } else if let Some(b) = binary(name) {
                Node::Binary(b, arg(0)?, arg(1)?)
            } else if name == "clip" {
                let bound = |key: &str| {
                    call.attrs
                        .get(key)
                        .and_then(|v| v.as_f64())
                        .ok_or_else(|| unsupported(name, format!("{key} is not a number")))
                };
                Node::Clip {
                    x: arg(0)?,
                    lo: bound("a_min")? as f32,
                    hi: bound("a_max")? as f32,
                }
            } else {
                return Err(unsupported(
                    name,
                    "not supported by the host code generator",
                ));
            };
            index.insert(id, nodes.len());
            nodes.push(node);
        }
        let Some(&out) = index.get(&f.body) else {
            return Err(unsupported("the function", "the result is not an op call"));
        };
        if out != nodes.len() - 1 || out < f.params.len() || nodes[out] == Node::Acc {
            return Err(unsupported(
                "the function",
                "the result must be the function's last op call",
            ));
        }
        let input_lens = shapes.iter().map(|s| s.iter().product()).collect();
        for (k, shape) in bias_shapes.into_iter().enumerate() {
            let Some(shape) = shape else { continue };
            let plain_use = nodes.iter().enumerate().any(|(i, n)| match *n {
                Node::Unary(_, x) | Node::Clip { x, .. } => x == k,
                Node::Binary(_, x, y) => x == k || (y == k && !bias_sites.contains(&i)),
                Node::Input(_) | Node::Acc => false,
            });
            if plain_use {
                return Err(unsupported(
                    "nn.bias_add",
                    "the bias input is also used as a plain operand",
                ));
            }
            shapes[k] = shape;
        }
        // Inputs only the anchor reads (its data and weights) are not read per element: they
        // take no part in the iteration space.
        let used = used_inputs(&nodes, f.params.len());
        for (shape, used) in shapes.iter_mut().zip(&used) {
            if !used {
                shape.clear();
            }
        }
        let (dims, strides) = collapse(&out_shape, &shapes);
        Ok(Kernel {
            dims,
            strides,
            input_lens,
            nodes,
            len: out_shape.iter().product(),
            anchor,
        })
    }
}

/// For each of the `n` inputs, whether a node of `nodes` reads it.
pub fn used_inputs(nodes: &[Node], n: usize) -> Vec<bool> {
    let mut used = vec![false; n];
    let mut mark = |x: usize| {
        if let Some(Node::Input(k)) = nodes.get(x) {
            used[*k] = true;
        }
    };
    for node in nodes {
        match *node {
            Node::Unary(_, x) | Node::Clip { x, .. } => mark(x),
            Node::Binary(_, x, y) => {
                mark(x);
                mark(y);
            }
            Node::Input(_) | Node::Acc => {}
        }
    }
    used
}

/// The collapsed iteration space of an output of shape `out` and each input's strides over it
/// (see the module docs). Inputs broadcast to `out` under numpy's rule (type inference checked
/// it).
pub fn collapse(out: &[usize], inputs: &[Vec<usize>]) -> (Vec<usize>, Vec<Vec<usize>>) {
    let rank = out.len();
    // For each kept dimension: its extent and, per input, whether the input broadcasts there.
    let mut kept: Vec<(usize, Vec<bool>)> = Vec::new();
    for (d, &extent) in out.iter().enumerate() {
        if extent == 1 {
            continue;
        }
        let bcast: Vec<bool> = inputs
            .iter()
            .map(|s| {
                let pad = rank - s.len().min(rank);
                d < pad || s[d - pad] == 1
            })
            .collect();
        match kept.last_mut() {
            Some((e, b)) if *b == bcast => *e *= extent,
            _ => kept.push((extent, bcast)),
        }
    }
    if kept.is_empty() {
        return (vec![1], vec![vec![0]; inputs.len()]);
    }
    let dims: Vec<usize> = kept.iter().map(|(e, _)| *e).collect();
    let strides = (0..inputs.len())
        .map(|k| {
            let mut run = 1usize;
            let mut s = vec![0; kept.len()];
            for (d, (extent, bcast)) in kept.iter().enumerate().rev() {
                if !bcast[k] {
                    s[d] = run;
                    run *= extent;
                }
            }
            s
        })
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
