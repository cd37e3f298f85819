//! Reductions compiled as loops of their own against the reference kernels, bit for bit:
//! `sum`, `mean`, `max`, `min`, `prod` over random axes (with `keepdims` and `exclude`) with
//! elementwise and injective producers and elementwise consumers, the global poolings,
//! `nn.softmax` and `nn.log_softmax` over each axis,
//! reductions whose folds run across a row of outputs and split over threads, a property test
//! over random chains with one reduction, fallback of a group that cannot compile, and the
//! serialized modules.

mod common;

use byoc_exec::ExternalModules;
use byoc_host_llvm::compile_host;
use byoc_passes::host_fuse::group_kind;
use common::{
    bits, check_fallback, check_reduction, check_with, finite, inputs, options, parse, run,
    run_reloaded,
};
use proptest::prelude::*;

#[test]
fn each_reduction_with_producers_and_consumers_matches_the_reference_kernel() {
    for op in ["sum", "mean", "max", "min", "prod"] {
        for attrs in [
            "axis=[1]",
            "axis=[-1], keepdims=True",
            "axis=[0, 2]",
            "axis=[1], exclude=True, keepdims=True",
            "axis=None",
            "axis=2",
        ] {
            let src = format!(
                "def @main(%x: Tensor[(3, 5, 7), float32], %s: Tensor[(5, 1), float32]) {{
                   %0 = multiply(%x, %s);
                   %1 = add(%0, 0.5f);
                   %2 = {op}(nn.relu(%1), {attrs});
                   sigmoid(add(%2, 1f))
                 }}"
            );
            check_reduction(&src, op);
        }
    }
}

#[test]
fn global_poolings_fold_their_producers_and_consumers() {
    for pool in ["nn.global_avg_pool2d", "nn.global_max_pool2d"] {
        check_reduction(
            &format!(
                "def @main(%x: Tensor[(2, 6, 9, 11), float32], %b: Tensor[(6), float32]) {{
                   %0 = nn.bias_add(%x, %b);
                   %1 = {pool}(nn.relu(%0));
                   multiply(%1, 3f)
                 }}"
            ),
            pool,
        );
    }
    // A conv keeps its epilogue (bias, relu): the pooling folds the conv's output.
    let src = "def @main(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32],
                         %b: Tensor[(4), float32]) {
                 %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1]);
                 %1 = nn.relu(nn.bias_add(%0, %b));
                 %2 = nn.global_avg_pool2d(%1);
                 exp(%2)
               }";
    let m = parse(src);
    let host = compile_host(&m, &options(2), true).unwrap();
    let kinds: Vec<(&str, Vec<String>)> = host
        .module
        .functions()
        .filter(|(name, _)| host.externals.get(name).is_some())
        .map(|(_, f)| (group_kind(f), f.op_names()))
        .collect();
    assert!(
        kinds.contains(&(
            "anchored",
            vec!["nn.conv2d".into(), "nn.bias_add".into(), "nn.relu".into()]
        )),
        "{kinds:?}"
    );
    assert!(
        kinds.contains(&(
            "reduction",
            vec!["nn.global_avg_pool2d".into(), "exp".into()]
        )),
        "{kinds:?}"
    );
    check_with(&m, &finite(&m, 3));
}

#[test]
fn softmax_over_each_axis_with_producers_and_consumers() {
    for op in ["nn.softmax", "nn.log_softmax"] {
        for axis in [0, 1, 2, -1] {
            check_reduction(
                &format!(
                    "def @main(%x: Tensor[(3, 6, 7), float32], %b: Tensor[(7), float32]) {{
                       %0 = add(multiply(%x, 2f), %b);
                       %1 = {op}(tanh(%0), axis={axis});
                       multiply(%1, 0.5f)
                     }}"
                ),
                op,
            );
        }
    }
    // A long last axis, split over threads by rows.
    check_reduction(
        "def @main(%x: Tensor[(64, 1000), float32]) {
           nn.softmax(multiply(%x, 3f))
         }",
        "nn.softmax",
    );
}

#[test]
fn reductions_read_through_transposes_and_reshapes() {
    check_reduction(
        "def @main(%x: Tensor[(4, 6, 5), float32]) {
           %0 = transpose(exp(%x), axes=[2, 0, 1]);
           %1 = reshape(%0, newshape=[5, 24]);
           %2 = sum(add(%1, 1f), axis=[0]);
           negative(%2)
         }",
        "sum",
    );
    check_reduction(
        "def @main(%x: Tensor[(2, 12), float32]) {
           %0 = reshape(nn.relu(%x), newshape=[2, 3, 4]);
           %1 = transpose(%0, axes=[0, 2, 1]);
           max(multiply(%1, %1), axis=[1])
         }",
        "max",
    );
}

