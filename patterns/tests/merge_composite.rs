//! MergeComposite, with the semantics of TVM's `tests/python/relay/test_pass_merge_composite.py`.

mod common;

use std::sync::Arc;

use byoc_ir::DType;
use byoc_ir::Module;
use byoc_ir::Tensor;
use byoc_ir::{AttrValue, Attrs, Expr, ExprId, Function, FunctionBuilder};
use byoc_passes::run_pass;
use byoc_patterns::{DeclinedMatch, MergeComposite, Pattern, PatternTable};
use common::*;

#[test]
fn simple_merge() {
    let tab = table(&[("add_relu", "nn.relu(add(*, *))")]);
    let mut b = FunctionBuilder::new();
    let a = b.param("a", t(&[10, 10]));
    let bb = b.param("b", t(&[10, 10]));
    let s = call(&mut b, "add", &[a, bb]);
    let r = call(&mut b, "nn.relu", &[s]);
    let got = merge(finish(b, vec![a, bb], r), &tab);

    let mut e = FunctionBuilder::new();
    let a = e.param("a", t(&[10, 10]));
    let bb = e.param("b", t(&[10, 10]));
    let f = composite(
        &mut e,
        "add_relu",
        "add_nn.relu_",
        &[t(&[10, 10]), t(&[10, 10])],
        |e, p| {
            let s = call(e, "add", &[p[0], p[1]]);
            call(e, "nn.relu", &[s])
        },
    );
    let c = e.call_local(f, &[a, bb]).unwrap();
    assert_same(&got, &finish(e, vec![a, bb], c));
}

fn add_sub_mul(e: &mut FunctionBuilder, x: ExprId, y: ExprId) -> ExprId {
    let s = call(e, "add", &[x, y]);
    let d = call(e, "subtract", &[x, y]);
    call(e, "multiply", &[s, d])
}

#[test]
fn branch_merge() {
    let tab = table(&[("add_sub_mul", "multiply(add(?x, ?y), subtract(?x, ?y))")]);
    let ty = t(&[10, 10]);
    let mut b = FunctionBuilder::new();
    let a = b.param("a", ty.clone());
    let bb = b.param("b", ty.clone());
    let c = b.param("c", ty.clone());
    let m1 = add_sub_mul(&mut b, a, bb);
    let m2 = add_sub_mul(&mut b, c, m1);
    let r = call(&mut b, "nn.relu", &[m2]);
    let got = merge(finish(b, vec![a, bb, c], r), &tab);

    let mut e = FunctionBuilder::new();
    let a = e.param("a", ty.clone());
    let bb = e.param("b", ty.clone());
    let c = e.param("c", ty.clone());
    let name = "add_subtract_multiply_";
    let f1 = composite(
        &mut e,
        "add_sub_mul",
        name,
        &[ty.clone(), ty.clone()],
        |e, p| add_sub_mul(e, p[0], p[1]),
    );
    let c1 = e.call_local(f1, &[a, bb]).unwrap();
    let f2 = composite(
        &mut e,
        "add_sub_mul",
        name,
        &[ty.clone(), ty.clone()],
        |e, p| add_sub_mul(e, p[0], p[1]),
    );
    let c2 = e.call_local(f2, &[c, c1]).unwrap();
    let r = call(&mut e, "nn.relu", &[c2]);
    assert_same(&got, &finish(e, vec![a, bb, c], r));
}

#[test]
fn reuse_call_merge_needs_the_shared_sub_pattern() {
    // Built with the builder: one `add(?x, ?y)` node used twice must bind one expression.
    let x = Pattern::named("x");
    let inner = Pattern::call("add", [x.clone(), Pattern::named("y")]);
    let pat = Pattern::call("add", [Pattern::call("add", [x, inner.clone()]), inner]);
    let mut tab = PatternTable::new();
    tab.add("add_add_add", pat).unwrap();

    let ty = t(&[10, 10]);
    let mut b = FunctionBuilder::new();
    let a = b.param("a", ty.clone());
    let bb = b.param("b", ty.clone());
    let sub = call(&mut b, "subtract", &[a, bb]);
    let n0 = call(&mut b, "add", &[sub, bb]);
    let n1 = call(&mut b, "add", &[sub, n0]);
    let r = call(&mut b, "add", &[n1, n0]);
    let got = merge(finish(b, vec![a, bb], r), &tab);

    let mut e = FunctionBuilder::new();
    let a = e.param("a", ty.clone());
    let bb = e.param("b", ty.clone());
    let sub = call(&mut e, "subtract", &[a, bb]);
    let f = composite(
        &mut e,
        "add_add_add",
        "add_add_add_",
        &[ty.clone(), ty.clone()],
        |e, p| {
            let n0 = call(e, "add", &[p[0], p[1]]);
            let n1 = call(e, "add", &[p[0], n0]);
            call(e, "add", &[n1, n0])
        },
    );
    let c = e.call_local(f, &[sub, bb]).unwrap();
    assert_same(&got, &finish(e, vec![a, bb], c));
}

