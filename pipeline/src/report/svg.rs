//! The [`ViewGraph`] drawn as SVG with a small layered layout (no external tools).
//!
//! Layout, top to bottom:
//! 1. Layers: a node's layer is one more than the deepest of its producers (inputs at 0).
//! 2. Order within a layer: by the mean x of the node's producers (barycentre), with the
//!    nodes of one partition kept next to each other so its box stays compact.
//! 3. x: each node goes to its barycentre when there is room, else right of its left
//!    neighbour; widths follow the label length.
//! 4. Partitions are drawn as rounded boxes around their nodes, in the target's colour and
//!    labelled with the function and target; edges are vertical cubic curves with arrowheads.
//!
//! The layout is deterministic (ties broken by node index). It does not avoid every crossing or
//! overlap of a partition's box with a host node in a layer between its nodes; it is meant to
//! be read next to the summary tables, not to replace a full graph layout engine.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::graph::{NodeKind, ViewGraph};

const NODE_HEIGHT: f64 = 28.0;
const LAYER_GAP: f64 = 64.0;
const NODE_GAP: f64 = 18.0;
const CHAR_WIDTH: f64 = 7.0;
const MARGIN: f64 = 24.0;
const CLUSTER_PAD: f64 = 8.0;
const CLUSTER_LABEL: f64 = 16.0;

/// Where each node is drawn.
#[derive(Clone, Debug, PartialEq)]
pub struct Layout {
    /// Left x of each node.
    pub x: Vec<f64>,
    /// Top y of each node.
    pub y: Vec<f64>,
    /// Width of each node.
    pub width: Vec<f64>,
    /// The drawing's width.
    pub total_width: f64,
    /// The drawing's height.
    pub total_height: f64,
}

/// Lays out `graph` in layers.
pub fn layout(graph: &ViewGraph) -> Layout {
    let n = graph.nodes.len();
    let mut preds: Vec<Vec<usize>> = vec![Vec::new(); n];
    for &(a, b) in &graph.edges {
        preds[b].push(a);
    }
    // Edges go from lower to higher index, so one pass in index order settles every layer.
    let mut layer = vec![0usize; n];
    for i in 0..n {
        layer[i] = preds[i].iter().map(|&p| layer[p] + 1).max().unwrap_or(0);
    }
    let depth = layer.iter().copied().max().map_or(0, |d| d + 1);
    let mut layers: Vec<Vec<usize>> = vec![Vec::new(); depth];
    for (i, &l) in layer.iter().enumerate() {
        layers[l].push(i);
    }
    let width: Vec<f64> = graph
        .nodes
        .iter()
        .map(|node| node.label.chars().count() as f64 * CHAR_WIDTH + 20.0)
        .collect();
    let mut x = vec![0.0f64; n];
    let mut y = vec![0.0f64; n];
    for (l, members) in layers.iter_mut().enumerate() {
        let centre = |i: usize, x: &[f64]| x[i] + width[i] / 2.0;
        let bary: Vec<(usize, f64)> = members
            .iter()
            .map(|&i| {
                let p = &preds[i];
                let b = if p.is_empty() {
                    f64::NAN
                } else {
                    p.iter().map(|&q| centre(q, &x)).sum::<f64>() / p.len() as f64
                };
                (i, b)
            })
            .collect();
        // A partition's nodes in this layer share the mean of their barycentres as sort key.
        let mut sums: BTreeMap<usize, (f64, usize)> = BTreeMap::new();
        for &(i, b) in &bary {
            if let (Some(c), false) = (graph.nodes[i].cluster, b.is_nan()) {
                let e = sums.entry(c).or_insert((0.0, 0));
                e.0 += b;
                e.1 += 1;
            }
        }
        let group_key = |i: usize, b: f64| -> f64 {
            match graph.nodes[i].cluster.and_then(|c| sums.get(&c)) {
                Some(&(sum, count)) => sum / count as f64,
                None => b,
            }
        };
        let mut keyed: Vec<(f64, Option<usize>, f64, usize)> = bary
            .iter()
            .map(|&(i, b)| (group_key(i, b), graph.nodes[i].cluster, b, i))
            .collect();
        keyed.sort_by(|a, b| {
            let key = |k: f64| if k.is_nan() { f64::NEG_INFINITY } else { k };
            key(a.0)
                .total_cmp(&key(b.0))
                .then(a.1.cmp(&b.1))
                .then(key(a.2).total_cmp(&key(b.2)))
                .then(a.3.cmp(&b.3))
        });
        members.clear();
        members.extend(keyed.iter().map(|k| k.3));
        let mut right = MARGIN - NODE_GAP;
        for (k, &(_, cluster, b, i)) in keyed.iter().enumerate() {
            // Room before a node that starts or leaves a partition, for the partition's box.
            let prev_cluster = k.checked_sub(1).and_then(|p| keyed[p].1);
            let extra = if cluster != prev_cluster {
                2.0 * CLUSTER_PAD
            } else {
                0.0
            };
            let lowest = right + NODE_GAP + extra;
            let wanted = if b.is_nan() {
                lowest
            } else {
                b - width[i] / 2.0
            };
            x[i] = wanted.max(lowest);
            y[i] = MARGIN + CLUSTER_LABEL + l as f64 * LAYER_GAP;
            right = x[i] + width[i];
        }
    }
    let total_width = (0..n).map(|i| x[i] + width[i]).fold(0.0, f64::max) + MARGIN;
    let total_height = MARGIN * 2.0 + CLUSTER_LABEL + depth as f64 * LAYER_GAP;
    Layout {
        x,
        y,
        width,
        total_width,
        total_height,
    }
}

