//! A graph and its constants as bytes: the documented layout, round trips (bytes, graph,
//! constants and numerics against numpy), and damaged or inconsistent records refused with
//! errors that say what and where.

mod common;

use std::sync::Arc;

use byoc_exec::json_host::HostProvider;
use byoc_ir::tensor::Tensor;
use byoc_ir::{DType, TensorType};
use byoc_json_runtime::binary::{FORMAT_VERSION, MAGIC};
use byoc_json_runtime::{BinaryError, JsonGraph, JsonRuntime, Serialized};
use common::{assert_close, fixture, run, Fixture};

fn serialized(name: &str) -> (Serialized, Fixture) {
    let fx = fixture(name);
    let graph = JsonGraph::parse(&fx.json).unwrap();
    let constants = fx.constants(&graph.const_names());
    (Serialized { graph, constants }, fx)
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap())
}

#[test]
fn the_layout_is_the_documented_one() {
    let (s, _) = serialized("tvm_dnnl_conv2d_bias_relu");
    let bytes = s.to_bytes().unwrap();
    let json = s.graph.to_json();
    assert_eq!(&bytes[..8], MAGIC);
    assert_eq!(bytes[8..12], FORMAT_VERSION.to_le_bytes());
    assert_eq!(u64_at(&bytes, 12), json.len() as u64);
    let mut at = 20 + json.len();
    assert_eq!(&bytes[20..at], json.as_bytes());
    assert_eq!(u64_at(&bytes, at), 2);
    at += 8;
    for name in s.graph.const_names() {
        let t = &s.constants[&name];
        assert_eq!(u64_at(&bytes, at), t.as_bytes().len() as u64);
        at += 8;
        assert_eq!(&bytes[at..at + t.as_bytes().len()], t.as_bytes());
        at += t.as_bytes().len();
    }
    assert_eq!(at, bytes.len());
}

#[test]
fn records_round_trip_and_run_like_numpy() {
    for name in ["tvm_dnnl_conv2d_bias_relu", "tvm_dnnl_combined"] {
        let (s, fx) = serialized(name);
        let bytes = s.to_bytes().unwrap();
        assert_eq!(s.to_bytes().unwrap(), bytes, "{name}: deterministic");
        let back = Serialized::from_bytes(&bytes).unwrap();
        assert_eq!(back.graph, s.graph, "{name}");
        assert_eq!(back.constants.len(), s.constants.len(), "{name}");
        for (k, t) in &s.constants {
            assert_eq!(back.constants[k], *t, "{name}: {k}");
        }
        let rt = JsonRuntime::from_bytes(&bytes, HostProvider).unwrap();
        assert!(rt.is_initialized());
        assert_eq!(rt.to_bytes().unwrap(), bytes, "{name}");
        let inputs: Vec<Tensor> = rt
            .input_names()
            .iter()
            .map(|n| fx.arrays[n].clone())
            .collect();
        let out = run(&rt, &inputs);
        assert_close(&out[0], &fx.arrays["expected"], 1e-4, 1e-4);
    }
}

#[test]
fn damaged_records_are_refused() {
    let (s, _) = serialized("tvm_dnnl_conv2d_bias_relu");
    let bytes = s.to_bytes().unwrap();
    let json_len = s.graph.to_json().len();
    let consts_at = 20 + json_len;

    // Every truncation is an error, none panics.
    for cut in 0..bytes.len() {
        assert!(
            Serialized::from_bytes(&bytes[..cut]).is_err(),
            "cut at {cut}"
        );
    }
    let err = Serialized::from_bytes(&bytes[..bytes.len() - 1]).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "JSON graph record truncated: constant 'dnnl_tvmgen_default_dnnl_main_0_const_1' (node 2) at byte {} needs 64 bytes, 63 left",
            bytes.len() - 64
        )
    );

    let edit = |at: usize, with: &[u8]| {
        let mut b = bytes.clone();
        b[at..at + with.len()].copy_from_slice(with);
        Serialized::from_bytes(&b).unwrap_err()
    };
    assert!(matches!(edit(0, b"BYOCJSOX"), BinaryError::Magic));
    assert_eq!(
        edit(8, &2u32.to_le_bytes()).to_string(),
        "JSON graph record format version 2 is not supported (this byoc reads version 1)"
    );
    assert_eq!(
        edit(12, &u64::MAX.to_le_bytes()).to_string(),
        format!(
            "JSON graph record truncated: graph JSON at byte 20 needs {} bytes, {} left",
            u64::MAX,
            bytes.len() - 20
        )
    );
    assert_eq!(
        edit(consts_at, &3u64.to_le_bytes()).to_string(),
        "JSON graph record holds 3 constants but the graph has 2 const nodes"
    );
    assert_eq!(
        edit(consts_at + 8, &8u64.to_le_bytes()).to_string(),
        "dnnl_tvmgen_default_dnnl_main_0: constant 'dnnl_tvmgen_default_dnnl_main_0_const_0' (node 1) has 8 bytes but Tensor[(16, 3, 3, 3), float32] takes 1728"
    );
    let kernel_at = 20 + s.graph.to_json().find("\"kernel\"").unwrap();
    let err = edit(kernel_at, b"\"kernal\"");
    assert!(matches!(err, BinaryError::Graph(_)), "{err}");
    assert!(
        err.to_string()
            .contains("node 3: unknown op kind 'kernal' (expected input, const or kernel)"),
        "{err}"
    );
    assert!(matches!(edit(20, &[0xff]), BinaryError::Utf8(_)));

    let mut long = bytes.clone();
    long.extend_from_slice(&[0, 0, 0]);
    assert_eq!(
        Serialized::from_bytes(&long).unwrap_err().to_string(),
        "JSON graph record has 3 trailing bytes after the last constant"
    );
}

#[test]
fn writing_checks_the_constants_against_the_graph() {
    let (s, _) = serialized("tvm_dnnl_conv2d_bias_relu");
    let names = s.graph.const_names();
    let bytes = s.to_bytes().unwrap();

    let mut extra = s.clone();
    extra.constants.insert(
        "unused".to_string(),
        Arc::new(Tensor::zeros(TensorType::new([3], DType::Float32))),
    );
    assert_eq!(
        extra.to_bytes().unwrap(),
        bytes,
        "names no node uses are left out"
    );

    let mut missing = s.clone();
    missing.constants.remove(&names[0]);
    let err = missing.to_bytes().unwrap_err();
    assert_eq!(
        err.to_string(),
        "dnnl_tvmgen_default_dnnl_main_0: constant 'dnnl_tvmgen_default_dnnl_main_0_const_0' (node 1) was not provided"
    );

    let mut wrong = s.clone();
    wrong.constants.insert(
        names[1].clone(),
        Arc::new(Tensor::zeros(TensorType::new([16], DType::Float32))),
    );
    assert_eq!(
        wrong.to_bytes().unwrap_err().to_string(),
        "dnnl_tvmgen_default_dnnl_main_0: constant 'dnnl_tvmgen_default_dnnl_main_0_const_1' (node 2) is Tensor[(16), float32] but the graph declares Tensor[(16, 1, 1), float32]"
    );

    // A runtime serializes only once its constants are bound.
    let rt = JsonRuntime::from_graph(s.graph.clone(), HostProvider).unwrap();
    assert!(rt.to_bytes().is_err());
    rt.init(&s.constants).unwrap();
    assert_eq!(rt.to_bytes().unwrap(), bytes);
}
