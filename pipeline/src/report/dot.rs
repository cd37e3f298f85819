//! The [`ViewGraph`] in Graphviz DOT (`byoc inspect --format dot`; render with
//! `dot -Tsvg`).
//!
//! One `subgraph "cluster_<function>"` per partition, labelled `<function> (<target>)` and
//! outlined in the target's colour; nodes filled with their target's colour (host grey);
//! inputs and the output are ellipses, composites double boxes, ops rounded boxes. Node ids are
//! `n<index>` in topological order.

use std::fmt::Write as _;

use super::graph::{NodeKind, ViewGraph};

/// Renders `graph` as a DOT digraph.
pub fn render(graph: &ViewGraph) -> String {
    let mut out = String::new();
    out.push_str("digraph main {\n");
    out.push_str("  rankdir=TB;\n");
    out.push_str(
        "  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=11];\n",
    );
    out.push_str("  edge [color=\"#555555\"];\n");
    for (i, n) in graph.nodes.iter().enumerate() {
        if n.cluster.is_none() {
            node_line(&mut out, graph, i, "  ");
        }
    }
    for (c, cluster) in graph.clusters.iter().enumerate() {
        let colour = graph.colour(Some(&cluster.target));
        let _ = writeln!(out, "  subgraph \"cluster_{}\" {{", quote(&cluster.name));
        let _ = writeln!(
            out,
            "    label=\"{} ({})\";",
            quote(&cluster.name),
            quote(&cluster.target)
        );
        let _ = writeln!(
            out,
            "    style=\"rounded\"; color=\"{}\"; penwidth=2; fontname=\"Helvetica\";",
            colour.stroke
        );
        for (i, n) in graph.nodes.iter().enumerate() {
            if n.cluster == Some(c) {
                node_line(&mut out, graph, i, "    ");
            }
        }
        out.push_str("  }\n");
    }
    for &(a, b) in &graph.edges {
        let _ = writeln!(out, "  n{a} -> n{b};");
    }
    out.push_str("}\n");
    out
}

fn node_line(out: &mut String, graph: &ViewGraph, i: usize, indent: &str) {
    let n = &graph.nodes[i];
    let colour = graph.colour(n.target.as_deref());
    let shape = match n.kind {
        NodeKind::Input | NodeKind::Output => ", shape=ellipse, style=filled",
        NodeKind::Composite => ", peripheries=2",
        NodeKind::Op | NodeKind::Opaque => "",
    };
    let _ = writeln!(
        out,
        "{indent}n{i} [label=\"{}\", fillcolor=\"{}\"{shape}];",
        quote(&n.label),
        colour.fill
    );
}

/// Escapes text for a double-quoted DOT string.
fn quote(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}
