//! Matching semantics (TVM's `DFPatternMatcher`): commutativity, binding identity, rollback,
//! attributes, types, the dominator pattern.

mod common;

use byoc_ir::{Attrs, ExprId, Function, FunctionBuilder};
use byoc_ir::{DType, Tensor};
use byoc_patterns::{match_at, Pattern};
use common::*;

fn p(s: &str) -> Pattern {
    s.parse().unwrap()
}

fn matches(f: &Function, pat: &str, at: ExprId) -> bool {
    match_at(f, &p(pat), at).is_some()
}

/// `%x`, `%c` (a constant), `add(%x, %c)`, `subtract(%c, %x)`.
fn small() -> (Function, [ExprId; 4]) {
    let mut b = FunctionBuilder::new();
    let x = b.param("x", t(&[4]));
    let c = b.constant(Tensor::from_slice([4], &[1.0f32, 2.0, 3.0, 4.0]).unwrap());
    let s = call(&mut b, "add", &[c, x]);
    let d = call(&mut b, "subtract", &[c, s]);
    let f = finish(b, vec![x], d);
    (f, [x, c, s, d])
}

#[test]
fn leaves() {
    let (f, [x, c, s, _]) = small();
    assert!(matches(&f, "*", x));
    assert!(matches(&f, "var", x));
    assert!(!matches(&f, "var", c));
    assert!(matches(&f, "const", c));
    assert!(!matches(&f, "const", s));
    assert!(match_at(&f, &Pattern::expr(s), s).is_some());
    assert!(match_at(&f, &Pattern::expr(s), x).is_none());
}

/// `const(v)` matches a constant whose every element is `v`, up to float rounding, and no
/// other: a composite that stands for a fixed function (dnnl's GELU) names its constants.
#[test]
fn constant_values() {
    let mut b = FunctionBuilder::new();
    let x = b.param("x", t(&[2]));
    let half = b.constant(Tensor::from_slice([2], &[0.5f32, 0.5]).unwrap());
    let sqrt2 = b.constant(Tensor::scalar(std::f32::consts::SQRT_2));
    let mixed = b.constant(Tensor::from_slice([2], &[0.5f32, 0.6]).unwrap());
    let one = b.constant(Tensor::scalar(1.0f32));
    let a = call(&mut b, "multiply", &[x, half]);
    let d = call(&mut b, "divide", &[a, sqrt2]);
    let m = call(&mut b, "multiply", &[d, mixed]);
    let s = call(&mut b, "add", &[m, one]);
    let f = finish(b, vec![x], s);
    assert!(matches(&f, "const(0.5)", half));
    assert!(matches(&f, "const(1.4142135623730951)", sqrt2));
    assert!(!matches(&f, "const(1.414)", sqrt2));
    assert!(!matches(&f, "const(0.5)", mixed));
    assert!(matches(&f, "const(1)", one));
    assert!(!matches(&f, "const(0.5)", x));
    assert!(matches(
        &f,
        "divide(multiply(*, const(0.5)), const(1.4142135623730951))",
        d
    ));
    assert!(!matches(&f, "divide(multiply(*, const(2)), const)", d));
    // They print and parse back.
    for text in ["const(0.5)", "add(*, const(1.0))", "const(-3.0)"] {
        assert_eq!(p(text).to_string(), text);
        assert_eq!(p(&p(text).to_string()), p(text), "{text}");
    }
    assert_eq!(p("const(2)"), Pattern::constant_of(2.0));
    assert!("const(x)".parse::<Pattern>().is_err());
    assert!("const(1".parse::<Pattern>().is_err());
}

#[test]
fn add_and_multiply_are_commutative_subtract_is_not() {
    let (f, [_, _, s, d]) = small();
    assert!(matches(&f, "add(var, const)", s));
    assert!(matches(&f, "add(const, var)", s));
    assert!(matches(&f, "subtract(const, add(..))", d));
    assert!(!matches(&f, "subtract(add(..), const)", d));
}

#[test]
fn named_wildcards_bind_one_expression() {
    let (f, [x, c, s, d]) = small();
    let m = match_at(&f, &p("subtract(?a, add(?a, ?b))"), d).unwrap();
    assert_eq!(m.get("a"), Some(c));
    assert_eq!(m.get("b"), Some(x));
    assert_eq!(m.root(), d);
    assert!(!matches(&f, "add(?a, ?a)", s));
}

#[test]
fn failed_alternatives_roll_back_their_bindings() {
    let (f, [x, c, s, _]) = small();
    // The left side binds ?a to the constant before failing; the right must start clean.
    let m = match_at(&f, &p("add(?a, nn.relu(*)) | add(var, ?a)"), s).unwrap();
    assert_eq!(m.get("a"), Some(c));
    // Commutative retry rolls back too: first order binds ?a := c then fails on `var`.
    let m = match_at(&f, &p("add(?a, const)"), s).unwrap();
    assert_eq!(m.get("a"), Some(x));
}

#[test]
fn shared_builder_nodes_bind_one_expression() {
    let mut b = FunctionBuilder::new();
    let x = b.param("x", t(&[4]));
    let y = b.param("y", t(&[4]));
    let r1 = call(&mut b, "nn.relu", &[x]);
    let r2 = call(&mut b, "nn.relu", &[y]);
    let same = call(&mut b, "add", &[r1, r1]);
    let diff = call(&mut b, "add", &[r1, r2]);
    let out = b.tuple(&[same, diff]).unwrap();
    let f = finish(b, vec![x, y], out);
    let relu = Pattern::call("nn.relu", [Pattern::wildcard()]);
    let shared = Pattern::call("add", [relu.clone(), relu]);
    assert!(match_at(&f, &shared, same).is_some());
    assert!(match_at(&f, &shared, diff).is_none());
    // Two separately built, structurally equal nodes are independent.
    let apart = p("add(nn.relu(*), nn.relu(*))");
    assert_eq!(apart, shared);
    assert!(match_at(&f, &apart, diff).is_some());
}