fn conv_bias_relu_net(layout: &str) -> Function {
    let mut b = FunctionBuilder::new();
    let x = b.param("x", t(&[1, 10, 10, 10]));
    let w = b.param("w", t(&[10, 10, 3, 3]));
    let bias = b.param("b", t(&[10]));
    let conv = call_attrs(
        &mut b,
        "nn.conv2d",
        &[x, w],
        Attrs::new()
            .with("kernel_size", vec![3, 3])
            .with("data_layout", layout),
    );
    let ba = call(&mut b, "nn.bias_add", &[conv, bias]);
    let r = call(&mut b, "nn.relu", &[ba]);
    finish(b, vec![x, w, bias], r)
}

#[test]
fn multiple_patterns() {
    let tab = table(&[
        (
            "conv2d_bias_relu",
            "nn.relu(nn.bias_add(nn.conv2d(*, *), *))",
        ),
        ("add_relu", "nn.relu(add(*, *))"),
    ]);
    let (d, k, bi, o) = (
        t(&[1, 8, 6, 6]),
        t(&[4, 8, 1, 1]),
        t(&[4]),
        t(&[1, 4, 6, 6]),
    );
    let conv_attrs = || {
        Attrs::new()
            .with("kernel_size", vec![1, 1])
            .with("padding", vec![0, 0])
    };
    let mut b = FunctionBuilder::new();
    let data = b.param("data", d.clone());
    let kernel = b.param("kernel", k.clone());
    let bias = b.param("bias", bi.clone());
    let pa = b.param("a", o.clone());
    let pb = b.param("b", o.clone());
    let conv = call_attrs(&mut b, "nn.conv2d", &[data, kernel], conv_attrs());
    let ba = call(&mut b, "nn.bias_add", &[conv, bias]);
    let r1 = call(&mut b, "nn.relu", &[ba]);
    let s = call(&mut b, "add", &[r1, pa]);
    let r2 = call(&mut b, "nn.relu", &[s]);
    let out = call(&mut b, "multiply", &[r2, pb]);
    let got = merge(finish(b, vec![data, kernel, bias, pa, pb], out), &tab);

    let mut e = FunctionBuilder::new();
    let data = e.param("data", d.clone());
    let kernel = e.param("kernel", k.clone());
    let bias = e.param("bias", bi.clone());
    let pa = e.param("a", o.clone());
    let pb = e.param("b", o.clone());
    let f1 = composite(
        &mut e,
        "conv2d_bias_relu",
        "nn.conv2d_nn.bias_add_nn.relu_",
        &[d, k, bi],
        |e, p| {
            let conv = call_attrs(e, "nn.conv2d", &[p[0], p[1]], conv_attrs());
            let ba = call(e, "nn.bias_add", &[conv, p[2]]);
            call(e, "nn.relu", &[ba])
        },
    );
    let c1 = e.call_local(f1, &[data, kernel, bias]).unwrap();
    let f2 = composite(
        &mut e,
        "add_relu",
        "add_nn.relu_",
        &[o.clone(), o],
        |e, p| {
            let s = call(e, "add", &[p[0], p[1]]);
            call(e, "nn.relu", &[s])
        },
    );
    let c2 = e.call_local(f2, &[c1, pa]).unwrap();
    let out = call(&mut e, "multiply", &[c2, pb]);
    assert_same(&got, &finish(e, vec![data, kernel, bias, pa, pb], out));
}

