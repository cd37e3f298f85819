//! The dnnl target description through the pipeline (statically linked, as `byoc --target
//! dnnl` builds it from the plugin's description): which composites form, the order of their
//! parameters (data, weight, bias, sum operand), rejected ops with their reasons, and pruning.
//! Every fused module is also run on the host executor against the original module (composites
//! inlined by the executor), so the prepare folding and the patterns keep the semantics.

use std::collections::BTreeMap;

use byoc_exec::{ExecOptions, Executor};
use byoc_ir::text::parse_module;
use byoc_ir::{Callee, Expr, Module};
use byoc_ir::{Tensor, Type};
use byoc_pipeline::pipeline::{partition, PartitionOptions, Partitioned, Stage};
use byoc_pipeline::report::summary::Summary;
use byoc_pipeline::target::Target;
use byoc_plugin_dnnl::support::description;

fn dnnl() -> Target {
    Target::from_description(&description()).expect("the description forms a valid target")
}

fn module(text: &str) -> Module {
    parse_module(text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn run(m: &Module, stop_after: Stage) -> Partitioned {
    let options = PartitionOptions {
        stop_after,
        ..PartitionOptions::default()
    };
    partition(m, &[dnnl()], &options).unwrap()
}

/// Every composite call in the module: its name and the types of its arguments, in order.
fn composites(m: &Module) -> Vec<(String, Vec<Type>)> {
    let mut out = Vec::new();
    for (_, f) in m.functions() {
        for id in f.live_ids() {
            let Expr::Call(call) = f.expr(id) else {
                continue;
            };
            let Callee::Local(lit) = &call.callee else {
                continue;
            };
            let Expr::Function(lit) = f.expr(*lit) else {
                continue;
            };
            if let Some(name) = lit.attrs.get_str("Composite") {
                let types = call
                    .args
                    .iter()
                    .map(|a| f.ty(*a).cloned().unwrap())
                    .collect();
                out.push((name.to_string(), types));
            }
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn shape(t: &Type) -> Vec<usize> {
    t.as_tensor().unwrap().shape.clone()
}

/// The composites of the partitioned module with their argument shapes.
fn fused(m: &Module) -> Vec<(String, Vec<Vec<usize>>)> {
    let result = run(m, Stage::Partition);
    composites(&result.module)
        .into_iter()
        .map(|(n, ts)| (n, ts.iter().map(shape).collect()))
        .collect()
}

/// Seeded N(0,1)-ish inputs for every parameter of `@main`.
fn inputs(m: &Module) -> BTreeMap<String, Tensor> {
    let main = m.main().unwrap();
    let mut state = 0x2545_f491_4f6c_dd1du64;
    main.params
        .iter()
        .map(|&p| {
            let var = main.var(p).unwrap();
            let t = var.ty.as_tensor().unwrap().clone();
            let n = t.num_elements();
            let values: Vec<f64> = (0..n)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    (state >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
                })
                .collect();
            (var.name.clone(), Tensor::from_f64(t, &values).unwrap())
        })
        .collect()
}

/// The module after MergeComposite (prepare folding included) computes what the original
/// does, on the host.
fn assert_fusion_keeps_semantics(m: &Module) {
    let fused = run(m, Stage::Composite).module;
    let feeds = inputs(m);
    let eval = |m: &Module| {
        Executor::new(m, ExecOptions::default())
            .unwrap()
            .run_named(&feeds)
            .unwrap()
    };
    for (want, got) in eval(m).iter().zip(eval(&fused)) {
        for (a, b) in want.to_f64_vec().iter().zip(got.to_f64_vec()) {
            let err = (a - b).abs() / a.abs().max(1e-3);
            assert!(err <= 1e-4, "{b} vs reference {a}");
        }
    }
}

fn weights(shape: &str, fill: f32) -> String {
    format!("const({shape}, float32, fill={fill}f)")
}

#[test]
fn conv_bias_relu_is_one_composite_with_data_weight_bias() {
    let m = module(&format!(
        r#"def @main(%x: Tensor[(1, 3, 8, 8), float32]) {{
          %0 = nn.conv2d(%x, {w}, padding=[1, 1, 1, 1], channels=16, kernel_size=[3, 3]);
          %1 = nn.bias_add(%0, {b});
          nn.relu(%1)
        }}"#,
        w = weights("(16, 3, 3, 3)", 0.1),
        b = weights("(16)", 0.5),
    ));
    assert_eq!(
        fused(&m),
        [(
            "dnnl.conv2d_bias_relu".to_string(),
            vec![vec![1, 3, 8, 8], vec![16, 3, 3, 3], vec![16]]
        )]
    );
    assert_fusion_keeps_semantics(&m);
}

/// A ResNet bottleneck tail: conv -> batch_norm -> add(shortcut) -> relu, the shortcut being
/// another conv -> batch_norm. `swap` puts the shortcut first in the add.
fn residual(swap: bool) -> Module {
    let bn = |v: &str, c: usize| {
        let stats = [0.9, 0.1, 0.2, 1.1]
            .iter()
            .map(|f| weights(&format!("({c})"), *f))
            .collect::<Vec<_>>()
            .join(", ");
        format!("nn.batch_norm({v}, {stats})")
    };
    let sum = if swap { "add(%5, %2)" } else { "add(%2, %5)" };
    module(&format!(
        r#"def @main(%x: Tensor[(1, 8, 6, 6), float32]) {{
          %0 = nn.conv2d(%x, {w1}, padding=[1, 1, 1, 1], channels=16, kernel_size=[3, 3]);
          %1 = {bn1};
          %2 = %1.0;
          %3 = nn.conv2d(%x, {w2}, channels=16, kernel_size=[1, 1]);
          %4 = {bn2};
          %5 = %4.0;
          %6 = {sum};
          nn.relu(%6)
        }}"#,
        w1 = weights("(16, 8, 3, 3)", 0.05),
        w2 = weights("(16, 8, 1, 1)", -0.1),
        bn1 = bn("%0", 16),
        bn2 = bn("%3", 16),
    ))
}

