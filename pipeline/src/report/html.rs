//! One self-contained HTML page (`byoc inspect --format html`): a legend of target colours,
//! the graph drawn as inline SVG ([`super::svg`]), and the summary as tables: external
//! functions, host ops, rejected ops with reasons, declined composites and pruned partitions
//! with reasons. No scripts, no external styles or fonts: the file opens offline.

use std::fmt::Write as _;

use super::graph::{ViewGraph, HOST_COLOUR};
use super::summary::Summary;
use super::svg::{self, escape};

const STYLE: &str = "body{font-family:Helvetica,Arial,sans-serif;margin:24px;color:#222}\
h1{font-size:20px}h2{font-size:16px;margin-top:28px}\
table{border-collapse:collapse;margin:8px 0}th,td{border:1px solid #ccc;padding:4px 10px;text-align:left;vertical-align:top}\
th{background:#f3f3f3}.swatch{display:inline-block;width:14px;height:14px;border-radius:3px;vertical-align:middle;margin-right:6px;border:1px solid}\
.legend span.item{margin-right:18px}.graph{overflow:auto;border:1px solid #ddd;padding:4px}.none{color:#777}";

/// Renders the page.
pub fn render(graph: &ViewGraph, summary: &Summary) -> String {
    let mut out = String::new();
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    out.push_str("<title>byoc partitioning report</title>\n");
    let _ = writeln!(out, "<style>{STYLE}</style>\n</head>\n<body>");
    let offloaded: usize = summary.functions.iter().map(|f| f.ops.len()).sum();
    let _ = writeln!(
        out,
        "<h1>Partitioning report</h1>\n<p>{} partition(s); {} op(s) offloaded, {} op(s) on the host.</p>",
        summary.functions.len(),
        offloaded,
        summary.host_ops.len()
    );
    out.push_str("<p class=\"legend\">");
    legend_item(&mut out, "host", HOST_COLOUR.fill, HOST_COLOUR.stroke);
    for t in &graph.targets {
        let c = graph.colour(Some(t));
        legend_item(&mut out, t, c.fill, c.stroke);
    }
    out.push_str("</p>\n<div class=\"graph\">\n");
    out.push_str(&svg::render(graph));
    out.push_str("</div>\n");

    out.push_str("<h2>Partitions</h2>\n");
    table(
        &mut out,
        &[
            "function",
            "target",
            "ops",
            "composites",
            "inputs",
            "outputs",
        ],
        summary.functions.iter().map(|f| {
            vec![
                f.name.clone(),
                f.target.clone(),
                counted(&f.ops),
                counted(&f.composites),
                f.num_inputs.to_string(),
                f.num_outputs.to_string(),
            ]
        }),
    );
    out.push_str("<h2>Host ops</h2>\n");
    table(
        &mut out,
        &["op", "calls"],
        runs(&summary.host_ops)
            .into_iter()
            .map(|(op, n)| vec![op.to_string(), n.to_string()]),
    );
    out.push_str("<h2>Rejected (why ops stayed on the host)</h2>\n");
    table(
        &mut out,
        &["op", "target", "reason", "calls"],
        summary.rejected.iter().map(|r| {
            vec![
                r.op.clone(),
                r.target.clone(),
                r.reason.clone(),
                r.count.to_string(),
            ]
        }),
    );
    out.push_str("<h2>Declined composites (pattern matches a check rejected)</h2>\n");
    table(
        &mut out,
        &["pattern", "root op", "reason", "matches"],
        summary.declined.iter().map(|d| {
            vec![
                d.pattern.clone(),
                d.op.clone(),
                d.reason.clone(),
                d.count.to_string(),
            ]
        }),
    );
    out.push_str("<h2>Pruned partitions (inlined back into the host)</h2>\n");
    table(
        &mut out,
        &["function", "target", "reason"],
        summary
            .pruned
            .iter()
            .map(|p| vec![p.name.clone(), p.target.clone(), p.reason.clone()]),
    );
    out.push_str("</body>\n</html>\n");
    out
}

fn legend_item(out: &mut String, name: &str, fill: &str, stroke: &str) {
    let _ = write!(
        out,
        "<span class=\"item\"><span class=\"swatch\" style=\"background:{fill};border-color:{stroke}\"></span>{}</span>",
        escape(name)
    );
}

fn table(out: &mut String, header: &[&str], rows: impl Iterator<Item = Vec<String>>) {
    let mut body = String::new();
    for row in rows {
        body.push_str("<tr>");
        for cell in row {
            let _ = write!(body, "<td>{}</td>", escape(&cell));
        }
        body.push_str("</tr>\n");
    }
    if body.is_empty() {
        out.push_str("<p class=\"none\">none</p>\n");
        return;
    }
    out.push_str("<table>\n<tr>");
    for h in header {
        let _ = write!(out, "<th>{h}</th>");
    }
    out.push_str("</tr>\n");
    out.push_str(&body);
    out.push_str("</table>\n");
}

/// Runs of equal items in a sorted list: `(item, count)`.
fn runs(sorted: &[String]) -> Vec<(&str, usize)> {
    let mut out: Vec<(&str, usize)> = Vec::new();
    for s in sorted {
        match out.last_mut() {
            Some((last, n)) if *last == s.as_str() => *n += 1,
            _ => out.push((s.as_str(), 1)),
        }
    }
    out
}

/// A sorted list with repetition in short form: `add ×2, nn.conv2d`.
fn counted(sorted: &[String]) -> String {
    runs(sorted)
        .into_iter()
        .map(|(s, n)| {
            if n == 1 {
                s.to_string()
            } else {
                format!("{s} ×{n}")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}
