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

use byoc_core::ir::{DType, Expr, ExprId, Function, Type};

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
            f32_shape(f, id, name)?;
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
        if out != nodes.len() - 1 || out < f.params.len() {
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
                Node::Input(_) => false,
            });
            if plain_use {
                return Err(unsupported(
                    "nn.bias_add",
                    "the bias input is also used as a plain operand",
                ));
            }
            shapes[k] = shape;
        }
        let (dims, strides) = collapse(&out_shape, &shapes);
        Ok(Kernel {
            dims,
            strides,
            input_lens,
            nodes,
            len: out_shape.iter().product(),
        })
    }
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