#[test]
fn a_residual_add_after_conv_and_batch_norm_is_a_sum_post_op() {
    for swap in [false, true] {
        let m = residual(swap);
        let got = fused(&m);
        let names: Vec<&str> = got.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            ["dnnl.conv2d_bias", "dnnl.conv2d_bias_sum_relu"],
            "swap={swap}"
        );
        // data, weight, bias (the folded batch norm), sum operand, whatever the add's order.
        let (_, args) = &got[1];
        assert_eq!(args.len(), 4);
        assert_eq!(args[0], [1, 8, 6, 6]);
        assert_eq!(args[2], [16]);
        assert_eq!(args[3], [1, 16, 6, 6]);
        assert_fusion_keeps_semantics(&m);
    }
}

#[test]
fn dense_bias_with_relu_gelu_and_plain_add_bias() {
    let dense = |tail: &str| {
        module(&format!(
            r#"def @main(%x: Tensor[(2, 32), float32]) {{
              %0 = nn.dense(%x, {w}, units=10);
              %1 = nn.bias_add(%0, {b});
              {tail}
            }}"#,
            w = weights("(10, 32)", 0.02),
            b = weights("(10)", 0.3),
        ))
    };
    let relu = dense("nn.relu(%1)");
    assert_eq!(
        fused(&relu),
        [(
            "dnnl.dense_bias_relu".to_string(),
            vec![vec![2, 32], vec![10, 32], vec![10]]
        )]
    );
    assert_fusion_keeps_semantics(&relu);
    // TVM's gelu: x * (erf(x / sqrt(2)) + 1) * 0.5; its constants stay inside the composite.
    let gelu = dense(
        "%2 = divide(%1, 1.41421f);\n %3 = erf(%2);\n %4 = add(%3, 1f);\n \
         %5 = multiply(%1, %4);\n multiply(%5, 0.5f)",
    );
    let got = fused(&gelu);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].0, "dnnl.dense_bias_gelu");
    assert_eq!(got[0].1, [vec![2, 32], vec![10, 32], vec![10]]);
    assert_fusion_keeps_semantics(&gelu);
    // oneDNN computes the exact GELU: other constants are another function, not a gelu.
    for (c1, c2, c3) in [
        ("2f", "1f", "0.5f"),
        ("1.41421f", "0.5f", "0.5f"),
        ("1.41421f", "1f", "0.25f"),
    ] {
        let other = dense(&format!(
            "%2 = divide(%1, {c1});\n %3 = erf(%2);\n %4 = add(%3, {c2});\n \
             %5 = multiply(%1, %4);\n multiply(%5, {c3})"
        ));
        let names: Vec<String> = fused(&other).into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["dnnl.dense_bias"], "constants {c1}, {c2}, {c3}");
        assert_fusion_keeps_semantics(&other);
    }
    // An add of a (10) vector after a dense is a bias too.
    let add_bias = module(&format!(
        r#"def @main(%x: Tensor[(2, 32), float32], %b: Tensor[(10), float32]) {{
          %0 = nn.dense(%x, {w}, units=10);
          add(%0, %b)
        }}"#,
        w = weights("(10, 32)", 0.02),
    ));
    assert_eq!(
        fused(&add_bias),
        [(
            "dnnl.dense_bias".to_string(),
            vec![vec![2, 32], vec![10, 32], vec![10]]
        )]
    );
}

