//! Lowering of a typed partition function to a [`Program`]: a visitor over the function in
//! arena (topological) order that turns each op call into a kernel step or a view, inlines
//! local function literals (composites) with their parameters bound to the call's arguments,
//! and fuses producer chains.
//!
//! Fusion: a `nn.conv2d` or `nn.dense` followed by a chain of `nn.bias_add` (on the channel
//! axis) and activations (`nn.relu`, `clip`, `sigmoid`, `tanh`) becomes one step whose loop
//! nest writes each output element once, when every intermediate of the chain has exactly one
//! use. This is what a `csource.conv2d_bias_relu` composite body is; outside composites the
//! same chains fuse too unless [`super::CodegenOptions::fuse`] is off.
//!
//! Each scope (the partition body, a composite body) is lowered over the nodes reachable from
//! its result without entering nested function literals; a literal is only lowered where it is
//! called.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use byoc_sdk::ir::Tensor;
use byoc_sdk::ir::{Callee, Expr, ExprId, Function, TensorType, Type};

use super::error::CodegenError;
use super::kernel::{Epilogue, EpilogueOp, Kernel};
use super::ops::{activation, lower_op, Lowering, OpCtx};
use super::program::{Program, Source, ValueId};
use crate::support::DTYPE;

/// A lowered expression.
#[derive(Clone, Debug)]
enum Lowered {
    Tensor(ValueId),
    Tuple(Vec<ValueId>),
    /// A function literal: lowered where it is called.
    Function,
}

/// A fused producer chain, found from its last node.
struct Chain {
    /// The `nn.conv2d` or `nn.dense` call.
    producer: ExprId,
    /// The epilogue calls, producer side first.
    epilogue: Vec<ExprId>,
}

/// Lowers the typed partition `f` named `partition`.
pub(crate) fn lower(partition: &str, f: &Function, fuse: bool) -> Result<Program, CodegenError> {
    let mut lw = Lowerer {
        partition,
        f,
        fuse,
        uses: f.use_counts(),
        program: Program::default(),
        constants: HashMap::new(),
    };
    let mut env = HashMap::new();
    for (i, &p) in f.params.iter().enumerate() {
        let name = f
            .var(p)
            .map_or_else(|| p.to_string(), |v| format!("%{}", v.name));
        let ty = lw.tensor_type(p, || format!("parameter {name}"))?;
        let v = lw.program.push_value(ty.shape.clone(), Source::Input(i));
        lw.program.inputs.push(v);
        env.insert(p, Lowered::Tensor(v));
    }
    let outputs = match lw.lower_scope(f.body, env, None)? {
        Lowered::Tensor(v) => vec![v],
        Lowered::Tuple(vs) => vs,
        Lowered::Function => return Err(lw.unsupported_expr("a function-valued result")),
    };
    lw.program.outputs = outputs;
    Ok(lw.program)
}

struct Lowerer<'a> {
    partition: &'a str,
    f: &'a Function,
    fuse: bool,
    uses: Vec<u32>,
    program: Program,
    /// Constant value by tensor address, so a constant used twice is emitted once.
    constants: HashMap<*const Tensor, ValueId>,
}

impl<'a> Lowerer<'a> {
    fn unsupported_expr(&self, what: &str) -> CodegenError {
        CodegenError::UnsupportedExpr {
            partition: self.partition.to_string(),
            what: what.to_string(),
        }
    }