#[test]
fn merge_order_gives_earlier_entries_priority() {
    let a = "nn.relu(abs(add(*, *)))";
    let bpat = "abs(add(*, *))";
    let c = "nn.relu(abs(*))";
    let ty = t(&[10, 10]);
    let net = || {
        let mut b = FunctionBuilder::new();
        let i1 = b.param("input_1", ty.clone());
        let i2 = b.param("input_2", ty.clone());
        let s = call(&mut b, "add", &[i1, i2]);
        let ab = call(&mut b, "abs", &[s]);
        let r = call(&mut b, "nn.relu", &[ab]);
        finish(b, vec![i1, i2], r)
    };
    // A first: one composite of all three ops.
    let got = merge(net(), &table(&[("A", a), ("B", bpat), ("C", c)]));
    let mut e = FunctionBuilder::new();
    let i1 = e.param("input_1", ty.clone());
    let i2 = e.param("input_2", ty.clone());
    let f = composite(
        &mut e,
        "A",
        "add_abs_nn.relu_",
        &[ty.clone(), ty.clone()],
        |e, p| {
            let s = call(e, "add", &[p[0], p[1]]);
            let ab = call(e, "abs", &[s]);
            call(e, "nn.relu", &[ab])
        },
    );
    let r = e.call_local(f, &[i1, i2]).unwrap();
    assert_same(&got, &finish(e, vec![i1, i2], r));

    // B first: add+abs merge, then relu stays alone (C cannot reach into B's composite).
    let got = merge(net(), &table(&[("B", bpat), ("C", c), ("A", a)]));
    let mut e = FunctionBuilder::new();
    let i1 = e.param("input_1", ty.clone());
    let i2 = e.param("input_2", ty.clone());
    let f = composite(
        &mut e,
        "B",
        "add_abs_",
        &[ty.clone(), ty.clone()],
        |e, p| {
            let s = call(e, "add", &[p[0], p[1]]);
            call(e, "abs", &[s])
        },
    );
    let cb = e.call_local(f, &[i1, i2]).unwrap();
    let r = call(&mut e, "nn.relu", &[cb]);
    assert_same(&got, &finish(e, vec![i1, i2], r));

    // C first: abs+relu merge, add stays alone.
    let got = merge(net(), &table(&[("C", c), ("A", a), ("B", bpat)]));
    let mut e = FunctionBuilder::new();
    let i1 = e.param("input_1", ty.clone());
    let i2 = e.param("input_2", ty.clone());
    let s = call(&mut e, "add", &[i1, i2]);
    let f = composite(
        &mut e,
        "C",
        "abs_nn.relu_",
        std::slice::from_ref(&ty),
        |e, p| {
            let ab = call(e, "abs", &[p[0]]);
            call(e, "nn.relu", &[ab])
        },
    );
    let r = e.call_local(f, &[s]).unwrap();
    assert_same(&got, &finish(e, vec![i1, i2], r));
}

#[test]
fn parallel_merge_keeps_shared_inputs() {
    let tab = table(&[("add_sub_mul", "multiply(add(?x, ?y), subtract(?x, ?y))")]);
    let ty = t(&[10, 10]);
    let mut b = FunctionBuilder::new();
    let i1 = b.param("input_1", ty.clone());
    let i2 = b.param("input_2", ty.clone());
    let b1 = add_sub_mul(&mut b, i1, i2);
    let b2 = add_sub_mul(&mut b, i1, i2);
    let out = call(&mut b, "multiply", &[b1, b2]);
    let got = merge(finish(b, vec![i1, i2], out), &tab);

    let mut e = FunctionBuilder::new();
    let i1 = e.param("input_1", ty.clone());
    let i2 = e.param("input_2", ty.clone());
    let name = "add_subtract_multiply_";
    let f1 = composite(
        &mut e,
        "add_sub_mul",
        name,
        &[ty.clone(), ty.clone()],
        |e, p| add_sub_mul(e, p[0], p[1]),
    );
    let c1 = e.call_local(f1, &[i1, i2]).unwrap();
    let f2 = composite(
        &mut e,
        "add_sub_mul",
        name,
        &[ty.clone(), ty.clone()],
        |e, p| add_sub_mul(e, p[0], p[1]),
    );
    let c2 = e.call_local(f2, &[i1, i2]).unwrap();
    let out = call(&mut e, "multiply", &[c1, c2]);
    assert_same(&got, &finish(e, vec![i1, i2], out));
}