/// A sum operand must be another value than the convolution's own result, and than its input:
/// `add(y, y)` after `y = bias_add(conv2d(..))` would have oneDNN's sum post-op read the
/// buffer the convolution writes, and a residual that is the convolution's own data would
/// leave the composite one parameter short. Both leave the add out of the composite (and the
/// declined match is reported).
#[test]
fn a_sum_operand_bound_to_the_conv_itself_or_its_data_is_not_a_post_op() {
    let conv = |sum: &str| {
        module(&format!(
            r#"def @main(%x: Tensor[(1, 4, 6, 6), float32]) {{
              %0 = nn.conv2d(%x, {w}, padding=[1, 0, 0, 3], channels=4, kernel_size=[3, 3]);
              %1 = nn.bias_add(%0, {b});
              {sum}
            }}"#,
            w = weights("(4, 4, 3, 3)", 0.1),
            b = weights("(4)", 0.5),
        ))
    };
    let doubled = conv("add(%1, %1)");
    let names: Vec<String> = fused(&doubled).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["dnnl.conv2d_bias"]);
    assert_fusion_keeps_semantics(&doubled);
    let declined = run(&doubled, Stage::Composite).declined;
    assert!(
        declined.iter().any(|d| d.pattern == "dnnl.conv2d_bias_sum"
            && d.reason.contains("binds the result of nn.bias_add")),
        "{declined:?}"
    );
    // A residual of the conv's own input (same shape: padding keeps 6x6 with a 1x1 kernel).
    let own_input = module(&format!(
        r#"def @main(%x: Tensor[(1, 4, 6, 6), float32]) {{
          %0 = nn.conv2d(%x, {w}, channels=4, kernel_size=[1, 1]);
          %1 = nn.bias_add(%0, {b});
          add(%1, %x)
        }}"#,
        w = weights("(4, 4, 1, 1)", 0.1),
        b = weights("(4)", 0.5),
    ));
    let names: Vec<String> = fused(&own_input).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["dnnl.conv2d_bias"]);
    assert_fusion_keeps_semantics(&own_input);
}

#[test]
fn depthwise_conv_with_bias_and_clip() {
    let m = module(&format!(
        r#"def @main(%x: Tensor[(1, 8, 7, 7), float32]) {{
          %0 = nn.conv2d(%x, {w}, padding=[1, 1, 1, 1], groups=8, channels=8, kernel_size=[3, 3]);
          %1 = nn.bias_add(%0, {b});
          clip(%1, a_min=0f, a_max=6f)
        }}"#,
        w = weights("(8, 1, 3, 3)", 0.3),
        b = weights("(8)", -0.2),
    ));
    assert_eq!(
        fused(&m),
        [(
            "dnnl.conv2d_bias_clip".to_string(),
            vec![vec![1, 8, 7, 7], vec![8, 1, 3, 3], vec![8]]
        )]
    );
    assert_fusion_keeps_semantics(&m);
}

#[test]
fn a_full_shape_add_after_a_conv_is_not_a_bias() {
    // relu(conv(x, w) + y), y an activation of the output's shape: no bias to fuse (TVM's
    // bias predicate); conv, add and relu run as single dnnl kernels.
    let m = module(&format!(
        r#"def @main(%x: Tensor[(1, 4, 5, 5), float32], %y: Tensor[(1, 4, 5, 5), float32]) {{
          %0 = nn.conv2d(%x, {w}, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3]);
          %1 = add(%0, %y);
          nn.relu(%1)
        }}"#,
        w = weights("(4, 4, 3, 3)", 0.1),
    ));
    assert_eq!(fused(&m), []);
    let result = run(&m, Stage::Partition);
    let summary = Summary::of(&result);
    assert_eq!(summary.functions.len(), 1);
    assert_eq!(summary.functions[0].ops, ["add", "nn.conv2d", "nn.relu"]);
    assert_fusion_keeps_semantics(&m);
}

