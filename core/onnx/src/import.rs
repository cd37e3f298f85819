//! The graph walk: decode the model, check it (opset, op support, names, acyclicity), turn
//! initializers into constants and the other graph inputs into `@main` parameters, convert
//! the nodes in topological order, and return the graph outputs.
//!
//! Every check that looks at the whole graph runs before any node is converted, so a model
//! with several problems of one kind reports them together (all unsupported op types in one
//! error).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use prost::Message;

use super::convert::{converter, fused_converter};
use super::ctx::{Graph, NodeCtx};
use super::error::{NodeRef, UnsupportedOp};
use super::proto::{GraphProto, ModelProto, NodeProto, ValueInfoProto};
use super::tensor_proto::{dtype_of, tensor_from_proto};
use super::{ImportOptions, OnnxError, MAX_OPSET, MIN_OPSET};
use byoc_ir::analysis::graph::toposort_by_key;
use byoc_ir::rewrite::Rebuild;
use byoc_ir::{AttrValue, Attrs, ExprId, FunctionBuilder, IrError, Module, Type};

/// Imports a serialized model; `base_dir` is where its external data files are.
pub(crate) fn import(
    bytes: &[u8],
    base_dir: Option<&Path>,
    opts: &ImportOptions,
) -> Result<Module, OnnxError> {
    let mut model = ModelProto::decode(bytes).map_err(|e| OnnxError::Decode {
        reason: e.to_string(),
    })?;
    if model.graph.is_none() {
        return Err(OnnxError::NotAModel {
            reason: "it has no graph".into(),
        });
    }
    if model.ir_version <= 0 {
        return Err(OnnxError::NotAModel {
            reason: "it has no IR version".into(),
        });
    }
    let opset = default_opset(&model)?;
    let graph = model.graph.get_or_insert_default();
    check_supported(graph)?;
    super::qdq::fuse(graph);
    let graph = &*graph;
    check_graph(graph)?;
    let order = topological_order(graph)?;

    let mut g = Graph {
        b: FunctionBuilder::new(),
        opset,
        base_dir: base_dir.map(Path::to_path_buf),
    };
    let mut values: HashMap<&str, ExprId> = HashMap::new();
    for t in &graph.initializer {
        let tensor = tensor_from_proto(t, base_dir)?;
        values.insert(t.name.as_str(), g.b.constant(tensor));
    }
    let (params, input_names) = bind_inputs(&mut g.b, graph, &mut values, opts)?;

    let used = used_values(graph);
    for &index in &order {
        let node = &graph.node[index];
        convert_any(&mut g, node, node_ref(node, index), &mut values, &used)?;
    }

    let mut outputs = Vec::with_capacity(graph.output.len());
    for out in &graph.output {
        let id = *values
            .get(out.name.as_str())
            .ok_or_else(|| OnnxError::UndefinedOutput {
                output: out.name.clone(),
            })?;
        outputs.push(id);
    }
    let body = match outputs.as_slice() {
        [single] => *single,
        _ => g.b.tuple(&outputs)?,
    };
    let names = |list: Vec<String>| AttrValue::List(list.into_iter().map(AttrValue::Str).collect());
    let attrs = Attrs::new().with("input_names", names(input_names)).with(
        "output_names",
        names(graph.output.iter().map(|o| o.name.clone()).collect()),
    );
    let main = g.b.finish(params, body, attrs)?;
    // Folding leaves the replaced calls and their constant operands behind; drop them.
    let main = Rebuild::new(&main).run(|_, _| Ok::<_, IrError>(None))?;
    let mut module = Module::from_main(main);
    byoc_ir::infer_types(&mut module)?;
    Ok(module)
}

/// The default-domain opset, checked against the supported range.
fn default_opset(model: &ModelProto) -> Result<i64, OnnxError> {
    let version = model
        .opset_import
        .iter()
        .find(|o| o.domain.is_empty() || o.domain == "ai.onnx")
        .map(|o| o.version)
        .ok_or_else(|| OnnxError::NotAModel {
            reason: "it imports no default-domain (ai.onnx) opset".into(),
        })?;
    if !(MIN_OPSET..=MAX_OPSET).contains(&version) {
        return Err(OnnxError::Opset {
            version,
            min: MIN_OPSET,
            max: MAX_OPSET,
        });
    }
    Ok(version)
}

fn is_default_domain(node: &NodeProto) -> bool {
    node.domain.is_empty() || node.domain == "ai.onnx"
}