    /// The float32 tensor type of `id`; `what` names it in errors.
    fn tensor_type(
        &self,
        id: ExprId,
        what: impl Fn() -> String,
    ) -> Result<&'a TensorType, CodegenError> {
        let t = match self.f.ty(id) {
            Some(Type::Tensor(t)) => t,
            _ => return Err(self.unsupported_expr(&format!("{} (not a tensor)", what()))),
        };
        if t.dtype != DTYPE {
            return Err(CodegenError::UnsupportedDType {
                partition: self.partition.to_string(),
                what: what(),
                dtype: t.dtype,
            });
        }
        Ok(t)
    }

    /// Nodes reachable from `root` without entering function literals, in arena order.
    fn scope_nodes(&self, root: ExprId) -> Vec<ExprId> {
        let mut seen = BTreeSet::new();
        let mut stack = vec![root];
        while let Some(id) = stack.pop() {
            if !seen.insert(id) {
                continue;
            }
            if !matches!(self.f.expr(id), Expr::Function(_)) {
                stack.extend(self.f.expr(id).operands());
            }
        }
        seen.into_iter().collect()
    }

    /// Lowers the scope whose result is `root`; `env` binds its parameters; `composite` is the
    /// composite name when the scope is a composite body.
    fn lower_scope(
        &mut self,
        root: ExprId,
        mut env: HashMap<ExprId, Lowered>,
        composite: Option<&str>,
    ) -> Result<Lowered, CodegenError> {
        let nodes = self.scope_nodes(root);
        let mut chains = HashMap::new();
        let mut fused = BTreeSet::new();
        if self.fuse {
            for &id in nodes.iter().rev() {
                if fused.contains(&id) {
                    continue;
                }
                if let Some(chain) = self.match_chain(id) {
                    fused.insert(chain.producer);
                    fused.extend(chain.epilogue[..chain.epilogue.len() - 1].iter().copied());
                    chains.insert(id, chain);
                }
            }
        }
        for id in nodes {
            if env.contains_key(&id) || fused.contains(&id) {
                continue;
            }
            let lowered = match chains.remove(&id) {
                Some(chain) => self.lower_chain(&chain, &env, composite)?,
                None => self.lower_node(id, &env, composite)?,
            };
            env.insert(id, lowered);
        }
        env.remove(&root)
            .ok_or_else(|| self.unsupported_expr("a scope without a result"))
    }

    /// The chain ending at `last`, if `last` ends a fusable producer chain of at least one
    /// epilogue op.
    fn match_chain(&self, last: ExprId) -> Option<Chain> {
        let mut epilogue = Vec::new();
        let mut cur = last;
        loop {
            let (op, call) = self.f.expr(cur).as_op_call()?;
            if cur != last && self.uses[cur.index()] != 1 {
                return None;
            }
            match op.name() {
                "nn.conv2d" | "nn.dense" => {
                    if epilogue.is_empty() {
                        return None;
                    }
                    let rank = self.f.ty(cur)?.as_tensor()?.rank();
                    let channel = if op.name() == "nn.conv2d" {
                        1
                    } else {
                        rank - 1
                    };
                    // Every bias must run along the producer's output channel.
                    for &e in &epilogue {
                        let (_, c) = self.f.expr(e).as_op_call()?;
                        if c.is_op("nn.bias_add") {
                            let axis = c.attrs.get_int("axis")?;
                            let axis = if axis < 0 { axis + rank as i64 } else { axis };
                            if axis != channel as i64 {
                                return None;
                            }
                        }
                    }
                    epilogue.reverse();
                    return Some(Chain {
                        producer: cur,
                        epilogue,
                    });
                }
                "nn.bias_add" | "nn.relu" | "clip" | "sigmoid" | "tanh" => {
                    epilogue.push(cur);
                    cur = *call.args.first()?;
                }
                _ => return None,
            }
        }
    }

    /// The op context of the op call at `id`, with every tensor checked to be float32.
    fn op_ctx(&self, id: ExprId) -> Result<OpCtx<'a>, CodegenError> {
        let f = self.f;
        let (op, call) = f
            .expr(id)
            .as_op_call()
            .ok_or_else(|| self.unsupported_expr(&format!("{id} (not an op call)")))?;
        let name = op.name();
        let args = call
            .args
            .iter()
            .enumerate()
            .map(|(i, &a)| self.tensor_type(a, || format!("{name} argument {i}")))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(OpCtx {
            partition: self.partition,
            op: name,
            attrs: &call.attrs,
            args,
            out: self.tensor_type(id, || format!("{name} result"))?,
        })
    }

    /// The tensor value of an already lowered operand.
    fn operand(&self, env: &HashMap<ExprId, Lowered>, id: ExprId) -> Result<ValueId, CodegenError> {
        match env.get(&id) {
            Some(Lowered::Tensor(v)) => Ok(*v),
            Some(Lowered::Tuple(_)) => Err(self.unsupported_expr("a tuple operand of an op")),
            _ => Err(self.unsupported_expr(&format!("operand {id}"))),
        }
    }

    fn label(&self, id: ExprId, ops: &[&str], composite: Option<&str>) -> String {
        let mut label = format!("{id} = {}", ops.join(" + "));
        if let Some(c) = composite {
            label.push_str(&format!(" [{c}]"));
        }
        label
    }

    fn lower_chain(
        &mut self,
        chain: &Chain,
        env: &HashMap<ExprId, Lowered>,
        composite: Option<&str>,
    ) -> Result<Lowered, CodegenError> {
        let producer = self.op_ctx(chain.producer)?;
        let (kernel, mut args) = match lower_op(&producer)? {
            Lowering::Kernel(k) => {
                let call = self.f.expr(chain.producer).as_call();
                let args = call.map(|c| c.args.clone()).unwrap_or_default();
                (k, args)
            }
            Lowering::View => return Err(self.unsupported_expr("a view as a fused producer")),
        };
        let mut ops = vec![producer.op];
        let mut epi = Vec::new();
        for &e in &chain.epilogue {
            let cx = self.op_ctx(e)?;
            ops.push(cx.op);
            if cx.op == "nn.bias_add" {
                let bias = self
                    .f
                    .expr(e)
                    .as_call()
                    .and_then(|c| c.args.get(1).copied())
                    .ok_or_else(|| self.unsupported_expr("nn.bias_add without a bias"))?;
                epi.push(EpilogueOp::Bias(args.len()));
                args.push(bias);
            } else {
                epi.push(EpilogueOp::Act(activation(&cx)?));
            }
        }
        let kernel = match kernel {
            Kernel::Conv2d(g, _) => Kernel::Conv2d(g, Epilogue(epi)),
            Kernel::Dense { m, k, n, .. } => Kernel::Dense {
                m,
                k,
                n,
                epilogue: Epilogue(epi),
            },
            _ => return Err(self.unsupported_expr("a fused producer other than conv2d/dense")),
        };
        let args = args
            .iter()
            .map(|&a| self.operand(env, a))
            .collect::<Result<Vec<_>, _>>()?;
        let last = *chain.epilogue.last().unwrap_or(&chain.producer);
        let shape = self
            .tensor_type(last, || "fused result".to_string())?
            .shape
            .clone();
        let label = self.label(last, &ops, composite);
        Ok(Lowered::Tensor(
            self.program.push_step(kernel, args, shape, label),
        ))
    }

    fn constant(&mut self, id: ExprId, t: &Arc<Tensor>) -> Result<ValueId, CodegenError> {
        if t.dtype() != DTYPE {
            return Err(CodegenError::UnsupportedDType {
                partition: self.partition.to_string(),
                what: format!("constant {id}"),
                dtype: t.dtype(),
            });
        }
        let key = Arc::as_ptr(t);
        if let Some(&v) = self.constants.get(&key) {
            return Ok(v);
        }
        let k = self.program.constants.len();
        self.program.constants.push(Arc::clone(t));
        let v = self
            .program
            .push_value(t.shape().to_vec(), Source::Constant(k));
        self.constants.insert(key, v);
        Ok(v)
    }

    fn lower_node(
        &mut self,
        id: ExprId,
        env: &HashMap<ExprId, Lowered>,
        composite: Option<&str>,
    ) -> Result<Lowered, CodegenError> {
        let f = self.f;
        match f.expr(id) {
            Expr::Var(v) => Err(self.unsupported_expr(&format!("free variable %{}", v.name))),
            Expr::Constant(t) => Ok(Lowered::Tensor(self.constant(id, t)?)),
            Expr::Function(_) => Ok(Lowered::Function),
            Expr::Tuple(fields) => fields
                .iter()
                .map(|&x| self.operand(env, x))
                .collect::<Result<Vec<_>, _>>()
                .map(Lowered::Tuple),
            Expr::TupleGetItem { tuple, index } => match env.get(tuple) {
                Some(Lowered::Tuple(vs)) => vs
                    .get(*index)
                    .map(|&v| Lowered::Tensor(v))
                    .ok_or_else(|| self.unsupported_expr(&format!("{id}: tuple index {index}"))),
                _ => Err(self.unsupported_expr(&format!(
                    "{id}: a tuple-get-item of an op with a tuple result"
                ))),
            },
            Expr::Call(call) => match &call.callee {
                Callee::Global(name) => {
                    Err(self.unsupported_expr(&format!("a call of the global function @{name}")))
                }
                Callee::Local(fid) => {
                    let lit = f.expr(*fid).as_function().ok_or_else(|| {
                        self.unsupported_expr(&format!("{id}: a call of a non-literal function"))
                    })?;
                    if lit.params.len() != call.args.len() {
                        return Err(self.unsupported_expr(&format!(
                            "{id}: a call with {} arguments of a function with {} parameters",
                            call.args.len(),
                            lit.params.len()
                        )));
                    }
                    let mut inner = HashMap::new();
                    for (&p, &a) in lit.params.iter().zip(&call.args) {
                        let arg = env
                            .get(&a)
                            .cloned()
                            .ok_or_else(|| self.unsupported_expr(&format!("operand {a}")))?;
                        inner.insert(p, arg);
                    }
                    let name = lit.attrs.get_str("Composite");
                    self.lower_scope(lit.body, inner, name)
                }
                Callee::Op(_) => {
                    let cx = self.op_ctx(id)?;
                    let shape = cx.out.shape.clone();
                    let op = cx.op;
                    let args = call
                        .args
                        .iter()
                        .map(|&a| self.operand(env, a))
                        .collect::<Result<Vec<_>, _>>()?;
                    match lower_op(&cx)? {
                        Lowering::View => {
                            let of = *args
                                .first()
                                .ok_or_else(|| self.unsupported_expr("a view without data"))?;
                            Ok(Lowered::Tensor(
                                self.program.push_value(shape, Source::View(of)),
                            ))
                        }
                        Lowering::Kernel(kernel) => {
                            let label = self.label(id, &[op], composite);
                            Ok(Lowered::Tensor(
                                self.program.push_step(kernel, args, shape, label),
                            ))
                        }
                    }
                }
            },
        }
    }
}
