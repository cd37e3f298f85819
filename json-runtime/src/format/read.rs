//! Reading a JSON graph: serde for the structure, then validation with errors that name the
//! node and field.
//!
//! Accepted is what TVM's `JSONRuntimeBase::Load` accepts: graph keys `nodes`, `arg_nodes`,
//! `heads`, `node_row_ptr` and optional `symbol`; node keys `op`, `name`, optional `inputs`
//! and `attrs` (or `attr`); entries of 2 or 3 numbers; `num_inputs`/`num_outputs` as strings;
//! `shape` as `[[[d, ...], ...]]`; `dtype` and every other attribute as `[["s", ...]]`. Key
//! order is free; attribute order is kept so that writing back is stable. Unknown keys are an
//! error, as in TVM.

use std::collections::HashSet;
use std::fmt;
use std::str::FromStr;

use byoc_sdk::ir::{DType, TensorType};
use serde::de::{Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;

use super::{Entry, FormatError, JsonGraph, JsonNode, NodeAttrs, NodeKind};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGraph {
    #[serde(default)]
    symbol: Option<String>,
    nodes: Vec<RawNode>,
    arg_nodes: Vec<u32>,
    heads: Vec<Vec<u32>>,
    node_row_ptr: Vec<u32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNode {
    op: String,
    name: String,
    #[serde(default)]
    inputs: Vec<Vec<u32>>,
    #[serde(default, alias = "attr")]
    attrs: OrderedAttrs,
}

/// A JSON object's members in document order.
#[derive(Default)]
struct OrderedAttrs(Vec<(String, Value)>);

impl<'de> Deserialize<'de> for OrderedAttrs {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct OrderedVisitor;
        impl<'de> Visitor<'de> for OrderedVisitor {
            type Value = OrderedAttrs;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of attributes")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<OrderedAttrs, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, Value>()? {
                    out.push((k, v));
                }
                Ok(OrderedAttrs(out))
            }
        }
        deserializer.deserialize_map(OrderedVisitor)
    }
}

impl JsonGraph {
    /// Parses and validates a JSON graph.
    pub fn parse(json: &str) -> Result<JsonGraph, FormatError> {
        let raw: RawGraph = serde_json::from_str(json)?;
        let nodes = raw
            .nodes
            .into_iter()
            .enumerate()
            .map(|(id, node)| convert_node(id, node))
            .collect::<Result<Vec<_>, _>>()?;
        let heads = raw
            .heads
            .iter()
            .enumerate()
            .map(|(i, e)| convert_entry("heads", i, e))
            .collect::<Result<Vec<_>, _>>()?;
        let graph = JsonGraph {
            symbol: raw.symbol,
            nodes,
            arg_nodes: raw.arg_nodes,
            heads,
            node_row_ptr: raw.node_row_ptr,
        };
        graph.validate()?;
        Ok(graph)
    }

    /// Checks the invariants listed in the module documentation of [`super::graph`]; the
    /// serializer's output and [`JsonGraph::parse`]'s result always pass.
    pub fn validate(&self) -> Result<(), FormatError> {
        for (id, node) in self.nodes.iter().enumerate() {
            if node.outputs.is_empty() {
                return Err(FormatError::BadAttr {
                    node: id,
                    name: node.name.clone(),
                    attr: "shape".to_string(),
                    problem: "must describe at least one output".to_string(),
                });
            }
            if node.kind != NodeKind::Kernel && !node.inputs.is_empty() {
                return Err(FormatError::LeafWithInputs {
                    node: id,
                    name: node.name.clone(),
                    kind: node.kind.as_str(),
                });
            }
        }
        self.check_row_ptr()?;
        for (id, node) in self.nodes.iter().enumerate() {
            let location = format!("node {id} ('{}') inputs", node.name);
            for (i, &e) in node.inputs.iter().enumerate() {
                self.check_entry(&location, i, e)?;
            }
        }
        self.check_order()?;
        self.check_arg_nodes()?;
        if self.heads.is_empty() {
            return Err(FormatError::NoHeads);
        }
        for (i, &e) in self.heads.iter().enumerate() {
            self.check_entry("heads", i, e)?;
        }
        Ok(())
    }

    fn check_row_ptr(&self) -> Result<(), FormatError> {
        let ptr = &self.node_row_ptr;
        if ptr.len() != self.nodes.len() + 1 {
            return Err(FormatError::RowPtr {
                problem: format!(
                    "has {} elements but the graph has {} nodes (expected {})",
                    ptr.len(),
                    self.nodes.len(),
                    self.nodes.len() + 1
                ),
            });
        }
        let mut expected: u64 = 0;
        for (i, &p) in ptr.iter().enumerate() {
            if u64::from(p) != expected {
                return Err(FormatError::RowPtr {
                    problem: format!(
                        "element {i} is {p} but the output counts of nodes 0..{i} sum to {expected}"
                    ),
                });
            }
            if let Some(node) = self.nodes.get(i) {
                expected += node.outputs.len() as u64;
            }
        }
        Ok(())
    }