/// An `If`, which the importer inlines ([`inline_if`]) rather than converts.
fn is_if(node: &NodeProto) -> bool {
    is_default_domain(node) && node.op_type == "If"
}

/// The subgraphs of a node's attributes (`If`'s branches).
fn subgraphs(node: &NodeProto) -> impl Iterator<Item = &GraphProto> {
    node.attribute.iter().filter_map(|a| a.g.as_deref())
}

/// The outer values a node's subgraphs read: names their nodes use that the subgraph itself
/// (its inputs, initializers and nodes) does not define, at any depth.
fn captured(node: &NodeProto) -> Vec<&str> {
    let mut out = Vec::new();
    for graph in subgraphs(node) {
        let mut defined: HashSet<&str> = graph
            .initializer
            .iter()
            .map(|t| t.name.as_str())
            .chain(graph.input.iter().map(|i| i.name.as_str()))
            .collect();
        let mut reads = Vec::new();
        for inner in &graph.node {
            for name in inner
                .input
                .iter()
                .map(String::as_str)
                .chain(captured(inner))
            {
                if !defined.contains(name) {
                    reads.push(name);
                }
            }
            defined.extend(inner.output.iter().map(String::as_str));
        }
        reads.extend(
            graph
                .output
                .iter()
                .map(|o| o.name.as_str())
                .filter(|name| !defined.contains(name)),
        );
        for name in reads {
            if !name.is_empty() && !out.contains(&name) {
                out.push(name);
            }
        }
    }
    out
}

fn node_ref(node: &NodeProto, index: usize) -> NodeRef {
    NodeRef {
        name: if node.name.is_empty() {
            format!("#{index}")
        } else {
            node.name.clone()
        },
        op_type: node.op_type.clone(),
    }
}

/// Lists every op type without a converter, with its count and first node.
fn check_supported(graph: &GraphProto) -> Result<(), OnnxError> {
    let mut missing: BTreeMap<String, UnsupportedOp> = BTreeMap::new();
    for (i, node) in graph.node.iter().enumerate() {
        if converter(&node.domain, &node.op_type).is_some() || is_if(node) {
            continue;
        }
        let op_type = if is_default_domain(node) {
            node.op_type.clone()
        } else {
            format!("{}.{}", node.domain, node.op_type)
        };
        missing
            .entry(op_type.clone())
            .or_insert_with(|| UnsupportedOp {
                op_type,
                count: 0,
                first_node: node_ref(node, i).name,
            })
            .count += 1;
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(OnnxError::UnsupportedOps {
            ops: missing.into_values().collect(),
        })
    }
}

