//! Callback rewriting to a fixed point, with an iteration limit.

mod common;

use byoc_ir::Module;
use byoc_ir::{Attrs, FunctionBuilder};
use byoc_patterns::{Pattern, RewriteError, Rewriter};
use common::*;

fn relu_chain(n: usize) -> Module {
    let mut b = FunctionBuilder::new();
    let x = b.param("x", t(&[4]));
    let mut cur = x;
    for _ in 0..n {
        cur = call(&mut b, "nn.relu", &[cur]);
    }
    Module::from_main(finish(b, vec![x], cur))
}

fn pat(s: &str) -> Pattern {
    s.parse().unwrap()
}

#[test]
fn rewrites_to_a_fixed_point() {
    // relu(relu(x)) -> relu(x), repeated, folds a chain of five into one.
    let mut m = relu_chain(5);
    let rounds = Rewriter::new(10)
        .rule(pat("nn.relu(nn.relu(?x))"), |ctx| {
            let x = ctx.get("x").expect("bound");
            ctx.builder().call("nn.relu", &[x], Attrs::new()).map(Some)
        })
        .run(&mut m)
        .unwrap();
    assert!(rounds >= 2, "{rounds}");
    assert_same(m.main().unwrap(), relu_chain(1).main().unwrap());
}

#[test]
fn callbacks_may_decline() {
    let mut m = relu_chain(3);
    let rounds = Rewriter::new(3)
        .rule(pat("nn.relu(*)"), |_| Ok(None))
        .run(&mut m)
        .unwrap();
    assert_eq!(rounds, 0);
    assert_same(m.main().unwrap(), relu_chain(3).main().unwrap());
}

#[test]
fn oscillating_rules_do_not_converge() {
    let mut m = relu_chain(1);
    let err = Rewriter::new(4)
        .rule(pat("nn.relu(?x)"), |ctx| {
            let x = ctx.get("x").expect("bound");
            ctx.builder().call("abs", &[x], Attrs::new()).map(Some)
        })
        .rule(pat("abs(?x)"), |ctx| {
            let x = ctx.get("x").expect("bound");
            ctx.builder().call("nn.relu", &[x], Attrs::new()).map(Some)
        })
        .run(&mut m)
        .unwrap_err();
    assert_eq!(err, RewriteError::NoConvergence { limit: 4 });
    assert_eq!(err.to_string(), "rewrite did not converge within 4 rounds");
}
