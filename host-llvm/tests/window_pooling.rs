//! Windowed poolings (`nn.max_pool2d`, `nn.avg_pool2d`) compiled as reductions over their
//! window with their elementwise producers and consumers, against the reference pooling
//! kernel bit for bit: random shapes, windows, strides, dilations, paddings, `ceil_mode` and
//! `count_include_pad` on finite inputs and on inputs with NaN and signed zeros, 1 and 3
//! threads; a pooling without producers (or after a conv keeping its relu, or over NHWC
//! data) still anchored; a group that cannot compile falling back; serialized modules.

mod common;

use byoc_exec::ExternalModules;
use byoc_host_llvm::compile_host;
use byoc_passes::host_fuse::group_kind;
use common::{
    bits, check_fallback, check_reduction, check_with, finite, options, parse, run, run_reloaded,
};
use rand::{Rng, SeedableRng};

/// The kinds and ops of the compiled groups of `src`.
fn groups(src: &str) -> Vec<(&'static str, Vec<String>)> {
    let m = parse(src);
    let host = compile_host(&m, &options(2), true).expect("host code compiles");
    host.module
        .functions()
        .filter(|(name, _)| host.externals.get(name).is_some())
        .map(|(_, f)| (group_kind(f), f.op_names()))
        .collect()
}

/// A pooling with `attrs` over `relu(x * s + b)` (per-channel constants), then a consumer.
fn pool_chain(pool: &str, shape: [usize; 4], attrs: &str) -> String {
    let [n, c, h, w] = shape;
    format!(
        "def @main(%x: Tensor[({n}, {c}, {h}, {w}), float32], %s: Tensor[({c}, 1, 1), float32],
                   %b: Tensor[({c}, 1, 1), float32]) {{
           %0 = nn.relu(add(multiply(%x, %s), %b));
           %1 = {pool}(%0, {attrs});
           add(multiply(%1, 2f), 1f)
         }}"
    )
}

/// The output extent of a window along one axis, as type inference computes it (`None`
/// when the window does not fit).
fn out_len(size: usize, k: usize, s: usize, d: usize, pad: usize, ceil: bool) -> Option<usize> {
    let span = d * (k - 1) + 1;
    let room = (size + pad).checked_sub(span)?;
    Some(if ceil { room.div_ceil(s) } else { room / s } + 1)
}

#[test]
fn random_windows_with_producers_and_consumers_match_the_reference_kernel() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(19);
    let mut done = 0;
    while done < 48 {
        let shape = [
            rng.gen_range(1..3),
            rng.gen_range(1..4),
            rng.gen_range(1..12),
            rng.gen_range(1..12),
        ];
        let k = [rng.gen_range(1..4), rng.gen_range(1..4)];
        let s = [rng.gen_range(1..4), rng.gen_range(1..4)];
        let d = [rng.gen_range(1..3), rng.gen_range(1..3)];
        let pad: Vec<usize> = (0..4).map(|a| rng.gen_range(0..k[a % 2])).collect();
        let ceil = rng.gen_bool(0.5);
        let fits = (0..2)
            .all(|a| out_len(shape[2 + a], k[a], s[a], d[a], pad[a] + pad[a + 2], ceil).is_some());
        if !fits {
            continue;
        }
        let common = format!(
            "pool_size=[{}, {}], strides=[{}, {}], dilation=[{}, {}], padding=[{}, {}, {}, {}], \
             ceil_mode={}",
            k[0],
            k[1],
            s[0],
            s[1],
            d[0],
            d[1],
            pad[0],
            pad[1],
            pad[2],
            pad[3],
            if ceil { "True" } else { "False" }
        );
        let avg_pad = if rng.gen_bool(0.5) { "True" } else { "False" };
        check_reduction(
            &pool_chain("nn.max_pool2d", shape, &common),
            "nn.max_pool2d",
        );
        check_reduction(
            &pool_chain(
                "nn.avg_pool2d",
                shape,
                &format!("{common}, count_include_pad={avg_pad}"),
            ),
            "nn.avg_pool2d",
        );
        done += 1;
    }
}

