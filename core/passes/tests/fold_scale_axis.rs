//! FoldScaleAxis: the folded form against hand-computed weights, whole batch-norm chains against
//! the host executor running the unfolded module (batch norm, multiply and add kernels: an
//! independent reference), and the cases it must leave alone. The small module-in/module-out
//! tests are pass cases (`tests/cases/passes/fold_scale_axis_*.case`).

use std::collections::BTreeMap;

use byoc_exec::{ExecOptions, Executor};
use byoc_ir::text::{parse_module, print_module};
use byoc_ir::Tensor;
use byoc_ir::{structural_eq_module, Module};
use byoc_passes::{
    FoldConstant, FoldScaleAxis, InferType, Pass, PassContext, PassManager, SimplifyInference,
};

fn parse(text: &str) -> Module {
    let mut m = parse_module(text).unwrap();
    PassManager::new()
        .pass(InferType)
        .run(&mut m, &mut PassContext::new())
        .unwrap();
    m
}

fn run(m: &Module, passes: Vec<Box<dyn Pass>>) -> Module {
    let mut m = m.clone();
    let mut pm = PassManager::new().verify_each(true);
    for p in passes {
        pm.push(p);
    }
    pm.run(&mut m, &mut PassContext::new()).unwrap();
    m
}

fn fold(m: &Module) -> Module {
    run(m, vec![Box::new(FoldScaleAxis)])
}

/// SimplifyInference, FoldConstant, FoldScaleAxis: the prepare sequence of a target that asks
/// for both.
fn prepare(m: &Module) -> Module {
    run(
        m,
        vec![
            Box::new(SimplifyInference::default()),
            Box::new(FoldConstant),
            Box::new(FoldScaleAxis),
        ],
    )
}

fn assert_same(actual: &Module, expected: &Module) {
    if let Err(e) = structural_eq_module(actual, expected) {
        panic!(
            "modules differ: {e}\nactual:\n{}\nexpected:\n{}",
            print_module(actual),
            print_module(expected)
        );
    }
}

/// Deterministic values in [-1, 1) (a small LCG), printed as a text-format list.
fn values(n: usize, seed: u64) -> String {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let v: Vec<String> = (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let x = ((s >> 40) as f64) / ((1u64 << 24) as f64) * 2.0 - 1.0;
            format!("{x:.6}")
        })
        .collect();
    format!("[{}]", v.join(", "))
}

/// Positive values in [0.5, 1.5).
fn positive(n: usize, seed: u64) -> String {
    let list = values(n, seed);
    let v: Vec<String> = list[1..list.len() - 1]
        .split(", ")
        .map(|x| format!("{:.6}", x.parse::<f64>().unwrap() / 2.0 + 1.0))
        .collect();
    format!("[{}]", v.join(", "))
}

fn input(shape: &[usize], seed: u64) -> Tensor {
    let n: usize = shape.iter().product();
    let list = values(n, seed);
    let v: Vec<f32> = list[1..list.len() - 1]
        .split(", ")
        .map(|x| x.parse().unwrap())
        .collect();
    Tensor::from_slice(shape.to_vec(), &v).unwrap()
}

/// Runs both modules on the host with the same inputs (`%x` of `x_shape`, other parameters
/// from their declared types) and compares every element to a relative 1e-5 (floor 1e-5).
fn assert_computes_the_same(original: &Module, folded: &Module, x_shape: &[usize]) {
    let main = original.main().unwrap();
    let mut feeds = BTreeMap::from([("x".to_string(), input(x_shape, 7))]);
    for (seed, &p) in main.params.iter().enumerate() {
        let v = main.var(p).unwrap();
        if v.name != "x" {
            let shape = &v.ty.as_tensor().unwrap().shape;
            feeds.insert(v.name.clone(), input(shape, 8 + seed as u64));
        }
    }
    let eval = |m: &Module| {
        Executor::new(m, ExecOptions::default())
            .unwrap()
            .run_named(&feeds)
            .unwrap()
    };
    let (want, got) = (eval(original), eval(folded));
    assert_eq!(want.len(), got.len());
    for (w, g) in want.iter().zip(&got) {
        assert_eq!(w.shape(), g.shape());
        for (i, (a, b)) in w.to_f64_vec().iter().zip(g.to_f64_vec()).enumerate() {
            let err = (a - b).abs() / a.abs().max(1e-5);
            assert!(
                err <= 1e-5,
                "element {i}: {b} vs reference {a} (rel err {err:.2e})"
            );
        }
    }
}

