//! The drawable view of a partitioned module: the dataflow of `@main` with every call of an
//! external function (`Compiler` attribute) opened up into a cluster holding that function's
//! ops, so one picture shows which op runs where.
//!
//! Nodes are `@main`'s inputs, one output, primitive op calls, and composite calls (one node
//! named by the `Composite` attribute; the ops inside are not drawn separately). Constants are
//! not drawn. Tuples and tuple-get-items are followed through, not drawn: an edge goes from the
//! op that produced a value to the op that uses it. Calls of host global functions are opened
//! in place; a recursive call is drawn as one opaque node. Nodes are numbered in creation order,
//! which is a topological order (operands first).
//!
//! Colours: the host is grey; each target gets one palette entry, in the order of the selected
//! targets, then any other target found in the module in order of appearance.

use byoc_ir::{Callee, Expr, ExprId, Function, Module};

/// What a node stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeKind {
    /// A parameter of `@main`.
    Input,
    /// The result of `@main`.
    Output,
    /// A primitive op call.
    Op,
    /// A composite function call.
    Composite,
    /// A call the view does not open (a recursive global, a function-typed value).
    Opaque,
}

/// One drawn node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ViewNode {
    /// The text in the node: op name, composite name, parameter name.
    pub label: String,
    /// What the node stands for.
    pub kind: NodeKind,
    /// The target running it; `None` for the host (and inputs and the output).
    pub target: Option<String>,
    /// The partition holding it, an index into [`ViewGraph::clusters`].
    pub cluster: Option<usize>,
}

/// One partition: the call of an external function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cluster {
    /// The external function's name.
    pub name: String,
    /// Its target.
    pub target: String,
}

/// A drawing's colours.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Colour {
    /// Node fill.
    pub fill: &'static str,
    /// Cluster border and legend swatch.
    pub stroke: &'static str,
}

/// The host's colour.
pub const HOST_COLOUR: Colour = Colour {
    fill: "#e0e0e0",
    stroke: "#757575",
};

/// Target colours, in assignment order (cycled when there are more targets).
pub const TARGET_COLOURS: [Colour; 8] = [
    Colour {
        fill: "#aec7e8",
        stroke: "#1f77b4",
    },
    Colour {
        fill: "#ffbb78",
        stroke: "#ff7f0e",
    },
    Colour {
        fill: "#98df8a",
        stroke: "#2ca02c",
    },
    Colour {
        fill: "#ff9896",
        stroke: "#d62728",
    },
    Colour {
        fill: "#c5b0d5",
        stroke: "#9467bd",
    },
    Colour {
        fill: "#c49c94",
        stroke: "#8c564b",
    },
    Colour {
        fill: "#f7b6d2",
        stroke: "#e377c2",
    },
    Colour {
        fill: "#dbdb8d",
        stroke: "#bcbd22",
    },
];

/// The dataflow of `@main` with partitions opened up.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ViewGraph {
    /// Nodes in topological order.
    pub nodes: Vec<ViewNode>,
    /// Edges `(from, to)` between node indices, sorted, without duplicates; `from < to`.
    pub edges: Vec<(usize, usize)>,
    /// The partitions, in order of their calls in `@main`.
    pub clusters: Vec<Cluster>,
    /// Targets in colour order.
    pub targets: Vec<String>,
}

/// The nodes a value comes from; tuples keep their fields apart so get-item can pick one.
#[derive(Clone, Debug)]
enum Val {
    Nodes(Vec<usize>),
    Tuple(Vec<Val>),
}

impl Val {
    fn flatten(&self, out: &mut Vec<usize>) {
        match self {
            Val::Nodes(n) => out.extend_from_slice(n),
            Val::Tuple(fields) => fields.iter().for_each(|v| v.flatten(out)),
        }
    }
}

/// Where the function being opened runs.
#[derive(Clone, Copy)]
struct Place<'a> {
    cluster: Option<usize>,
    target: Option<&'a str>,
}

impl ViewGraph {
    /// The view of `module`'s `@main`; `targets` are the selected targets in priority order.
    /// `None` when there is no `@main`.
    pub fn of_main(module: &Module, targets: &[&str]) -> Option<Self> {
        let main = module.get("main")?;
        let mut g = ViewGraph {
            targets: targets.iter().map(|t| t.to_string()).collect(),
            ..ViewGraph::default()
        };
        let args = main
            .params
            .iter()
            .map(|&p| {
                let label = main.var(p).map_or("input", |v| v.name.as_str());
                Val::Nodes(vec![g.node(label, NodeKind::Input, Place::HOST)])
            })
            .collect();
        let mut stack = vec!["main".to_string()];
        let result = g.open(module, main, args, Place::HOST, &mut stack);
        let out = g.node("output", NodeKind::Output, Place::HOST);
        g.connect(&result, out);
        g.edges.sort_unstable();
        g.edges.dedup();
        for c in &g.clusters {
            if !g.targets.contains(&c.target) {
                g.targets.push(c.target.clone());
            }
        }
        Some(g)
    }

