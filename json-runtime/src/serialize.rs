//! The serializer: a typed partitioned function → a [`JsonGraph`] plus its constants, as TVM's
//! `JSONSerializer` (codegen_json.h) and `DNNLJSONSerializer` produce them.
//!
//! Mapping (TVM's `JSONSerializer` in `src/relay/backend/contrib/codegen_json/codegen_json.h`):
//! - parameters → `input` nodes `0..P-1` in order, used or not; a tuple-typed parameter is one
//!   node with several outputs;
//! - constants → `const` nodes named `<symbol>_const_<N>` (N counts constants in visit order);
//!   the tensors travel beside the graph in [`Serialized::constants`];
//! - op calls → `kernel` nodes named by the op, with every attribute of the op's schema in
//!   declaration order, TVM's string encoding ([`crate::attr_text`]); convolution padding is
//!   written in the full `[before..., after...]` form Relay's frontend normalizes it to;
//! - composite calls → one `kernel` node named by the `Composite` attribute, carrying the
//!   attributes of the composite's root op (the first op call of its body in post-order, e.g.
//!   `nn.conv2d` in `nn.relu(add(nn.conv2d(..), ..))`), the activation tail's attributes
//!   (`a_min`/`a_max` of `clip`, as the DNNL serializer does; `alpha` of `nn.leaky_relu`),
//!   and `PartitionedFromPattern`;
//! - tuples are flattened, tuple-get-item selects entries, a tuple body gives several heads.
//!
//! Nodes are created in TVM's visit order (depth-first, arguments left to right), so the
//! output is deterministic. Global calls, function literals used as values and free
//! variables are errors.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use byoc_sdk::ir::op::Op;
use byoc_sdk::ir::partition::{symbol_of, target_of};
use byoc_sdk::ir::tensor::Tensor;
use byoc_sdk::ir::TensorType;
use byoc_sdk::ir::{AttrValue, Callee, Expr, ExprId, Function, LocalFunction, Type};
use thiserror::Error;

use crate::attr_text::{encode_attr, AttrEncodeError};
use crate::format::{Entry, FormatError, JsonGraph, JsonNode, NodeAttrs, NodeKind};
use crate::runtime::ConstantMap;

/// Why a function could not be serialized.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum SerializeError {
    /// An expression has no inferred type.
    #[error("{symbol}: expression {expr} has no type; run type inference before serializing")]
    Untyped {
        /// The serializer symbol.
        symbol: String,
        /// The expression.
        expr: ExprId,
    },
    /// An expression the JSON format cannot express.
    #[error("{symbol}: expression {expr}: the JSON graph format does not support {what}")]
    Unsupported {
        /// The serializer symbol.
        symbol: String,
        /// The expression.
        expr: ExprId,
        /// What it is.
        what: String,
    },
    /// An attribute has no string encoding.
    #[error("{symbol}: expression {expr} ({op}): {source}")]
    Attr {
        /// The serializer symbol.
        symbol: String,
        /// The expression.
        expr: ExprId,
        /// The op or composite.
        op: String,
        /// The attribute problem.
        source: AttrEncodeError,
    },
    /// The function maps to a graph the format cannot hold (e.g. an empty tuple result).
    #[error("{symbol}: the function gives an invalid JSON graph: {source}")]
    Invalid {
        /// The serializer symbol.
        symbol: String,
        /// What is wrong with the graph.
        source: FormatError,
    },
}

/// Attributes of a composite's activation tail (the op at the top of its body) that its
/// kernel node carries beside the root op's: `clip`'s bounds (as TVM's DNNL serializer does)
/// and `nn.leaky_relu`'s slope, under the tail op's own attribute names.
const TAIL_ATTRS: &[(&str, &[&str])] =
    &[("clip", &["a_min", "a_max"]), ("nn.leaky_relu", &["alpha"])];

/// A serialized function: the graph and, by name, the constants its `const` nodes refer to.
#[derive(Clone, Debug)]
pub struct Serialized {
    /// The JSON graph (its `symbol` is the serializer symbol).
    pub graph: JsonGraph,
    /// The constants, keyed by their `const` node names.
    pub constants: ConstantMap,
}

impl Serialized {
    /// The JSON text of the graph.
    pub fn to_json(&self) -> String {
        self.graph.to_json()
    }
}

/// TVM's serializer symbol for a partitioned function: `<Compiler>_<global_symbol>`, e.g.
/// `dnnl_tvmgen_default_dnnl_main_0`. `None` when either attribute is missing.
pub fn external_symbol(func: &Function) -> Option<String> {
    let compiler = target_of(func)?;
    let global = symbol_of(func)?;
    Some(format!("{compiler}_{global}"))
}

/// Serializes `func` (typed) under `symbol`; constants are named `<symbol>_const_<N>`.
pub fn serialize(func: &Function, symbol: &str) -> Result<Serialized, SerializeError> {
    Serializer {
        func,
        symbol,
        nodes: Vec::new(),
        memo: HashMap::new(),
        constants: BTreeMap::new(),
    }
    .run()
}