#[test]
fn common_network_poolings_and_split_planes_match_the_reference_kernel() {
    for (pool, shape, attrs) in [
        // GoogLeNet / SqueezeNet style: 3x3 stride 2, ceil mode, many planes over threads.
        (
            "nn.max_pool2d",
            [1, 24, 28, 28],
            "pool_size=[3, 3], strides=[2, 2], ceil_mode=True",
        ),
        (
            "nn.max_pool2d",
            [2, 16, 14, 14],
            "pool_size=[3, 3], strides=[1, 1], padding=[1, 1, 1, 1]",
        ),
        (
            "nn.avg_pool2d",
            [1, 8, 35, 35],
            "pool_size=[3, 3], padding=[1, 1, 1, 1], count_include_pad=False",
        ),
        (
            "nn.avg_pool2d",
            [1, 8, 17, 17],
            "pool_size=[3, 3], padding=[1], count_include_pad=True",
        ),
        // Windows hanging over every edge, a dilated window and one padded output row.
        (
            "nn.avg_pool2d",
            [1, 3, 5, 6],
            "pool_size=[4, 4], strides=[3, 3], padding=[2, 2, 2, 2], ceil_mode=True, \
             count_include_pad=True",
        ),
        (
            "nn.max_pool2d",
            [1, 2, 9, 7],
            "pool_size=[2, 3], strides=[2, 1], dilation=[3, 2], padding=[1, 0, 2, 1]",
        ),
    ] {
        check_reduction(&pool_chain(pool, shape, attrs), pool);
    }
    // The pooling as the group's result (its divisions end the kernel), over a producer
    // chain reading through a transpose.
    check_reduction(
        "def @main(%x: Tensor[(1, 9, 10, 3), float32]) {
           %0 = transpose(exp(%x), axes=[0, 3, 1, 2]);
           nn.avg_pool2d(nn.relu(%0), pool_size=[3, 2], strides=[2, 2], padding=[1, 1, 0, 0],
                         ceil_mode=True)
         }",
        "nn.avg_pool2d",
    );
}

#[test]
fn a_pooling_without_producers_stays_anchored() {
    let kinds = groups(
        "def @main(%x: Tensor[(1, 4, 9, 9), float32]) {
           %0 = nn.max_pool2d(%x, pool_size=[3, 3], strides=[2, 2]);
           add(%0, 1f)
         }",
    );
    assert_eq!(
        kinds,
        [("anchored", vec!["nn.max_pool2d".into(), "add".into()])]
    );
    // A conv keeps its bias and relu; the pooling after it reads the conv's output.
    let src = "def @main(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32],
                         %b: Tensor[(4), float32]) {
                 %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1]);
                 %1 = nn.relu(nn.bias_add(%0, %b));
                 %2 = nn.avg_pool2d(%1, pool_size=[2, 2], strides=[2, 2]);
                 exp(%2)
               }";
    let kinds = groups(src);
    assert!(
        kinds.contains(&(
            "anchored",
            vec!["nn.conv2d".into(), "nn.bias_add".into(), "nn.relu".into()]
        )),
        "{kinds:?}"
    );
    assert!(
        kinds.contains(&("anchored", vec!["nn.avg_pool2d".into(), "exp".into()])),
        "{kinds:?}"
    );
    let m = parse(src);
    check_with(&m, &finite(&m, 3));
    // A producer with another user cannot join: the pooling stays anchored.
    let kinds = groups(
        "def @main(%x: Tensor[(1, 2, 6, 6), float32]) {
           %0 = nn.relu(%x);
           %1 = nn.max_pool2d(%0, pool_size=[2, 2], strides=[2, 2]);
           (%0, add(%1, 1f))
         }",
    );
    assert!(
        kinds.contains(&("anchored", vec!["nn.max_pool2d".into(), "add".into()])),
        "{kinds:?}"
    );
    // NHWC pooling is not compiled as a loop: it stays on its kernel, anchored.
    let kinds = groups(
        "def @main(%x: Tensor[(1, 6, 6, 2), float32]) {
           %0 = nn.relu(%x);
           %1 = nn.max_pool2d(%0, pool_size=[2, 2], strides=[2, 2], layout=\"NHWC\");
           add(%1, 1f)
         }",
    );
    assert!(
        kinds.contains(&("anchored", vec!["nn.max_pool2d".into(), "add".into()])),
        "{kinds:?}"
    );
}

#[test]
fn a_window_group_that_cannot_compile_falls_back_and_strict_refuses_it() {
    // A 65 x 65 window needs more folding loops than the code generator emits.
    let src = "def @main(%x: Tensor[(1, 2, 65, 65), float32]) {
                 %0 = nn.relu(%x);
                 nn.max_pool2d(%0, pool_size=[65, 65])
               }";
    check_fallback(src, &["nn.relu", "nn.max_pool2d"], "folding loops");
}

#[test]
fn window_modules_serialize_and_load_without_recompiling() {
    for (pool, attrs) in [
        (
            "nn.max_pool2d",
            "pool_size=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1]",
        ),
        (
            "nn.avg_pool2d",
            "pool_size=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1], count_include_pad=False",
        ),
    ] {
        let src = pool_chain(pool, [2, 6, 15, 15], attrs);
        let m = parse(&src);
        let host = compile_host(&m, &options(3), true).unwrap();
        assert_eq!(host.externals.len(), 1);
        let x = finite(&m, 4);
        let want = run(&m, &ExternalModules::new(), 1, &x);
        let got = run_reloaded(&host, 3, &x);
        assert_eq!(bits(&got[0]), bits(&want[0]), "{src}");
    }
}
