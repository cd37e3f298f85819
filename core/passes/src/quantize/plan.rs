//! The annotate step of quantization: which calls of a float function run on integers, and
//! which float values are quantized to int8 (the quantization points).
//!
//! Integer calls (the rest stays float, with its integer operands dequantized):
//! - `nn.conv2d` over float32 NCHW data with a constant float32 OIHW weight, unless its index
//!   (every conv2d counts, in topological order) is in `skip_conv_layers`;
//! - `nn.dense` over float32 data with a constant float32 weight, when `skip_dense_layer` is off;
//! - `nn.relu` of an integer value;
//! - `nn.bias_add` / `add` of an integer value and a float32 constant that keeps its shape
//!   (a bias);
//! - `add` of two integer values of the same shape (a residual).
//!
//! The data operand of every quantized conv2d and dense is a quantization point. Pooling,
//! softmax, reshapes and everything else stay float, as TVM's realized graphs leave them.

use byoc_ir::{Call, DType, Expr, ExprId, Function, TensorType};

use super::QConfig;

/// The outcome of the annotate step over one function.
#[derive(Clone, Debug, Default)]
pub(super) struct Plan {
    /// Per source node: whether it runs in the integer domain.
    pub int: Vec<bool>,
    /// Per source node: whether it is a quantized conv2d or dense.
    pub quantized: Vec<bool>,
    /// The quantization points, in topological order, without repetition.
    pub points: Vec<ExprId>,
    /// Calls the quantizer could have taken but left in float, and why.
    pub remarks: Vec<String>,
}

impl Plan {
    pub fn is_int(&self, id: ExprId) -> bool {
        self.int.get(id.index()).copied().unwrap_or(false)
    }
}

/// The tensor type of a node, when it has one.
pub(super) fn tensor_type(f: &Function, id: ExprId) -> Option<&TensorType> {
    f.ty(id).and_then(|t| t.as_tensor())
}

fn is_f32(f: &Function, id: ExprId) -> bool {
    tensor_type(f, id).is_some_and(|t| t.dtype == DType::Float32)
}

fn is_f32_constant(f: &Function, id: ExprId) -> bool {
    matches!(f.expr(id), Expr::Constant(c) if c.dtype() == DType::Float32)
}

/// Why a conv2d or dense cannot be quantized, or `None` when it can.
fn unsupported(f: &Function, name: &str, call: &Call) -> Option<String> {
    let [data, weight] = call.args[..] else {
        return Some("it does not have two operands".into());
    };
    if !is_f32(f, data) {
        return Some("its data is not float32".into());
    }
    if !is_f32_constant(f, weight) {
        return Some("its weight is not a float32 constant".into());
    }
    let out = call.attrs.get_str("out_dtype").unwrap_or("");
    if !matches!(out, "" | "float32") {
        return Some(format!("out_dtype is {out}"));
    }
    if name == "nn.conv2d" {
        let layout = |k: &str, want: &str| call.attrs.get_str(k).is_none_or(|v| v == want);
        if !layout("data_layout", "NCHW") || !layout("kernel_layout", "OIHW") {
            return Some("its layout is not NCHW/OIHW".into());
        }
    }
    None
}

/// Annotates `f` (typed) under `config`.
pub(super) fn plan(f: &Function, config: &QConfig) -> Plan {
    let mut plan = Plan {
        int: vec![false; f.len()],
        quantized: vec![false; f.len()],
        ..Plan::default()
    };
    let mut convs = 0usize;
    for id in f.live_ids() {
        let Some((op, call)) = f.expr(id).as_op_call() else {
            continue;
        };
        let name = op.name();
        let int = match name {
            "nn.conv2d" | "nn.dense" => {
                let wanted = if name == "nn.conv2d" {
                    convs += 1;
                    !config.skip_conv_layers.contains(&(convs - 1))
                } else {
                    !config.skip_dense_layer
                };
                let why = wanted.then(|| unsupported(f, name, call)).flatten();
                if let Some(why) = &why {
                    plan.remarks
                        .push(format!("@main {id}: {name} stays float32: {why}"));
                }
                let q = wanted && why.is_none();
                if q {
                    plan.quantized[id.index()] = true;
                    if !plan.points.contains(&call.args[0]) {
                        plan.points.push(call.args[0]);
                    }
                }
                q
            }
            "nn.relu" => plan.is_int(call.args[0]),
            "nn.bias_add" => {
                plan.is_int(call.args[0]) && is_f32_constant(f, call.args[1]) && is_f32(f, id)
            }
            "add" => match call.args[..] {
                [a, b] => {
                    let same_shape = |x: ExprId| {
                        tensor_type(f, x).map(|t| &t.shape) == tensor_type(f, id).map(|t| &t.shape)
                    };
                    let bias = |x: ExprId, c: ExprId| {
                        plan.is_int(x) && is_f32_constant(f, c) && same_shape(x)
                    };
                    is_f32(f, id)
                        && ((plan.is_int(a) && plan.is_int(b) && same_shape(a) && same_shape(b))
                            || bias(a, b)
                            || bias(b, a))
                }
                _ => false,
            },
            _ => false,
        };
        plan.int[id.index()] = int;
    }
    plan
}
