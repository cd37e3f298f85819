//! Compiled host code against the reference kernels: every supported op alone, fusion
//! patterns (chains, broadcasts, diamonds, scalars), conv2d/dense/pool/softmax epilogues on
//! every conv path, property tests over random elementwise chains and broadcast shapes and
//! over random conv2d epilogues, fallback of unsupported ops, strict mode, and serialized
//! modules. Results must be bit-identical (NaN compared as NaN) except for the libm calls,
//! which are the same C functions on both sides and so are bit-identical here too.

mod common;

use std::sync::Arc;

use byoc_exec::ExternalModules;
use byoc_host_llvm::{compile_host, HostCodegenError, HostLlvm};
use byoc_ir::tensor::Tensor;
use byoc_sdk::Plugin;
use common::{bits, check, inputs, options, parse, run};
use proptest::prelude::*;

#[test]
fn each_unary_op_matches_the_reference_kernel() {
    for op in [
        "nn.relu", "abs", "negative", "exp", "log", "sqrt", "rsqrt", "tanh", "erf", "sigmoid",
        "round", "floor", "ceil", "copy",
    ] {
        let n = check(&format!(
            "def @main(%x: Tensor[(3, 40000), float32]) {{ {op}(%x) }}"
        ));
        assert_eq!(n, 1, "{op}");
    }
    check("def @main(%x: Tensor[(5, 7), float32]) { clip(%x, a_min=-1.5f, a_max=2f) }");
}

#[test]
fn each_binary_op_matches_the_reference_kernel_with_broadcasting() {
    for op in [
        "add", "subtract", "multiply", "divide", "power", "maximum", "minimum",
    ] {
        check(&format!(
            "def @main(%a: Tensor[(2, 3, 4, 5), float32], %b: Tensor[(3, 1, 5), float32]) {{ {op}(%a, %b) }}"
        ));
        check(&format!(
            "def @main(%a: Tensor[(6), float32], %b: Tensor[(4, 1), float32]) {{ {op}(%a, %b) }}"
        ));
    }
}

#[test]
fn fusion_patterns_match_the_reference_kernels() {
    // A conv-style epilogue: per-channel scale and shift, relu, residual add.
    let n = check(
        "def @main(%x: Tensor[(1, 16, 9, 9), float32], %s: Tensor[(16, 1, 1), float32],
                   %t: Tensor[(16, 1, 1), float32], %r: Tensor[(1, 16, 9, 9), float32]) {
           %0 = multiply(%x, %s);
           %1 = add(%0, %t);
           %2 = nn.relu(%1);
           add(%2, %r)
         }",
    );
    assert_eq!(n, 1);
    // nn.bias_add along axis 1 and along the last axis, in a chain.
    check(
        "def @main(%x: Tensor[(2, 6, 3, 5), float32], %b: Tensor[(6), float32], %c: Tensor[(5), float32]) {
           %0 = nn.bias_add(%x, %b);
           %1 = nn.relu(%0);
           nn.bias_add(%1, %c, axis=-1)
         }",
    );
    // Swish (a diamond) with a scalar constant, and an output used twice.
    check(
        "def @main(%x: Tensor[(4, 1000), float32]) {
           %0 = sigmoid(%x);
           %1 = multiply(%x, %0);
           %2 = multiply(%1, 0.5f);
           (%2, exp(%2))
         }",
    );
    // A scalar result and scalar inputs.
    check("def @main(%x: Tensor[(), float32], %y: Tensor[(), float32]) { add(%x, %y) }");
    // Zero elements.
    check("def @main(%x: Tensor[(0, 3), float32]) { nn.relu(%x) }");
}