/// Renders `graph` as one `<svg>` element.
pub fn render(graph: &ViewGraph) -> String {
    let lay = layout(graph);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w:.0}\" height=\"{h:.0}\" viewBox=\"0 0 {w:.0} {h:.0}\" font-family=\"Helvetica, Arial, sans-serif\" font-size=\"12\">",
        w = lay.total_width,
        h = lay.total_height
    );
    out.push_str("<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" orient=\"auto\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"#555\"/></marker></defs>\n");
    for (c, cluster) in graph.clusters.iter().enumerate() {
        let members = (0..graph.nodes.len()).filter(|&i| graph.nodes[i].cluster == Some(c));
        let (mut x0, mut y0, mut x1, mut y1) = (f64::MAX, f64::MAX, f64::MIN, f64::MIN);
        for i in members {
            x0 = x0.min(lay.x[i]);
            y0 = y0.min(lay.y[i]);
            x1 = x1.max(lay.x[i] + lay.width[i]);
            y1 = y1.max(lay.y[i] + NODE_HEIGHT);
        }
        if x0 > x1 {
            continue; // a partition without drawn nodes (only constants)
        }
        let colour = graph.colour(Some(&cluster.target));
        let _ = writeln!(
            out,
            "<g class=\"partition\"><rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" rx=\"8\" fill=\"{}\" fill-opacity=\"0.12\" stroke=\"{}\" stroke-width=\"2\"/><text x=\"{:.1}\" y=\"{:.1}\" fill=\"{}\" font-size=\"11\">{} ({})</text></g>",
            x0 - CLUSTER_PAD,
            y0 - CLUSTER_PAD - CLUSTER_LABEL,
            x1 - x0 + 2.0 * CLUSTER_PAD,
            y1 - y0 + 2.0 * CLUSTER_PAD + CLUSTER_LABEL,
            colour.stroke,
            colour.stroke,
            x0 - CLUSTER_PAD + 6.0,
            y0 - CLUSTER_PAD - 4.0,
            colour.stroke,
            escape(&cluster.name),
            escape(&cluster.target)
        );
    }
    for &(a, b) in &graph.edges {
        let (sx, sy) = (lay.x[a] + lay.width[a] / 2.0, lay.y[a] + NODE_HEIGHT);
        let (tx, ty) = (lay.x[b] + lay.width[b] / 2.0, lay.y[b]);
        let my = (sy + ty) / 2.0;
        let _ = writeln!(
            out,
            "<path d=\"M{sx:.1},{sy:.1} C{sx:.1},{my:.1} {tx:.1},{my:.1} {tx:.1},{ty:.1}\" fill=\"none\" stroke=\"#555\" stroke-width=\"1.2\" marker-end=\"url(#arrow)\"/>"
        );
    }
    for (i, node) in graph.nodes.iter().enumerate() {
        let colour = graph.colour(node.target.as_deref());
        let (rx, stroke_width) = match node.kind {
            NodeKind::Input | NodeKind::Output => (NODE_HEIGHT / 2.0, 1.0),
            NodeKind::Composite => (4.0, 2.5),
            NodeKind::Op | NodeKind::Opaque => (6.0, 1.0),
        };
        let _ = writeln!(
            out,
            "<g class=\"node\"><title>{}</title><rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{NODE_HEIGHT}\" rx=\"{rx}\" fill=\"{}\" stroke=\"{}\" stroke-width=\"{stroke_width}\"/><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text></g>",
            escape(&node.label),
            lay.x[i],
            lay.y[i],
            lay.width[i],
            colour.fill,
            colour.stroke,
            lay.x[i] + lay.width[i] / 2.0,
            lay.y[i] + NODE_HEIGHT / 2.0 + 4.0,
            escape(&node.label)
        );
    }
    out.push_str("</svg>\n");
    out
}

/// Escapes text for XML content and attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}