#[test]
fn multiple_input_subgraphs_need_identical_inputs() {
    let tab = table(&[
        ("add_sub_mul", "multiply(add(?x, ?y), subtract(?x, ?y))"),
        ("add_relu", "nn.relu(add(*, *))"),
    ]);
    let ty = t(&[10, 10]);
    let add_relu = |b: &mut FunctionBuilder, x, y| {
        let s = call(b, "add", &[x, y]);
        call(b, "nn.relu", &[s])
    };
    // Case A: the add and the subtract read the same two values.
    let mut b = FunctionBuilder::new();
    let ins: Vec<_> = (0..4)
        .map(|i| b.param(format!("input_{i}"), ty.clone()))
        .collect();
    let r1 = add_relu(&mut b, ins[0], ins[1]);
    let r2 = add_relu(&mut b, ins[2], ins[3]);
    let out = add_sub_mul(&mut b, r1, r2);
    let got = merge(finish(b, ins.clone(), out), &tab);

    let mut e = FunctionBuilder::new();
    let ins: Vec<_> = (0..4)
        .map(|i| e.param(format!("input_{i}"), ty.clone()))
        .collect();
    let two = [ty.clone(), ty.clone()];
    let f1 = composite(&mut e, "add_relu", "add_nn.relu_", &two, |e, p| {
        add_relu(e, p[0], p[1])
    });
    let c1 = e.call_local(f1, &[ins[0], ins[1]]).unwrap();
    let f2 = composite(&mut e, "add_relu", "add_nn.relu_", &two, |e, p| {
        add_relu(e, p[0], p[1])
    });
    let c2 = e.call_local(f2, &[ins[2], ins[3]]).unwrap();
    let f3 = composite(
        &mut e,
        "add_sub_mul",
        "add_subtract_multiply_",
        &two,
        |e, p| add_sub_mul(e, p[0], p[1]),
    );
    let c3 = e.call_local(f3, &[c1, c2]).unwrap();
    assert_same(&got, &finish(e, ins, c3));

    // Case B: four different values; add_sub_mul must not match.
    let mut b = FunctionBuilder::new();
    let ins: Vec<_> = (0..8)
        .map(|i| b.param(format!("input_{i}"), ty.clone()))
        .collect();
    let rs: Vec<_> = (0..4)
        .map(|i| add_relu(&mut b, ins[2 * i], ins[2 * i + 1]))
        .collect();
    let s = call(&mut b, "add", &[rs[0], rs[1]]);
    let d = call(&mut b, "subtract", &[rs[2], rs[3]]);
    let out = call(&mut b, "multiply", &[s, d]);
    let got = merge(finish(b, ins.clone(), out), &tab);

    let mut e = FunctionBuilder::new();
    let ins: Vec<_> = (0..8)
        .map(|i| e.param(format!("input_{i}"), ty.clone()))
        .collect();
    let calls: Vec<_> = (0..4)
        .map(|i| {
            let f = composite(&mut e, "add_relu", "add_nn.relu_", &two, |e, p| {
                add_relu(e, p[0], p[1])
            });
            e.call_local(f, &[ins[2 * i], ins[2 * i + 1]]).unwrap()
        })
        .collect();
    let s = call(&mut e, "add", &[calls[0], calls[1]]);
    let d = call(&mut e, "subtract", &[calls[2], calls[3]]);
    let out = call(&mut e, "multiply", &[s, d]);
    assert_same(&got, &finish(e, ins, out));
}