#[test]
fn rejected_ops_carry_their_reasons() {
    let m = module(&format!(
        r#"def @main(%x: Tensor[(1, 4, 9, 9), float32], %i: Tensor[(4), int64]) {{
          %0 = nn.conv2d(%x, {w}, padding=[1, 1, 1, 1], channels=4, kernel_size=[3, 3]);
          %1 = nn.avg_pool2d(%0, pool_size=[2, 2], strides=[2, 2], ceil_mode=True);
          %2 = add(%i, %i);
          %3 = nn.max_pool2d(%1, pool_size=[2, 2], layout="NHWC");
          %4 = nn.lrn(%0, size=4);
          (%2, %3, %4)
        }}"#,
        w = weights("(4, 4, 3, 3)", 0.1),
    ));
    let summary = Summary::of(&run(&m, Stage::Partition));
    let reasons: Vec<(String, String)> = summary
        .rejected
        .iter()
        .map(|r| (r.op.clone(), r.reason.clone()))
        .collect();
    assert_eq!(
        reasons,
        [
            (
                "add".to_string(),
                "argument 0 has dtype int64 (supported: float32)".to_string()
            ),
            (
                "nn.avg_pool2d".to_string(),
                "ceil_mode=True not supported for average pooling".to_string()
            ),
            (
                "nn.lrn".to_string(),
                "size=4 not supported (oneDNN centres only odd windows as Relay does)".to_string()
            ),
            (
                "nn.max_pool2d".to_string(),
                "layout=\"NHWC\" not supported (needs \"NCHW\")".to_string()
            ),
        ]
    );
}

#[test]
fn partitions_without_a_compute_heavy_op_go_back_to_the_host() {
    let m = module(
        r#"def @main(%x: Tensor[(1, 4, 5, 5), float32], %y: Tensor[(1, 4, 5, 5), float32]) {
          %0 = add(%x, %y);
          nn.relu(%0)
        }"#,
    );
    let summary = Summary::of(&run(&m, Stage::Partition));
    assert!(summary.functions.is_empty());
    assert_eq!(summary.host_ops, ["add", "nn.relu"]);
    assert_eq!(summary.pruned.len(), 1);
    assert_eq!(
        summary.pruned[0].reason,
        "none of require_any=[nn.conv2d, nn.conv2d_transpose, nn.dense, nn.batch_matmul, \
         nn.layer_norm, nn.global_avg_pool2d]"
    );
}

/// conv 1x1 (8 -> 12 channels) + relu, then `reshape(newshape1)`, `transpose(axes)`,
/// `reshape(newshape2)`, then (when `dw`) a depthwise 3x3 conv on the result, as in a
/// ShuffleNet unit.
fn shuffle_chain(newshape1: &str, axes: &str, newshape2: &str, dw: bool) -> Module {
    let tail = if dw {
        format!(
            "nn.conv2d(%4, {}, padding=[1, 1, 1, 1], groups=12, channels=12, kernel_size=[3, 3])",
            weights("(12, 1, 3, 3)", 0.2)
        )
    } else {
        "%4".to_string()
    };
    module(&format!(
        r#"def @main(%x: Tensor[(1, 8, 5, 5), float32]) {{
          %0 = nn.conv2d(%x, {w}, channels=12, kernel_size=[1, 1]);
          %1 = nn.relu(%0);
          %2 = reshape(%1, newshape={newshape1});
          %3 = transpose(%2, axes={axes});
          %4 = reshape(%3, newshape={newshape2});
          {tail}
        }}"#,
        w = weights("(12, 8, 1, 1)", 0.1),
    ))
}