#[test]
fn unsupported_ops_fall_back_to_the_reference_kernels_and_strict_mode_refuses_them() {
    let src = "def @main(%x: Tensor[(8), float32], %y: Tensor[(8), int32]) {
                 %0 = nn.leaky_relu(%x, alpha=0.1f);
                 %1 = add(%y, 1);
                 (exp(%0), %1)
               }";
    let m = parse(src);
    let host = compile_host(&m, &options(2), false).expect("fallback never fails the build");
    let reasons: Vec<String> = host.fallbacks.iter().map(|f| f.to_string()).collect();
    assert_eq!(host.fallbacks.len(), 2, "{reasons:?}");
    assert!(
        reasons.iter().any(|r| r.contains("nn.leaky_relu")),
        "{reasons:?}"
    );
    assert!(reasons.iter().any(|r| r.contains("int32")), "{reasons:?}");
    let x = inputs(&m, 3);
    let x = vec![
        x[0].clone(),
        Tensor::from_vec(vec![8], (0..8).collect::<Vec<i32>>()).unwrap(),
    ];
    let want = run(&m, &ExternalModules::new(), 1, &x);
    let got = run(&host.module, &host.externals, 2, &x);
    assert_eq!(bits(&got[0]), bits(&want[0]));
    assert_eq!(got[1], want[1]);
    let err = compile_host(&m, &options(2), true).unwrap_err();
    assert!(matches!(err, HostCodegenError::Strict { .. }), "{err}");
}

#[test]
fn compiled_modules_serialize_and_load_without_recompiling() {
    let m = parse(
        "def @main(%a: Tensor[(3, 50), float32], %b: Tensor[(50), float32]) {
           %0 = add(%a, %b);
           tanh(%0)
         }",
    );
    let host = compile_host(&m, &options(2), true).unwrap();
    let x = inputs(&m, 11);
    let want = run(&host.module, &host.externals, 2, &x);
    let mut loaded = ExternalModules::new();
    for (name, e) in host.externals.iter() {
        let bytes = e.module.serialize().unwrap();
        let module = HostLlvm.deserialize(&bytes, &options(2)).unwrap();
        let mut e = e.clone();
        e.module = Arc::from(module);
        loaded.insert(name, e);
        // Damaged bytes are an error, never a crash.
        for cut in [0, 7, 12, 19, 40] {
            assert!(HostLlvm.deserialize(&bytes[..cut], &options(1)).is_err());
        }
    }
    let got = run(&host.module, &loaded, 2, &x);
    assert_eq!(bits(&got[0]), bits(&want[0]));
}

/// Checks `src` like [`check`] and that HostFuse made it one function anchored by `anchor`.
fn check_anchored(src: &str, anchor: &str) {
    let m = parse(src);
    let host = compile_host(&m, &options(2), true).expect("host code compiles");
    let ops = |name: &str| {
        host.module
            .get(name)
            .map(|f| f.op_names())
            .unwrap_or_default()
    };
    let anchored = host
        .externals
        .iter()
        .filter(|(name, _)| ops(name).first().map(String::as_str) == Some(anchor))
        .count();
    assert_eq!(anchored, 1, "{src}");
    assert!(
        !host
            .module
            .main()
            .unwrap()
            .op_names()
            .contains(&anchor.to_string()),
        "{src}"
    );
    check(src);
}

/// A conv2d over `x` (NCHW `[n, c, h, w]`) with `o` outputs from `i` input channels each, a
/// `k`×`k` kernel and further attributes `attrs`, then a bias, a batch-norm style scale, a
/// residual add and relu.
fn conv_epilogue(
    x: [usize; 4],
    [o, i, k]: [usize; 3],
    attrs: &str,
    [oh, ow]: [usize; 2],
) -> String {
    let [n, c, h, w] = x;
    format!(
        "def @main(%x: Tensor[({n}, {c}, {h}, {w}), float32], %w: Tensor[({o}, {i}, {k}, {k}), float32],
                   %b: Tensor[({o}), float32], %s: Tensor[({o}, 1, 1), float32],
                   %r: Tensor[({n}, {o}, {oh}, {ow}), float32]) {{
           %0 = nn.conv2d(%x, %w{attrs});
           %1 = nn.bias_add(%0, %b);
           %2 = multiply(%1, %s);
           %3 = add(%2, %r);
           nn.relu(%3)
         }}"
    )
}