#[test]
fn tuple_get_item_merge_orders_params_by_pattern() {
    let tab = table(&[("bn_relu", "nn.relu(nn.batch_norm(*, *, *, *, *).0)")]);
    let (x, v) = (t(&[1, 8]), t(&[8]));
    let mut b = FunctionBuilder::new();
    let ps: Vec<_> = ["x", "gamma", "beta", "mean", "var"]
        .iter()
        .enumerate()
        .map(|(i, n)| b.param(*n, if i == 0 { x.clone() } else { v.clone() }))
        .collect();
    let bn = call(&mut b, "nn.batch_norm", &ps);
    let g = b.tuple_get_item(bn, 0).unwrap();
    let r = call(&mut b, "nn.relu", &[g]);
    let got = merge(finish(b, ps.clone(), r), &tab);

    let mut e = FunctionBuilder::new();
    let ps: Vec<_> = ["x", "gamma", "beta", "mean", "var"]
        .iter()
        .enumerate()
        .map(|(i, n)| e.param(*n, if i == 0 { x.clone() } else { v.clone() }))
        .collect();
    let tys = [x.clone(), v.clone(), v.clone(), v.clone(), v.clone()];
    let f = composite(
        &mut e,
        "bn_relu",
        "nn.batch_norm_TupleGetItem0_nn.relu_",
        &tys,
        |e, p| {
            let bn = call(e, "nn.batch_norm", p);
            let g = e.tuple_get_item(bn, 0).unwrap();
            call(e, "nn.relu", &[g])
        },
    );
    let c = e.call_local(f, &ps).unwrap();
    assert_same(&got, &finish(e, ps, c));
}

fn check_table(want_layout: &'static str) -> PatternTable {
    let mut tab = PatternTable::new();
    tab.add_with_check(
        "conv_bias_relu",
        "nn.relu(nn.bias_add(nn.conv2d(*, *), *))".parse().unwrap(),
        Arc::new(move |f: &Function, root: ExprId| {
            // root = relu; its argument's first argument is the conv.
            let bias = f.expr(root).as_call().map(|c| c.args[0]);
            let conv = bias.and_then(|b| f.expr(b).as_call().map(|c| c.args[0]));
            let layout = conv
                .and_then(|c| f.expr(c).as_call())
                .and_then(|c| c.attrs.get_str("data_layout"));
            if layout == Some(want_layout) {
                Ok(())
            } else {
                Err(format!("data_layout {layout:?}, not {want_layout}"))
            }
        }),
    )
    .unwrap();
    tab
}

#[test]
fn pattern_with_check_can_reject() {
    let net = conv_bias_relu_net("NCHW");
    let got = merge(net.clone(), &check_table("NHWC"));
    assert_same(&got, &net);
    // The rejection is kept: entry, root op and the check's reason.
    let m = Module::from_main(net.clone());
    let (_, cx) = run_pass(&MergeComposite::new(&check_table("NHWC")), &m).unwrap();
    let declined = cx.declined;
    assert_eq!(
        declined,
        [DeclinedMatch {
            function: "main".to_string(),
            pattern: "conv_bias_relu".to_string(),
            op: "nn.relu".to_string(),
            reason: "data_layout Some(\"NCHW\"), not NHWC".to_string(),
        }]
    );
    let m = Module::from_main(net.clone());
    let (_, cx) = run_pass(&MergeComposite::new(&check_table("NCHW")), &m).unwrap();
    assert!(cx.declined.is_empty());
    let got = merge(net, &check_table("NCHW"));
    let body = got.expr(got.body).as_call().unwrap();
    let byoc_ir::Callee::Local(f) = body.callee else {
        panic!("body is not a composite call")
    };
    assert_eq!(
        got.expr(f)
            .as_function()
            .unwrap()
            .attrs
            .get_str("Composite"),
        Some("conv_bias_relu")
    );
}

#[test]
fn check_sees_inferred_types() {
    let mut tab = PatternTable::new();
    tab.add_with_check(
        "conv_bias_relu",
        "nn.relu(nn.bias_add(nn.conv2d(*, *), *))".parse().unwrap(),
        Arc::new(
            |f: &Function, root: ExprId| match f.ty(root).and_then(|t| t.as_tensor()) {
                Some(t) if t.shape[0] == 2 => Ok(()),
                _ => Err("batch is not 2".to_string()),
            },
        ),
    )
    .unwrap();
    let net = conv_bias_relu_net("NCHW");
    assert_same(&merge(net.clone(), &tab), &net);
}

