//! ONNX importer tests: malformed and unsupported models give exact errors, random and mutated
//! bytes never panic, and the fixture models of `tests/data/onnx/` (written with their
//! onnxruntime outputs by `scripts/fixtures/gen_onnx_fixtures.py`) import to modules that
//! type-check and whose constant subgraphs are folded away.

#![allow(
    clippy::result_large_err,
    reason = "the importer's error type carries structured context by value (see core/onnx/src/lib.rs)"
)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use byoc_ir::Expr;
use byoc_ir::Module;
use byoc_onnx::{import_bytes, import_file, ImportOptions, OnnxError};
use proptest::prelude::*;

mod onnx_reference;

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/onnx")
}

fn error_of(name: &str, opts: &ImportOptions) -> String {
    match import_file(data_dir().join("errors").join(name), opts) {
        Ok(_) => panic!("{name} imported without error"),
        Err(e) => e.to_string(),
    }
}

fn no_opts() -> ImportOptions {
    ImportOptions::default()
}

#[test]
fn truncated_file_is_a_decode_error() {
    let err = error_of("truncated.onnx", &no_opts());
    assert_eq!(
        err,
        "not a valid ONNX model: protobuf decoding failed (failed to decode Protobuf message: \
         ModelProto.graph: buffer underflow); the file is truncated or not an ONNX file"
    );
}

#[test]
fn other_formats_are_rejected() {
    let err = error_of("not_onnx.onnx", &no_opts());
    assert!(
        err.starts_with("not a valid ONNX model: protobuf decoding failed ("),
        "{err}"
    );
    let err = import_bytes(b"", &no_opts()).unwrap_err().to_string();
    assert_eq!(err, "not an ONNX model: it has no graph");
}

#[test]
fn undefined_input_names_the_node_and_value() {
    let err = error_of("missing_initializer.onnx", &no_opts());
    assert_eq!(
        err,
        "node 'add0' (Add) uses input 'bias', which no node, initializer or graph input defines"
    );
}

#[test]
fn cycles_name_the_nodes_on_them() {
    let err = error_of("cyclic.onnx", &no_opts());
    assert_eq!(
        err,
        "the graph has a cycle through nodes 'loop_add', 'loop_relu'"
    );
}

#[test]
fn bad_attribute_types_name_node_and_attribute() {
    let err = error_of("bad_attribute.onnx", &no_opts());
    assert_eq!(
        err,
        "node 'conv0' (Conv): attribute 'strides' must be INTS, got FLOAT"
    );
}

#[test]
fn unsupported_ops_are_listed_with_counts() {
    let err = error_of("unsupported.onnx", &no_opts());
    assert_eq!(
        err,
        "unsupported ONNX ops: Celu (2 nodes, first 'celu_first'), Det (1 node, first 'det0'), \
         com.microsoft.NhwcConv (1 node, first 'ms_nhwc_conv')"
    );
    let e = import_file(data_dir().join("errors/unsupported.onnx"), &no_opts()).unwrap_err();
    match e {
        OnnxError::UnsupportedOps { ops } => assert_eq!(ops.len(), 3),
        other => panic!("unexpected error {other}"),
    }
}

#[test]
fn symbolic_dims_need_an_input_shape() {
    let err = error_of("symbolic.onnx", &no_opts());
    assert_eq!(
        err,
        "input 'x' has symbolic ('batch') dimension 0; fix its shape with --input-shape x=1,3,1,8"
    );
    let shapes = |s: &[usize]| ImportOptions {
        input_shapes: BTreeMap::from([("x".to_string(), s.to_vec())]),
    };
    let err = error_of("symbolic.onnx", &shapes(&[2, 4, 5, 8]));
    assert_eq!(
        err,
        "--input-shape x: dim 1 is fixed to 3 in the model, but 4 was given"
    );
    let err = error_of("symbolic.onnx", &shapes(&[2, 3, 5]));
    assert_eq!(
        err,
        "--input-shape x: the model declares rank 4, but 3 dims were given"
    );
    let err = error_of(
        "symbolic.onnx",
        &ImportOptions {
            input_shapes: BTreeMap::from([("y".to_string(), vec![1])]),
        },
    );
    assert_eq!(
        err,
        "--input-shape y: the model has no such input (inputs: x)"
    );
}