fn ops(m: &Module) -> Vec<String> {
    m.main().unwrap().op_names()
}

#[test]
fn batch_norm_after_conv_folds_into_the_weights() {
    // conv (3x3, padding 1, groups 2) -> batch_norm -> relu, every parameter a constant.
    let (c_in, c_out) = (4, 6);
    let m = parse(&format!(
        r#"def @main(%x: Tensor[(2, {c_in}, 5, 5), float32]) {{
          %0 = nn.conv2d(%x, const(({c_out}, 2, 3, 3), float32, {w}), padding=[1, 1, 1, 1], groups=2, channels={c_out}, kernel_size=[3, 3]);
          %1 = nn.batch_norm(%0, const(({c_out}), float32, {gamma}), const(({c_out}), float32, {beta}), const(({c_out}), float32, {mean}), const(({c_out}), float32, {var}));
          %2 = %1.0;
          nn.relu(%2)
        }}"#,
        w = values(c_out * 2 * 9, 1),
        gamma = positive(c_out, 2),
        beta = values(c_out, 3),
        mean = values(c_out, 4),
        var = positive(c_out, 5),
    ));
    let folded = prepare(&m);
    assert_eq!(ops(&folded), ["nn.conv2d", "nn.bias_add", "nn.relu"]);
    assert_computes_the_same(&m, &folded, &[2, c_in, 5, 5]);
}

#[test]
fn dense_scale_and_shift_fold_along_the_last_axis() {
    // dense -> add (1, 3) -> multiply by a scalar -> add (3): all on the units axis.
    let m = parse(&format!(
        r#"def @main(%x: Tensor[(2, 4), float32]) {{
          %0 = nn.dense(%x, const((3, 4), float32, {w}), units=3);
          %1 = add(%0, const((1, 3), float32, {b}));
          %2 = multiply(1.5f, %1);
          add(%2, const((3), float32, {t}))
        }}"#,
        w = values(12, 11),
        b = values(3, 12),
        t = values(3, 13),
    ));
    let folded = fold(&m);
    assert_eq!(ops(&folded), ["nn.dense", "nn.bias_add"]);
    assert_computes_the_same(&m, &folded, &[2, 4]);
}

