//! Per-op numerical tests: single-op dnnl partitions against byoc's host executor
//! (max relative error ≤ 1e-4, float32), on odd shapes: channels that are not multiples of
//! 8/16, one-sided and asymmetric padding, groups, depthwise, dilation, broadcasting.

mod common;

use common::{check, compile_error, konst, partition, tensor};

fn t4(n: usize, c: usize, h: usize, w: usize) -> String {
    format!("Tensor[({n}, {c}, {h}, {w}), float32]")
}

#[test]
fn conv2d_asymmetric_padding_and_strides() {
    let w = konst(&[5, 3, 3, 3], 1);
    let text = partition(
        &format!("%x: {}", t4(1, 3, 9, 7)),
        &format!("  nn.conv2d(%x, {w}, strides=[2, 1], padding=[1, 0, 2, 1], channels=5, kernel_size=[3, 3])"),
    );
    check(&text, &[tensor(&[1, 3, 9, 7], 2)]);
}

#[test]
fn conv2d_weight_as_input_and_batch() {
    let text = partition(
        &format!("%x: {}, %w: {}", t4(2, 7, 6, 6), t4(11, 7, 1, 1)),
        "  nn.conv2d(%x, %w, channels=11, kernel_size=[1, 1])",
    );
    check(
        &text,
        &[tensor(&[2, 7, 6, 6], 3), tensor(&[11, 7, 1, 1], 4)],
    );
}

#[test]
fn conv2d_groups_and_dilation() {
    let w = konst(&[9, 2, 3, 3], 5);
    let text = partition(
        &format!("%x: {}", t4(1, 6, 10, 9)),
        &format!("  nn.conv2d(%x, {w}, padding=[2, 2, 2, 2], dilation=[2, 2], groups=3, channels=9, kernel_size=[3, 3])"),
    );
    check(&text, &[tensor(&[1, 6, 10, 9], 6)]);
}

#[test]
fn conv2d_depthwise() {
    let w = konst(&[13, 1, 3, 3], 7);
    let text = partition(
        &format!("%x: {}", t4(1, 13, 7, 8)),
        &format!("  nn.conv2d(%x, {w}, strides=[2, 2], padding=[1, 1, 1, 1], groups=13, channels=13, kernel_size=[3, 3])"),
    );
    check(&text, &[tensor(&[1, 13, 7, 8], 8)]);
}

#[test]
fn conv2d_transpose_with_output_padding_and_groups() {
    let w = konst(&[4, 3, 3, 3], 9);
    let text = partition(
        &format!("%x: {}", t4(1, 4, 5, 6)),
        &format!("  nn.conv2d_transpose(%x, {w}, channels=3, kernel_size=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1], output_padding=[1, 1])"),
    );
    check(&text, &[tensor(&[1, 4, 5, 6], 10)]);
    let w = konst(&[6, 2, 3, 3], 11);
    let text = partition(
        &format!("%x: {}", t4(1, 6, 4, 4)),
        &format!("  nn.conv2d_transpose(%x, {w}, channels=6, kernel_size=[3, 3], groups=3)"),
    );
    check(&text, &[tensor(&[1, 6, 4, 4], 12)]);
}

#[test]
fn dense_and_batch_matmul() {
    let w = konst(&[7, 20], 13);
    let text = partition(
        "%x: Tensor[(3, 20), float32]",
        &format!("  nn.dense(%x, {w}, units=7)"),
    );
    check(&text, &[tensor(&[3, 20], 14)]);
    let text = partition(
        "%a: Tensor[(2, 3, 5), float32], %b: Tensor[(2, 4, 5), float32]",
        "  nn.batch_matmul(%a, %b)",
    );
    check(&text, &[tensor(&[2, 3, 5], 15), tensor(&[2, 4, 5], 16)]);
    let text = partition(
        "%a: Tensor[(1, 5, 3), float32], %b: Tensor[(2, 5, 4), float32]",
        "  nn.batch_matmul(%a, %b, transpose_a=True, transpose_b=False)",
    );
    check(&text, &[tensor(&[1, 5, 3], 17), tensor(&[2, 5, 4], 18)]);
}

