//! A support predicate written in Rust decides between two identical conv2d calls (same op,
//! same attributes): the target takes conv2d only when the input has at most 3 channels, so
//! the first conv2d (8 input channels) stays on the host and only the second (3 input
//! channels) is offloaded. Checked at the partition stage (structure, summary, reasons) and
//! numerically: the partitioned module on the host executor against a direct convolution
//! written out in this test.

use byoc_exec::plugin::{compile_externals, Runtimes};
use byoc_exec::{ExecOptions, Executor};
use byoc_ir::infer_types;
use byoc_ir::target::{RejectReason, TargetSupport};
use byoc_ir::text::parse_module;
use byoc_ir::Tensor;
use byoc_pipeline::pipeline::{partition, PartitionOptions};
use byoc_pipeline::report::summary::Summary;
use byoc_pipeline::target::Target;
use byoc_sdk::CompileOptions;

const MODEL: &str = r#"def @main(%x: Tensor[(1, 8, 5, 5), float32], %w1: Tensor[(3, 8, 3, 3), float32], %w2: Tensor[(3, 3, 3, 3), float32]) {
  %0 = nn.conv2d(%x, %w1, padding=[1, 1, 1, 1], kernel_size=[3, 3]);
  nn.conv2d(%0, %w2, padding=[1, 1, 1, 1], kernel_size=[3, 3])
}"#;

/// "conv2d only when channels <= 3": the input's channel dimension (NCHW).
fn small_channels_target() -> Target {
    let support = TargetSupport::new("acc")
        .with_ops(["nn.conv2d"])
        .with_predicate(Some("nn.conv2d"), |call| {
            let channels = call
                .arg_types
                .first()
                .and_then(|t| t.as_tensor())
                .and_then(|t| t.shape.get(1).copied())
                .ok_or_else(|| RejectReason::from("input is not a 4-d tensor"))?;
            if channels <= 3 {
                Ok(())
            } else {
                Err(format!("input has {channels} channels, more than 3").into())
            }
        });
    Target::new(support)
}

/// Direct NCHW convolution, stride 1, padding 1, 3x3 kernels, batch 1.
fn conv3x3(x: &[f32], c_in: usize, w: &[f32], c_out: usize, h: usize, wd: usize) -> Vec<f32> {
    let mut out = vec![0.0f32; c_out * h * wd];
    for o in 0..c_out {
        for i in 0..h {
            for j in 0..wd {
                let mut acc = 0.0f32;
                for c in 0..c_in {
                    for ki in 0..3 {
                        for kj in 0..3 {
                            let (y, z) = (i + ki, j + kj);
                            if y < 1 || z < 1 || y > h || z > wd {
                                continue;
                            }
                            acc += x[(c * h + y - 1) * wd + z - 1]
                                * w[((o * c_in + c) * 3 + ki) * 3 + kj];
                        }
                    }
                }
                out[(o * h + i) * wd + j] = acc;
            }
        }
    }
    out
}

fn values(n: usize, seed: u32) -> Vec<f32> {
    (0..n)
        .map(|i| {
            ((i as u32).wrapping_mul(2654435761).wrapping_add(seed) % 1000) as f32 / 500.0 - 1.0
        })
        .collect()
}

#[test]
fn only_the_small_conv2d_is_offloaded() {
    let mut module = parse_module(MODEL).expect("model parses");
    infer_types(&mut module).expect("model types");
    let result = partition(
        &module,
        &[small_channels_target()],
        &PartitionOptions::default(),
    )
    .expect("pipeline runs");

    let summary = Summary::of(&result);
    assert_eq!(summary.functions.len(), 1);
    assert_eq!(summary.functions[0].name, "acc_0");
    assert_eq!(summary.functions[0].ops, ["nn.conv2d"]);
    assert_eq!(summary.host_ops, ["nn.conv2d"]);
    assert_eq!(summary.rejected.len(), 1);
    assert_eq!(
        summary.rejected[0].reason,
        "input has 8 channels, more than 3"
    );
    // The host conv2d reads %x and %w1; the offloaded one reads its result and %w2.
    let main = byoc_ir::text::print_module(&result.module);
    assert!(
        main.contains("nn.conv2d(%x, %w1") && main.contains("@acc_0(%0, %w2)"),
        "{main}"
    );

    let (x, w1, w2) = (values(200, 1), values(216, 2), values(81, 3));
    let tensor = |shape: [usize; 4], v: &[f32]| Tensor::from_slice(shape, v).expect("tensor");
    let inputs = [
        tensor([1, 8, 5, 5], &x),
        tensor([3, 8, 3, 3], &w1),
        tensor([3, 3, 3, 3], &w2),
    ];
    let externals = compile_externals(
        &result.module,
        &Runtimes::reference_for(&result.module),
        &CompileOptions::new(),
    )
    .expect("partitions compile on the reference runtime");
    let got = Executor::with_externals(&result.module, ExecOptions::default(), &externals)
        .and_then(|e| e.run(&inputs))
        .expect("partitioned module runs");
    let want = conv3x3(&conv3x3(&x, 8, &w1, 3, 5, 5), 3, &w2, 3, 5, 5);
    let got = got[0].as_slice::<f32>().expect("float32 output");
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(&want) {
        assert!((g - w).abs() <= 1e-4 * w.abs().max(1.0), "{g} vs {w}");
    }
}