#[test]
fn diamond_does_not_merge_through_a_different_path() {
    let conv = "nn.relu(nn.bias_add(nn.conv2d(*, *), *))";
    let conv: Pattern = conv.parse().unwrap();
    let clip = Pattern::call("clip", [conv.clone()]);
    let pat = Pattern::call("multiply", [conv, clip]);
    let mut tab = PatternTable::new();
    tab.add("pat", pat).unwrap();

    let mut b = FunctionBuilder::new();
    let data = b.param("data", t(&[1, 8, 6, 6]));
    let kernel = b.param("kernel", t(&[4, 8, 1, 1]));
    let bias = b.param("bias", t(&[4]));
    let cv = call(&mut b, "nn.conv2d", &[data, kernel]);
    let ba = call(&mut b, "nn.bias_add", &[cv, bias]);
    let relu = call(&mut b, "nn.relu", &[ba]);
    let one = b.constant(Tensor::scalar(1.0f32));
    let add = call(&mut b, "add", &[relu, one]);
    let clip = call_attrs(
        &mut b,
        "clip",
        &[add],
        Attrs::new().with("a_min", 0.0).with("a_max", 255.0),
    );
    let mul = call(&mut b, "multiply", &[relu, clip]);
    let net = finish(b, vec![data, kernel, bias], mul);
    assert_same(&merge(net.clone(), &tab), &net);
}

#[test]
fn constants_are_embedded_only_when_matched_by_const() {
    let ty = t(&[4]);
    let net = || {
        let mut b = FunctionBuilder::new();
        let x = b.param("x", ty.clone());
        let k = b.constant(Tensor::from_slice([4], &[1.0f32, 2.0, 3.0, 4.0]).unwrap());
        let s = call(&mut b, "add", &[x, k]);
        let r = call(&mut b, "nn.relu", &[s]);
        finish(b, vec![x], r)
    };
    let data = Arc::new(Tensor::from_slice([4], &[1.0f32, 2.0, 3.0, 4.0]).unwrap());

    // Matched by `const`: embedded, one parameter.
    let got = merge(net(), &table(&[("add_relu", "nn.relu(add(*, const))")]));
    let mut e = FunctionBuilder::new();
    let x = e.param("x", ty.clone());
    let f = composite(
        &mut e,
        "add_relu",
        "add_nn.relu_",
        std::slice::from_ref(&ty),
        |e, p| {
            let k = e.constant(data.clone());
            let s = call(e, "add", &[p[0], k]);
            call(e, "nn.relu", &[s])
        },
    );
    let c = e.call_local(f, &[x]).unwrap();
    assert_same(&got, &finish(e, vec![x], c));

    // Matched by `*`: lifted to a parameter.
    let got = merge(net(), &table(&[("add_relu", "nn.relu(add(*, *))")]));
    let mut e = FunctionBuilder::new();
    let x = e.param("x", ty.clone());
    let k = e.constant(data.clone());
    let f = composite(
        &mut e,
        "add_relu",
        "add_nn.relu_",
        &[ty.clone(), ty.clone()],
        |e, p| {
            let s = call(e, "add", &[p[0], p[1]]);
            call(e, "nn.relu", &[s])
        },
    );
    let c = e.call_local(f, &[x, k]).unwrap();
    assert_same(&got, &finish(e, vec![x], c));
}

#[test]
fn optional_pattern_takes_the_longest_form() {
    let tab = table(&[("conv", "nn.relu?(nn.bias_add?(nn.conv2d(*, *), *))")]);
    let got = merge(conv_bias_relu_net("NCHW"), &tab);
    let body = got.expr(got.body).as_call().unwrap();
    let byoc_ir::Callee::Local(f) = body.callee else {
        panic!("body is not a composite call")
    };
    let lit = got.expr(f).as_function().unwrap();
    assert_eq!(
        lit.attrs.get("PartitionedFromPattern"),
        Some(&AttrValue::from("nn.conv2d_nn.bias_add_nn.relu_"))
    );
    assert_eq!(body.args.len(), 3);

    // Without the relu, the same entry takes conv + bias.
    let mut b = FunctionBuilder::new();
    let x = b.param("x", t(&[1, 3, 4, 4]));
    let w = b.param("w", t(&[2, 3, 1, 1]));
    let bias = b.param("b", t(&[2]));
    let cv = call(&mut b, "nn.conv2d", &[x, w]);
    let ba = call(&mut b, "nn.bias_add", &[cv, bias]);
    let ab = call(&mut b, "abs", &[ba]);
    let got = merge(finish(b, vec![x, w, bias], ab), &tab);
    let abs = got.expr(got.body).as_call().unwrap();
    let Expr::Call(inner) = got.expr(abs.args[0]) else {
        panic!("abs argument is not a call")
    };
    let byoc_ir::Callee::Local(f) = inner.callee else {
        panic!("not a composite call")
    };
    assert_eq!(
        got.expr(f)
            .as_function()
            .unwrap()
            .attrs
            .get_str("PartitionedFromPattern"),
        Some("nn.conv2d_nn.bias_add_")
    );
}

