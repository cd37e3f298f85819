//! Per-composite numerical tests: `dnnl.<conv2d|deconv2d|dense|multiply>[_bias][_sum][_<eltwise>]`
//! kernel nodes (bias, residual sum and activation fused as oneDNN post-ops) and
//! `dnnl.channel_shuffle` against the host executor running the composite bodies.

mod common;

use common::{check, compile_error, konst, partition, tensor};

/// A composite function literal named `name` with typed params `p<i>` and `body` (which
/// refers to them), called on `args`, bound to `%out`.
fn composite(name: &str, tag: &str, params: &[&str], body: &str, args: &[String]) -> String {
    let ps: Vec<String> = params
        .iter()
        .enumerate()
        .map(|(i, t)| format!("%{tag}{i}: {t}"))
        .collect();
    format!(
        "  %{tag}f = fn ({}, Composite=\"{name}\") {{\n{body}\n  }};\n  %{tag} = %{tag}f({});\n",
        ps.join(", "),
        args.join(", ")
    )
}

fn t(shape: &[usize]) -> String {
    let d: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    if shape.len() == 1 {
        format!("Tensor[({},), float32]", d[0])
    } else {
        format!("Tensor[({}), float32]", d.join(", "))
    }
}

/// A conv2d composite on `%x` (1, 3, 9, 8) → (1, 10, 9, 8) with the given tail; `sum` names
/// the residual operand expression.
fn conv_case(name: &str, tail: &str, bias_shape: &[usize], sum: Option<&str>) -> String {
    let mut params = vec![t(&[1, 3, 9, 8]), t(&[10, 3, 3, 3])];
    let mut args = vec!["%x".to_string(), konst(&[10, 3, 3, 3], 40)];
    let mut body = String::from(
        "    %c0 = nn.conv2d(%a0, %a1, padding=[1, 0, 1, 2], channels=10, kernel_size=[3, 3]);\n",
    );
    let mut last = "%c0".to_string();
    if !bias_shape.is_empty() {
        params.push(t(bias_shape));
        args.push(konst(bias_shape, 41));
        let op = if bias_shape.len() == 1 {
            format!("nn.bias_add({last}, %a2)")
        } else {
            format!("add({last}, %a2)")
        };
        body += &format!("    %c1 = {op};\n");
        last = "%c1".to_string();
    }
    if let Some(s) = sum {
        let i = params.len();
        params.push(t(&[1, 10, 9, 8]));
        args.push(s.to_string());
        body += &format!("    %c2 = add({last}, %a{i});\n");
        last = "%c2".to_string();
    }
    body += &format!("    {}", tail.replace("$", &last));
    let ps: Vec<&str> = params.iter().map(String::as_str).collect();
    composite(name, "a", &ps, &body, &args)
}

#[test]
fn conv2d_bias_with_every_tail() {
    for (suffix, tail) in [
        ("", "$"),
        ("_relu", "nn.relu($)"),
        ("_tanh", "tanh($)"),
        ("_sigmoid", "sigmoid($)"),
        ("_clip", "clip($, a_min=-0.5f, a_max=0.75f)"),
        ("_leaky_relu", "nn.leaky_relu($, alpha=0.2f)"),
        ("_swish", "multiply($, sigmoid($))"),
        (
            "_gelu",
            "multiply(multiply($, add(erf(divide($, 1.41421f)), 1f)), 0.5f)",
        ),
    ] {
        for bias in [&[10, 1, 1][..], &[10][..]] {
            let name = format!("dnnl.conv2d_bias{suffix}");
            let body = conv_case(&name, tail, bias, None) + "  %a";
            let text = partition("%x: Tensor[(1, 3, 9, 8), float32]", &body);
            check(&text, &[tensor(&[1, 3, 9, 8], 42)]);
        }
    }
    let body = conv_case("dnnl.conv2d_relu", "nn.relu($)", &[], None) + "  %a";
    let text = partition("%x: Tensor[(1, 3, 9, 8), float32]", &body);
    check(&text, &[tensor(&[1, 3, 9, 8], 43)]);
}