/// Data shape, weight `[O, I, K]`, further attributes, output `[OH, OW]`.
type ConvCase = ([usize; 4], [usize; 3], &'static str, [usize; 2]);

#[test]
fn conv2d_epilogues_match_the_unfused_reference_kernels_on_every_conv_path() {
    // 1x1 over many pixels (pixel tiles) and over few pixels with many channels (channel
    // blocks), 3x3 padded (im2col tiles), strided, batched, grouped (groups run in
    // parallel), depthwise (the direct kernel).
    let cases: [ConvCase; 7] = [
        ([1, 8, 20, 20], [16, 8, 1], "", [20, 20]),
        ([1, 8, 7, 7], [64, 8, 1], "", [7, 7]),
        (
            [1, 6, 13, 11],
            [10, 6, 3],
            ", padding=[1, 1, 1, 1]",
            [13, 11],
        ),
        ([1, 6, 7, 7], [40, 6, 3], ", padding=[1, 1, 1, 1]", [7, 7]),
        (
            [2, 4, 9, 9],
            [6, 4, 3],
            ", strides=[2, 2], padding=[0, 1, 1, 0]",
            [4, 4],
        ),
        (
            [1, 8, 10, 10],
            [12, 2, 3],
            ", padding=[1, 1, 1, 1], groups=4",
            [10, 10],
        ),
        (
            [1, 8, 15, 15],
            [8, 1, 3],
            ", padding=[1, 1, 1, 1], groups=8",
            [15, 15],
        ),
    ];
    for (x, weight, attrs, out) in cases {
        check_anchored(&conv_epilogue(x, weight, attrs, out), "nn.conv2d");
    }
    // NHWC data takes the GEMM path and the epilogue over the whole output.
    check_anchored(
        "def @main(%x: Tensor[(1, 9, 9, 5), float32], %w: Tensor[(3, 3, 5, 7), float32],
                   %b: Tensor[(7), float32]) {
           %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1], data_layout=\"NHWC\", kernel_layout=\"HWIO\");
           %1 = nn.bias_add(%0, %b, axis=3);
           clip(%1, a_min=0f, a_max=6f)
         }",
        "nn.conv2d",
    );
}

#[test]
fn dense_and_pool_epilogues_match_the_unfused_reference_kernels() {
    check_anchored(
        "def @main(%x: Tensor[(3, 40), float32], %w: Tensor[(25, 40), float32],
                   %b: Tensor[(25), float32]) {
           %0 = nn.dense(%x, %w);
           %1 = nn.bias_add(%0, %b);
           nn.relu(%1)
         }",
        "nn.dense",
    );
    check_anchored(
        "def @main(%x: Tensor[(1, 6, 12, 12), float32], %s: Tensor[(6, 1, 1), float32]) {
           %0 = nn.max_pool2d(%x, pool_size=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1]);
           %1 = multiply(%0, %s);
           sigmoid(%1)
         }",
        "nn.max_pool2d",
    );
    // The conv's input also feeds the epilogue (a residual over the same tensor).
    check_anchored(
        "def @main(%x: Tensor[(1, 4, 6, 6), float32], %w: Tensor[(4, 4, 1, 1), float32]) {
           %0 = nn.conv2d(%x, %w);
           add(%0, %x)
         }",
        "nn.conv2d",
    );
}