/// The op calls of `@main`, by name, with repetition.
fn op_names(m: &Module) -> Vec<String> {
    m.main().unwrap().op_names()
}

#[test]
fn symbolic_dims_fixed_by_input_shape_import() {
    let opts = ImportOptions {
        input_shapes: BTreeMap::from([("x".to_string(), vec![2, 3, 5, 8])]),
    };
    let m = import_file(data_dir().join("errors/symbolic.onnx"), &opts).unwrap();
    let main = m.main().unwrap();
    assert_eq!(
        main.ty(main.body).unwrap().to_string(),
        "Tensor[(2, 3, 5, 8), float32]"
    );
    assert_eq!(op_names(&m), ["nn.relu"]);
}

fn valid_model_bytes() -> Vec<u8> {
    std::fs::read(data_dir().join("conv/model.onnx")).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Arbitrary bytes give an error or a module, never a panic.
    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = import_bytes(&bytes, &no_opts());
    }

    /// A valid model with bytes flipped, cut or inserted gives an error or a module, never a
    /// panic.
    #[test]
    fn mutated_models_never_panic(
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        cut in any::<prop::sample::Index>(),
        insert in proptest::option::of((any::<prop::sample::Index>(), proptest::collection::vec(any::<u8>(), 1..16))),
    ) {
        let mut bytes = valid_model_bytes();
        for (at, value) in flips {
            let i = at.index(bytes.len());
            bytes[i] ^= value;
        }
        if let Some((at, extra)) = insert {
            let i = at.index(bytes.len());
            bytes.splice(i..i, extra);
        }
        let _ = import_bytes(&bytes, &no_opts());
        let end = cut.index(bytes.len());
        let _ = import_bytes(&bytes[..end], &no_opts());
    }
}

#[test]
fn shape_chains_and_constant_of_shape_fold_away() {
    let opts = ImportOptions {
        input_shapes: BTreeMap::from([("x".to_string(), vec![2, 3, 4, 4])]),
    };
    let m = import_file(data_dir().join("shape_chain/model.onnx"), &opts).unwrap();
    assert_eq!(op_names(&m), ["nn.conv2d", "nn.bias_add", "reshape"]);
    let main = m.main().unwrap();
    let weight = main
        .live_ids()
        .into_iter()
        .find_map(|id| match main.expr(id) {
            Expr::Constant(t) if t.shape() == [2, 3, 3, 3] => Some(t.clone()),
            _ => None,
        })
        .expect("the ConstantOfShape weight is a constant");
    assert!(weight.to_f64_vec().iter().all(|&v| v == 0.125));
    assert_eq!(
        main.ty(main.body).unwrap().to_string(),
        "Tensor[(2, 32), float32]"
    );
}

/// Imports fixture `case`, runs it on the host executor with its recorded inputs, and compares
/// every output with onnxruntime's (`onnx_reference`).
fn check_against_onnxruntime(case: &str) {
    if let Err(e) = onnx_reference::check_case(&data_dir().join(case)) {
        panic!("{case}: {e}");
    }
}

macro_rules! onnxruntime_cases {
    ($($case:ident),* $(,)?) => {
        $(
            #[test]
            fn $case() {
                check_against_onnxruntime(stringify!($case));
            }
        )*
    };
}

onnxruntime_cases!(
    binary,
    unary,
    clip_prelu_opset10,
    compare_where_cast,
    conv,
    gemm_matmul,
    norm_pool,
    softmax_opset11,
    softmax_opset13,
    shape_ops_opset11,
    shape_reduce_opset13,
    slice_opset9,
    shape_chain,
    resize_opset13,
    upsample_opset9,
    pool_ceil_mode,
    resize_fractional_scales,
    flatten_negative_axis,
);