#[test]
fn a_channel_shuffle_is_one_composite_inside_the_partition() {
    // groups 4, 3 channels per group (and the other way round).
    for first in ["[1, 4, 3, 5, 5]", "[1, 3, 4, 5, 5]", "[0, -1, 3, 5, 5]"] {
        let m = shuffle_chain(first, "[0, 2, 1, 3, 4]", "[1, 12, 5, 5]", true);
        let got = fused(&m);
        let names: Vec<&str> = got.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            ["dnnl.channel_shuffle", "dnnl.conv2d_relu"],
            "{first}"
        );
        assert_eq!(got[0].1, [[1, 12, 5, 5]]);
        let summary = Summary::of(&run(&m, Stage::Partition));
        assert_eq!(summary.functions.len(), 1, "{first}");
        assert!(summary.host_ops.is_empty(), "{:?}", summary.host_ops);
        assert_fusion_keeps_semantics(&m);
    }
}

#[test]
fn reshape_transpose_chains_that_are_not_channel_shuffles_are_not_fused() {
    for (first, axes, last) in [
        // H and W swapped, not the channel axes.
        ("[1, 4, 3, 5, 5]", "[0, 1, 2, 4, 3]", "[1, 12, 5, 5]"),
        // The last reshape does not give back (N, C, H, W).
        ("[1, 4, 3, 5, 5]", "[0, 2, 1, 3, 4]", "[1, 12, 25, 1]"),
        ("[1, 4, 3, 5, 5]", "[0, 2, 1, 3, 4]", "[1, 300]"),
        // 4-D: no group axis.
        ("[1, 12, 25, 1]", "[0, 2, 1, 3]", "[1, 12, 5, 5]"),
    ] {
        let m = shuffle_chain(first, axes, last, false);
        let summary = Summary::of(&run(&m, Stage::Partition));
        assert_eq!(
            fused(&m),
            [(
                "dnnl.conv2d_relu".to_string(),
                vec![vec![1, 8, 5, 5], vec![12, 8, 1, 1]]
            )],
            "{first} {axes} {last}"
        );
        // The first reshape joins the conv's partition (dnnl takes single reshapes); the
        // transpose stays on the host, and the last reshape with it (alone it has no
        // compute-heavy op, so its partition is pruned).
        assert_eq!(summary.host_ops, ["reshape", "transpose"]);
        // Where the chain has the pattern's shape (the shuffle's axes), the check's reason is
        // in the summary.
        let declined: Vec<(&str, &str, &str)> = summary
            .declined
            .iter()
            .map(|d| (d.pattern.as_str(), d.op.as_str(), d.reason.as_str()))
            .collect();
        if axes == "[0, 2, 1, 3, 4]" {
            assert_eq!(declined.len(), 1, "{declined:?}");
            assert_eq!(declined[0].0, "dnnl.channel_shuffle");
            assert_eq!(declined[0].1, "reshape");
            assert_eq!(
                declined[0].2,
                format!(
                    "dnnl.channel_shuffle: reshape of [1, 3, 4, 5, 5] to {last} is not \
                     (N, C/g, g, H, W) to (N, C, H, W)"
                )
            );
        } else {
            assert!(declined.is_empty(), "{declined:?}");
        }
        assert_fusion_keeps_semantics(&m);
    }
}

#[test]
fn layer_norm_reaches_dnnl_whole() {
    // dense + bias + relu, then a layer norm over the last axis: prepare keeps the layer norm
    // one call (dnnl lists it), so it joins the partition instead of being decomposed into
    // mean / subtract / variance / sqrt / divide for the host.
    let m = module(&format!(
        r#"def @main(%x: Tensor[(4, 8), float32]) {{
          %0 = nn.dense(%x, {w}, units=6);
          %1 = nn.bias_add(%0, {b});
          %2 = nn.relu(%1);
          nn.layer_norm(%2, {g}, {beta}, epsilon=1e-5f)
        }}"#,
        w = weights("(6, 8)", 0.1),
        b = weights("(6)", 0.2),
        g = weights("(6)", 1.5),
        beta = weights("(6)", -0.25),
    ));
    let summary = Summary::of(&run(&m, Stage::Partition));
    assert!(summary.host_ops.is_empty(), "{:?}", summary.host_ops);
    assert_eq!(summary.functions.len(), 1);
    assert_eq!(
        summary.functions[0].ops,
        ["nn.bias_add", "nn.dense", "nn.layer_norm", "nn.relu"]
    );
    assert_fusion_keeps_semantics(&m);
}