#[test]
fn batch_norms_fold_into_conv_epilogues_bit_exactly() {
    // Statistics with a zero variance and a negative gamma; one batch norm along the last axis
    // without scale or center, after a dense.
    check_anchored(
        "def @main(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32]) {
           %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1]);
           %1 = nn.batch_norm(%0, const((4), float32, [1.5, -0.3, 2, 0.7]),
                              const((4), float32, [0.1, 0.2, -0.3, 0.4]),
                              const((4), float32, [0.5, -1.25, 0, 3]),
                              const((4), float32, [1, 0, 0.3, 2.5]), epsilon=0.001);
           %2 = %1.0;
           nn.relu(%2)
         }",
        "nn.conv2d",
    );
    check_anchored(
        "def @main(%x: Tensor[(2, 5), float32], %w: Tensor[(3, 5), float32]) {
           %0 = nn.dense(%x, %w);
           %1 = nn.batch_norm(%0, const((3), float32, fill=2), const((3), float32, fill=1),
                              const((3), float32, [0.5, 1, 1.5]), const((3), float32, fill=0.2),
                              axis=-1, scale=False, center=False);
           %1.0
         }",
        "nn.dense",
    );
}

#[test]
fn anchored_modules_serialize_and_load_without_recompiling() {
    let m = parse(&conv_epilogue(
        [1, 4, 9, 9],
        [6, 4, 3],
        ", padding=[1, 1, 1, 1]",
        [9, 9],
    ));
    let host = compile_host(&m, &options(2), true).unwrap();
    let x = inputs(&m, 5);
    let want = run(&m, &ExternalModules::new(), 1, &x);
    let mut loaded = ExternalModules::new();
    for (name, e) in host.externals.iter() {
        let bytes = e.module.serialize().unwrap();
        let module = HostLlvm.deserialize(&bytes, &options(2)).unwrap();
        let mut e = e.clone();
        e.module = Arc::from(module);
        loaded.insert(name, e);
    }
    let got = run(&host.module, &loaded, 2, &x);
    assert_eq!(bits(&got[0]), bits(&want[0]));
}

/// A random conv2d (batch, channels, groups, kernel, stride, padding) followed by a random
/// elementwise chain over its result and a per-channel operand.
fn conv_chain_strategy() -> impl Strategy<Value = String> {
    let geometry = (
        1usize..3,
        1usize..4,
        1usize..4,
        3usize..12,
        1usize..4,
        1usize..3,
        0usize..2,
    );
    let ops = prop::collection::vec((0usize..8, any::<bool>()), 1..6);
    (geometry, any::<bool>(), ops).prop_map(|((n, cg, og, hw, k, stride, pad), depthwise, ops)| {
        let groups = if depthwise { cg * 2 } else { 2 };
        let (c, o) = if depthwise { (groups, groups * og) } else { (cg * groups, og * groups) };
        let k = k.min(hw);
        let oh = (hw + 2 * pad - k) / stride + 1;
        let mut body = format!(
            "%0 = nn.conv2d(%x, %w, strides=[{stride}, {stride}], padding=[{pad}, {pad}, {pad}, {pad}], groups={groups});\n"
        );
        let mut last = "%0".to_string();
        for (i, (op, use_b)) in ops.iter().enumerate() {
            let other = if *use_b { "%b" } else { last.as_str() };
            let expr = match op {
                0 => format!("add({last}, {other})"),
                1 => format!("multiply({other}, {last})"),
                2 => format!("subtract({last}, {other})"),
                3 => format!("maximum({last}, {other})"),
                4 => format!("nn.relu({last})"),
                5 => format!("clip({last}, a_min=-1f, a_max=2f)"),
                6 => format!("tanh({last})"),
                _ => format!("nn.bias_add({last}, %v)"),
            };
            body.push_str(&format!("%{} = {expr};\n", i + 1));
            last = format!("%{}", i + 1);
        }
        format!(
            "def @main(%x: Tensor[({n}, {c}, {hw}, {hw}), float32], %w: Tensor[({o}, {}, {k}, {k}), float32],
                       %b: Tensor[({o}, 1, {oh}), float32], %v: Tensor[({o}), float32]) {{\n{body}{last}\n}}",
            c / groups
        )
    })
}