struct Serializer<'f> {
    func: &'f Function,
    symbol: &'f str,
    nodes: Vec<JsonNode>,
    memo: HashMap<ExprId, Vec<Entry>>,
    constants: ConstantMap,
}

/// The operands a dataflow walk visits: call arguments (not a local callee), tuple fields, the
/// tuple of a get-item.
fn dataflow_children(expr: &Expr) -> &[ExprId] {
    match expr {
        Expr::Call(call) => &call.args,
        Expr::Tuple(fields) => fields,
        Expr::TupleGetItem { tuple, .. } => std::slice::from_ref(tuple),
        Expr::Var(_) | Expr::Constant(_) | Expr::Function(_) => &[],
    }
}

/// Ids reachable from `root` in depth-first post-order (operands left to right), each once;
/// `skip` ids are neither visited nor entered.
fn post_order(func: &Function, root: ExprId, skip: impl Fn(ExprId) -> bool) -> Vec<ExprId> {
    let mut order = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut stack = vec![(root, false)];
    while let Some((id, expanded)) = stack.pop() {
        if expanded {
            order.push(id);
            continue;
        }
        if skip(id) || !seen.insert(id) {
            continue;
        }
        stack.push((id, true));
        for &child in dataflow_children(func.expr(id)).iter().rev() {
            stack.push((child, false));
        }
    }
    order
}

/// The leaf tensor types of a type (tuples flattened).
fn leaves(ty: &Type) -> Vec<TensorType> {
    ty.flatten_tensors().into_iter().cloned().collect()
}

/// Relay's frontend writes convolution padding as `[before..., after...]` per spatial axis;
/// calls built from text may hold the short forms.
fn normalized_padding(op: &Op, name: &str, value: &AttrValue) -> Option<AttrValue> {
    let spatial = match op.name() {
        "nn.conv1d" => 1,
        "nn.conv2d" => 2,
        "nn.conv3d" => 3,
        _ => return None,
    };
    if name != "padding" {
        return None;
    }
    let pads = value.as_int_list()?;
    let full = match pads.len() {
        1 => vec![pads[0]; 2 * spatial],
        n if n == spatial => pads.iter().chain(&pads).copied().collect(),
        _ => return None,
    };
    Some(AttrValue::ints(full))
}

