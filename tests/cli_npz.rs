//! `.npz` input errors name the `.npz` file, not the model: unknown keys and wrong shapes.

use std::collections::BTreeMap;
use std::process::Command;

use byoc_artifact::io::write_npz;
use byoc_ir::{DType, Tensor, TensorType};

#[test]
fn npz_key_and_shape_errors_name_the_npz_file() {
    let dir = std::env::temp_dir().join(format!("byoc-npz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let model = dir.join("m.relay");
    std::fs::write(
        &model,
        "def @main(%x: Tensor[(2, 3), float32]) { nn.relu(%x) }\n",
    )
    .unwrap();
    let run = |npz: &std::path::Path| {
        let out = Command::new(env!("CARGO_BIN_EXE_byoc"))
            .args([
                "run",
                model.to_str().unwrap(),
                "--inputs",
                npz.to_str().unwrap(),
            ])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let wrong_shape = dir.join("wrong_shape.npz");
    let t = Tensor::zeros(TensorType::new(vec![3, 2], DType::Float32));
    write_npz(
        &wrong_shape,
        &BTreeMap::from([("x".to_string(), t.clone())]),
    )
    .unwrap();
    let err = run(&wrong_shape);
    assert!(
        err.contains(
            "wrong_shape.npz: input 'x' is Tensor[(3, 2), float32] but the model expects \
             Tensor[(2, 3), float32]"
        ),
        "{err}"
    );
    let wrong_key = dir.join("wrong_key.npz");
    write_npz(&wrong_key, &BTreeMap::from([("y".to_string(), t)])).unwrap();
    let err = run(&wrong_key);
    assert!(
        err.contains("wrong_key.npz: input 'y' is not an input of the model (inputs: x)"),
        "{err}"
    );
}