/// A random elementwise chain over two inputs whose shapes broadcast.
fn chain_strategy() -> impl Strategy<Value = String> {
    let shape = prop::collection::vec(1usize..5, 0..4);
    let ops = prop::collection::vec((0usize..12, any::<bool>()), 1..8);
    (shape, prop::collection::vec(any::<bool>(), 4), ops).prop_map(|(out, keep, ops)| {
        // The second input keeps some dimensions of the first and sets the others to 1.
        let b: Vec<usize> = out
            .iter()
            .zip(keep.iter().cycle())
            .map(|(&d, &k)| if k { d } else { 1 })
            .collect();
        let dims = |s: &[usize]| {
            s.iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let shape_text = |s: &[usize]| format!("({})", dims(s));
        let mut body = String::new();
        let mut last = "%a".to_string();
        for (i, (op, use_b)) in ops.iter().enumerate() {
            let other = if *use_b { "%b" } else { "%a" };
            let expr = match op {
                0 => format!("add({last}, {other})"),
                1 => format!("subtract({last}, {other})"),
                2 => format!("multiply({last}, {other})"),
                3 => format!("divide({last}, {other})"),
                4 => format!("maximum({last}, {other})"),
                5 => format!("minimum({other}, {last})"),
                6 => format!("nn.relu({last})"),
                7 => format!("negative({last})"),
                8 => format!("sigmoid({last})"),
                9 => format!("tanh({last})"),
                10 => format!("clip({last}, a_min=-2f, a_max=3f)"),
                _ => format!("add({last}, 0.25f)"),
            };
            body.push_str(&format!("%{i} = {expr};\n"));
            last = format!("%{i}");
        }
        format!(
            "def @main(%a: Tensor[{}, float32], %b: Tensor[{}, float32]) {{\n{body}{last}\n}}",
            shape_text(&out),
            shape_text(&b)
        )
    })
}

/// A random chain over one rank-3 input mixing elementwise ops with transposes,
/// concatenations (of the value and a function of it), constant pads and a reshape round trip
/// (merge the trailing dimensions, an op, split them back).
fn injective_chain_strategy() -> impl Strategy<Value = String> {
    let shape = prop::collection::vec(1usize..5, 3);
    let ops = prop::collection::vec((0usize..7, 0usize..6, 0usize..3), 1..7);
    (shape, ops).prop_map(|(shape, ops)| {
        const PERMS: [[usize; 3]; 6] = [
            [0, 1, 2],
            [0, 2, 1],
            [1, 0, 2],
            [1, 2, 0],
            [2, 0, 1],
            [2, 1, 0],
        ];
        let list = |s: &[usize]| {
            s.iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let input = list(&shape);
        let mut s = shape;
        let mut body = String::new();
        let mut last = "%a".to_string();
        for (i, &(op, x, axis)) in ops.iter().enumerate() {
            let expr = match op {
                0 => format!("sigmoid({last})"),
                1 => format!("add({last}, 0.5f)"),
                2 => {
                    let p = PERMS[x];
                    s = p.iter().map(|&a| s[a]).collect();
                    format!("transpose({last}, axes=[{}])", list(&p))
                }
                3 => {
                    s[axis] *= 2;
                    format!("concatenate(({last}, negative({last})), axis={axis})")
                }
                4 => {
                    let (before, after) = (x % 3, x / 3);
                    s[axis] += before + after;
                    let widths: Vec<String> = (0..3)
                        .map(|d| {
                            if d == axis {
                                format!("[{before}, {after}]")
                            } else {
                                "[0, 0]".to_string()
                            }
                        })
                        .collect();
                    format!("nn.pad({last}, 1.5f, pad_width=[{}])", widths.join(", "))
                }
                5 => {
                    body.push_str(&format!(
                        "%m{i} = reshape({last}, newshape=[{}, {}]);\n",
                        s[0],
                        s[1] * s[2]
                    ));
                    format!("reshape(nn.relu(%m{i}), newshape=[{}])", list(&s))
                }
                _ => format!("multiply({last}, {last})"),
            };
            body.push_str(&format!("%{i} = {expr};\n"));
            last = format!("%{i}");
        }
        format!("def @main(%a: Tensor[({input}), float32]) {{\n{body}exp({last})\n}}")
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn random_injective_chains_match_the_reference_kernels(src in injective_chain_strategy()) {
        check(&src);
    }

    #[test]
    fn random_elementwise_chains_match_the_reference_kernels(src in chain_strategy()) {
        check(&src);
    }

    #[test]
    fn random_conv2d_epilogues_match_the_unfused_reference_kernels(src in conv_chain_strategy()) {
        check(&src);
    }
}

#[test]
fn each_injective_op_matches_the_reference_kernel() {
    // Transposes, alone and after a producer, every permutation of a rank-3 tensor.
    for axes in [
        "[0, 2, 1]",
        "[1, 0, 2]",
        "[1, 2, 0]",
        "[2, 0, 1]",
        "[2, 1, 0]",
    ] {
        let n = check(&format!(
            "def @main(%x: Tensor[(3, 17, 5), float32]) {{ negative(transpose(%x, axes={axes})) }}"
        ));
        assert_eq!(n, 1);
        check(&format!(
            "def @main(%x: Tensor[(3, 17, 5), float32]) {{
               transpose(exp(%x), axes={axes})
             }}"
        ));
    }
    // The default axes (reversed) and negative axes.
    check("def @main(%x: Tensor[(4, 6), float32]) { transpose(nn.relu(%x)) }");
    check("def @main(%x: Tensor[(2, 3, 4), float32]) { exp(transpose(%x, axes=[-1, 0, 1])) }");
    // Concatenations of several parts along every axis, parts computed in the group.
    for axis in [0, 1, 2, -1] {
        check(&format!(
            "def @main(%a: Tensor[(2, 3, 4), float32], %b: Tensor[(2, 3, 4), float32]) {{
               concatenate((%a, nn.relu(%b), %a, negative(%a)), axis={axis})
             }}"
        ));
    }
    check(
        "def @main(%a: Tensor[(1, 5, 7, 7), float32], %b: Tensor[(1, 1, 7, 7), float32],
                   %c: Tensor[(1, 12, 7, 7), float32]) {
           nn.relu(concatenate((%a, %b, %c), axis=1))
         }",
    );
    // Constant pads on each side and several axes, with a non-zero pad value.
    check(
        "def @main(%x: Tensor[(2, 5, 6), float32]) {
           negative(nn.pad(%x, 0f, pad_width=[[0, 0], [1, 2], [3, 0]]))
         }",
    );
    check(
        "def @main(%x: Tensor[(3, 4), float32]) {
           nn.pad(sigmoid(%x), -1.5f, pad_width=[[2, 1], [0, 5]])
         }",
    );
    // Reshapes between fused ops (a merge, a squeeze, an expand_dims, a batch flatten).
    check(
        "def @main(%x: Tensor[(2, 3, 4), float32], %y: Tensor[(6, 4), float32]) {
           %0 = exp(%x);
           %1 = reshape(%0, newshape=[6, 4]);
           add(%1, %y)
         }",
    );
    check(
        "def @main(%x: Tensor[(2, 1, 4), float32], %y: Tensor[(2, 4, 1), float32]) {
           %0 = squeeze(exp(%x), axis=[1]);
           %1 = expand_dims(%0, axis=2);
           add(%1, %y)
         }",
    );
    check(
        "def @main(%x: Tensor[(2, 3, 2, 2), float32], %y: Tensor[(12), float32]) {
           %0 = nn.batch_flatten(nn.relu(%x));
           multiply(%0, %y)
         }",
    );
}