impl Serializer<'_> {
    fn run(mut self) -> Result<Serialized, SerializeError> {
        for &param in &self.func.params {
            let var = self
                .func
                .var(param)
                .ok_or_else(|| self.unsupported(param, "a non-variable parameter"))?;
            let outputs = leaves(&var.ty);
            let entries = self.add_node(
                NodeKind::Input,
                var.name.clone(),
                Vec::new(),
                outputs,
                NodeAttrs::new(),
            );
            self.memo.insert(param, entries);
        }
        let memo = &self.memo;
        let order = post_order(self.func, self.func.body, |id| memo.contains_key(&id));
        for id in order {
            let entries = self.visit(id)?;
            self.memo.insert(id, entries);
        }
        let heads = self.entries(self.func.body)?.to_vec();
        let mut node_row_ptr = Vec::with_capacity(self.nodes.len() + 1);
        let mut total = 0u32;
        node_row_ptr.push(0);
        for node in &self.nodes {
            total += node.outputs.len() as u32;
            node_row_ptr.push(total);
        }
        let arg_nodes = (0..self.nodes.len() as u32)
            .filter(|&i| self.nodes[i as usize].kind != NodeKind::Kernel)
            .collect();
        let graph = JsonGraph {
            symbol: Some(self.symbol.to_string()),
            nodes: self.nodes,
            arg_nodes,
            heads,
            node_row_ptr,
        };
        graph.validate().map_err(|source| SerializeError::Invalid {
            symbol: self.symbol.to_string(),
            source,
        })?;
        Ok(Serialized {
            graph,
            constants: self.constants,
        })
    }

    fn unsupported(&self, expr: ExprId, what: impl Into<String>) -> SerializeError {
        SerializeError::Unsupported {
            symbol: self.symbol.to_string(),
            expr,
            what: what.into(),
        }
    }

    fn ty(&self, id: ExprId) -> Result<&Type, SerializeError> {
        self.func.ty(id).ok_or_else(|| SerializeError::Untyped {
            symbol: self.symbol.to_string(),
            expr: id,
        })
    }

    fn entries(&self, id: ExprId) -> Result<&[Entry], SerializeError> {
        self.memo.get(&id).map(Vec::as_slice).ok_or_else(|| {
            self.unsupported(id, "a variable that is not a parameter of the function")
        })
    }

    fn add_node(
        &mut self,
        kind: NodeKind,
        name: String,
        inputs: Vec<Entry>,
        outputs: Vec<TensorType>,
        attrs: NodeAttrs,
    ) -> Vec<Entry> {
        let id = self.nodes.len() as u32;
        let count = outputs.len() as u32;
        self.nodes.push(JsonNode {
            kind,
            name,
            inputs,
            outputs,
            attrs,
        });
        (0..count).map(|i| Entry::new(id, i)).collect()
    }

    fn flat_args(&self, args: &[ExprId]) -> Result<Vec<Entry>, SerializeError> {
        let mut out = Vec::new();
        for &a in args {
            out.extend_from_slice(self.entries(a)?);
        }
        Ok(out)
    }

    fn visit(&mut self, id: ExprId) -> Result<Vec<Entry>, SerializeError> {
        match self.func.expr(id) {
            Expr::Var(_) => Ok(self.entries(id)?.to_vec()),
            Expr::Constant(tensor) => Ok(self.add_constant(tensor.clone())),
            Expr::Tuple(fields) => self.flat_args(fields),
            Expr::TupleGetItem { tuple, index } => {
                let fields = self
                    .ty(*tuple)?
                    .as_tuple()
                    .ok_or_else(|| self.unsupported(id, "get-item of a non-tuple"))?;
                let start: usize = fields[..(*index).min(fields.len())]
                    .iter()
                    .map(|t| t.flatten_tensors().len())
                    .sum();
                let count = fields.get(*index).map_or(0, |t| t.flatten_tensors().len());
                let all = self.entries(*tuple)?;
                all.get(start..start + count)
                    .map(<[Entry]>::to_vec)
                    .ok_or_else(|| {
                        self.unsupported(id, format!("tuple field {index} out of range"))
                    })
            }
            Expr::Function(_) => Err(self.unsupported(id, "a function literal used as a value")),
            Expr::Call(call) => {
                let inputs = self.flat_args(&call.args)?;
                let outputs = leaves(self.ty(id)?);
                let (name, attrs) = match &call.callee {
                    Callee::Op(op) => (op.name().to_string(), self.op_attrs(id, op, &call.attrs)?),
                    Callee::Local(f) => self.composite(id, *f)?,
                    Callee::Global(g) => {
                        return Err(self.unsupported(id, format!("a call of global function @{g}")))
                    }
                };
                Ok(self.add_node(NodeKind::Kernel, name, inputs, outputs, attrs))
            }
        }
    }

    fn add_constant(&mut self, tensor: Arc<Tensor>) -> Vec<Entry> {
        let name = format!("{}_const_{}", self.symbol, self.constants.len());
        let ty = tensor.ty().clone();
        self.constants.insert(name.clone(), tensor);
        self.add_node(
            NodeKind::Const,
            name,
            Vec::new(),
            vec![ty],
            NodeAttrs::new(),
        )
    }

    /// Every schema attribute of `op` in declaration order, encoded.
    fn op_attrs(
        &self,
        id: ExprId,
        op: &Op,
        attrs: &byoc_sdk::ir::Attrs,
    ) -> Result<NodeAttrs, SerializeError> {
        let mut out = NodeAttrs::new();
        for def in &op.attrs {
            let value = attrs.get(def.name).unwrap_or(&def.default);
            let value = normalized_padding(op, def.name, value).unwrap_or_else(|| value.clone());
            let strings = encode_attr(def.name, &value).map_err(|source| SerializeError::Attr {
                symbol: self.symbol.to_string(),
                expr: id,
                op: op.name().to_string(),
                source,
            })?;
            out.set(def.name, strings);
        }
        Ok(out)
    }

    /// The name and attributes of a composite call's kernel node.
    fn composite(&self, id: ExprId, callee: ExprId) -> Result<(String, NodeAttrs), SerializeError> {
        let lf: &LocalFunction = self.func.expr(callee).as_function().ok_or_else(|| {
            self.unsupported(
                id,
                "a call of a local expression that is not a function literal",
            )
        })?;
        let name = lf
            .attrs
            .get_str("Composite")
            .ok_or_else(|| {
                self.unsupported(
                    id,
                    "a call of a local function without a Composite attribute",
                )
            })?
            .to_string();
        let func = self.func;
        let calls: Vec<ExprId> = post_order(func, lf.body, |_| false)
            .into_iter()
            .filter(|&c| func.expr(c).as_op_call().is_some())
            .collect();
        let mut attrs = NodeAttrs::new();
        if let Some(&root) = calls.first() {
            if let Some((op, call)) = func.expr(root).as_op_call() {
                attrs = self.op_attrs(root, op, &call.attrs)?;
            }
            if let Some((op, call)) = func.expr(lf.body).as_op_call() {
                let tail = TAIL_ATTRS.iter().find(|(name, _)| *name == op.name());
                if let (Some((name, keys)), true) = (tail, lf.body != root) {
                    for &key in *keys {
                        let value = call.attrs.get(key).cloned().unwrap_or(AttrValue::None);
                        let strings =
                            encode_attr(key, &value).map_err(|source| SerializeError::Attr {
                                symbol: self.symbol.to_string(),
                                expr: lf.body,
                                op: name.to_string(),
                                source,
                            })?;
                        attrs.set(key, strings);
                    }
                }
            }
        }
        if let Some(pattern) = lf.attrs.get_str("PartitionedFromPattern") {
            attrs.set("PartitionedFromPattern", vec![pattern.to_string()]);
        }
        Ok((name, attrs))
    }
}
