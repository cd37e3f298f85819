//! Writing a JSON graph in TVM's encoding, deterministically.
//!
//! Graph keys come in the order TVM's `JSONSerializer::Save` writes them (`symbol`, `nodes`,
//! `arg_nodes`, `heads`, `node_row_ptr`), node keys as `JSONGraphNode::Save` writes them
//! (`op`, `name`, `inputs` when non-empty, `attrs`), one node per line. Inside `attrs`:
//! `num_inputs` and `num_outputs` (kernel nodes with inputs, as TVM), the op attributes in
//! their stored order, then `shape` and `dtype`. TVM's own attribute order is hash-map order;
//! readers must not depend on it, and ours is fixed so equal graphs give equal bytes.

use std::fmt::Write as _;

use super::{Entry, JsonGraph, JsonNode};

/// A JSON string literal (quoted, escaped).
fn quoted(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

fn write_list<T>(out: &mut String, items: &[T], mut item: impl FnMut(&mut String, &T)) {
    out.push('[');
    for (i, x) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        item(out, x);
    }
    out.push(']');
}

fn write_entry(out: &mut String, e: &Entry) {
    let _ = write!(out, "[{}, {}, {}]", e.node, e.index, e.version);
}

fn write_strings(out: &mut String, items: &[String]) {
    write_list(out, items, |o, s| o.push_str(&quoted(s)));
}

fn write_node(out: &mut String, node: &JsonNode) {
    let _ = write!(
        out,
        "{{\"op\": {}, \"name\": {}",
        quoted(node.kind.as_str()),
        quoted(&node.name)
    );
    if !node.inputs.is_empty() {
        out.push_str(", \"inputs\": ");
        write_list(out, &node.inputs, write_entry);
    }
    out.push_str(", \"attrs\": {");
    if !node.inputs.is_empty() {
        let _ = write!(
            out,
            "\"num_inputs\": \"{}\", \"num_outputs\": \"{}\", ",
            node.inputs.len(),
            node.outputs.len()
        );
    }
    for (name, value) in node.attrs.iter() {
        let _ = write!(out, "{}: [", quoted(name));
        write_strings(out, value);
        out.push_str("], ");
    }
    out.push_str("\"shape\": [");
    write_list(out, &node.outputs, |o, t| {
        write_list(o, &t.shape, |o, d| {
            let _ = write!(o, "{d}");
        })
    });
    out.push_str("], \"dtype\": [");
    write_list(out, &node.outputs, |o, t| {
        o.push_str(&quoted(&t.dtype.to_string()))
    });
    out.push_str("]}}");
}

impl JsonGraph {
    /// The graph as JSON text in TVM's encoding (see the module documentation for the layout).
    pub fn to_json(&self) -> String {
        let mut out = String::from("{\n");
        if let Some(symbol) = &self.symbol {
            let _ = writeln!(out, "  \"symbol\": {},", quoted(symbol));
        }
        out.push_str("  \"nodes\": [\n");
        for (i, node) in self.nodes.iter().enumerate() {
            out.push_str("    ");
            write_node(&mut out, node);
            out.push_str(if i + 1 < self.nodes.len() {
                ",\n"
            } else {
                "\n"
            });
        }
        out.push_str("  ],\n  \"arg_nodes\": ");
        write_list(&mut out, &self.arg_nodes, |o, a| {
            let _ = write!(o, "{a}");
        });
        out.push_str(",\n  \"heads\": ");
        write_list(&mut out, &self.heads, write_entry);
        out.push_str(",\n  \"node_row_ptr\": ");
        write_list(&mut out, &self.node_row_ptr, |o, p| {
            let _ = write!(o, "{p}");
        });
        out.push_str("\n}\n");
        out
    }
}