#[test]
fn later_entries_may_consume_composite_calls_but_never_enter_them() {
    let tab = table(&[("add_relu", "nn.relu(add(*, *))"), ("abs_any", "abs(*)")]);
    let ty = t(&[3]);
    let mut b = FunctionBuilder::new();
    let x = b.param("x", ty.clone());
    let y = b.param("y", ty.clone());
    let s = call(&mut b, "add", &[x, y]);
    let r = call(&mut b, "nn.relu", &[s]);
    let a = call(&mut b, "abs", &[r]);
    let got = merge(finish(b, vec![x, y], a), &tab);

    let mut e = FunctionBuilder::new();
    let x = e.param("x", ty.clone());
    let y = e.param("y", ty.clone());
    let f = composite(
        &mut e,
        "add_relu",
        "add_nn.relu_",
        &[ty.clone(), ty.clone()],
        |e, p| {
            let s = call(e, "add", &[p[0], p[1]]);
            call(e, "nn.relu", &[s])
        },
    );
    let c = e.call_local(f, &[x, y]).unwrap();
    let g = composite(
        &mut e,
        "abs_any",
        "abs_",
        std::slice::from_ref(&ty),
        |e, p| call(e, "abs", &[p[0]]),
    );
    let c2 = e.call_local(g, &[c]).unwrap();
    assert_same(&got, &finish(e, vec![x, y], c2));
}

#[test]
fn functions_for_external_compilers_are_skipped() {
    let tab = table(&[("add_relu", "nn.relu(add(*, *))")]);
    let mut b = FunctionBuilder::new();
    let x = b.param("x", t(&[3]));
    let s = call(&mut b, "add", &[x, x]);
    let r = call(&mut b, "nn.relu", &[s]);
    let f = b
        .finish(vec![x], r, Attrs::new().with("Compiler", "dnnl"))
        .unwrap();
    let mut m = byoc_ir::Module::new();
    m.add("ext", f.clone()).unwrap();
    let mut b = FunctionBuilder::new();
    let x = b.param("x", t(&[3]));
    let c = b.call_global("ext", &[x]).unwrap();
    m.add("main", b.finish(vec![x], c, Attrs::new()).unwrap())
        .unwrap();
    let (m, _) = run_pass(&MergeComposite::new(&tab), &m).unwrap();
    assert_same(m.get("ext").unwrap(), &f);
    assert_eq!(
        DType::Float32,
        m.get("ext")
            .unwrap()
            .ty(m.get("ext").unwrap().body)
            .unwrap()
            .as_tensor()
            .unwrap()
            .dtype
    );
}

