//! `vision.get_valid_counts` and `vision.non_max_suppression` against numpy references.
//!
//! Each case is a Relay text module run on the host executor with the boxes of
//! `tests/data/ops_vision/<case>.npz` (written by `scripts/fixtures/gen_vision_fixtures.py`,
//! which implements TVM's semantics in numpy); every result must equal `out<i>` exactly (the
//! ops copy boxes, they compute no new values). The text also goes through print and parse.
//! Type relations are checked for Relay's result types and for clear errors on bad input.

use std::path::PathBuf;

use byoc_artifact::io::read_npz;
use byoc_exec::{ExecOptions, Executor};
use byoc_ir::infer_types;
use byoc_ir::text::{parse_module, print_module};
use byoc_ir::Module;

fn fixture(case: &str) -> std::collections::BTreeMap<String, byoc_ir::Tensor> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/ops_vision")
        .join(format!("{case}.npz"));
    read_npz(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn typed(text: &str) -> Result<Module, String> {
    let mut m = parse_module(text).map_err(|e| e.to_string())?;
    infer_types(&mut m).map_err(|e| e.to_string())?;
    Ok(m)
}

/// Runs `body` (over `%data`, the case's boxes) and compares with the case's outputs.
fn check(case: &str, body: &str) {
    let fx = fixture(case);
    let data = &fx["data"];
    let text = format!("def @main(%data: {}) {{\n{body}\n}}", data.ty());
    let module = typed(&text).unwrap_or_else(|e| panic!("{case}: {e}\n{text}"));
    let reparsed = typed(&print_module(&module)).expect("printed module parses");
    for m in [&module, &reparsed] {
        for threads in [1, 2] {
            let outs = Executor::new(
                m,
                ExecOptions {
                    threads,
                    profile: false,
                    memory_budget: None,
                },
            )
            .and_then(|e| e.run(std::slice::from_ref(data)))
            .unwrap_or_else(|e| panic!("{case}: {e}"));
            let want: Vec<_> = (0..outs.len()).map(|i| &fx[&format!("out{i}")]).collect();
            assert_eq!(outs.len(), fx.len() - 1, "{case}: number of outputs");
            for (i, (got, want)) in outs.iter().zip(want).enumerate() {
                assert_eq!(got.ty(), want.ty(), "{case}: output {i} type");
                assert_eq!(got.to_f64_vec(), want.to_f64_vec(), "{case}: output {i}");
            }
        }
    }
}

#[test]
fn get_valid_counts_matches_numpy() {
    check("get_valid_counts", "  vision.get_valid_counts(%data, 0.3f)");
}

#[test]
fn nms_with_relay_defaults_returns_original_indices() {
    check(
        "nms_indices",
        "  %0 = vision.get_valid_counts(%data, 0.3f, id_index=0, score_index=1);
  vision.non_max_suppression(%0.1, %0.0, %0.2, -1, 0.5f)",
    );
}

#[test]
fn nms_force_suppress_top_k_max_output_to_top() {
    check(
        "nms_boxes_top_k",
        "  %0 = vision.get_valid_counts(%data, 0.3f);
  vision.non_max_suppression(%0.1, %0.0, %0.2, 4, 0.4f, force_suppress=True, top_k=10, coord_start=2, score_index=1, id_index=0, return_indices=False, invalid_to_bottom=True)",
    );
}

#[test]
fn nms_without_threshold_keeps_valid_boxes() {
    check(
        "nms_no_threshold",
        "  %0 = vision.get_valid_counts(%data, 0.3f);
  vision.non_max_suppression(%0.1, %0.0, %0.2, -1, 0f, return_indices=False)",
    );
}

#[test]
fn nms_without_class_ids() {
    check(
        "nms_no_class",
        "  %0 = vision.get_valid_counts(%data, 0.2f, id_index=-1, score_index=0);
  vision.non_max_suppression(%0.1, %0.0, %0.2, 5, 0.45f, coord_start=1, score_index=0, id_index=-1, return_indices=False)",
    );
}

#[test]
fn result_types_follow_relay() {
    let m = typed(
        "def @main(%d: Tensor[(2, 10, 6), float32]) {
  %0 = vision.get_valid_counts(%d, 0.1f);
  %1 = vision.non_max_suppression(%0.1, %0.0, %0.2, -1, 0.5f);
  %2 = vision.non_max_suppression(%0.1, %0.0, %0.2, -1, 0.5f, return_indices=False);
  (%0, %1, %2)
}",
    )
    .expect("types");
    let ty = m
        .main()
        .expect("main")
        .func_type()
        .expect("typed")
        .ret
        .to_string();
    assert_eq!(
        ty,
        "((Tensor[(2), int32], Tensor[(2, 10, 6), float32], Tensor[(2, 10), int32]), \
         (Tensor[(2, 10), int32], Tensor[(2, 1), int32]), Tensor[(2, 10, 6), float32])"
    );
}

#[test]
fn bad_inputs_are_named() {
    let cases = [
        (
            "def @main(%d: Tensor[(10, 6), float32]) { vision.get_valid_counts(%d, 0.1f) }",
            "vision.get_valid_counts: data must be [batch, anchors, elems], got rank 2",
        ),
        (
            "def @main(%d: Tensor[(1, 10, 6), float32]) { vision.get_valid_counts(%d, 1) }",
            "score_threshold must be a float32 scalar",
        ),
        (
            "def @main(%d: Tensor[(1, 10, 6), float32]) { vision.get_valid_counts(%d, 0.1f, score_index=6) }",
            "score_index=6 is outside a box of 6 values",
        ),
        (
            "def @main(%d: Tensor[(1, 10, 5), float32]) {
  %0 = vision.get_valid_counts(%d, 0.1f, id_index=-1, score_index=0);
  vision.non_max_suppression(%0.1, %0.0, %0.2, -1, 0.5f, coord_start=2, score_index=0, id_index=-1)
}",
            "coord_start=2 leaves no room for 4 coordinates in a box of 5 values",
        ),
        (
            "def @main(%d: Tensor[(1, 10, 6), float32], %c: Tensor[(2), int32], %i: Tensor[(1, 10), int32]) {
  vision.non_max_suppression(%d, %c, %i, -1, 0.5f)
}",
            "valid_count must be Tensor[(1), int32]",
        ),
    ];
    for (text, want) in cases {
        let err = typed(text).expect_err(text);
        assert!(err.contains(want), "expected '{want}' in: {err}");
    }
}