/// Whole-graph rules checked before conversion: the graph has outputs, no graph input is
/// declared twice, and an initializer that is also a graph input (its default value) has the
/// input's dtype and declared dims.
fn check_graph(graph: &GraphProto) -> Result<(), OnnxError> {
    let invalid = |reason: String| OnnxError::InvalidGraph { reason };
    if graph.output.is_empty() {
        return Err(invalid("the graph has no outputs".into()));
    }
    let mut seen = HashSet::new();
    for vi in &graph.input {
        if !seen.insert(vi.name.as_str()) {
            return Err(invalid(format!(
                "graph input '{}' is declared twice",
                vi.name
            )));
        }
    }
    for t in &graph.initializer {
        let declared = graph
            .input
            .iter()
            .find(|vi| vi.name == t.name)
            .and_then(|vi| vi.r#type.as_ref()?.tensor_type.as_ref());
        let Some(tt) = declared else { continue };
        if tt.elem_type != 0 && tt.elem_type != t.data_type {
            return Err(invalid(format!(
                "initializer '{}' has element type {} but graph input '{}' declares {}",
                t.name,
                type_name(t.data_type),
                t.name,
                type_name(tt.elem_type)
            )));
        }
        let Some(shape) = &tt.shape else { continue };
        let agrees = shape.dim.len() == t.dims.len()
            && shape
                .dim
                .iter()
                .zip(&t.dims)
                .all(|(d, &v)| d.dim_value.is_none_or(|want| want < 0 || want == v));
        if !agrees {
            let decl: Vec<String> = shape
                .dim
                .iter()
                .map(|d| match (d.dim_value, d.dim_param.as_deref()) {
                    (Some(v), _) => v.to_string(),
                    (None, Some(p)) if !p.is_empty() => p.to_string(),
                    _ => "?".to_string(),
                })
                .collect();
            return Err(invalid(format!(
                "initializer '{}' has shape {:?} but graph input '{}' declares [{}]",
                t.name,
                t.dims,
                t.name,
                decl.join(", ")
            )));
        }
    }
    Ok(())
}

/// An ONNX element type's name for messages (its number when unknown).
fn type_name(elem_type: i32) -> String {
    dtype_of(elem_type).map_or_else(|_| format!("#{elem_type}"), |d| d.to_string())
}

/// The nodes in a topological order (the file's order where it already is one), after checking
/// that every value has exactly one definition and every input is defined.
fn topological_order(graph: &GraphProto) -> Result<Vec<usize>, OnnxError> {
    let n = graph.node.len();
    let describe = |p: Option<usize>| match p {
        Some(i) => node_ref(&graph.node[i], i).to_string(),
        None => "an initializer".to_string(),
    };
    // The defining node of each value; `None` for initializers and graph inputs.
    let mut producer: HashMap<&str, Option<usize>> = HashMap::new();
    for t in &graph.initializer {
        if producer.insert(t.name.as_str(), None).is_some() {
            return Err(OnnxError::DuplicateValue {
                value: t.name.clone(),
                first: describe(None),
                second: describe(None),
            });
        }
    }
    for vi in &graph.input {
        producer.entry(vi.name.as_str()).or_insert(None);
    }
    for (i, node) in graph.node.iter().enumerate() {
        for out in node.output.iter().filter(|o| !o.is_empty()) {
            if let Some(prev) = producer.insert(out.as_str(), Some(i)) {
                return Err(OnnxError::DuplicateValue {
                    value: out.clone(),
                    first: describe(prev),
                    second: describe(Some(i)),
                });
            }
        }
    }
    let mut pending = vec![0u32; n];
    let mut users: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, node) in graph.node.iter().enumerate() {
        let reads = node.input.iter().map(String::as_str).chain(captured(node));
        for input in reads.filter(|x| !x.is_empty()) {
            match producer.get(input) {
                None => {
                    return Err(OnnxError::UndefinedInput {
                        node: node_ref(node, i),
                        input: input.to_string(),
                    })
                }
                Some(None) => {}
                Some(Some(p)) => {
                    pending[i] += 1;
                    users[*p].push(i);
                }
            }
        }
    }
    // Taking the earliest ready node first keeps the file's order where it is topological.
    let keys: Vec<Option<usize>> = (0..n).map(Some).collect();
    toposort_by_key(&keys, pending, |i| users[i].iter().copied()).map_err(|cycle| {
        OnnxError::Cycle {
            nodes: cycle_nodes(graph, &cycle.left, &users),
        }
    })
}

/// The nodes a topological sort could not place (`left`, in increasing order) that lie on a
/// cycle: those that also survive peeling off, from the sink side, every node none of whose
/// users remain.
fn cycle_nodes(graph: &GraphProto, left: &[usize], users: &[Vec<usize>]) -> Vec<String> {
    let mut on_cycle = vec![false; users.len()];
    for &i in left {
        on_cycle[i] = true;
    }
    loop {
        let sink =
            (0..on_cycle.len()).find(|&i| on_cycle[i] && !users[i].iter().any(|&u| on_cycle[u]));
        match sink {
            Some(i) => on_cycle[i] = false,
            None => break,
        }
    }
    (0..on_cycle.len())
        .filter(|&i| on_cycle[i])
        .map(|i| node_ref(&graph.node[i], i).name)
        .collect()
}

/// Makes graph inputs that are not initializers into `@main` parameters; returns them and
/// their ONNX names.
fn bind_inputs<'g>(
    b: &mut FunctionBuilder,
    graph: &'g GraphProto,
    values: &mut HashMap<&'g str, ExprId>,
    opts: &ImportOptions,
) -> Result<(Vec<ExprId>, Vec<String>), OnnxError> {
    let initializers: HashSet<&str> = graph.initializer.iter().map(|t| t.name.as_str()).collect();
    let inputs: Vec<&ValueInfoProto> = graph
        .input
        .iter()
        .filter(|vi| !initializers.contains(vi.name.as_str()))
        .collect();
    for name in opts.input_shapes.keys() {
        if !inputs.iter().any(|vi| &vi.name == name) {
            let known: Vec<&str> = inputs.iter().map(|vi| vi.name.as_str()).collect();
            return Err(OnnxError::InputShape {
                input: name.clone(),
                reason: format!("the model has no such input (inputs: {})", known.join(", ")),
            });
        }
    }
    let mut used = HashSet::new();
    let mut params = Vec::with_capacity(inputs.len());
    let mut names = Vec::with_capacity(inputs.len());
    for vi in inputs {
        let ty = input_type(vi, opts.input_shapes.get(&vi.name))?;
        byoc_ir::memory::check_tensor(&ty).map_err(|e| OnnxError::BadValue {
            name: vi.name.clone(),
            reason: format!("graph input {e}"),
        })?;
        let p = b.param(sanitize(&vi.name, &mut used), Type::Tensor(ty));
        values.insert(vi.name.as_str(), p);
        params.push(p);
        names.push(vi.name.clone());
    }
    Ok((params, names))
}

