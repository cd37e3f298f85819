//! Runs one ONNX case folder against onnxruntime's recorded outputs. Shared by the fixture tests
//! (`onnx_import.rs`) and the per-op sweep (`onnx_sweep.rs`).
//!
//! A case folder holds `model.onnx` and either `test_data_set_0/input_<i>.pb` /
//! `output_<i>.pb` (serialized TensorProtos, ONNX's backend-test layout) or `refuses.txt`, a
//! fragment the import or executor-build error must contain. Tolerance:
//! `|got - want| <= 1e-5 + 1e-4 * |want|` (NaN only against NaN, an infinity only against
//! itself), and the output types must be equal; a case with
//! `steps.txt` (a number `n`) lets integer outputs differ by up to `n` (quantization steps:
//! onnxruntime requantizes in float32, byoc with a fixed-point multiply).

use std::collections::BTreeMap;
use std::path::Path;

use byoc_exec::{ExecOptions, Executor};
use byoc_ir::tensor::Tensor;
use byoc_ir::Module;
use byoc_onnx::{import_file, read_tensor_file, ImportOptions};

/// Imports the case in `dir`, runs it on the host executor with its recorded inputs and compares
/// every output with onnxruntime's; or, for a refusal case, checks the error.
pub fn check_case(dir: &Path) -> Result<(), String> {
    let refusal = dir.join("refuses.txt");
    if refusal.is_file() {
        let want = std::fs::read_to_string(&refusal).map_err(|e| e.to_string())?;
        let want = want.trim();
        let err = match build(dir, &BTreeMap::new()) {
            Ok(_) => return Err(format!("accepted; expected an error containing '{want}'")),
            Err(e) => e,
        };
        return if err.contains(want) {
            Ok(())
        } else {
            Err(format!("error '{err}' does not contain '{want}'"))
        };
    }
    let data = dir.join("test_data_set_0");
    let read_all = |prefix: &str| {
        let mut tensors = Vec::new();
        while let Ok(t) = read_tensor_file(&data.join(format!("{prefix}_{}.pb", tensors.len()))) {
            tensors.push(t);
        }
        tensors
    };
    let inputs = read_all("input");
    let expected = read_all("output");
    if expected.is_empty() {
        return Err("no recorded outputs".into());
    }
    let exec = build(dir, &BTreeMap::new()).or_else(|_| {
        // Models with symbolic dims: fix them from the recorded inputs.
        let bytes = std::fs::read(dir.join("model.onnx")).map_err(|e| e.to_string())?;
        let proto = <byoc_onnx::proto::ModelProto as prost::Message>::decode(&bytes[..])
            .map_err(|e| e.to_string())?;
        let names = proto
            .graph
            .unwrap_or_default()
            .input
            .into_iter()
            .map(|i| i.name);
        let shapes = names
            .zip(&inputs)
            .map(|(n, t)| (n, t.shape().to_vec()))
            .collect();
        build(dir, &shapes)
    })?;
    let got = exec.run(&inputs).map_err(|e| format!("run: {e}"))?;
    let steps = match std::fs::read_to_string(dir.join("steps.txt")) {
        Ok(text) => text
            .trim()
            .parse::<f64>()
            .map_err(|e| format!("steps.txt: {e}"))?,
        Err(_) => 0.0,
    };
    compare(&got, &expected, steps)
}

fn build(dir: &Path, input_shapes: &BTreeMap<String, Vec<usize>>) -> Result<Executor, String> {
    let opts = ImportOptions {
        input_shapes: input_shapes.clone(),
    };
    let model: Module =
        import_file(dir.join("model.onnx"), &opts).map_err(|e| format!("import: {e}"))?;
    let exec_opts = ExecOptions {
        threads: 1,
        profile: false,
        memory_budget: None,
    };
    Executor::new(&model, exec_opts).map_err(|e| format!("executor: {e}"))
}

fn compare(got: &[Tensor], expected: &[Tensor], steps: f64) -> Result<(), String> {
    if got.len() != expected.len() {
        return Err(format!(
            "{} outputs, onnxruntime gives {}",
            got.len(),
            expected.len()
        ));
    }
    for (i, (g, w)) in got.iter().zip(expected).enumerate() {
        if g.ty() != w.ty() {
            return Err(format!(
                "output {i} is {}, onnxruntime gives {}",
                g.ty(),
                w.ty()
            ));
        }
        let slack = if w.dtype().is_int() { steps } else { 0.0 };
        for (k, (&a, b)) in g.to_f64_vec().iter().zip(w.to_f64_vec()).enumerate() {
            // Equal values (infinities among them) and NaN against NaN agree; a NaN against a
            // number differs (it fails every tolerance test).
            let same = a == b || (a.is_nan() && b.is_nan());
            let close = (a - b).abs() <= 1e-5 + 1e-4 * b.abs() + slack;
            if !same && !close {
                return Err(format!(
                    "output {i} element {k}: got {a}, onnxruntime gives {b}"
                ));
            }
        }
    }
    Ok(())
}
