//! A compiled tinyacc partition: steps over numbered float32 buffers.
//!
//! Buffers `0..inputs` are the partition's inputs, then its constants, then one buffer per
//! step result. Compiling walks the partition's body in arena order (operands first) and
//! emits one step per op call or fused composite; anything else is a compile error naming
//! the node.

use std::collections::HashMap;

use byoc_core::ir::{Call, Callee, DType, Expr, ExprId, Function, Type};
use byoc_core::sdk::{CompiledModule, PartitionedFunction, PluginError, TensorMut, TensorRef};
use serde::{Deserialize, Serialize};

use crate::kernels;

/// The serialized format's name and version.
const FORMAT: &str = "tinyacc-program-1";

/// One accelerator instruction; operands and results are buffer numbers.
#[allow(
    missing_docs,
    reason = "fields are buffer numbers and clip bounds, named by the variant docs"
)]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Step {
    /// `out = a + b`.
    Add { a: usize, b: usize, out: usize },
    /// `out = a * b`.
    Multiply { a: usize, b: usize, out: usize },
    /// `out = max(x, 0)`.
    Relu { x: usize, out: usize },
    /// `out = clip(x, lo, hi)`.
    Clip {
        x: usize,
        lo: f32,
        hi: f32,
        out: usize,
    },
    /// `out = max(a + b, 0)`.
    AddRelu { a: usize, b: usize, out: usize },
}

/// A compiled partition.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Program {
    format: String,
    /// Elements of each buffer.
    lens: Vec<usize>,
    /// Number of input buffers.
    inputs: usize,
    /// Constant buffers: index and values.
    constants: Vec<(usize, Vec<f32>)>,
    /// The steps in order.
    steps: Vec<Step>,
    /// The buffers holding the outputs.
    outputs: Vec<usize>,
}

fn err(symbol: &str, at: ExprId, what: impl std::fmt::Display) -> PluginError {
    PluginError::new(format!("tinyacc: @{symbol} {at}: {what}"))
}

/// Elements of a float32 tensor type.
fn f32_len(ty: Option<&Type>) -> Result<usize, String> {
    match ty {
        Some(Type::Tensor(t)) if t.dtype == DType::Float32 => Ok(t.num_elements()),
        Some(other) => Err(format!("type {other} is not a float32 tensor")),
        None => Err("untyped value".to_string()),
    }
}

impl Program {
    /// Compiles a partition.
    pub fn compile(function: &PartitionedFunction) -> Result<Program, PluginError> {
        let f = &function.function;
        let sym = function.symbol.as_str();
        let mut p = Program {
            format: FORMAT.to_string(),
            lens: Vec::new(),
            inputs: f.params.len(),
            constants: Vec::new(),
            steps: Vec::new(),
            outputs: Vec::new(),
        };
        let mut buf: HashMap<ExprId, usize> = HashMap::new();
        for &param in &f.params {
            let len = f32_len(f.ty(param)).map_err(|m| err(sym, param, m))?;
            buf.insert(param, p.lens.len());
            p.lens.push(len);
        }
        for id in top_level(f) {
            if buf.contains_key(&id) {
                continue;
            }
            match f.expr(id) {
                Expr::Constant(t) => {
                    let values = t.as_slice::<f32>().map_err(|e| err(sym, id, e))?;
                    let b = p.new_buf(values.len());
                    p.constants.push((b, values.to_vec()));
                    buf.insert(id, b);
                }
                Expr::Call(call) => {
                    let len = f32_len(f.ty(id)).map_err(|m| err(sym, id, m))?;
                    let args = call
                        .args
                        .iter()
                        .map(|a| {
                            buf.get(a)
                                .copied()
                                .ok_or_else(|| err(sym, *a, "operand is not a tensor value"))
                        })
                        .collect::<Result<Vec<_>, _>>()?;
                    let out = p.new_buf(len);
                    let step = step_for(f, sym, id, call, &args, &p.lens, out)?;
                    p.steps.push(step);
                    buf.insert(id, out);
                }
                // Composite bodies are fused into one step; their nodes need no buffers. A
                // tuple body only lists the outputs (read below).
                Expr::Function(_) | Expr::Var(_) => {}
                Expr::Tuple(_) if id == f.body => {}
                other => return Err(err(sym, id, format!("unsupported expression {other:?}"))),
            }
        }
        let outputs: Vec<ExprId> = match f.expr(f.body) {
            Expr::Tuple(fields) => fields.clone(),
            _ => vec![f.body],
        };
        for o in outputs {
            let b = buf
                .get(&o)
                .copied()
                .ok_or_else(|| err(sym, o, "output is not a tensor value"))?;
            p.outputs.push(b);
        }
        Ok(p)
    }

    fn new_buf(&mut self, len: usize) -> usize {
        self.lens.push(len);
        self.lens.len() - 1
    }

    /// Reads a serialized program.
    pub fn from_bytes(bytes: &[u8]) -> Result<Program, PluginError> {
        let p: Program = serde_json::from_slice(bytes)
            .map_err(|e| PluginError::new(format!("tinyacc: malformed program: {e}")))?;
        if p.format != FORMAT {
            return Err(PluginError::new(format!(
                "tinyacc: program format '{}' is not '{FORMAT}'",
                p.format
            )));
        }
        Ok(p)
    }

    /// The steps.
    pub fn steps(&self) -> &[Step] {
        &self.steps
    }
}