#[test]
fn scales_and_shifts_on_any_value_merge_into_one_multiply_and_one_bias_add() {
    // DenseNet's pre-activation block after SimplifyInference: max_pool -> (x * s1 + t1) * s2 + t2
    // -> relu. Per channel: scale s1 * s2 = [2 * 3, -1 * 0.5] = [6, -0.5], shift
    // t1 * s2 + t2 = [1 * 3 + 0.25, 2 * 0.5 - 1] = [3.25, 0].
    let m = parse(
        r#"def @main(%x: Tensor[(1, 2, 4, 4), float32]) {
          %0 = nn.max_pool2d(%x, pool_size=[2, 2], strides=[2, 2]);
          %1 = multiply(%0, const((2, 1, 1), float32, [2f, -1f]));
          %2 = add(%1, const((1, 2, 1, 1), float32, [1f, 2f]));
          %3 = multiply(const((2, 1, 1), float32, [3f, 0.5f]), %2);
          %4 = add(%3, const((2, 1, 1), float32, [0.25f, -1f]));
          nn.relu(%4)
        }"#,
    );
    let expected = parse(
        r#"def @main(%x: Tensor[(1, 2, 4, 4), float32]) {
          %0 = nn.max_pool2d(%x, pool_size=[2, 2], strides=[2, 2]);
          %1 = multiply(%0, const((2, 1, 1), float32, [6f, -0.5f]));
          %2 = nn.bias_add(%1, const((2), float32, [3.25f, 0f]), axis=1);
          nn.relu(%2)
        }"#,
    );
    let folded = fold(&m);
    assert_same(&folded, &expected);
    assert_computes_the_same(&m, &folded, &[1, 2, 4, 4]);
    assert_same(&fold(&folded), &folded);
    // A scale then a shift after a conv with parameter weights (the conv's own per-channel add
    // still becomes its bias), and two shifts.
    let m = parse(
        r#"def @main(%x: Tensor[(1, 2, 3, 3), float32], %w: Tensor[(2, 2, 1, 1), float32]) {
          %0 = nn.conv2d(%x, %w, channels=2, kernel_size=[1, 1]);
          %1 = add(%0, const((2, 1, 1), float32, [1f, 2f]));
          %2 = multiply(%1, const((2, 1, 1), float32, [2f, 3f]));
          %3 = add(%2, 0.5f);
          (%3, add(add(%x, 1f), const((2, 1, 1), float32, [1f, 2f])))
        }"#,
    );
    let expected = parse(
        r#"def @main(%x: Tensor[(1, 2, 3, 3), float32], %w: Tensor[(2, 2, 1, 1), float32]) {
          %0 = nn.conv2d(%x, %w, channels=2, kernel_size=[1, 1]);
          %1 = nn.bias_add(%0, const((2), float32, [1f, 2f]), axis=1);
          %2 = multiply(%1, const((2, 1, 1), float32, [2f, 3f]));
          %3 = nn.bias_add(%2, const((2), float32, [0.5f, 0.5f]), axis=1);
          (%3, nn.bias_add(%x, const((2), float32, [2f, 3f]), axis=1))
        }"#,
    );
    let folded = fold(&m);
    assert_same(&folded, &expected);
    assert_computes_the_same(&m, &folded, &[1, 2, 3, 3]);
}

#[test]
fn non_constant_weights_shared_values_and_other_shapes_are_left_alone() {
    for text in [
        // The weight is a parameter: the scale cannot go into it.
        r#"def @main(%x: Tensor[(1, 2, 3, 3), float32], %w: Tensor[(2, 2, 1, 1), float32]) {
          %0 = nn.conv2d(%x, %w, channels=2, kernel_size=[1, 1]);
          multiply(%0, const((2, 1, 1), float32, [2f, 3f]))
        }"#,
        // The conv's value is used twice: scaling it would change the other use.
        r#"def @main(%x: Tensor[(1, 2, 3, 3), float32]) {
          %0 = nn.conv2d(%x, const((2, 2, 1, 1), float32, fill=1f), channels=2, kernel_size=[1, 1]);
          %1 = multiply(%0, const((2, 1, 1), float32, [2f, 3f]));
          (%1, %0)
        }"#,
        // A (2) constant broadcasts along W, not along the channels.
        r#"def @main(%x: Tensor[(1, 2, 3, 2), float32]) {
          %0 = nn.conv2d(%x, const((2, 2, 1, 1), float32, fill=1f), channels=2, kernel_size=[1, 1]);
          multiply(%0, const((2), float32, [2f, 3f]))
        }"#,
        // A scale that varies over H is not per channel.
        r#"def @main(%x: Tensor[(1, 2, 3, 3), float32]) {
          %0 = nn.conv2d(%x, const((2, 2, 1, 1), float32, fill=1f), channels=2, kernel_size=[1, 1]);
          multiply(%0, const((2, 3, 1), float32, fill=2f))
        }"#,
        // NHWC data.
        r#"def @main(%x: Tensor[(1, 3, 3, 2), float32]) {
          %0 = nn.conv2d(%x, const((1, 1, 2, 2), float32, fill=1f), channels=2, kernel_size=[1, 1], data_layout="NHWC", kernel_layout="HWIO");
          multiply(%0, const((2), float32, [2f, 3f]))
        }"#,
        // Already canonical: one bias_add with a (C) constant.
        r#"def @main(%x: Tensor[(1, 2, 3, 3), float32]) {
          %0 = nn.conv2d(%x, const((2, 2, 1, 1), float32, fill=1f), channels=2, kernel_size=[1, 1]);
          nn.bias_add(%0, const((2), float32, [2f, 3f]))
        }"#,
    ] {
        let m = parse(text);
        assert_same(&fold(&m), &m);
    }
}