#[test]
fn folds_across_a_row_of_outputs_split_over_threads() {
    // The reduced axis is outer: each thread folds whole rows of 512 neighbouring outputs,
    // 64 steps each, in the reference order.
    for op in ["sum", "mean", "max", "prod"] {
        check_reduction(
            &format!(
                "def @main(%x: Tensor[(8, 64, 512), float32]) {{
                   %0 = {op}(add(%x, 2f), axis=[1]);
                   divide(%0, 3f)
                 }}"
            ),
            op,
        );
    }
    // The reduced axes are inner, long enough to split: one register accumulator per output.
    check_reduction(
        "def @main(%x: Tensor[(64, 4, 2048), float32]) {
           mean(tanh(%x), axis=[1, 2])
         }",
        "mean",
    );
}

#[test]
fn a_reduction_group_that_cannot_compile_falls_back_and_strict_refuses_it() {
    let src = "def @main(%x: Tensor[(4, 8), float32]) {
                 %0 = nn.leaky_relu(%x, alpha=0.1f);
                 sum(%0, axis=[1])
               }";
    check_fallback(src, &["nn.leaky_relu", "sum"], "nn.leaky_relu");
}

#[test]
fn reduction_modules_serialize_and_load_without_recompiling() {
    for src in [
        "def @main(%x: Tensor[(16, 32, 40), float32]) {
           %0 = mean(sigmoid(%x), axis=[0], keepdims=True);
           add(%0, 1f)
         }",
        "def @main(%x: Tensor[(16, 32, 40), float32]) {
           %0 = nn.log_softmax(sigmoid(%x), axis=1);
           add(%0, 1f)
         }",
    ] {
        let m = parse(src);
        let host = compile_host(&m, &options(3), true).unwrap();
        assert_eq!(host.externals.len(), 1);
        let x = finite(&m, 4);
        let want = run(&m, &ExternalModules::new(), 1, &x);
        let got = run_reloaded(&host, 3, &x);
        assert_eq!(bits(&got[0]), bits(&want[0]), "{src}");
    }
}

/// A random chain over a rank-3 input: elementwise and injective producers (a transpose, a
/// reshape round trip), one reduction over random axes, then elementwise consumers.
fn reduction_chain_strategy() -> impl Strategy<Value = String> {
    let shape = prop::collection::vec(1usize..6, 3);
    let before = prop::collection::vec(0usize..5, 0..4);
    let after = prop::collection::vec(0usize..3, 0..3);
    let reduce = (
        0usize..7,
        prop::collection::vec(any::<bool>(), 3),
        any::<bool>(),
        any::<bool>(),
    );
    (shape, before, reduce, after).prop_map(|(mut s, before, (op, axes, keepdims, exclude), after)| {
        let list = |v: &[usize]| v.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ");
        let input = list(&s);
        let mut body = String::new();
        let mut last = "%x".to_string();
        for (i, op) in before.iter().enumerate() {
            let expr = match op {
                0 => format!("exp(multiply({last}, 0.25f))"),
                1 => format!("add({last}, %b)"),
                2 => {
                    s = vec![s[2], s[0], s[1]];
                    format!("transpose({last}, axes=[2, 0, 1])")
                }
                3 => {
                    body.push_str(&format!("%m{i} = reshape({last}, newshape=[{}]);\n", s[0] * s[1] * s[2]));
                    format!("reshape(nn.relu(%m{i}), newshape=[{}])", list(&s))
                }
                _ => format!("maximum({last}, -1f)"),
            };
            body.push_str(&format!("%{i} = {expr};\n"));
            last = format!("%{i}");
        }
        let name = ["sum", "mean", "max", "min", "prod", "nn.softmax", "nn.log_softmax"][op];
        let axes: Vec<usize> = (0..3).filter(|&a| axes[a]).collect();
        if op >= 5 {
            let axis = axes.first().copied().unwrap_or(2);
            body.push_str(&format!("%r = {name}({last}, axis={axis});\n"));
        } else {
            body.push_str(&format!(
                "%r = {name}({last}, axis=[{}], keepdims={}, exclude={});\n",
                list(&axes),
                if keepdims { "True" } else { "False" },
                if exclude { "True" } else { "False" },
            ));
        }
        last = "%r".to_string();
        for (i, op) in after.iter().enumerate() {
            let expr = match op {
                0 => format!("sigmoid({last})"),
                1 => format!("subtract({last}, 0.5f)"),
                _ => format!("multiply({last}, {last})"),
            };
            body.push_str(&format!("%a{i} = {expr};\n"));
            last = format!("%a{i}");
        }
        format!(
            "def @main(%x: Tensor[({input}), float32], %b: Tensor[(1), float32]) {{\n{body}{last}\n}}"
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn random_chains_with_one_reduction_match_the_reference_kernels(src in reduction_chain_strategy()) {
        let m = parse(&src);
        check_with(&m, &finite(&m, 2));
        check_with(&m, &inputs(&m, 8));
    }
}