#[test]
fn injective_fusion_patterns_match_the_reference_kernels() {
    // Every kind in one loop: a channel shuffle, a pad, a concatenation with a computed part.
    let n = check(
        "def @main(%x: Tensor[(1, 12, 5, 5), float32], %y: Tensor[(1, 4, 7, 7), float32]) {
           %0 = nn.relu(%x);
           %1 = reshape(%0, newshape=[1, 3, 4, 5, 5]);
           %2 = transpose(%1, axes=[0, 2, 1, 3, 4]);
           %3 = reshape(%2, newshape=[1, 12, 5, 5]);
           %4 = nn.pad(%3, 0f, pad_width=[[0, 0], [0, 0], [1, 1], [1, 1]]);
           %5 = concatenate((exp(%y), %4), axis=1);
           multiply(%5, 2f)
         }",
    );
    assert_eq!(n, 1);
    // ShuffleNet's channel shuffle between two elementwise ops: the reshapes on both sides of
    // the transpose stay inside the loop.
    let n = check(
        "def @main(%x: Tensor[(1, 12, 5, 5), float32], %s: Tensor[(12, 1, 1), float32]) {
           %0 = nn.relu(%x);
           %1 = reshape(%0, newshape=[1, 3, 4, 5, 5]);
           %2 = transpose(%1, axes=[0, 2, 1, 3, 4]);
           %3 = reshape(%2, newshape=[1, 12, 5, 5]);
           multiply(%3, %s)
         }",
    );
    assert_eq!(n, 1);
    // DenseNet's concatenation and batch norm (scale, shift, relu) in one loop.
    let n = check(
        "def @main(%a: Tensor[(1, 8, 6, 6), float32], %b: Tensor[(1, 4, 6, 6), float32],
                   %c: Tensor[(1, 4, 6, 6), float32], %s: Tensor[(16, 1, 1), float32],
                   %t: Tensor[(16, 1, 1), float32]) {
           %0 = concatenate((%a, %b, %c), axis=1);
           %1 = multiply(%0, %s);
           %2 = add(%1, %t);
           nn.relu(%2)
         }",
    );
    assert_eq!(n, 1);
    // A pad of a sum, then a transpose and a concatenation of the same value twice.
    check(
        "def @main(%x: Tensor[(3, 4), float32], %y: Tensor[(4), float32]) {
           %0 = add(%x, %y);
           %1 = nn.pad(%0, 2f, pad_width=[[1, 1], [0, 2]]);
           %2 = transpose(%1);
           concatenate((%2, %2), axis=0)
         }",
    );
    // A diamond through a transpose: x + x^T.
    check(
        "def @main(%x: Tensor[(9, 9), float32]) {
           add(%x, transpose(%x))
         }",
    );
    // The injective value is also a result: it ends its group.
    check(
        "def @main(%x: Tensor[(2, 3), float32], %y: Tensor[(2, 3), float32]) {
           %0 = concatenate((%x, %y), axis=0);
           (%0, exp(%0))
         }",
    );
}

