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
    reason = "the importer's error type carries structured context by value (see core/src/onnx/mod.rs)"
)]

use std::path::{Path, PathBuf};

use byoc_core::onnx::proto::{
    attribute_type, AttributeProto, Dimension, GraphProto, ModelProto, NodeProto,
    OperatorSetIdProto, TensorShapeProto, TypeProto, TypeProtoTensor, ValueInfoProto,
};
use byoc_core::onnx::{import_bytes, ImportOptions, OnnxError};
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
            format!("ONNX opset {opset} is not supported (supported: 7 to 21)")
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
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/onnx");
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
