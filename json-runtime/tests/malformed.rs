//! Malformed JSON graphs: each is rejected with an error naming the node and field.

use byoc_json_runtime::{FormatError, JsonGraph};

const BASE: &str = r#"{"nodes": [
 {"op": "input", "name": "x", "attrs": {"shape": [[[2, 2]]], "dtype": [["float32"]]}},
 {"op": "kernel", "name": "nn.relu", "inputs": [[0, 0, 0]], "attrs": {"num_inputs": "1", "num_outputs": "1", "shape": [[[2, 2]]], "dtype": [["float32"]]}},
 {"op": "kernel", "name": "tanh", "inputs": [[1, 0, 0]], "attrs": {"num_inputs": "1", "num_outputs": "1", "strides": [["1"]], "shape": [[[2, 2]]], "dtype": [["float32"]]}}
],
"arg_nodes": [0], "heads": [[2, 0, 0]], "node_row_ptr": [0, 1, 2, 3]}"#;

/// Applies one-time replacements to the base graph and returns the parse error text.
fn error_of(edits: &[(&str, &str)]) -> (FormatError, String) {
    let mut json = BASE.to_string();
    for (from, to) in edits {
        assert!(json.contains(from), "test edit '{from}' does not apply");
        json = json.replacen(from, to, 1);
    }
    let err = JsonGraph::parse(&json).unwrap_err();
    let text = err.to_string();
    (err, text)
}

fn expect(edits: &[(&str, &str)], needle: &str) {
    let (_, text) = error_of(edits);
    assert!(text.contains(needle), "expected '{needle}' in: {text}");
}

#[test]
fn base_graph_is_valid() {
    let g = JsonGraph::parse(BASE).unwrap();
    assert_eq!(g.nodes.len(), 3);
}

#[test]
fn structural_errors_name_line_and_key() {
    let (err, text) = error_of(&[("]]}}\n]", "]]}}\n")]);
    assert!(matches!(err, FormatError::Json(_)));
    assert!(text.contains("line"), "{text}");
    expect(
        &[("\"arg_nodes\"", "\"extra\": 1, \"arg_nodes\"")],
        "unknown field `extra`",
    );
    expect(&[("\"heads\": [[2, 0, 0]], ", "")], "missing field `heads`");
    expect(
        &[(
            "\"op\": \"input\", ",
            "\"op\": \"input\", \"color\": \"red\", ",
        )],
        "unknown field `color`",
    );
}

#[test]
fn unknown_op_kind() {
    expect(
        &[(
            "\"op\": \"kernel\", \"name\": \"tanh\"",
            "\"op\": \"kernal\", \"name\": \"tanh\"",
        )],
        "node 2: unknown op kind 'kernal' (expected input, const or kernel)",
    );
}

#[test]
fn dangling_entries() {
    expect(
        &[("\"inputs\": [[0, 0, 0]]", "\"inputs\": [[5, 0, 0]]")],
        "node 1 ('nn.relu') inputs: entry [5, 0, 0] is dangling: node 5 does not exist (the graph has 3 nodes; entry 0)",
    );
    expect(
        &[("\"inputs\": [[0, 0, 0]]", "\"inputs\": [[0, 1, 0]]")],
        "node 1 ('nn.relu') inputs: entry [0, 1, 0] is dangling: node 0 ('x') has 1 output(s), no output 1",
    );
    expect(
        &[("\"inputs\": [[0, 0, 0]]", "\"inputs\": [[0, 0, 0, 0]]")],
        "node 1 ('nn.relu') inputs: entry 0 has 4 elements",
    );
}

#[test]
fn heads_out_of_range_or_missing() {
    expect(
        &[("\"heads\": [[2, 0, 0]]", "\"heads\": [[9, 0, 0]]")],
        "heads: entry [9, 0, 0] is dangling: node 9 does not exist",
    );
    expect(
        &[("\"heads\": [[2, 0, 0]]", "\"heads\": []")],
        "heads: the graph has no outputs",
    );
}

#[test]
fn node_row_ptr_inconsistent() {
    expect(
        &[("[0, 1, 2, 3]", "[0, 1, 3, 4]")],
        "node_row_ptr: element 2 is 3 but the output counts of nodes 0..2 sum to 2",
    );
    expect(
        &[("[0, 1, 2, 3]", "[0, 1, 2]")],
        "node_row_ptr: has 3 elements but the graph has 3 nodes (expected 4)",
    );
}