#[test]
fn conv2d_bias_sum_relu_in_place_and_copied() {
    // The residual operand made in the partition and read only by the sum: summed in place.
    let w = konst(&[10, 3, 1, 1], 44);
    let first = format!("  %r = nn.conv2d(%x, {w}, channels=10, kernel_size=[1, 1]);\n");
    for (name, tail) in [
        ("dnnl.conv2d_bias_sum_relu", "nn.relu($)"),
        ("dnnl.conv2d_bias_sum", "$"),
    ] {
        let body = first.clone() + &conv_case(name, tail, &[10, 1, 1], Some("%r")) + "  %a";
        let text = partition("%x: Tensor[(1, 3, 9, 8), float32]", &body);
        check(&text, &[tensor(&[1, 3, 9, 8], 45)]);
        // The operand is also a result: copied, the result keeps its value.
        let body = first.clone() + &conv_case(name, tail, &[10, 1, 1], Some("%r")) + "  (%a, %r)";
        let text = partition("%x: Tensor[(1, 3, 9, 8), float32]", &body);
        check(&text, &[tensor(&[1, 3, 9, 8], 46)]);
    }
    // The operand is a partition input (caller-owned): copied.
    let body = conv_case(
        "dnnl.conv2d_bias_sum_relu",
        "nn.relu($)",
        &[10, 1, 1],
        Some("%s"),
    ) + "  %a";
    let text = partition(
        "%x: Tensor[(1, 3, 9, 8), float32], %s: Tensor[(1, 10, 9, 8), float32]",
        &body,
    );
    check(
        &text,
        &[tensor(&[1, 3, 9, 8], 47), tensor(&[1, 10, 9, 8], 48)],
    );
}

#[test]
fn residual_chain_like_resnet() {
    // conv+bias+relu → conv+bias+sum(+input)+relu → conv+bias+sum(+previous)+relu.
    let x = "%x: Tensor[(1, 12, 7, 7), float32]";
    let conv = |tag: &str, name: &str, sum: Option<&str>, src: &str, seed: u64| {
        let mut params = vec![t(&[1, 12, 7, 7]), t(&[12, 12, 3, 3]), t(&[12, 1, 1])];
        let mut args = vec![
            src.to_string(),
            konst(&[12, 12, 3, 3], seed),
            konst(&[12, 1, 1], seed + 1),
        ];
        let mut body = format!(
            "    %{tag}c = nn.conv2d(%{tag}0, %{tag}1, padding=[1, 1, 1, 1], channels=12, kernel_size=[3, 3]);\n    %{tag}b = add(%{tag}c, %{tag}2);\n"
        );
        let mut last = format!("%{tag}b");
        if let Some(s) = sum {
            params.push(t(&[1, 12, 7, 7]));
            args.push(s.to_string());
            body += &format!("    %{tag}s = add({last}, %{tag}3);\n");
            last = format!("%{tag}s");
        }
        body += &format!("    nn.relu({last})");
        let ps: Vec<&str> = params.iter().map(String::as_str).collect();
        composite(name, tag, &ps, &body, &args)
    };
    let body = conv("p", "dnnl.conv2d_bias_relu", None, "%x", 50)
        + &conv("q", "dnnl.conv2d_bias_sum_relu", Some("%x"), "%p", 52)
        + &conv("r", "dnnl.conv2d_bias_relu", None, "%q", 54)
        + &conv("s", "dnnl.conv2d_bias_sum_relu", Some("%q"), "%r", 56)
        + "  %s";
    check(&partition(x, &body), &[tensor(&[1, 12, 7, 7], 58)]);
}

#[test]
fn deconv2d_and_dense_composites() {
    let body = composite(
        "dnnl.deconv2d_bias_relu",
        "d",
        &[&t(&[1, 4, 5, 5]), &t(&[4, 6, 3, 3]), &t(&[6, 1, 1])],
        "    %dc = nn.conv2d_transpose(%d0, %d1, channels=6, kernel_size=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1]);\n    nn.relu(add(%dc, %d2))",
        &["%x".to_string(), konst(&[4, 6, 3, 3], 60), konst(&[6, 1, 1], 61)],
    ) + "  %d";
    check(
        &partition("%x: Tensor[(1, 4, 5, 5), float32]", &body),
        &[tensor(&[1, 4, 5, 5], 62)],
    );
    for (name, tail) in [
        ("dnnl.dense_bias", "$"),
        ("dnnl.dense_bias_relu", "nn.relu($)"),
        (
            "dnnl.dense_bias_gelu",
            "multiply(multiply($, add(erf(divide($, 1.41421f)), 1f)), 0.5f)",
        ),
    ] {
        let body = composite(
            name,
            "e",
            &[&t(&[3, 20]), &t(&[9, 20]), &t(&[9])],
            &format!(
                "    %ed = nn.dense(%e0, %e1, units=9);\n    %eb = add(%ed, %e2);\n    {}",
                tail.replace("$", "%eb")
            ),
            &["%x".to_string(), konst(&[9, 20], 63), konst(&[9], 64)],
        ) + "  %e";
        check(
            &partition("%x: Tensor[(3, 20), float32]", &body),
            &[tensor(&[3, 20], 65)],
        );
    }
    // dense + bias + residual sum, on a 3-D input.
    let body = composite(
        "dnnl.dense_bias_sum",
        "f",
        &[&t(&[2, 3, 20]), &t(&[9, 20]), &t(&[9]), &t(&[2, 3, 9])],
        "    %fd = nn.dense(%f0, %f1, units=9);\n    add(add(%fd, %f2), %f3)",
        &[
            "%x".to_string(),
            konst(&[9, 20], 66),
            konst(&[9], 67),
            "%s".to_string(),
        ],
    ) + "  %f";
    check(
        &partition(
            "%x: Tensor[(2, 3, 20), float32], %s: Tensor[(2, 3, 9), float32]",
            &body,
        ),
        &[tensor(&[2, 3, 20], 68), tensor(&[2, 3, 9], 69)],
    );
}