/// The static type of a graph input: its declared shape, or the `--input-shape` override
/// (which must agree with the declared rank and fixed dims).
fn input_type(
    vi: &ValueInfoProto,
    fixed: Option<&Vec<usize>>,
) -> Result<byoc_ir::TensorType, OnnxError> {
    let bad = |reason: String| OnnxError::BadValue {
        name: vi.name.clone(),
        reason,
    };
    let tt = vi
        .r#type
        .as_ref()
        .and_then(|t| t.tensor_type.as_ref())
        .ok_or_else(|| {
            bad(
                "graph input is not a tensor (sequence, map and optional inputs are not supported)"
                    .into(),
            )
        })?;
    let dtype = dtype_of(tt.elem_type).map_err(bad)?;
    let value_of = |d: &super::proto::Dimension| d.dim_value.and_then(byoc_ir::dims::dim);
    if let Some(shape) = fixed {
        if let Some(decl) = &tt.shape {
            let flag_error = |reason: String| OnnxError::InputShape {
                input: vi.name.clone(),
                reason,
            };
            if decl.dim.len() != shape.len() {
                return Err(flag_error(format!(
                    "the model declares rank {}, but {} dims were given",
                    decl.dim.len(),
                    shape.len()
                )));
            }
            for (i, (d, &s)) in decl.dim.iter().zip(shape).enumerate() {
                if let Some(v) = value_of(d) {
                    if v != s {
                        return Err(flag_error(format!(
                            "dim {i} is fixed to {v} in the model, but {s} was given"
                        )));
                    }
                }
            }
        }
        return Ok(byoc_ir::TensorType::new(shape.clone(), dtype));
    }
    let decl = tt.shape.as_ref().ok_or_else(|| {
        bad(format!(
            "graph input has no declared shape; give it with --input-shape {}=D0,D1,...",
            vi.name
        ))
    })?;
    let mut shape = Vec::with_capacity(decl.dim.len());
    for (i, d) in decl.dim.iter().enumerate() {
        match value_of(d) {
            Some(v) => shape.push(v),
            None => {
                let example: Vec<String> = decl
                    .dim
                    .iter()
                    .map(|d| value_of(d).map_or_else(|| "1".to_string(), |v| v.to_string()))
                    .collect();
                return Err(OnnxError::SymbolicDim {
                    input: vi.name.clone(),
                    dim: i,
                    what: match d.dim_param.as_deref() {
                        Some(p) if !p.is_empty() => format!("symbolic ('{p}')"),
                        _ => "unknown".to_string(),
                    },
                    example: example.join(","),
                });
            }
        }
    }
    Ok(byoc_ir::TensorType::new(shape, dtype))
}

/// A parameter name valid in the text format (`[A-Za-z_][A-Za-z0-9_]*`), unique in `used`:
/// other characters become `_`, a leading digit gets a `_` prefix, clashes a numeric suffix.
pub(crate) fn sanitize(name: &str, used: &mut HashSet<String>) -> String {
    let mut base: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if base.is_empty() || base.starts_with(|c: char| c.is_ascii_digit()) {
        base.insert(0, '_');
    }
    let mut candidate = base.clone();
    let mut k = 1;
    while used.contains(&candidate) {
        candidate = format!("{base}_{k}");
        k += 1;
    }
    used.insert(candidate.clone());
    candidate
}

/// Every value name that a node reads (inside its subgraphs too) or the graph returns.
fn used_values(graph: &GraphProto) -> HashSet<&str> {
    graph
        .node
        .iter()
        .flat_map(|n| n.input.iter().map(String::as_str).chain(captured(n)))
        .chain(graph.output.iter().map(|o| o.name.as_str()))
        .collect()
}

/// Converts one node: an `If` by inlining its taken branch, any other by its converter.
fn convert_any<'g>(
    g: &mut Graph,
    node: &'g NodeProto,
    at: NodeRef,
    values: &mut HashMap<&'g str, ExprId>,
    used: &HashSet<&str>,
) -> Result<(), OnnxError> {
    if is_if(node) {
        inline_if(g, node, at, values, used)
    } else {
        convert_node(g, node, at, values, used)
    }
}

