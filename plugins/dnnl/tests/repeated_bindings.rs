//! Random networks of convolutions, bias adds, activations and adds whose operands are drawn
//! from every earlier value, so that one value often reaches a pattern twice: `add(y, y)`, a
//! residual that is the convolution's own input or its own result, two branches of one value.
//! Each is partitioned for dnnl through the pipeline (its pattern table and predicates),
//! compiled by the plugin and run; the results must match byoc's host executor on the
//! unpartitioned network (an implementation independent of oneDNN). A composite that binds
//! one value to two pattern leaves must be declined, never compiled with its sum post-op
//! reading the buffer the convolution writes, and never refused at codegen.

mod common;

use byoc_ir::text::parse_module;
use byoc_passes::prune::op_names;
use common::{konst, offloaded_matches_host, proptest_config, tensor};
use proptest::prelude::*;

/// Channels and spatial size of every value: each op keeps the shape, so any two values can
/// be added.
const C: usize = 4;
const HW: usize = 6;

/// One step of a network; operand indices are taken modulo the values made so far.
#[derive(Clone, Debug)]
enum Step {
    /// `bias_add(conv2d(v, W), b)`, 3x3 with padding 1 or 1x1, then relu or not.
    Conv {
        src: usize,
        kernel3: bool,
        relu: bool,
    },
    /// `add(a, b)`, possibly one value twice.
    Add(usize, usize),
    /// `nn.relu(v)`.
    Relu(usize),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (any::<usize>(), any::<bool>(), any::<bool>())
            .prop_map(|(src, kernel3, relu)| Step::Conv { src, kernel3, relu }),
        3 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Step::Add(a, b)),
        1 => any::<usize>().prop_map(Step::Relu),
    ]
}

/// The network as Relay text; the result adds the last value to the one chosen by `tail`.
fn network(steps: &[Step], tail: usize, seed: u64) -> String {
    let mut values = vec!["%x".to_string()];
    let mut body = String::new();
    let pick = |values: &[String], i: usize| values[i % values.len()].clone();
    for (n, s) in steps.iter().enumerate() {
        let seed = seed.wrapping_add(n as u64 * 2);
        let expr = match s {
            Step::Conv { src, kernel3, relu } => {
                let (k, pad) = if *kernel3 { (3, 1) } else { (1, 0) };
                let conv = format!(
                    "nn.bias_add(nn.conv2d({}, {}, padding=[{pad}, {pad}, {pad}, {pad}], channels={C}, kernel_size=[{k}, {k}]), {})",
                    pick(&values, *src),
                    konst(&[C, C, k, k], seed),
                    konst(&[C], seed + 1),
                );
                if *relu {
                    format!("nn.relu({conv})")
                } else {
                    conv
                }
            }
            Step::Add(a, b) => format!("add({}, {})", pick(&values, *a), pick(&values, *b)),
            Step::Relu(v) => format!("nn.relu({})", pick(&values, *v)),
        };
        body.push_str(&format!("  %{n} = {expr};\n"));
        values.push(format!("%{n}"));
    }
    let last = values.last().cloned().unwrap_or_default();
    format!(
        "def @main(%x: Tensor[(1, {C}, {HW}, {HW}), float32]) {{\n{body}  add({last}, {})\n}}\n",
        pick(&values, tail)
    )
}

/// Whether a convolution of the network reaches its result (a dead one is never offloaded).
fn live_convolution(text: &str) -> bool {
    let module = parse_module(text).expect("the network parses");
    op_names(module.main().expect("@main")).contains(&"nn.conv2d")
}

proptest! {
    #![proptest_config(proptest_config(128))]

    #[test]
    fn networks_with_repeated_bindings_match_the_host(
        steps in proptest::collection::vec(step(), 1..7),
        tail in any::<usize>(),
        seed in any::<u64>(),
    ) {
        let text = network(&steps, tail, seed % 1_000_000);
        let offloaded = offloaded_matches_host(&text, &[tensor(&[1, C, HW, HW], seed)])
            .map_err(TestCaseError::fail)?;
        // A convolution always goes to dnnl (lone adds and activations may stay on the host).
        if live_convolution(&text) {
            prop_assert!(offloaded > 0, "nothing offloaded\n{text}");
        }
    }
}