#[test]
fn attributes_count_defaults_and_convert_like_the_op() {
    let mut b = FunctionBuilder::new();
    let x = b.param("x", t(&[1, 3, 8, 8]));
    let w = b.param("w", t(&[4, 3, 3, 3]));
    let conv = call_attrs(
        &mut b,
        "nn.conv2d",
        &[x, w],
        Attrs::new()
            .with("padding", vec![1, 1, 1, 1])
            .with("channels", 4),
    );
    let f = finish(b, vec![x, w], conv);
    assert!(matches(&f, "nn.conv2d(*, *){data_layout=\"NCHW\"}", conv));
    assert!(matches(
        &f,
        "nn.conv2d(*, *){padding=[1, 1, 1, 1], channels=4}",
        conv
    ));
    assert!(!matches(&f, "nn.conv2d(*, *){data_layout=\"NHWC\"}", conv));
    assert!(!matches(&f, "nn.conv2d(*, *){groups=2}", conv));
    // Attribute constraints on something that is not a call or function fail.
    assert!(!matches(&f, "*{groups=1}", x));
}

#[test]
fn function_attributes_match() {
    let mut b = FunctionBuilder::new();
    let x = b.param("x", t(&[4]));
    let f = composite(&mut b, "dnnl.relu", "nn.relu_", &[t(&[4])], |b, p| {
        call(b, "nn.relu", &[p[0]])
    });
    let c = b.call_local(f, &[x]).unwrap();
    let func = finish(b, vec![x], c);
    assert!(matches(&func, "*{Composite=\"dnnl.relu\"}", f));
    assert!(!matches(&func, "*{Composite=\"dnnl.add\"}", f));
    assert!(!matches(&func, "*{Composite=\"dnnl.relu\"}", c));
}

#[test]
fn type_constraints_read_inferred_types() {
    let (f, [x, _, s, _]) = small();
    assert!(matches(&f, "add(..) : float32", s));
    assert!(!matches(&f, "add(..) : int8", s));
    assert!(matches(&f, "* : (4)", x));
    assert!(!matches(&f, "* : (4, 1)", x));
    assert!(matches(&f, "* : Tensor[(4), float32]", s));
    assert!(!matches(&f, "* : Tensor[(4), float16]", s));
    assert!(match_at(&f, &Pattern::wildcard().has_dtype(DType::Float32), x).is_some());
    // Without types, no type constraint holds.
    let mut untyped = f.clone();
    untyped.clear_types();
    assert!(!matches(&untyped, "add(..) : float32", s));
    assert!(matches(&untyped, "add(..)", s));
}

#[test]
fn tuples_and_projections() {
    let mut b = FunctionBuilder::new();
    let x = b.param("x", t(&[4]));
    let r = call(&mut b, "nn.relu", &[x]);
    let tup = b.tuple(&[x, r]).unwrap();
    let g = b.tuple_get_item(tup, 1).unwrap();
    let f = finish(b, vec![x], g);
    assert!(matches(&f, "(var, nn.relu(*))", tup));
    assert!(matches(&f, "(..)", tup));
    assert!(!matches(&f, "(var,)", tup));
    assert!(matches(&f, "(*, *).1", g));
    assert!(!matches(&f, "(*, *).0", g));
    assert!(matches(&f, "*.*", g));
    assert!(!matches(&f, "(..)", g));
}

#[test]
fn optional_matches_with_or_without_the_call() {
    let (f, [x, _, s, _]) = small();
    assert!(matches(&f, "add?(var, const)", s));
    assert!(matches(&f, "add?(var, const)", x));
    assert!(!matches(&f, "nn.relu?(const)", x));
}

/// `add(relu(relu(conv)), leaky_relu(conv))`, and a fake diamond with two convs.
fn diamonds() -> (Function, ExprId, ExprId) {
    let mut b = FunctionBuilder::new();
    let x = b.param("x", t(&[1, 3, 8, 8]));
    let w = b.param("w", t(&[4, 3, 3, 3]));
    let conv = call(&mut b, "nn.conv2d", &[x, w]);
    let r1 = call(&mut b, "nn.relu", &[conv]);
    let r2 = call(&mut b, "nn.relu", &[r1]);
    let l = call(&mut b, "nn.leaky_relu", &[conv]);
    let diamond = call(&mut b, "add", &[r2, l]);
    let conv2 = call(&mut b, "nn.conv2d", &[x, w]);
    let conv3 = call(&mut b, "nn.conv2d", &[x, w]);
    let ra = call(&mut b, "nn.relu", &[conv3]);
    let rb = call(&mut b, "nn.relu", &[conv2]);
    let fake = call(&mut b, "add", &[ra, rb]);
    let out = b.tuple(&[diamond, fake]).unwrap();
    (finish(b, vec![x, w], out), diamond, fake)
}

#[test]
fn dominator_pattern_matches_diamonds_only() {
    let (f, diamond, fake) = diamonds();
    let dom = "dominates(nn.conv2d(*, *), nn.relu(*) | nn.leaky_relu(*), add(*, *))";
    assert!(matches(&f, dom, diamond));
    // Two different convs: the parent would have to bind twice.
    assert!(!matches(&f, dom, fake));
    // A path op outside the path pattern breaks it.
    assert!(!matches(
        &f,
        "dominates(nn.conv2d(*, *), nn.relu(*), add(*, *))",
        diamond
    ));
}
