//! In-place concatenation: the producers of a concatenation's parts write straight into their
//! slices of its result (no concat step) when nothing reads a part afterwards and the layouts
//! allow it; otherwise a concat step copies them. Both against the host reference kernels.

mod common;

use byoc_json_runtime::serialize::serialize;
use byoc_plugin_dnnl::DnnlRuntime;
use byoc_sdk::PartitionedFunction;
use common::{check, konst, partition, tensor};

/// `%name = conv(src) + bias, relu` as a `dnnl.conv2d_bias_relu` composite call on 9x9 maps.
fn conv_relu(name: &str, src: &str, cin: usize, cout: usize, k: usize, seed: u64) -> String {
    conv_relu_on(9, name, src, cin, cout, k, seed)
}

/// [`conv_relu`] on `hw`x`hw` maps.
fn conv_relu_on(
    hw: usize,
    name: &str,
    src: &str,
    cin: usize,
    cout: usize,
    k: usize,
    seed: u64,
) -> String {
    let pad = k / 2;
    let (w, b) = (
        konst(&[cout, cin, k, k], seed),
        konst(&[cout, 1, 1], seed + 1),
    );
    format!(
        "  %f{name} = fn (%p0: Tensor[(1, {cin}, {hw}, {hw}), float32], %p1: Tensor[({cout}, {cin}, {k}, {k}), float32], %p2: Tensor[({cout}, 1, 1), float32], Composite=\"dnnl.conv2d_bias_relu\") {{\n    \
         nn.relu(add(nn.conv2d(%p0, %p1, padding=[{pad}, {pad}, {pad}, {pad}], channels={cout}, kernel_size=[{k}, {k}]), %p2))\n  }};\n  \
         %{name} = %f{name}(%{src}, {w}, {b});\n"
    )
}

/// A fire module on `(1, 8, 9, 9)`: squeeze to 16 channels, expand 1x1 and 3x3 to 32 each,
/// the expansions concatenated (`concat`, e.g. `(%e1, %e3)`) and reduced by a 1x1 conv;
/// `tail` follows with the conv's result as `%o`.
fn fire(concat: &str, tail: &str) -> String {
    let w = konst(&[16, 64, 1, 1], 120);
    let body = format!(
        "{}{}{}  %c = concatenate({concat}, axis=1);\n  \
         %o = nn.conv2d(%c, {w}, channels=16, kernel_size=[1, 1]);\n  {tail}",
        conv_relu("s", "x", 8, 16, 1, 100),
        conv_relu("e1", "s", 16, 32, 1, 104),
        conv_relu("e3", "s", 16, 32, 3, 108),
    );
    partition("%x: Tensor[(1, 8, 9, 9), float32]", &body)
}

/// The steps of `text`'s module (after checking it against the host on `inputs`).
fn steps(text: &str, inputs: &[byoc_ir::Tensor]) -> Vec<String> {
    check(text, inputs);
    let f = PartitionedFunction::from_text(text).unwrap();
    let s = serialize(&f.function, "dnnl_test").unwrap();
    let rt = DnnlRuntime::new(&s.to_json(), &s.constants, None).unwrap();
    rt.steps().into_iter().map(|s| s.label).collect()
}

/// Checks `text` against the host on `inputs` and returns its number of concat steps.
fn concat_steps(text: &str, inputs: &[byoc_ir::Tensor]) -> usize {
    let labels = steps(text, inputs);
    labels.iter().filter(|l| l.starts_with("concat")).count()
}

/// Two of SqueezeNet's fire modules (fire2 and fire3's channel counts: squeeze to 16 and 32,
/// expand to 64 + 64 and 128 + 128), with its max pooling between them, on `hw`x`hw` maps
/// of 64 channels, and a 1x1 conv to 10 channels at the end.
fn squeezenet_fires(hw: usize) -> String {
    let pooled = (hw - 3) / 2 + 1;
    let w = konst(&[10, 256, 1, 1], 160);
    let body = format!(
        "{}{}{}  %c1 = concatenate((%e1, %e3), axis=1);\n  \
         %m = nn.max_pool2d(%c1, pool_size=[3, 3], strides=[2, 2]);\n\
         {}{}{}  %c2 = concatenate((%g1, %g3), axis=1);\n  \
         nn.conv2d(%c2, {w}, channels=10, kernel_size=[1, 1])",
        conv_relu_on(hw, "s", "x", 64, 16, 1, 150),
        conv_relu_on(hw, "e1", "s", 16, 64, 1, 152),
        conv_relu_on(hw, "e3", "s", 16, 64, 3, 154),
        conv_relu_on(pooled, "t", "m", 128, 32, 1, 156),
        conv_relu_on(pooled, "g1", "t", 32, 128, 1, 158),
        conv_relu_on(pooled, "g3", "t", 32, 128, 3, 162),
    );
    partition(&format!("%x: Tensor[(1, 64, {hw}, {hw}), float32]"), &body)
}

#[test]
fn squeezenet_fire_modules_concatenate_in_place() {
    // The expansions' channels fill whole channel blocks, so they are written channel-blocked
    // straight into their concatenation (no concat step); the second fire module reads the
    // blocked result as it is (no reorder between the modules); every convolution runs on an
    // optimized kernel.
    let labels = steps(&squeezenet_fires(13), &[tensor(&[1, 64, 13, 13], 164)]);
    let text = labels.join("\n");
    assert!(!labels.iter().any(|l| l.starts_with("concat")), "{text}");
    let convs: Vec<&String> = labels
        .iter()
        .filter(|l| l.starts_with("convolution"))
        .collect();
    assert_eq!(convs.len(), 7, "{text}");
    assert!(
        convs
            .iter()
            .all(|l| !l.contains("[ref") && !l.contains("gemm")),
        "{text}"
    );
    let reorders: Vec<&String> = labels.iter().filter(|l| l.starts_with("reorder")).collect();
    // The plain input into the first convolution's layout, the first squeeze's result into the
    // channel blocks of the expansions (shared by both), the result into the plain output.
    assert!(reorders.len() <= 3, "{text}");
}