    /// The colour of a node or cluster running on `target` (`None`: the host).
    pub fn colour(&self, target: Option<&str>) -> Colour {
        match target.and_then(|t| self.targets.iter().position(|u| u == t)) {
            Some(i) => TARGET_COLOURS[i % TARGET_COLOURS.len()],
            None => HOST_COLOUR,
        }
    }

    fn node(&mut self, label: &str, kind: NodeKind, place: Place) -> usize {
        self.nodes.push(ViewNode {
            label: label.to_string(),
            kind,
            target: place.target.map(str::to_string),
            cluster: place.cluster,
        });
        self.nodes.len() - 1
    }

    fn connect(&mut self, from: &Val, to: usize) {
        let mut sources = Vec::new();
        from.flatten(&mut sources);
        self.edges.extend(sources.into_iter().map(|s| (s, to)));
    }

    /// Draws the live nodes of `f` (its parameters bound to `args`); returns its result.
    fn open<'m>(
        &mut self,
        module: &'m Module,
        f: &'m Function,
        args: Vec<Val>,
        place: Place<'m>,
        stack: &mut Vec<String>,
    ) -> Val {
        let live = f.live_ids();
        // Parameters (bound to `args`) and the insides of local functions are not drawn.
        let mut skip = inside_local_functions(f, &live);
        let mut vals: Vec<Val> = vec![Val::Nodes(Vec::new()); f.len()];
        for (&p, a) in f.params.iter().zip(args) {
            vals[p.index()] = a;
            skip[p.index()] = true;
        }
        for id in live {
            if skip[id.index()] {
                continue;
            }
            let val = match f.expr(id) {
                Expr::Var(_) | Expr::Constant(_) | Expr::Function(_) => continue,
                Expr::Tuple(fields) => {
                    Val::Tuple(fields.iter().map(|x| vals[x.index()].clone()).collect())
                }
                Expr::TupleGetItem { tuple, index } => match &vals[tuple.index()] {
                    Val::Tuple(fields) if *index < fields.len() => fields[*index].clone(),
                    other => other.clone(),
                },
                Expr::Call(call) => {
                    let arg_vals: Vec<Val> =
                        call.args.iter().map(|a| vals[a.index()].clone()).collect();
                    let opaque = |g: &mut Self, label: &str, kind| {
                        let n = g.node(label, kind, place);
                        arg_vals.iter().for_each(|a| g.connect(a, n));
                        Val::Nodes(vec![n])
                    };
                    match &call.callee {
                        Callee::Op(op) => opaque(self, op.name(), NodeKind::Op),
                        Callee::Local(callee) => {
                            match f
                                .expr(*callee)
                                .as_function()
                                .and_then(|lf| lf.attrs.get_str("Composite"))
                            {
                                Some(name) => opaque(self, name, NodeKind::Composite),
                                None => opaque(self, "fn", NodeKind::Opaque),
                            }
                        }
                        Callee::Global(name) => match module.get(name) {
                            Some(g) if !stack.contains(name) => {
                                let inner = match byoc_ir::partition::target_of(g) {
                                    Some(target) => {
                                        self.clusters.push(Cluster {
                                            name: name.clone(),
                                            target: target.to_string(),
                                        });
                                        Place {
                                            cluster: Some(self.clusters.len() - 1),
                                            target: Some(target),
                                        }
                                    }
                                    None => place,
                                };
                                stack.push(name.clone());
                                let v = self.open(module, g, arg_vals, inner, stack);
                                stack.pop();
                                v
                            }
                            _ => opaque(self, &format!("@{name}"), NodeKind::Opaque),
                        },
                    }
                }
            };
            vals[id.index()] = val;
        }
        vals[f.body.index()].clone()
    }
}

impl Place<'_> {
    const HOST: Place<'static> = Place {
        cluster: None,
        target: None,
    };
}

/// Marks, per arena slot, the live nodes that belong to local function literals (their
/// parameters and bodies). Operands precede users, so one backward sweep finds them all.
fn inside_local_functions(f: &Function, live: &[ExprId]) -> Vec<bool> {
    let mut inside = vec![false; f.len()];
    for &id in live.iter().rev() {
        let expr = f.expr(id);
        if let Expr::Function(lf) = expr {
            inside[lf.body.index()] = true;
            lf.params.iter().for_each(|p| inside[p.index()] = true);
        } else if inside[id.index()] {
            expr.operands()
                .iter()
                .for_each(|o| inside[o.index()] = true);
        }
    }
    inside
}