/// A random graph of `n` ops over one tensor shape: each op takes recent values, so values
/// have several users and matches overlap.
fn random_graph(seed: u64, n: usize) -> Function {
    let mut s = seed;
    let mut rnd = move |k: usize| {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((s >> 33) as usize) % k
    };
    let mut b = FunctionBuilder::new();
    let x = b.param("x", t(&[1, 4, 4, 4]));
    let w = b.param("w", t(&[4, 4, 1, 1]));
    let bias = b.param("bias", t(&[4]));
    let mut vals: Vec<ExprId> = vec![x];
    for _ in 0..n {
        let k = vals.len();
        let a = vals[k - 1 - rnd(k.min(4))];
        let c = vals[k - 1 - rnd(k.min(6))];
        let v = match rnd(11) {
            0 | 1 => call(&mut b, "nn.conv2d", &[a, w]),
            2 => call(&mut b, "nn.bias_add", &[a, bias]),
            3 => call(&mut b, "nn.relu", &[a]),
            4 | 5 => call(&mut b, "add", &[a, c]),
            6 => call(&mut b, "multiply", &[a, c]),
            7 => call(&mut b, "subtract", &[a, c]),
            8 => call(&mut b, "abs", &[a]),
            9 => call(&mut b, "exp", &[a]),
            _ => {
                let pair = b.tuple(&[a, c]).expect("tuple builds");
                b.tuple_get_item(pair, rnd(2)).expect("field builds")
            }
        };
        vals.push(v);
    }
    let k = vals.len();
    let out = b
        .tuple(&[vals[k - 1], vals[k - 3], vals[k / 2]])
        .expect("tuple builds");
    finish(b, vec![x, w, bias], out)
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]

    /// MergeComposite applies the whole table to one overlay and rebuilds once; partitioning
    /// entry by entry, rebuilding after each, must give the same function.
    #[test]
    fn merge_composite_equals_entry_by_entry_partition(seed in 0u64..1_000_000, n in 8usize..160) {
        let tab = table(&[
            ("a.conv2d_bias_sum_relu", "nn.relu(add(nn.bias_add(nn.conv2d(*, *), *), *))"),
            ("a.conv2d_bias_relu", "nn.relu(nn.bias_add(nn.conv2d(*, *), *))"),
            ("a.conv2d_bias", "nn.bias_add(nn.conv2d(*, *), *)"),
            ("a.add_relu", "nn.relu(add(*, *))"),
            ("a.multiply_add", "add(multiply(*, *), *)"),
            ("a.add_sub_mul", "multiply(add(?x, ?y), subtract(?x, ?y))"),
            ("a.exp_sum", "add(exp(*), *)"),
            ("a.pair", "(abs(*), *)"),
            ("a.add_or_sub", "add(*, *) | subtract(*, *)"),
            ("a.mul", "multiply(*, *)"),
        ]);
        let f = random_graph(seed, n);
        let merged = merge(f.clone(), &tab);
        let mut step = f;
        for entry in tab.entries() {
            let attrs = Attrs::new().with("Composite", entry.name.as_str());
            step = byoc_patterns::partition(&step, &entry.pattern, &attrs, None)
                .expect("partition succeeds");
        }
        if let Err(m) = byoc_ir::structural_eq_function(&merged, &step) {
            return Err(proptest::test_runner::TestCaseError::fail(format!(
                "seed {seed}, {n} ops: {m}"
            )));
        }
        // Both are compact: no node left over from a replaced match.
        proptest::prop_assert_eq!(merged.len(), step.len());
    }
}

/// `add(y, y)` with `y = relu(x)`.
fn doubled() -> Function {
    let mut b = FunctionBuilder::new();
    let x = b.param("x", t(&[4]));
    let y = call(&mut b, "nn.relu", &[x]);
    let z = call(&mut b, "add", &[y, y]);
    finish(b, vec![x], z)
}

/// The reasons MergeComposite gives for declining matches of `table` in `f`.
fn declined_reasons(f: Function, table: &PatternTable) -> Vec<String> {
    let (_, cx) = run_pass(&MergeComposite::new(table), &Module::from_main(f)).unwrap();
    cx.declined.into_iter().map(|d| d.reason).collect()
}

/// A composite keeps one parameter per leaf of its pattern, so a match that would need two
/// parameters for one value is declined (the ops stay for later entries or the host): two
/// leaves bound to one value, or a leaf bound to a value the pattern matches as a call. One
/// named wildcard used twice is one leaf.
#[test]
fn matches_that_bind_one_value_to_two_leaves_are_declined() {
    let two = table(&[("acc.add", "add(?a, ?b)")]);
    assert_same(&merge(doubled(), &two), &doubled());
    assert_eq!(
        declined_reasons(doubled(), &two),
        ["?a and ?b bind one value, which a composite cannot pass as two parameters"]
    );
    let stars = table(&[("acc.add", "add(*, *)")]);
    assert_same(&merge(doubled(), &stars), &doubled());
    let inside = table(&[("acc.sum", "add(nn.relu(*), ?s)")]);
    assert_same(&merge(doubled(), &inside), &doubled());
    assert_eq!(
        declined_reasons(doubled(), &inside),
        ["?s binds the result of nn.relu inside the match"]
    );
    // One name, one leaf: the composite takes the value once.
    let one = table(&[("acc.double", "add(?a, ?a)")]);
    let got = merge(doubled(), &one);
    assert!(declined_reasons(doubled(), &one).is_empty());
    let body = got.expr(got.body).as_call().unwrap();
    assert_eq!(body.args.len(), 1, "one parameter for ?a");
}
