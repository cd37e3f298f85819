//! Random convolutions and dense layers with random attributes (strides, dilation, asymmetric
//! padding, groups), bias forms and eltwise tails with random constants and attributes (the
//! GELU constants exact or not, `clip` bounds, `leaky_relu` slopes), partitioned for dnnl
//! through the pipeline, compiled by the plugin and run: the results must match byoc's host
//! executor on the unpartitioned layer. A pattern or predicate that ignored a constant or an
//! attribute would fuse what oneDNN then computes differently.

mod common;

use common::{konst, offloaded_matches_host, proptest_config, tensor};
use proptest::prelude::*;

/// Input channels of the convolutions.
const C: usize = 4;

/// The layer under the tail.
#[derive(Clone, Debug)]
enum Root {
    Conv {
        kernel: usize,
        strides: [usize; 2],
        dilation: [usize; 2],
        padding: [usize; 4],
        depthwise: bool,
    },
    Dense,
}

/// How the bias is added: not, `nn.bias_add`, or `add` of a broadcast constant.
#[derive(Clone, Copy, Debug)]
enum BiasForm {
    None,
    BiasAdd,
    Add,
}

/// The eltwise tail; the GELU constants are exact (`None`) or the given values.
#[derive(Clone, Debug)]
enum Tail {
    None,
    Relu,
    Tanh,
    Sigmoid,
    Clip(f32, f32),
    Gelu([Option<f32>; 3]),
    Swish,
    LeakyRelu(f32),
}

fn root() -> impl Strategy<Value = Root> {
    prop_oneof![
        3 => (
            prop::sample::select(vec![1usize, 3]),
            [1usize..=2, 1usize..=2],
            [1usize..=2, 1usize..=2],
            [0usize..=2, 0usize..=2, 0usize..=2, 0usize..=2],
            any::<bool>(),
        )
            .prop_map(|(kernel, strides, dilation, padding, depthwise)| Root::Conv {
                kernel,
                strides,
                dilation,
                padding,
                depthwise,
            }),
        1 => Just(Root::Dense),
    ]
}

fn gelu_constant() -> impl Strategy<Value = Option<f32>> {
    prop_oneof![3 => Just(None), 1 => (0.25f32..2.0).prop_map(Some)]
}

fn tail() -> impl Strategy<Value = Tail> {
    prop_oneof![
        Just(Tail::None),
        Just(Tail::Relu),
        Just(Tail::Tanh),
        Just(Tail::Sigmoid),
        (-1.0f32..0.0, 0.0f32..1.0).prop_map(|(lo, hi)| Tail::Clip(lo, hi)),
        [gelu_constant(), gelu_constant(), gelu_constant()].prop_map(Tail::Gelu),
        Just(Tail::Swish),
        (0.0f32..1.0).prop_map(Tail::LeakyRelu),
    ]
}

/// The layer as Relay text, and its input shape.
fn layer(root: &Root, bias: BiasForm, tail: &Tail, seed: u64) -> (String, Vec<usize>) {
    let (input, call, out_channels) = match root {
        Root::Conv {
            kernel: k,
            strides: [sh, sw],
            dilation: [dh, dw],
            padding: [pt, pl, pb, pr],
            depthwise,
        } => {
            let (groups, in_per_group) = if *depthwise { (C, 1) } else { (1, C) };
            let channels = if *depthwise { C } else { 6 };
            let call = format!(
                "nn.conv2d(%x, {}, strides=[{sh}, {sw}], padding=[{pt}, {pl}, {pb}, {pr}], dilation=[{dh}, {dw}], groups={groups}, channels={channels}, kernel_size=[{k}, {k}])",
                konst(&[channels, in_per_group, *k, *k], seed)
            );
            (vec![1, C, 9, 9], call, channels)
        }
        Root::Dense => (
            vec![2, 12],
            format!("nn.dense(%x, {}, units=5)", konst(&[5, 12], seed)),
            5,
        ),
    };
    let conv = matches!(root, Root::Conv { .. });
    let biased = match bias {
        BiasForm::None => call,
        BiasForm::BiasAdd => format!("nn.bias_add({call}, {})", konst(&[out_channels], seed + 1)),
        BiasForm::Add => {
            let shape: Vec<usize> = if conv {
                vec![out_channels, 1, 1]
            } else {
                vec![out_channels]
            };
            format!("add({call}, {})", konst(&shape, seed + 1))
        }
    };
    let body = format!("  %0 = {biased};\n");
    let exact = [std::f32::consts::SQRT_2, 1.0, 0.5];
    let result = match tail {
        Tail::None => "%0".to_string(),
        Tail::Relu => "nn.relu(%0)".into(),
        Tail::Tanh => "tanh(%0)".into(),
        Tail::Sigmoid => "sigmoid(%0)".into(),
        Tail::Clip(lo, hi) => format!("clip(%0, a_min={lo:?}f, a_max={hi:?}f)"),
        Tail::Gelu(c) => {
            let [c1, c2, c3] = [0, 1, 2].map(|i| c[i].unwrap_or(exact[i]));
            format!("multiply(multiply(%0, add(erf(divide(%0, {c1:?}f)), {c2:?}f)), {c3:?}f)")
        }
        Tail::Swish => "multiply(%0, sigmoid(%0))".into(),
        Tail::LeakyRelu(alpha) => format!("nn.leaky_relu(%0, alpha={alpha:?}f)"),
    };
    let dims: Vec<String> = input.iter().map(usize::to_string).collect();
    (
        format!(
            "def @main(%x: Tensor[({}), float32]) {{\n{body}  {result}\n}}\n",
            dims.join(", ")
        ),
        input,
    )
}

proptest! {
    #![proptest_config(proptest_config(128))]

    #[test]
    fn layers_with_random_constants_and_attributes_match_the_host(
        root in root(),
        bias in prop::sample::select(vec![BiasForm::None, BiasForm::BiasAdd, BiasForm::Add]),
        tail in tail(),
        seed in 0u64..1_000_000,
    ) {
        let (text, input) = layer(&root, bias, &tail, seed);
        let offloaded = offloaded_matches_host(&text, &[tensor(&input, seed)])
            .map_err(TestCaseError::fail)?;
        // The convolution or dense layer always goes to dnnl.
        prop_assert!(offloaded > 0, "nothing offloaded\n{text}");
    }
}
