//! In-place concatenation: the producers of a concatenation's parts write straight into their
//! slices of its result (no concat step) when nothing reads a part afterwards and the layouts
//! allow it; otherwise a concat step copies them. Both against the host reference kernels.

mod common;

use byoc_core::sdk::PartitionedFunction;
use byoc_json_runtime::serialize::serialize;
use byoc_plugin_dnnl::DnnlRuntime;
use common::{check, konst, partition, tensor};

/// `%name = conv(src) + bias, relu` as a `dnnl.conv2d_bias_relu` composite call on 9x9 maps.
fn conv_relu(name: &str, src: &str, cin: usize, cout: usize, k: usize, seed: u64) -> String {
    let pad = k / 2;
    let (w, b) = (
        konst(&[cout, cin, k, k], seed),
        konst(&[cout, 1, 1], seed + 1),
    );
    format!(
        "  %f{name} = fn (%p0: Tensor[(1, {cin}, 9, 9), float32], %p1: Tensor[({cout}, {cin}, {k}, {k}), float32], %p2: Tensor[({cout}, 1, 1), float32], Composite=\"dnnl.conv2d_bias_relu\") {{\n    \
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

/// Checks `text` against the host on `inputs` and returns its number of concat steps.
fn concat_steps(text: &str, inputs: &[byoc_core::Tensor]) -> usize {
    check(text, inputs);
    let f = PartitionedFunction::from_text(text).unwrap();
    let s = serialize(&f.function, "dnnl_test").unwrap();
    let rt = DnnlRuntime::new(&s.to_json(), &s.constants, None).unwrap();
    rt.steps()
        .iter()
        .filter(|s| s.label.starts_with("concat"))
        .count()
}

#[test]
fn a_fire_module_matches_the_host() {
    // The expansions' layouts are the convolutions' choice (NHWC on AVX-512, channel blocks
    // on other CPUs): in place or copied, the result is the same.
    let x = [tensor(&[1, 8, 9, 9], 130)];
    concat_steps(&fire("(%e1, %e3)", "%o"), &x);
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