#[test]
fn batch_norm_and_layer_norm() {
    let c = 5;
    let [g, b, m] = [19, 20, 21].map(|s| konst(&[c], s));
    let v = format!(
        "const(({c},), float32, [{}])",
        (0..c)
            .map(|i| format!("{}f", 0.5 + i as f32 * 0.25))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let text = partition(
        &format!("%x: {}", t4(2, c, 3, 4)),
        &format!("  %0 = nn.batch_norm(%x, {g}, {b}, {m}, {v}, epsilon=0.001f);\n  %0.0"),
    );
    check(&text, &[tensor(&[2, c, 3, 4], 22)]);
    let [g, b] = [23, 24].map(|s| konst(&[10], s));
    let text = partition(
        "%x: Tensor[(2, 3, 10), float32]",
        &format!("  nn.layer_norm(%x, {g}, {b})"),
    );
    check(&text, &[tensor(&[2, 3, 10], 25)]);
}

#[test]
fn lrn_across_channels_plain_and_blocked() {
    // 20 channels: not a multiple of oneDNN's 16-channel blocks; a large alpha so the
    // normalization matters.
    for size in [1, 3, 5] {
        let text = partition(
            &format!("%x: {}", t4(1, 20, 5, 6)),
            &format!("  nn.lrn(%x, size={size}, bias=1f, alpha=0.5f, beta=0.75f)"),
        );
        check(&text, &[tensor(&[1, 20, 5, 6], 27)]);
    }
    // After a conv, on the layout the conv chose.
    let w = konst(&[20, 3, 3, 3], 28);
    let text = partition(
        &format!("%x: {}", t4(1, 3, 8, 8)),
        &format!(
            "  %0 = nn.conv2d(%x, {w}, padding=[1, 1, 1, 1], channels=20, kernel_size=[3, 3]);\n  \
             nn.lrn(%0, size=5, alpha=0.01f)"
        ),
    );
    check(&text, &[tensor(&[1, 3, 8, 8], 29)]);
    let even = partition(&format!("%x: {}", t4(1, 4, 2, 2)), "  nn.lrn(%x, size=4)");
    let e = compile_error(&even);
    assert!(e.contains("size=4 not supported"), "{e}");
}

#[test]
fn eltwise_ops() {
    for body in [
        "nn.relu(%x)",
        "nn.leaky_relu(%x, alpha=0.1f)",
        "tanh(%x)",
        "sigmoid(%x)",
        "clip(%x, a_min=-0.25f, a_max=0.5f)",
        "abs(%x)",
        "exp(%x)",
        "log(exp(%x))",
        "sqrt(abs(%x))",
        "round(multiply(%x, 10f))",
    ] {
        let text = partition(&format!("%x: {}", t4(1, 3, 5, 7)), &format!("  {body}"));
        check(&text, &[tensor(&[1, 3, 5, 7], 26)]);
    }
}

#[test]
fn broadcasting_binary_ops() {
    let bias = konst(&[3, 1, 1], 27);
    let text = partition(
        &format!("%x: {}", t4(2, 3, 4, 5)),
        &format!("  %0 = add(%x, {bias});\n  %1 = multiply(%0, 0.5f);\n  add(%1, %x)"),
    );
    check(&text, &[tensor(&[2, 3, 4, 5], 28)]);
    // The broadcasting operand first.
    let text = partition(
        &format!("%r: Tensor[(4, 5), float32], %x: {}", t4(2, 3, 4, 5)),
        "  multiply(%r, %x)",
    );
    check(&text, &[tensor(&[4, 5], 29), tensor(&[2, 3, 4, 5], 30)]);
}

#[test]
fn softmax_and_concatenate() {
    let text = partition("%x: Tensor[(2, 5, 3), float32]", "  nn.softmax(%x, axis=1)");
    check(&text, &[tensor(&[2, 5, 3], 31)]);
    // Concatenation of convolution results (blocked layouts) with an input.
    let w1 = konst(&[5, 3, 3, 3], 32);
    let w2 = konst(&[7, 3, 1, 1], 33);
    let text = partition(
        &format!("%x: {}", t4(1, 3, 6, 6)),
        &format!(
            "  %0 = nn.conv2d(%x, {w1}, padding=[1, 1, 1, 1], channels=5, kernel_size=[3, 3]);\n  \
             %1 = nn.conv2d(%x, {w2}, channels=7, kernel_size=[1, 1]);\n  \
             concatenate((%0, %1, %x), axis=1)"
        ),
    );
    check(&text, &[tensor(&[1, 3, 6, 6], 34)]);
}

#[test]
fn pooling() {
    for body in [
        "nn.max_pool2d(%x, pool_size=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1])",
        "nn.max_pool2d(%x, pool_size=[3, 3], strides=[2, 2], ceil_mode=True)",
        "nn.max_pool2d(%x, pool_size=[2, 2], dilation=[2, 2], padding=[0, 1, 0, 1])",
        "nn.avg_pool2d(%x, pool_size=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1])",
        "nn.avg_pool2d(%x, pool_size=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1], count_include_pad=True)",
        "nn.global_avg_pool2d(%x)",
        "nn.global_max_pool2d(%x)",
    ] {
        let text = partition(&format!("%x: {}", t4(1, 5, 9, 10)), &format!("  {body}"));
        check(&text, &[tensor(&[1, 5, 9, 10], 35)]);
    }
}

#[test]
fn tuple_results_and_passthrough_heads() {
    let w = konst(&[4, 3, 1, 1], 36);
    let text = partition(
        &format!("%x: {}", t4(1, 3, 4, 4)),
        &format!(
            "  %0 = nn.conv2d(%x, {w}, channels=4, kernel_size=[1, 1]);\n  \
             %1 = nn.relu(%0);\n  (%1, %0, %x, %1)"
        ),
    );
    check(&text, &[tensor(&[1, 3, 4, 4], 37)]);
}

#[test]
fn reshape_and_batch_flatten() {
    // Of a convolution's (blocked) result, into a dense layer, as a classifier's flatten.
    let w = konst(&[16, 3, 3, 3], 37);
    let d = konst(&[10, 16 * 36], 38);
    for flatten in [
        "reshape(%0, newshape=[1, -1])",
        "nn.batch_flatten(%0)",
        "reshape(%0, newshape=[1, 576])",
    ] {
        let text = partition(
            &format!("%x: {}", t4(1, 3, 6, 6)),
            &format!(
                "  %0 = nn.conv2d(%x, {w}, padding=[1, 1, 1, 1], channels=16, kernel_size=[3, 3]);\n  \
                 %1 = {flatten};\n  \
                 (nn.dense(%1, {d}, units=10), %1)"
            ),
        );
        check(&text, &[tensor(&[1, 3, 6, 6], 39)]);
    }
    // Of an input, and to the same shape.
    let text = partition(
        "%x: Tensor[(2, 3, 4), float32]",
        "  (reshape(%x, newshape=[4, 6]), reshape(%x, newshape=[2, 3, 4]))",
    );
    check(&text, &[tensor(&[2, 3, 4], 40)]);
}

#[test]
fn a_reshaped_buffer_is_not_overwritten_by_an_in_place_sum() {
    // %0 is plain; %1 views its buffer; the dense's sum post-op is %0's last reader (nodes
    // are in visit order: %1 before %2), which would accumulate into %0's buffer in place
    // if nothing else read it.
    let w = konst(&[8, 8], 41);
    let b = konst(&[8], 42);
    let text = partition(
        "%x: Tensor[(4, 8), float32]",
        &format!(
            "  %0 = nn.relu(%x);\n  \
             %1 = reshape(%0, newshape=[8, 4]);\n  \
             %f = fn (%p0: Tensor[(4, 8), float32], %p1: Tensor[(8, 8), float32], %p2: Tensor[(8,), float32], %p3: Tensor[(4, 8), float32], Composite=\"dnnl.dense_bias_sum\") {{\n    \
             add(add(nn.dense(%p0, %p1, units=8), %p2), %p3)\n  }};\n  \
             %2 = %f(%x, {w}, {b}, %0);\n  \
             (%1, %2)"
        ),
    );
    check(&text, &[tensor(&[4, 8], 43)]);
}

#[test]
fn conv2d_groups_with_few_channels_per_group() {
    // ShuffleNet's first grouped 1x1 conv (6 input channels per group), and a 3x3 one with
    // bias and relu fused: oneDNN has only its gemm kernel for these, so the runtime runs
    // them as ungrouped convolutions over block-diagonal weights.
    let w = konst(&[112, 6, 1, 1], 44);
    let text = partition(
        &format!("%x: {}", t4(1, 24, 9, 9)),
        &format!("  nn.conv2d(%x, {w}, groups=4, channels=112, kernel_size=[1, 1])"),
    );
    check(&text, &[tensor(&[1, 24, 9, 9], 45)]);
    let w = konst(&[18, 3, 3, 3], 46);
    let bias = konst(&[18], 47);
    let text = partition(
        &format!("%x: {}", t4(2, 9, 7, 6)),
        &format!(
            "  %f = fn (%p0: {}, %p1: Tensor[(18, 3, 3, 3), float32], %p2: Tensor[(18,), float32], Composite=\"dnnl.conv2d_bias_relu\") {{\n    \
             nn.relu(nn.bias_add(nn.conv2d(%p0, %p1, padding=[1, 1, 1, 1], groups=3, channels=18, kernel_size=[3, 3]), %p2))\n  }};\n  \
             %f(%x, {w}, {bias})",
            t4(2, 9, 7, 6)
        ),
    );
    check(&text, &[tensor(&[2, 9, 7, 6], 48)]);
}