#[test]
fn injective_groups_keep_anchored_epilogues_whole() {
    // Each conv keeps its bias and relu as its epilogue; the concatenation, with no arithmetic
    // of its own, stays on its reference kernel (SqueezeNet's fire module).
    let src = "def @main(%x: Tensor[(1, 3, 6, 6), float32], %w: Tensor[(4, 3, 1, 1), float32],
                         %v: Tensor[(4, 3, 3, 3), float32], %b: Tensor[(4), float32]) {
                 %0 = nn.conv2d(%x, %w);
                 %1 = nn.relu(nn.bias_add(%0, %b));
                 %2 = nn.conv2d(%x, %v, padding=[1, 1, 1, 1]);
                 %3 = nn.relu(nn.bias_add(%2, %b));
                 concatenate((%1, %3), axis=1)
               }";
    let host = compile_host(&parse(src), &options(2), true).expect("host code compiles");
    let groups: Vec<Vec<String>> = host
        .module
        .functions()
        .filter(|(n, _)| n.starts_with("host_fused_"))
        .map(|(_, f)| f.op_names())
        .collect();
    assert_eq!(
        groups,
        [
            vec!["nn.conv2d", "nn.bias_add", "nn.relu"],
            vec!["nn.conv2d", "nn.bias_add", "nn.relu"],
        ]
    );
    assert_eq!(check(src), 2);
}