    fn check_entry(&self, location: &str, position: usize, e: Entry) -> Result<(), FormatError> {
        let dangling = |reason: String| FormatError::DanglingEntry {
            location: location.to_string(),
            entry: e.to_string(),
            reason,
        };
        let Some(node) = self.nodes.get(e.node_index()) else {
            return Err(dangling(format!(
                "node {} does not exist (the graph has {} nodes; entry {position})",
                e.node,
                self.nodes.len()
            )));
        };
        if e.index as usize >= node.outputs.len() {
            return Err(dangling(format!(
                "node {} ('{}') has {} output(s), no output {} (entry {position})",
                e.node,
                node.name,
                node.outputs.len(),
                e.index
            )));
        }
        Ok(())
    }

    /// Rejects cycles, then reads of later nodes.
    fn check_order(&self) -> Result<(), FormatError> {
        const WHITE: u8 = 0;
        const GREY: u8 = 1;
        const BLACK: u8 = 2;
        let mut color = vec![WHITE; self.nodes.len()];
        for start in 0..self.nodes.len() {
            if color[start] != WHITE {
                continue;
            }
            color[start] = GREY;
            let mut stack = vec![(start, 0usize)];
            while let Some(&mut (n, ref mut next)) = stack.last_mut() {
                if let Some(e) = self.nodes[n].inputs.get(*next) {
                    *next += 1;
                    let m = e.node_index();
                    match color[m] {
                        WHITE => {
                            color[m] = GREY;
                            stack.push((m, 0));
                        }
                        GREY => {
                            return Err(FormatError::Cycle {
                                node: m,
                                name: self.nodes[m].name.clone(),
                            })
                        }
                        _ => {}
                    }
                } else {
                    color[n] = BLACK;
                    stack.pop();
                }
            }
        }
        for (id, node) in self.nodes.iter().enumerate() {
            if let Some((input, e)) = node
                .inputs
                .iter()
                .enumerate()
                .find(|(_, e)| e.node_index() >= id)
            {
                return Err(FormatError::ForwardReference {
                    node: id,
                    name: node.name.clone(),
                    input,
                    producer: e.node_index(),
                });
            }
        }
        Ok(())
    }

    fn check_arg_nodes(&self) -> Result<(), FormatError> {
        let mut seen = HashSet::new();
        for &a in &self.arg_nodes {
            let node = self
                .nodes
                .get(a as usize)
                .ok_or_else(|| FormatError::ArgNodes {
                    problem: format!(
                        "node {a} does not exist (the graph has {} nodes)",
                        self.nodes.len()
                    ),
                })?;
            if node.kind == NodeKind::Kernel {
                return Err(FormatError::ArgNodes {
                    problem: format!(
                        "node {a} ('{}') is a kernel node; arg_nodes lists input and const nodes",
                        node.name
                    ),
                });
            }
            if !seen.insert(a) {
                return Err(FormatError::ArgNodes {
                    problem: format!("node {a} is listed twice"),
                });
            }
        }
        if let Some((id, node)) = self
            .nodes
            .iter()
            .enumerate()
            .find(|(id, n)| n.kind != NodeKind::Kernel && !seen.contains(&(*id as u32)))
        {
            return Err(FormatError::ArgNodes {
                problem: format!(
                    "{} node {id} ('{}') is not listed, so it could never be bound",
                    node.kind, node.name
                ),
            });
        }
        Ok(())
    }
}

fn convert_entry(location: &str, position: usize, raw: &[u32]) -> Result<Entry, FormatError> {
    match *raw {
        [node, index] => Ok(Entry::new(node, index)),
        [node, index, version] => Ok(Entry {
            node,
            index,
            version,
        }),
        _ => Err(FormatError::BadEntry {
            location: location.to_string(),
            position,
            len: raw.len(),
        }),
    }
}

/// What a node's `attrs` object holds, split into its parts.
#[derive(Default)]
struct SplitAttrs {
    shapes: Option<Vec<Vec<i64>>>,
    dtypes: Option<Vec<String>>,
    num_inputs: Option<usize>,
    num_outputs: Option<usize>,
    rest: NodeAttrs,
}

