//! QDQ groups: a QDQ model (onnxruntime's `quantize_static` with `QuantFormat.QDQ`) keeps float
//! ops and wraps them in `DequantizeLinear` / `QuantizeLinear` pairs. Converted node by node,
//! each `Conv` and `MatMul` would run in float between a dequantize and a quantize. This pass
//! finds the groups
//!
//! ```text
//! DequantizeLinear(x) ─┐
//! DequantizeLinear(w) ─┼─ Conv | MatMul ── QuantizeLinear   (the product's only reader)
//! [float bias] ────────┘
//! ```
//!
//! before conversion and replaces each `Conv`/`MatMul` and its `QuantizeLinear` with one node
//! ([`QDQ_CONV`], [`QDQ_MATMUL`]) whose inputs are laid out as `QLinearConv`'s /
//! `QLinearMatMul`'s (plus the float bias), converted into integer arithmetic like those. The
//! `DequantizeLinear` nodes stay for their other readers (unread ones are dropped after
//! conversion). A group is fused only when the data and output scales are per-tensor
//! initializers and a per-channel weight scale lies along the output channels; any other group
//! keeps the float path, which computes the same function.

use std::collections::{HashMap, HashSet};

use super::proto::{GraphProto, NodeProto};

/// The op type of a fused dequantize-conv-quantize group.
pub(crate) const QDQ_CONV: &str = "DequantizeLinear+Conv+QuantizeLinear";
/// The op type of a fused dequantize-matmul-quantize group.
pub(crate) const QDQ_MATMUL: &str = "DequantizeLinear+MatMul+QuantizeLinear";

fn is(node: &NodeProto, op_type: &str) -> bool {
    node.op_type == op_type && (node.domain.is_empty() || node.domain == "ai.onnx")
}

fn int_attr(node: &NodeProto, name: &str) -> Option<i64> {
    node.attribute.iter().find(|a| a.name == name).map(|a| a.i)
}

/// Input `i` of `node`, `""` when omitted.
fn input(node: &NodeProto, i: usize) -> String {
    node.input.get(i).cloned().unwrap_or_default()
}

/// The whole graph's view the matcher needs.
struct Index<'g> {
    /// The node defining each value.
    producer: HashMap<&'g str, usize>,
    /// The nodes reading each value (once per read).
    readers: HashMap<&'g str, Vec<usize>>,
    /// Graph outputs.
    outputs: HashSet<&'g str>,
    /// Initializer element counts.
    sizes: HashMap<&'g str, i64>,
}

impl<'g> Index<'g> {
    fn new(graph: &'g GraphProto) -> Self {
        let mut producer = HashMap::new();
        let mut readers: HashMap<&str, Vec<usize>> = HashMap::new();
        for (i, node) in graph.node.iter().enumerate() {
            for out in &node.output {
                producer.insert(out.as_str(), i);
            }
            for inp in node.input.iter().filter(|s| !s.is_empty()) {
                readers.entry(inp.as_str()).or_default().push(i);
            }
        }
        Index {
            producer,
            readers,
            outputs: graph.output.iter().map(|o| o.name.as_str()).collect(),
            sizes: graph
                .initializer
                .iter()
                .map(|t| (t.name.as_str(), t.dims.iter().product()))
                .collect(),
        }
    }

    /// The `DequantizeLinear` node producing `value`.
    fn dequantize(&self, graph: &GraphProto, value: &str) -> Option<usize> {
        let p = *self.producer.get(value)?;
        let node = &graph.node[p];
        (is(node, "DequantizeLinear") && int_attr(node, "block_size").unwrap_or(0) == 0)
            .then_some(p)
    }

    /// The element count of the initializer `name`, if it is one.
    fn size(&self, name: &str) -> Option<i64> {
        self.sizes.get(name).copied()
    }
}

/// One group to fuse: the product node, its data and weight dequantizes, its quantize.
struct Group {
    product: usize,
    data: usize,
    weight: usize,
    quantize: usize,
}

/// Matches the group around product node `p`.
fn group(graph: &GraphProto, index: &Index<'_>, p: usize) -> Option<Group> {
    let node = &graph.node[p];
    let (conv, weight_axis) = if is(node, "Conv") {
        (true, 0)
    } else if is(node, "MatMul") {
        (false, 1)
    } else {
        return None;
    };
    let out = node.output.first()?.as_str();
    if node.output.len() != 1 || index.outputs.contains(out) {
        return None;
    }
    let data = index.dequantize(graph, node.input.first()?)?;
    let weight = index.dequantize(graph, node.input.get(1)?)?;
    let [quantize] = index.readers.get(out)?.as_slice() else {
        return None;
    };
    let q = &graph.node[*quantize];
    let plain_q = q.attribute.iter().all(|a| a.name == "axis");
    if !is(q, "QuantizeLinear") || !plain_q || q.input.first().map(String::as_str) != Some(out) {
        return None;
    }
    let per_tensor = |n: &NodeProto| index.size(&input(n, 1)) == Some(1);
    let w = &graph.node[weight];
    let w_ok = per_tensor(w)
        || (index.size(&input(w, 1)).is_some() && int_attr(w, "axis").unwrap_or(1) == weight_axis);
    let arity_ok = if conv {
        node.input.len() <= 3
    } else {
        node.input.len() == 2
    };
    (per_tensor(&graph.node[data]) && per_tensor(q) && w_ok && arity_ok).then_some(Group {
        product: p,
        data,
        weight,
        quantize: *quantize,
    })
}

/// The fused node of `g`.
fn fused(graph: &GraphProto, g: &Group) -> NodeProto {
    let (node, dx, dw, q) = (
        &graph.node[g.product],
        &graph.node[g.data],
        &graph.node[g.weight],
        &graph.node[g.quantize],
    );
    let mut inputs = vec![
        input(dx, 0),
        input(dx, 1),
        input(dx, 2),
        input(dw, 0),
        input(dw, 1),
        input(dw, 2),
        input(q, 1),
        input(q, 2),
    ];
    let op_type = if is(node, "Conv") {
        inputs.push(input(node, 2));
        QDQ_CONV
    } else {
        QDQ_MATMUL
    };
    NodeProto {
        input: inputs,
        output: q.output.clone(),
        name: node.name.clone(),
        op_type: op_type.to_string(),
        domain: String::new(),
        attribute: node.attribute.clone(),
    }
}

/// Replaces every QDQ conv/matmul group of `graph` with its fused node.
pub(crate) fn fuse(graph: &mut GraphProto) {
    let groups: Vec<Group> = {
        let index = Index::new(graph);
        (0..graph.node.len())
            .filter_map(|p| group(graph, &index, p))
            .collect()
    };
    if groups.is_empty() {
        return;
    }
    let mut replace: HashMap<usize, NodeProto> = HashMap::new();
    let mut drop = HashSet::new();
    for g in &groups {
        replace.insert(g.product, fused(graph, g));
        drop.insert(g.quantize);
    }
    let nodes = std::mem::take(&mut graph.node);
    graph.node = nodes
        .into_iter()
        .enumerate()
        .filter(|(i, _)| !drop.contains(i))
        .map(|(i, n)| replace.remove(&i).unwrap_or(n))
        .collect();
}