#[test]
fn strided_slices_and_split_fields_read_through_affine_maps_with_the_kernel_s_clamping() {
    for (slice, shape) in [
        // Positive strides, begin and end past the axis clamped.
        (
            "begin=[1, -100, 0], end=[3, 100, 7], strides=[1, 2, 3]",
            "(2, 3, 3)",
        ),
        // Negative strides, from the end and from past the end.
        (
            "begin=[-1, 4, 100], end=[-100, 0, -100], strides=[-1, -2, -3]",
            "(3, 2, 3)",
        ),
        // One stride for every sliced axis; the other axes whole.
        ("begin=[2], end=[0], strides=[-1]", "(2, 5, 7)"),
        // Sliced axes named, sizes instead of ends.
        (
            "begin=[1, 2], end=[2, -1], axes=[0, 2], slice_mode=\"size\"",
            "(2, 5, 5)",
        ),
    ] {
        let n = check(&format!(
            "def @main(%x: Tensor[(3, 5, 7), float32], %y: Tensor[{shape}, float32]) {{
               %0 = strided_slice(exp(%x), {slice});
               add(%0, %y)
             }}"
        ));
        assert_eq!(n, 1, "{slice}");
    }
    // The fields of a split, read as slices.
    let n = check(
        "def @main(%x: Tensor[(2, 9, 4), float32]) {
           %0 = split(nn.relu(%x), indices_or_sections=3, axis=1);
           %1 = split(%x, indices_or_sections=[1, 3], axis=-1);
           (add(%0.0, %0.2), exp(%0.1), sigmoid(%1.1), tanh(%1.2))
         }",
    );
    assert_eq!(n, 5);
    // A slice between producers and a reduction, and a slice of a concatenation.
    check(
        "def @main(%x: Tensor[(4, 6, 8), float32]) {
           %0 = strided_slice(nn.relu(%x), begin=[3, 1], end=[-100, 6], strides=[-1, 2]);
           sum(%0, axis=[2])
         }",
    );
    check(
        "def @main(%x: Tensor[(2, 3), float32]) {
           %0 = concatenate((%x, negative(%x)), axis=1);
           %1 = strided_slice(%0, begin=[0, 1], end=[2, 6], strides=[1, 2]);
           sigmoid(%1)
         }",
    );
}

#[test]
fn index_maps_the_code_generator_refuses_fall_back() {
    // A reshape that splits the dimension the loop walks is not an affine index map.
    let src = "def @main(%x: Tensor[(2, 3), float32]) {
                 %0 = exp(%x);
                 %1 = reshape(%0, newshape=[6]);
                 %2 = nn.relu(%1);
                 %3 = reshape(%2, newshape=[3, 2]);
                 negative(%3)
               }";
    let m = parse(src);
    let host = compile_host(&m, &options(2), false).expect("fallback never fails the build");
    assert_eq!(host.fallbacks.len(), 1, "{:?}", host.fallbacks);
    assert!(
        host.fallbacks[0].reason.contains("splits a dimension"),
        "{}",
        host.fallbacks[0]
    );
    let x = inputs(&m, 5);
    let want = run(&m, &ExternalModules::new(), 1, &x);
    let got = run(&host.module, &host.externals, 2, &x);
    assert_eq!(bits(&got[0]), bits(&want[0]));
    let err = compile_host(&m, &options(2), true).unwrap_err();
    assert!(matches!(err, HostCodegenError::Strict { .. }), "{err}");
    // Edge and reflect pads stay with the reference kernels, whole.
    let host = compile_host(
        &parse(
            "def @main(%x: Tensor[(3, 4), float32]) {
               nn.relu(nn.pad(%x, 0f, pad_width=[[1, 1], [1, 1]], pad_mode=\"edge\"))
             }",
        ),
        &options(1),
        true,
    )
    .expect("the relu compiles alone");
    assert_eq!(host.externals.len(), 1);
    assert!(host
        .module
        .main()
        .unwrap()
        .op_names()
        .contains(&"nn.pad".to_string()));
}