fn convert_node(id: usize, raw: RawNode) -> Result<JsonNode, FormatError> {
    let name = raw.name;
    let kind = NodeKind::from_name(&raw.op).ok_or_else(|| FormatError::UnknownOpKind {
        node: id,
        op: raw.op.clone(),
    })?;
    let bad = |attr: &str, problem: String| FormatError::BadAttr {
        node: id,
        name: name.clone(),
        attr: attr.to_string(),
        problem,
    };
    let mut split = SplitAttrs::default();
    for (key, value) in raw.attrs.0 {
        match key.as_str() {
            "num_inputs" => {
                split.num_inputs = Some(count_string(&value).map_err(|p| bad(&key, p))?)
            }
            "num_outputs" => {
                split.num_outputs = Some(count_string(&value).map_err(|p| bad(&key, p))?)
            }
            "shape" => split.shapes = Some(shape_lists(&value).map_err(|p| bad(&key, p))?),
            "dtype" => split.dtypes = Some(string_list(&value).map_err(|p| bad(&key, p))?),
            _ => {
                let strings = string_list(&value).map_err(|p| bad(&key, p))?;
                split.rest.set(key, strings);
            }
        }
    }
    let missing = |attr| FormatError::MissingAttr {
        node: id,
        name: name.clone(),
        attr,
    };
    let shapes = split.shapes.ok_or_else(|| missing("shape"))?;
    let dtypes = split.dtypes.ok_or_else(|| missing("dtype"))?;
    let mismatch = |what, got, expected_from, expected| FormatError::CountMismatch {
        node: id,
        name: name.clone(),
        what,
        got,
        expected_from,
        expected,
    };
    if dtypes.len() != shapes.len() {
        return Err(mismatch("dtype count", dtypes.len(), "shape", shapes.len()));
    }
    if let Some(n) = split.num_outputs.filter(|&n| n != shapes.len()) {
        return Err(mismatch("num_outputs", n, "shape", shapes.len()));
    }
    let inputs = raw
        .inputs
        .iter()
        .enumerate()
        .map(|(i, e)| convert_entry(&format!("node {id} ('{name}') inputs"), i, e))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(n) = split.num_inputs.filter(|&n| n != inputs.len()) {
        return Err(mismatch("num_inputs", n, "inputs", inputs.len()));
    }
    let mut outputs = Vec::with_capacity(shapes.len());
    for (index, (shape, dtype)) in shapes.into_iter().zip(dtypes).enumerate() {
        let dt = DType::from_str(&dtype).map_err(|e| FormatError::BadDType {
            node: id,
            name: name.clone(),
            index,
            value: dtype.clone(),
            reason: e.to_string(),
        })?;
        let dims = shape
            .iter()
            .map(|&d| usize::try_from(d).ok().filter(|&d| d <= u32::MAX as usize))
            .collect::<Option<Vec<usize>>>()
            .ok_or_else(|| FormatError::BadShape {
                node: id,
                name: name.clone(),
                index,
                shape: shape.clone(),
            })?;
        let ty = TensorType::new(dims, dt);
        byoc_sdk::ir::memory::check_tensor(&ty).map_err(|source| FormatError::Size {
            node: id,
            name: name.clone(),
            index,
            source,
        })?;
        outputs.push(ty);
    }
    Ok(JsonNode {
        kind,
        name,
        inputs,
        outputs,
        attrs: split.rest,
    })
}

fn describe(v: &Value) -> String {
    let text = v.to_string();
    if text.chars().count() > 40 {
        format!("{}...", text.chars().take(40).collect::<String>())
    } else {
        text
    }
}

/// `"3"` → 3.
fn count_string(v: &Value) -> Result<usize, String> {
    v.as_str().and_then(|s| s.parse().ok()).ok_or_else(|| {
        format!(
            "must be a string holding a count, e.g. \"1\", got {}",
            describe(v)
        )
    })
}

/// Unwraps TVM's one-element outer list: `[[...]]` → `[...]`.
fn unwrap_outer<'v>(v: &'v Value, inner: &str) -> Result<&'v [Value], String> {
    match v.as_array().map(Vec::as_slice) {
        Some([Value::Array(items)]) => Ok(items),
        _ => Err(format!(
            "must be a list holding one list of {inner}, got {}",
            describe(v)
        )),
    }
}

/// `[["a", "b"]]` → `["a", "b"]`.
fn string_list(v: &Value) -> Result<Vec<String>, String> {
    unwrap_outer(v, "strings")?
        .iter()
        .map(|s| {
            s.as_str()
                .map(str::to_string)
                .ok_or_else(|| format!("must hold strings, got {}", describe(s)))
        })
        .collect()
}

/// `[[[1, 2], [3]]]` → `[[1, 2], [3]]`.
fn shape_lists(v: &Value) -> Result<Vec<Vec<i64>>, String> {
    unwrap_outer(v, "shapes")?
        .iter()
        .map(|shape| {
            shape
                .as_array()
                .and_then(|dims| dims.iter().map(Value::as_i64).collect::<Option<Vec<_>>>())
                .ok_or_else(|| {
                    format!(
                        "must hold shapes (lists of integers), got {}",
                        describe(shape)
                    )
                })
        })
        .collect()
}
