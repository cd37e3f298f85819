//! ONNX importer robustness: optional node outputs (Dropout's mask) used and unused, malformed
//! models built message by message (graph-output, duplicate-definition, opset and attribute
//! errors), and a deterministic mutation fuzzer over every fixture model of `tests/data/onnx/`.
//!
//! The fuzzer is a fixed-seed xorshift generator driving byte flips, truncations, insertions,
//! duplicated spans and length-field corruption; it runs a bounded number of iterations
//! (`FUZZ_ITERS`, overridable with `BYOC_ONNX_FUZZ_ITERS`) and asserts that the importer
//! returns (an error or a module) without panicking.

#![allow(
    clippy::result_large_err,
    reason = "the importer's error type carries structured context by value (see core/onnx/src/lib.rs)"
)]

use std::path::{Path, PathBuf};

use byoc_onnx::proto::{
    attribute_type, AttributeProto, Dimension, GraphProto, ModelProto, NodeProto,
    OperatorSetIdProto, TensorProto, TensorShapeProto, TypeProto, TypeProtoTensor, ValueInfoProto,
};
use byoc_onnx::{import_bytes, ImportOptions, OnnxError};
use prost::Message;

const FLOAT: i32 = 1;

fn tensor_info(name: &str, dims: &[i64]) -> ValueInfoProto {
    ValueInfoProto {
        name: name.into(),
        r#type: Some(TypeProto {
            tensor_type: Some(TypeProtoTensor {
                elem_type: FLOAT,
                shape: Some(TensorShapeProto {
                    dim: dims
                        .iter()
                        .map(|&d| Dimension {
                            dim_value: Some(d),
                            dim_param: None,
                        })
                        .collect(),
                }),
            }),
        }),
    }
}

fn node(name: &str, op_type: &str, inputs: &[&str], outputs: &[&str]) -> NodeProto {
    NodeProto {
        name: name.into(),
        op_type: op_type.into(),
        input: inputs.iter().map(|s| s.to_string()).collect(),
        output: outputs.iter().map(|s| s.to_string()).collect(),
        ..NodeProto::default()
    }
}

/// A model over input `x: [1, 4]` with `nodes`, returning `outputs`, at `opset`.
fn model(nodes: Vec<NodeProto>, outputs: &[&str], opset: i64) -> Vec<u8> {
    ModelProto {
        ir_version: 8,
        opset_import: vec![OperatorSetIdProto {
            domain: String::new(),
            version: opset,
        }],
        producer_name: "byoc-tests".into(),
        graph: Some(GraphProto {
            node: nodes,
            name: "g".into(),
            input: vec![tensor_info("x", &[1, 4])],
            output: outputs.iter().map(|o| tensor_info(o, &[1, 4])).collect(),
            ..GraphProto::default()
        }),
    }
    .encode_to_vec()
}

