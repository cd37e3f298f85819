//! Helpers shared by the JSON runtime tests.
#![allow(dead_code, reason = "each test binary uses a subset")]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use byoc_exec::json_host::HostProvider;
use byoc_ir::tensor::{Tensor, TensorMut, TensorRef};
use byoc_json_runtime::{ConstantMap, JsonRuntime};

/// A fixture graph: its JSON text and its `.npz` arrays (inputs, constants, `expected`).
pub struct Fixture {
    pub json: String,
    pub arrays: BTreeMap<String, Tensor>,
}

pub fn data_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("data")
        .join(name)
}

pub fn fixture(name: &str) -> Fixture {
    let json = std::fs::read_to_string(data_path(&format!("{name}.json"))).unwrap();
    let arrays = byoc_artifact::io::read_npz(data_path(&format!("{name}.npz"))).unwrap();
    Fixture { json, arrays }
}

impl Fixture {
    /// Every array whose name is a const node of the graph.
    pub fn constants(&self, names: &[String]) -> ConstantMap {
        names
            .iter()
            .map(|n| (n.clone(), Arc::new(self.arrays[n].clone())))
            .collect()
    }
}

/// Runs an initialized runtime on owned inputs, allocating the outputs.
pub fn run(rt: &JsonRuntime<HostProvider>, inputs: &[Tensor]) -> Vec<Tensor> {
    let mut outputs: Vec<Tensor> = rt
        .output_types()
        .iter()
        .map(|t| Tensor::zeros(t.clone()))
        .collect();
    let in_views: Vec<TensorRef<'_>> = inputs.iter().map(Tensor::view).collect();
    let mut out_views: Vec<TensorMut<'_>> = outputs.iter_mut().map(Tensor::view_mut).collect();
    rt.run(&in_views, &mut out_views).unwrap();
    drop(out_views);
    outputs
}

/// Asserts elementwise closeness: |a - b| <= atol + rtol * |b|.
pub fn assert_close(actual: &Tensor, expected: &Tensor, atol: f64, rtol: f64) {
    assert_eq!(actual.ty(), expected.ty(), "types differ");
    let a = actual.to_f64_vec();
    let e = expected.to_f64_vec();
    for (i, (x, y)) in a.iter().zip(&e).enumerate() {
        assert!(
            (x - y).abs() <= atol + rtol * y.abs(),
            "element {i}: got {x}, expected {y}"
        );
    }
}

/// Deterministic pseudo-random values in [-1, 1).
pub fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 40) as f64 / (1u64 << 24) as f64 * 2.0 - 1.0) as f32
        })
        .collect()
}

/// A Relay `const(...)` literal of these dims holding `values(.., seed)`.
pub fn const_text(dims: &[usize], seed: u64) -> String {
    let n: usize = dims.iter().product();
    let shape: Vec<String> = dims.iter().map(ToString::to_string).collect();
    let vals: Vec<String> = values(n, seed).iter().map(|v| format!("{v:?}")).collect();
    format!(
        "const(({}), float32, [{}])",
        shape.join(", "),
        vals.join(", ")
    )
}