#[test]
fn bad_shape_and_dtype_strings() {
    expect(
        &[(
            "\"shape\": [[[2, 2]]], \"dtype\": [[\"float32\"]]}}",
            "\"shape\": [[[\"a\"]]], \"dtype\": [[\"float32\"]]}}",
        )],
        "node 0 ('x'): attribute 'shape' must hold shapes (lists of integers), got [\"a\"]",
    );
    expect(
        &[("[[[2, 2]]]", "[[[2, -1]]]")],
        "node 0 ('x'): shape 0 [2, -1] has an invalid dimension",
    );
    // Each dimension fits, their product does not: refused, not wrapped.
    expect(
        &[("[[[2, 2]]]", "[[[4294967295, 4294967295, 4294967295]]]")],
        "node 0 ('x'): output 0: Tensor[(4294967295, 4294967295, 4294967295), float32] is too large: its size overflows 64 bits",
    );
    expect(
        &[("[[\"float32\"]]", "[[\"float33\"]]")],
        "node 0 ('x'): dtype 0 'float33' is not a dtype: unknown dtype 'float33'",
    );
    expect(
        &[("[[\"float32\"]]", "[[\"float32\", \"int8\"]]")],
        "node 0 ('x'): dtype count is 2 but shape gives 1",
    );
    expect(
        &[(
            "\"shape\": [[[2, 2]]], \"dtype\": [[\"float32\"]]}}",
            "\"dtype\": [[\"float32\"]]}}",
        )],
        "node 0 ('x'): missing attribute 'shape'",
    );
    expect(
        &[(
            "[[[2, 2]]], \"dtype\": [[\"float32\"]]}}",
            "[[]], \"dtype\": [[]]}}",
        )],
        "node 0 ('x'): attribute 'shape' must describe at least one output",
    );
    expect(
        &[("[[[2, 2]]]", "[[2, 2]]")],
        "node 0 ('x'): attribute 'shape' must hold shapes",
    );
}

#[test]
fn bad_attribute_encodings() {
    expect(
        &[("\"num_outputs\": \"1\"", "\"num_outputs\": \"2\"")],
        "node 1 ('nn.relu'): num_outputs is 2 but shape gives 1",
    );
    expect(
        &[("\"num_inputs\": \"1\"", "\"num_inputs\": \"3\"")],
        "node 1 ('nn.relu'): num_inputs is 3 but inputs gives 1",
    );
    expect(
        &[("\"num_inputs\": \"1\"", "\"num_inputs\": [[\"1\"]]")],
        "node 1 ('nn.relu'): attribute 'num_inputs' must be a string holding a count",
    );
    expect(
        &[("\"strides\": [[\"1\"]]", "\"strides\": [\"1\"]")],
        "node 2 ('tanh'): attribute 'strides' must be a list holding one list of strings, got [\"1\"]",
    );
    expect(
        &[("\"strides\": [[\"1\"]]", "\"strides\": [[1]]")],
        "node 2 ('tanh'): attribute 'strides' must hold strings, got 1",
    );
}

#[test]
fn cycles_and_forward_references() {
    let (err, text) = error_of(&[("\"inputs\": [[0, 0, 0]]", "\"inputs\": [[2, 0, 0]]")]);
    assert!(matches!(err, FormatError::Cycle { .. }), "{text}");
    assert!(
        text.contains("the graph has a cycle through this node"),
        "{text}"
    );
    expect(
        &[
            ("\"inputs\": [[0, 0, 0]]", "\"inputs\": [[2, 0, 0]]"),
            ("\"inputs\": [[1, 0, 0]]", "\"inputs\": [[0, 0, 0]]"),
        ],
        "node 1 ('nn.relu'): input 0 reads node 2, which comes later",
    );
    expect(
        &[("\"inputs\": [[0, 0, 0]]", "\"inputs\": [[1, 0, 0]]")],
        "node 1 ('nn.relu'): the graph has a cycle",
    );
}

#[test]
fn arg_nodes_must_list_the_leaves() {
    expect(
        &[("\"arg_nodes\": [0]", "\"arg_nodes\": [0, 1]")],
        "arg_nodes: node 1 ('nn.relu') is a kernel node",
    );
    expect(
        &[("\"arg_nodes\": [0]", "\"arg_nodes\": []")],
        "arg_nodes: input node 0 ('x') is not listed",
    );
    expect(
        &[("\"arg_nodes\": [0]", "\"arg_nodes\": [0, 0]")],
        "arg_nodes: node 0 is listed twice",
    );
    expect(
        &[("\"arg_nodes\": [0]", "\"arg_nodes\": [0, 7]")],
        "arg_nodes: node 7 does not exist",
    );
}

#[test]
fn leaves_cannot_have_inputs() {
    expect(
        &[(
            "\"name\": \"x\", ",
            "\"name\": \"x\", \"inputs\": [[0, 0, 0]], ",
        )],
        "node 0 ('x'): a input node cannot have inputs",
    );
}