fn import_err(bytes: &[u8]) -> String {
    match import_bytes(bytes, &ImportOptions::default()) {
        Ok(_) => panic!("the model imported without error"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn dropout_with_an_unused_mask_imports() {
    let bytes = model(
        vec![
            node("drop", "Dropout", &["x"], &["y", "mask"]),
            node("relu", "Relu", &["y"], &["z"]),
        ],
        &["z"],
        13,
    );
    let module = import_bytes(&bytes, &ImportOptions::default()).unwrap();
    let main = module.main().unwrap();
    assert_eq!(
        main.ty(main.body).unwrap().to_string(),
        "Tensor[(1, 4), float32]"
    );
}

#[test]
fn dropout_with_a_used_mask_is_an_error() {
    let used_by_node = model(
        vec![
            node("drop", "Dropout", &["x"], &["y", "mask"]),
            node("cast", "Cast", &["mask"], &["z"]),
        ],
        &["z"],
        13,
    );
    assert_eq!(
        import_err(&used_by_node),
        "node 'drop' (Dropout): output 1 ('mask') is not supported"
    );
    let returned = model(
        vec![node("drop", "Dropout", &["x"], &["y", "mask"])],
        &["y", "mask"],
        13,
    );
    assert_eq!(
        import_err(&returned),
        "node 'drop' (Dropout): output 1 ('mask') is not supported"
    );
}

#[test]
fn graph_output_without_producer_is_an_error() {
    let bytes = model(vec![node("relu", "Relu", &["x"], &["y"])], &["nowhere"], 13);
    assert_eq!(
        import_err(&bytes),
        "graph output 'nowhere' is not produced by any node, initializer or graph input"
    );
}

#[test]
fn values_defined_twice_are_an_error() {
    let bytes = model(
        vec![
            node("a", "Relu", &["x"], &["y"]),
            node("b", "Sigmoid", &["x"], &["y"]),
        ],
        &["y"],
        13,
    );
    let err = import_err(&bytes);
    assert!(err.starts_with("value 'y' is defined twice"), "{err}");
}

#[test]
fn unsupported_opsets_are_errors() {
    for opset in [1, 99] {
        let bytes = model(vec![node("relu", "Relu", &["x"], &["y"])], &["y"], opset);
        assert_eq!(
            import_err(&bytes),
            format!("ONNX opset {opset} is not supported (supported: 7 to 23)")
        );
    }
}

#[test]
fn attribute_of_the_wrong_kind_names_node_and_attribute() {
    let mut softmax = node("sm", "Softmax", &["x"], &["y"]);
    softmax.attribute.push(AttributeProto {
        name: "axis".into(),
        r#type: attribute_type::STRING,
        s: b"last".to_vec(),
        ..AttributeProto::default()
    });
    let bytes = model(vec![softmax], &["y"], 13);
    assert_eq!(
        import_err(&bytes),
        "node 'sm' (Softmax): attribute 'axis' must be INT, got STRING"
    );
}

/// A flag (`keepdims`, `ceil_mode`, `transB`, ...) is 0 or 1 in the operator spec; 2, -1 or
/// 2^31 are refused naming the node and the attribute, never read as "true" (onnxruntime gives
/// such models other output shapes than a "true" would).
#[test]
fn flag_attributes_outside_zero_and_one_are_refused() {
    for value in [2, -1, 1 << 31, i64::MAX] {
        let mut reduce = node("rm", "ReduceMean", &["x"], &["y"]);
        reduce.attribute.push(AttributeProto {
            name: "keepdims".into(),
            r#type: attribute_type::INT,
            i: value,
            ..AttributeProto::default()
        });
        let bytes = model(vec![reduce], &["y"], 13);
        assert_eq!(
            import_err(&bytes),
            format!(
                "node 'rm' (ReduceMean): attribute 'keepdims' is {value}, but it is a flag: 0 or 1"
            )
        );
    }
}

#[test]
fn a_model_without_ir_version_is_rejected() {
    let mut m = ModelProto::decode(&model(vec![node("r", "Relu", &["x"], &["y"])], &["y"], 13)[..])
        .unwrap();
    m.ir_version = 0;
    assert!(matches!(
        import_bytes(&m.encode_to_vec(), &ImportOptions::default()),
        Err(OnnxError::NotAModel { .. })
    ));
}

/// `model` with its graph changed by `edit`.
fn edited(bytes: Vec<u8>, edit: impl FnOnce(&mut GraphProto)) -> Vec<u8> {
    let mut m = ModelProto::decode(&bytes[..]).unwrap();
    edit(m.graph.as_mut().unwrap());
    m.encode_to_vec()
}

fn floats(name: &str, dims: &[i64], values: &[f32]) -> TensorProto {
    TensorProto {
        name: name.into(),
        dims: dims.to_vec(),
        data_type: FLOAT,
        float_data: values.to_vec(),
        ..TensorProto::default()
    }
}

fn relu_model() -> Vec<u8> {
    model(vec![node("relu", "Relu", &["x"], &["y"])], &["y"], 13)
}

#[test]
fn a_graph_without_outputs_is_refused() {
    let bytes = edited(relu_model(), |g| g.output.clear());
    assert_eq!(
        import_err(&bytes),
        "invalid ONNX graph: the graph has no outputs"
    );
}

#[test]
fn graph_inputs_declared_twice_are_refused() {
    let bytes = edited(relu_model(), |g| g.input.push(tensor_info("x", &[1, 4])));
    assert_eq!(
        import_err(&bytes),
        "invalid ONNX graph: graph input 'x' is declared twice"
    );
}

#[test]
fn initializers_that_contradict_their_graph_input_are_refused() {
    let add = || model(vec![node("add", "Add", &["x", "b"], &["y"])], &["y"], 13);
    let bytes = edited(add(), |g| {
        g.input.push(tensor_info("b", &[1, 4]));
        g.initializer.push(floats("b", &[4, 1], &[1.0; 4]));
    });
    assert_eq!(
        import_err(&bytes),
        "invalid ONNX graph: initializer 'b' has shape [4, 1] but graph input 'b' declares [1, 4]"
    );
    let bytes = edited(add(), |g| {
        let mut int_input = tensor_info("b", &[1, 4]);
        let tensor = int_input
            .r#type
            .as_mut()
            .unwrap()
            .tensor_type
            .as_mut()
            .unwrap();
        tensor.elem_type = 7;
        g.input.push(int_input);
        g.initializer.push(floats("b", &[1, 4], &[1.0; 4]));
    });
    assert_eq!(
        import_err(&bytes),
        "invalid ONNX graph: initializer 'b' has element type float32 but graph input 'b' \
         declares int64"
    );
    // Agreeing ones are the input's default value.
    let bytes = edited(add(), |g| {
        g.input.push(tensor_info("b", &[1, 4]));
        g.initializer.push(floats("b", &[1, 4], &[1.0; 4]));
    });
    import_bytes(&bytes, &ImportOptions::default()).unwrap();
}

fn split_model(opset: i64, outputs: &[&str], split: Option<&[i64]>, as_attr: bool) -> Vec<u8> {
    let mut split_node = node("split0", "Split", &["x"], outputs);
    split_node.attribute.push(AttributeProto {
        name: "axis".into(),
        r#type: attribute_type::INT,
        i: 1,
        ..AttributeProto::default()
    });
    let mut inits = Vec::new();
    if let Some(sizes) = split {
        if as_attr {
            split_node.attribute.push(AttributeProto {
                name: "split".into(),
                r#type: attribute_type::INTS,
                ints: sizes.to_vec(),
                ..AttributeProto::default()
            });
        } else {
            split_node.input.push("sizes".into());
            inits.push(TensorProto {
                name: "sizes".into(),
                dims: vec![sizes.len() as i64],
                data_type: 7,
                int64_data: sizes.to_vec(),
                ..TensorProto::default()
            });
        }
    }
    edited(model(vec![split_node], outputs, opset), |g| {
        g.initializer = inits;
    })
}

/// Opset, outputs, split sizes, sizes given as an attribute, expected error.
type SplitCase = (
    i64,
    &'static [&'static str],
    Option<&'static [i64]>,
    bool,
    &'static str,
);

#[test]
fn impossible_splits_are_refused_not_split_equally() {
    let cases: [SplitCase; 6] = [
        (
            11,
            &["a", "b"],
            Some(&[1, 1]),
            true,
            "attribute 'split' [1, 1] does not add up to dim 1 of [1, 4]",
        ),
        (
            11,
            &["a", "b"],
            Some(&[1, 1, 2]),
            true,
            "attribute 'split' [1, 1, 2] has 3 sizes for 2 outputs",
        ),
        (
            13,
            &["a", "b"],
            Some(&[3, 3]),
            false,
            "input 1 (split) [3, 3] does not add up to dim 1 of [1, 4]",
        ),
        (
            13,
            &["a", "b"],
            Some(&[1, 3]),
            true,
            "attribute 'split' is not part of the op from opset 13 (it is input 1)",
        ),
        (
            13,
            &["a", "b", "c"],
            None,
            false,
            "dim 1 of [1, 4] does not split into 3 equal parts",
        ),
        (
            11,
            &["a", "b"],
            Some(&[-1, 5]),
            true,
            "attribute 'split' [-1, 5] has a negative size",
        ),
    ];
    for (opset, outputs, split, as_attr, want) in cases {
        let err = import_err(&split_model(opset, outputs, split, as_attr));
        assert_eq!(err, format!("node 'split0' (Split): {want}"));
    }
    // A valid split still imports.
    let ok = split_model(13, &["a", "b"], Some(&[1, 3]), false);
    import_bytes(&ok, &ImportOptions::default()).unwrap();
}

#[test]
fn non_finite_attributes_name_node_and_attribute() {
    for value in [f32::INFINITY, f32::NAN] {
        let mut leaky = node("leaky0", "LeakyRelu", &["x"], &["y"]);
        leaky.attribute.push(AttributeProto {
            name: "alpha".into(),
            r#type: attribute_type::FLOAT,
            f: value,
            ..AttributeProto::default()
        });
        assert_eq!(
            import_err(&model(vec![leaky], &["y"], 13)),
            format!("node 'leaky0' (LeakyRelu): attribute 'alpha' must be finite, got {value}")
        );
    }
}

/// `Resize(x: [1, 1, 2, 2], scales)` with `scales` an initializer.
fn resize_model(scales: [f32; 4]) -> Vec<u8> {
    let resize = node("resize0", "Resize", &["x", "", "scales"], &["y"]);
    edited(model(vec![resize], &["y"], 13), |g| {
        g.input = vec![tensor_info("x", &[1, 1, 2, 2])];
        g.initializer = vec![floats("scales", &[4], &scales)];
    })
}

#[test]
fn resize_scales_that_are_not_finite_or_too_large_are_refused() {
    for bad in [f32::NAN, f32::INFINITY, -2.0, 0.0] {
        let err = import_err(&resize_model([1.0, 1.0, bad, 2.0]));
        assert!(
            err.starts_with("node 'resize0' (Resize): scales [")
                && err.ends_with("every scale must be finite and positive"),
            "{err}"
        );
    }
    let err = import_err(&resize_model([1.0, 1.0, 1e30, 2.0]));
    assert!(
        err.starts_with("node 'resize0' (Resize): scales [")
            && err.contains("give an output dim of 2.0000000"),
        "{err}"
    );
}

#[test]
fn graph_inputs_too_large_to_address_are_refused() {
    let bytes = edited(relu_model(), |g| {
        g.input = vec![tensor_info("x", &[i64::MAX, 2])];
        g.output = vec![tensor_info("y", &[i64::MAX, 2])];
    });
    let err = import_err(&bytes);
    assert_eq!(
        err,
        format!(
            "'x': graph input Tensor[({}, 2), float32] is too large: its size overflows 64 bits",
            i64::MAX
        )
    );
}

/// Iterations of the mutation fuzzer over all fixture models together.
const FUZZ_ITERS: usize = 20_000;

/// A xorshift64* generator: deterministic, seedable, no dependency.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Every `model.onnx` under the fixture directory and the error fixtures.
fn fixture_models() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/onnx");
    let mut out = Vec::new();
    let mut dirs = vec![root];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "onnx") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// One random structural mutation of `bytes`.
fn mutate(bytes: &mut Vec<u8>, rng: &mut XorShift) {
    let len = bytes.len();
    match rng.below(6) {
        0 => {
            let i = rng.below(len);
            if let Some(b) = bytes.get_mut(i) {
                *b ^= 1 << rng.below(8);
            }
        }
        1 => bytes.truncate(rng.below(len)),
        2 => {
            let i = rng.below(len + 1);
            let extra: Vec<u8> = (0..1 + rng.below(8)).map(|_| rng.next() as u8).collect();
            bytes.splice(i..i, extra);
        }
        3 => {
            // Duplicate a span: repeated fields and messages appear twice.
            let start = rng.below(len);
            let end = (start + 1 + rng.below(64)).min(len);
            let span = bytes[start..end].to_vec();
            let at = rng.below(len + 1);
            bytes.splice(at..at, span);
        }
        4 => {
            // Set a byte to a varint boundary value: corrupts lengths, tags and counts.
            let i = rng.below(len);
            if let Some(b) = bytes.get_mut(i) {
                *b = [0x00, 0x01, 0x7f, 0x80, 0xff][rng.below(5)];
            }
        }
        _ => {
            let start = rng.below(len);
            let end = (start + 1 + rng.below(32)).min(len);
            bytes.drain(start..end);
        }
    }
}

#[test]
fn mutated_fixture_models_never_panic() {
    let models: Vec<Vec<u8>> = fixture_models()
        .iter()
        .map(|p| std::fs::read(p).unwrap())
        .collect();
    assert!(
        models.len() >= 10,
        "expected the ONNX fixtures, found {}",
        models.len()
    );
    let iters = std::env::var("BYOC_ONNX_FUZZ_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(FUZZ_ITERS);
    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
    let (mut ok, mut failed) = (0usize, 0usize);
    for _ in 0..iters {
        let mut bytes = models[rng.below(models.len())].clone();
        for _ in 0..1 + rng.below(4) {
            mutate(&mut bytes, &mut rng);
        }
        match import_bytes(&bytes, &ImportOptions::default()) {
            Ok(_) => ok += 1,
            Err(_) => failed += 1,
        }
    }
    assert_eq!(ok + failed, iters);
    eprintln!("{iters} mutated models: {ok} imported, {failed} rejected, no panic");
}