/// `dnnl.channel_shuffle` on `src` of shape `data`: reshape to `(N, g, C/g, H, W)`, swap
/// the channel axes, reshape to `(N, C, H, W)`.
fn shuffle(tag: &str, src: &str, data: &[usize], out: [usize; 4], groups: usize) -> String {
    let [n, c, h, w] = out;
    shuffle_with(
        tag,
        src,
        data,
        &format!("[{n}, {groups}, {}, {h}, {w}]", c / groups),
        out,
    )
}

/// [`shuffle`] with the first reshape's `newshape` as written.
fn shuffle_with(tag: &str, src: &str, data: &[usize], first: &str, out: [usize; 4]) -> String {
    let [n, c, h, w] = out;
    composite(
        "dnnl.channel_shuffle",
        tag,
        &[&t(data)],
        &format!(
            "    %{tag}r = reshape(%{tag}0, newshape={first});\n    \
             %{tag}t = transpose(%{tag}r, axes=[0, 2, 1, 3, 4]);\n    \
             reshape(%{tag}t, newshape=[{n}, {c}, {h}, {w}])"
        ),
        &[src.to_string()],
    )
}

#[test]
fn channel_shuffle_on_plain_data() {
    // (N, C, H, W, groups); groups != C / groups except in the fifth case; the last two are
    // identities (one group, one channel per group).
    for (n, c, h, w, g) in [
        (1, 12, 5, 6, 3),
        (2, 12, 4, 3, 4),
        (1, 10, 3, 7, 2),
        (1, 28, 2, 2, 4),
        (1, 16, 3, 3, 4),
        (1, 8, 3, 3, 1),
        (1, 8, 3, 3, 8),
    ] {
        let body = shuffle("s", "%x", &[n, c, h, w], [n, c, h, w], g) + "  %s";
        check(
            &partition(&format!("%x: {}", t(&[n, c, h, w])), &body),
            &[tensor(&[n, c, h, w], 90 + c as u64)],
        );
    }
    // Relay's 0 (copy) and -1 (infer) in the first reshape: 3 groups of 4.
    let body = shuffle_with("s", "%x", &[1, 12, 5, 6], "[0, -1, 4, 5, 6]", [1, 12, 5, 6]) + "  %s";
    check(
        &partition("%x: Tensor[(1, 12, 5, 6), float32]", &body),
        &[tensor(&[1, 12, 5, 6], 89)],
    );
}

#[test]
fn channel_shuffle_between_convolutions_keeps_blocked_layouts() {
    // conv (blocked result) → shuffle → conv and a residual-free relu tail, as in ShuffleNet.
    for (c, g) in [(32, 4), (48, 3), (24, 8)] {
        let body = composite(
            "dnnl.conv2d_bias_relu",
            "a",
            &[&t(&[1, 8, 6, 6]), &t(&[c, 8, 1, 1]), &t(&[c])],
            &format!(
                "    nn.relu(nn.bias_add(nn.conv2d(%a0, %a1, channels={c}, kernel_size=[1, 1]), %a2))"
            ),
            &["%x".to_string(), konst(&[c, 8, 1, 1], 100), konst(&[c], 101)],
        ) + &shuffle("s", "%a", &[1, c, 6, 6], [1, c, 6, 6], g)
            + &composite(
                "dnnl.conv2d_relu",
                "b",
                &[&t(&[1, c, 6, 6]), &t(&[c, 1, 3, 3])],
                &format!(
                    "    nn.relu(nn.conv2d(%b0, %b1, padding=[1, 1, 1, 1], groups={c}, channels={c}, kernel_size=[3, 3]))"
                ),
                &["%s".to_string(), konst(&[c, 1, 3, 3], 102)],
            )
            + "  (%b, %s)";
        check(
            &partition("%x: Tensor[(1, 8, 6, 6), float32]", &body),
            &[tensor(&[1, 8, 6, 6], 103)],
        );
    }
}