/// The nodes the body depends on, operands first, without the insides of function literals
/// (a composite's body is fused into the step of its call).
fn top_level(f: &Function) -> Vec<ExprId> {
    let mut seen = std::collections::HashSet::new();
    let mut stack = vec![f.body];
    while let Some(id) = stack.pop() {
        if seen.insert(id) && !matches!(f.expr(id), Expr::Function(_)) {
            stack.extend(f.expr(id).operands());
        }
    }
    let mut ids: Vec<ExprId> = seen.into_iter().collect();
    ids.sort_unstable();
    ids
}

/// The step for one call writing buffer `out`; `lens` are the buffer lengths (operands of
/// binary steps must match).
fn step_for(
    f: &Function,
    sym: &str,
    id: ExprId,
    call: &Call,
    args: &[usize],
    lens: &[usize],
    out: usize,
) -> Result<Step, PluginError> {
    let same = |a: usize, b: usize| {
        if lens[a] == lens[b] {
            Ok(())
        } else {
            Err(err(
                sym,
                id,
                "operands differ in size (tinyacc does not broadcast)",
            ))
        }
    };
    let name = match &call.callee {
        Callee::Op(op) => op.name().to_string(),
        Callee::Local(lit) => f
            .expr(*lit)
            .as_function()
            .and_then(|l| l.attrs.get_str("Composite"))
            .ok_or_else(|| {
                err(
                    sym,
                    id,
                    "call of a function that is not a tinyacc composite",
                )
            })?
            .to_string(),
        Callee::Global(g) => return Err(err(sym, id, format!("call of global @{g}"))),
    };
    Ok(match (name.as_str(), args) {
        ("add", &[a, b]) => {
            same(a, b)?;
            Step::Add { a, b, out }
        }
        ("multiply", &[a, b]) => {
            same(a, b)?;
            Step::Multiply { a, b, out }
        }
        ("tinyacc.add_relu", &[a, b]) => {
            same(a, b)?;
            Step::AddRelu { a, b, out }
        }
        ("nn.relu", &[x]) => Step::Relu { x, out },
        ("clip", &[x]) => {
            let bound = |k: &str| {
                call.attrs
                    .get(k)
                    .and_then(|v| v.as_f64())
                    .map(|v| v as f32)
                    .ok_or_else(|| err(sym, id, format!("clip without a numeric {k}")))
            };
            let (lo, hi) = (bound("a_min")?, bound("a_max")?);
            Step::Clip { x, lo, hi, out }
        }
        (other, _) => return Err(err(sym, id, format!("tinyacc cannot run {other}"))),
    })
}

impl CompiledModule for Program {
    fn run(
        &self,
        inputs: &[TensorRef<'_>],
        outputs: &mut [TensorMut<'_>],
    ) -> Result<(), PluginError> {
        if inputs.len() != self.inputs || outputs.len() != self.outputs.len() {
            return Err(PluginError::new(format!(
                "tinyacc: expected {} input(s) and {} output(s), got {} and {}",
                self.inputs,
                self.outputs.len(),
                inputs.len(),
                outputs.len()
            )));
        }
        // Scratch buffers for everything past the inputs.
        let mut scratch: Vec<Vec<f32>> = self.lens[self.inputs..]
            .iter()
            .map(|&n| vec![0.0; n])
            .collect();
        for (b, values) in &self.constants {
            scratch[b - self.inputs].copy_from_slice(values);
        }
        let ins = inputs
            .iter()
            .map(|t| t.as_slice::<f32>())
            .collect::<Result<Vec<_>, _>>()?;
        for (i, (x, &n)) in ins.iter().zip(&self.lens).enumerate() {
            if x.len() != n {
                return Err(PluginError::new(format!(
                    "tinyacc: input {i} has {} elements, the program expects {n}",
                    x.len()
                )));
            }
        }
        for step in &self.steps {
            let out_buf = match step {
                Step::Add { out, .. }
                | Step::Multiply { out, .. }
                | Step::Relu { out, .. }
                | Step::Clip { out, .. }
                | Step::AddRelu { out, .. } => *out,
            };
            // Step outputs are fresh buffers after all their operands, so the operands can be
            // borrowed while the output is written.
            let (before, after) = scratch.split_at_mut(out_buf - self.inputs);
            let out = &mut after[0];
            let get = |b: usize| -> &[f32] {
                if b < self.inputs {
                    ins[b]
                } else {
                    &before[b - self.inputs]
                }
            };
            match *step {
                Step::Add { a, b, .. } => kernels::add(get(a), get(b), out),
                Step::Multiply { a, b, .. } => kernels::multiply(get(a), get(b), out),
                Step::Relu { x, .. } => kernels::relu(get(x), out),
                Step::Clip { x, lo, hi, .. } => kernels::clip(get(x), lo, hi, out),
                Step::AddRelu { a, b, .. } => kernels::add_relu(get(a), get(b), out),
            }
        }
        for (i, (o, &b)) in outputs.iter_mut().zip(&self.outputs).enumerate() {
            let src: &[f32] = if b < self.inputs {
                ins[b]
            } else {
                &scratch[b - self.inputs]
            };
            let dst = o.as_slice_mut::<f32>()?;
            if dst.len() != src.len() {
                return Err(PluginError::new(format!(
                    "tinyacc: output {i} has {} elements, the program produces {}",
                    dst.len(),
                    src.len()
                )));
            }
            dst.copy_from_slice(src);
        }
        Ok(())
    }

    fn serialize(&self) -> Result<Vec<u8>, PluginError> {
        serde_json::to_vec(self).map_err(|e| PluginError::new(e.to_string()))
    }
}