/// Converts an `If` whose condition is a constant at import (a shape test, a flag
/// initializer): the nodes of the branch it takes are converted in place, seeing every outer
/// value, and the branch's outputs become the node's. A condition computed from graph inputs
/// is refused naming the node.
fn inline_if<'g>(
    g: &mut Graph,
    node: &'g NodeProto,
    at: NodeRef,
    values: &mut HashMap<&'g str, ExprId>,
    used: &HashSet<&str>,
) -> Result<(), OnnxError> {
    let err = |reason: String| OnnxError::Node {
        node: at.clone(),
        reason,
    };
    let cond_name = node
        .input
        .first()
        .filter(|n| !n.is_empty())
        .ok_or_else(|| err("required input 0 (cond) is missing".into()))?;
    let cond = *values
        .get(cond_name.as_str())
        .ok_or_else(|| OnnxError::UndefinedInput {
            node: at.clone(),
            input: cond_name.clone(),
        })?;
    let taken = match g.b.get(cond).and_then(|e| e.as_constant()) {
        Some(t) => match t.to_f64_vec().as_slice() {
            [v] => *v != 0.0,
            v => return Err(err(format!("the condition holds {} values, not one", v.len()))),
        },
        None => {
            return Err(err(format!(
                "the condition '{cond_name}' is computed from graph inputs at run time; only an If whose condition folds to a constant at import is supported"
            )))
        }
    };
    let branch_name = if taken { "then_branch" } else { "else_branch" };
    let branch = node
        .attribute
        .iter()
        .find(|a| a.name == branch_name)
        .and_then(|a| a.g.as_deref())
        .ok_or_else(|| err(format!("attribute '{branch_name}' (a graph) is missing")))?;
    if branch.output.len() != node.output.len() {
        return Err(err(format!(
            "{branch_name} has {} outputs, the node {}",
            branch.output.len(),
            node.output.len()
        )));
    }
    for t in &branch.initializer {
        let tensor = tensor_from_proto(t, g.base_dir.as_deref())?;
        values.insert(t.name.as_str(), g.b.constant(tensor));
    }
    let mut inner_used = used_values(branch);
    inner_used.extend(used.iter().copied());
    for (i, inner) in branch.node.iter().enumerate() {
        convert_any(g, inner, node_ref(inner, i), values, &inner_used)?;
    }
    for (out, result) in node.output.iter().zip(&branch.output) {
        if out.is_empty() {
            continue;
        }
        let id = *values.get(result.name.as_str()).ok_or_else(|| {
            err(format!(
                "{branch_name} does not compute its output '{}'",
                result.name
            ))
        })?;
        values.insert(out.as_str(), id);
    }
    Ok(())
}

/// Converts one node and records its outputs. An output the converter does not compute (an
/// optional output such as Dropout's mask) is an error only when something in `used` reads it.
fn convert_node<'g>(
    g: &mut Graph,
    node: &'g NodeProto,
    at: NodeRef,
    values: &mut HashMap<&'g str, ExprId>,
    used: &HashSet<&str>,
) -> Result<(), OnnxError> {
    let inputs =
        node.input
            .iter()
            .map(|name| {
                if name.is_empty() {
                    return Ok(None);
                }
                values.get(name.as_str()).copied().map(Some).ok_or_else(|| {
                    OnnxError::UndefinedInput {
                        node: at.clone(),
                        input: name.clone(),
                    }
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
    let convert = converter(&node.domain, &node.op_type)
        .or_else(|| fused_converter(&node.op_type))
        .ok_or_else(|| OnnxError::UnsupportedOps {
            ops: vec![UnsupportedOp {
                op_type: node.op_type.clone(),
                count: 1,
                first_node: at.name.clone(),
            }],
        })?;
    let mut ctx = NodeCtx {
        g,
        node,
        at: at.clone(),
        inputs,
    };
    let outs = convert(&mut ctx)?;
    for (i, name) in node.output.iter().enumerate() {
        if name.is_empty() || (i >= outs.len() && !used.contains(name.as_str())) {
            continue;
        }
        let id = outs.get(i).ok_or_else(|| OnnxError::Node {
            node: at.clone(),
            reason: format!("output {i} ('{name}') is not supported"),
        })?;
        values.insert(name.as_str(), *id);
    }
    Ok(())
}