#[test]
fn channel_shuffle_of_data_with_another_shape_reads_it_as_the_reshapes_do() {
    // (1, 2, 12, 5) has the 120 elements of (1, 3, 4, 5, 2) → (1, 12, 5, 2).
    let body = shuffle("s", "%x", &[1, 2, 12, 5], [1, 12, 5, 2], 3) + "  %s";
    check(
        &partition("%x: Tensor[(1, 2, 12, 5), float32]", &body),
        &[tensor(&[1, 2, 12, 5], 104)],
    );
}

#[test]
fn multiply_composites_scale_shift_and_activate_in_one_step() {
    // After a conv (blocked layout), per-channel scale then bias then relu: DenseNet's
    // pre-activation block; then the weight first (multiply commutes), a plain `add` bias of
    // shape (1, C, 1, 1), and a full-shape weight with a sigmoid tail and no bias.
    let conv = format!(
        "  %c = nn.conv2d(%x, {}, padding=[1, 1, 1, 1], channels=20, kernel_size=[3, 3]);\n",
        konst(&[20, 3, 3, 3], 70)
    );
    let cases = [
        (
            "dnnl.multiply_bias_relu",
            [t(&[1, 20, 6, 7]), t(&[20, 1, 1]), t(&[20])],
            "nn.relu(nn.bias_add(multiply(%m0, %m1), %m2))",
            [konst(&[20, 1, 1], 71), konst(&[20], 72)],
        ),
        (
            "dnnl.multiply_bias_clip",
            [t(&[1, 20, 6, 7]), t(&[1, 20, 1, 1]), t(&[20])],
            "clip(nn.bias_add(multiply(%m1, %m0), %m2), a_min=-0.5f, a_max=0.5f)",
            [konst(&[1, 20, 1, 1], 73), konst(&[20], 74)],
        ),
        (
            "dnnl.multiply_bias",
            [t(&[1, 20, 6, 7]), t(&[20, 1, 1]), t(&[1, 20, 1, 1])],
            "add(multiply(%m0, %m1), %m2)",
            [konst(&[20, 1, 1], 75), konst(&[1, 20, 1, 1], 76)],
        ),
    ];
    for (name, params, body, [w, bias]) in cases {
        let ps: Vec<&str> = params.iter().map(String::as_str).collect();
        let text = conv.clone()
            + &composite(
                name,
                "m",
                &ps,
                &format!("    {body}"),
                &["%c".to_string(), w, bias],
            )
            + "  %m";
        check(
            &partition("%x: Tensor[(1, 3, 6, 7), float32]", &text),
            &[tensor(&[1, 3, 6, 7], 77)],
        );
    }
    let body = composite(
        "dnnl.multiply_sigmoid",
        "n",
        &[&t(&[2, 5, 3]), &t(&[2, 5, 3])],
        "    sigmoid(multiply(%n0, %n1))",
        &["%x".to_string(), "%y".to_string()],
    ) + "  %n";
    check(
        &partition(
            "%x: Tensor[(2, 5, 3), float32], %y: Tensor[(2, 5, 3), float32]",
            &body,
        ),
        &[tensor(&[2, 5, 3], 78), tensor(&[2, 5, 3], 79)],
    );
}

#[test]
fn multiply_composites_that_cannot_be_one_step_are_refused_by_name() {
    // Neither operand has the result's shape: the product broadcasts both ways.
    let body = composite(
        "dnnl.multiply_relu",
        "m",
        &[&t(&[1, 4, 1, 5]), &t(&[1, 1, 3, 1])],
        "    nn.relu(multiply(%m0, %m1))",
        &["%x".to_string(), "%y".to_string()],
    ) + "  %m";
    let e = compile_error(&partition(
        "%x: Tensor[(1, 4, 1, 5), float32], %y: Tensor[(1, 1, 3, 1), float32]",
        &body,
    ));
    assert!(
        e.contains("dnnl.multiply_relu")
            && e.contains("neither Tensor[(1, 4, 1, 5), float32] nor Tensor[(1, 1, 3, 1), float32] has the result's shape"),
        "{e}"
    );
    // A residual sum is not part of the family.
    let body = composite(
        "dnnl.multiply_sum",
        "s",
        &[&t(&[1, 4, 2, 2]), &t(&[1, 4, 2, 2]), &t(&[1, 4, 2, 2])],
        "    add(multiply(%s0, %s1), %s2)",
        &["%x".to_string(), "%x".to_string(), "%x".to_string()],
    ) + "  %s";
    let e = compile_error(&partition("%x: Tensor[(1, 4, 2, 2), float32]", &body));
    assert!(
        e.contains("a multiply composite takes no sum operand"),
        "{e}"
    );
}