#[test]
fn parts_that_do_not_fill_whole_channel_blocks_are_copied() {
    // 20 channels are no whole number of blocks of 8 or 16: the expansions keep oneDNN's
    // layout choice and a concat step copies them; the result is the same.
    let w = konst(&[8, 40, 1, 1], 170);
    let body = format!(
        "{}{}{}  %c = concatenate((%e1, %e3), axis=1);\n  \
         nn.conv2d(%c, {w}, channels=8, kernel_size=[1, 1])",
        conv_relu("s", "x", 8, 16, 1, 171),
        conv_relu("e1", "s", 16, 20, 1, 172),
        conv_relu("e3", "s", 16, 20, 3, 173),
    );
    let text = partition("%x: Tensor[(1, 8, 9, 9), float32]", &body);
    assert_eq!(concat_steps(&text, &[tensor(&[1, 8, 9, 9], 174)]), 1);
}

#[test]
fn parts_of_other_ops_keep_every_step_on_optimized_kernels() {
    // DenseNet's first block: a max pooling's result concatenated with a convolution's. Only
    // convolutions take the channel-blocked layout, so here both parts keep oneDNN's choice
    // (a concat step over mixed layouts would run on oneDNN's reference concat). A relu of
    // the plain input next to a convolution's result: parts in different layouts are made
    // plain for the concat step.
    let w = konst(&[16, 64, 1, 1], 180);
    let body = format!(
        "{}  %p = nn.max_pool2d(%s, pool_size=[3, 3], padding=[1, 1, 1, 1]);\n\
         {}  %c = concatenate((%p, %e3), axis=1);\n  \
         %a = nn.relu(%x);\n  %c2 = concatenate((%a, %e1), axis=1);\n  \
         (nn.conv2d(%c, {w}, channels=16, kernel_size=[1, 1]), %c2)",
        conv_relu("s", "x", 8, 32, 1, 181),
        conv_relu("e3", "s", 32, 32, 3, 182) + &conv_relu("e1", "x", 8, 32, 1, 183),
    );
    let text = partition("%x: Tensor[(1, 8, 9, 9), float32]", &body);
    let labels = steps(&text, &[tensor(&[1, 8, 9, 9], 184)]);
    let text = labels.join("\n");
    assert!(!labels.iter().any(|l| l.contains("[ref")), "{text}");
}

#[test]
fn a_fire_module_matches_the_host() {
    // 32-channel expansions fill whole channel blocks: written in place.
    let x = [tensor(&[1, 8, 9, 9], 130)];
    assert_eq!(concat_steps(&fire("(%e1, %e3)", "%o"), &x), 0);
    // The first part read again after the concatenation, a part given twice.
    let w = konst(&[16, 32, 1, 1], 122);
    let again = format!("add(%o, nn.conv2d(%e1, {w}, channels=16, kernel_size=[1, 1]))");
    assert!(concat_steps(&fire("(%e1, %e3)", &again), &x) >= 1);
    let w = konst(&[16, 80, 1, 1], 123);
    let twice = format!(
        "%c2 = concatenate((%e3, %o, %e3), axis=1);\n  \
         nn.conv2d(%c2, {w}, channels=16, kernel_size=[1, 1])"
    );
    assert!(concat_steps(&fire("(%e1, %e3)", &twice), &x) >= 1);
}

/// `concat` of `%a = relu(x)` and `%b = relu(y)` (plain `(n, 3|5, 4, 4)` temporaries, `c`
/// channels in all) along the channels, reduced by a 1x1 conv to `%o`, then `tail`: its
/// number of concat steps.
fn plain_parts(n: usize, c: usize, concat: &str, tail: &str) -> usize {
    let w = konst(&[4, c, 1, 1], 140);
    let text = partition(
        &format!("%x: Tensor[({n}, 3, 4, 4), float32], %y: Tensor[({n}, 5, 4, 4), float32]"),
        &format!(
            "  %a = nn.relu(%x);\n  %b = nn.relu(%y);\n  \
             %c = concatenate({concat}, axis=1);\n  \
             %o = nn.conv2d(%c, {w}, channels=4, kernel_size=[1, 1]);\n  {tail}"
        ),
    );
    let inputs = [tensor(&[n, 3, 4, 4], 141), tensor(&[n, 5, 4, 4], 142)];
    concat_steps(&text, &inputs)
}

#[test]
fn plain_parts_are_written_in_place() {
    assert_eq!(plain_parts(1, 8, "(%a, %b)", "%o"), 0);
    assert_eq!(plain_parts(1, 8, "(%b, %a)", "%o"), 0);
    // The result is also an output: the parts are slices of the caller's buffer.
    assert_eq!(plain_parts(1, 8, "(%a, %b)", "(%o, %c)"), 0);
}

#[test]
fn parts_read_again_given_twice_or_not_outermost_are_copied() {
    let w = konst(&[4, 3, 1, 1], 143);
    let again = format!("add(%o, nn.conv2d(%a, {w}, channels=4, kernel_size=[1, 1]))");
    assert_eq!(plain_parts(1, 8, "(%a, %b)", &again), 1);
    assert_eq!(plain_parts(1, 11, "(%a, %b, %a)", "%o"), 1);
    // Two images: each part is two runs of bytes of the result.
    assert_eq!(plain_parts(2, 8, "(%a, %b)", "%o"), 1);
}
