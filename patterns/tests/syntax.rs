//! The text syntax: parsing, printing, round trips and positioned errors.

mod common;

use byoc_ir::DType;
use byoc_ir::{AttrValue, Attrs, Span, Type};
use byoc_patterns::{ParseErrorKind, Pattern, PatternKind, PatternParseError, TypeConstraint};
use proptest::prelude::*;

fn parse(s: &str) -> Pattern {
    s.parse()
        .unwrap_or_else(|e: PatternParseError| panic!("'{s}' does not parse: {e}"))
}

fn err(s: &str) -> PatternParseError {
    match s.parse::<Pattern>() {
        Ok(p) => panic!("'{s}' parsed as {p}"),
        Err(e) => e,
    }
}

fn at(col: u32) -> Span {
    Span { line: 1, col }
}

#[test]
fn design_examples_round_trip_verbatim() {
    for s in [
        "nn.relu(add(nn.conv2d(*, *), *))",
        "nn.relu?(nn.bias_add?(nn.conv2d(*, const), const))",
        "multiply(add(?x, ?y), subtract(?x, ?y))",
        "nn.relu(nn.batch_norm(*, *, *, *, *).0)",
        "*",
        "?x",
        "var | const",
        "add(..)",
        "(*, var)",
        "(*,)",
        "()",
        "(..)",
        "*.*",
        "nn.conv2d(*, *){data_layout=\"NCHW\", groups=1}",
        "* : float32",
        "* : Tensor[(1, 16, 8, 8), float32]",
        "* : (1, 16)",
        "* : (16)",
        "* : ()",
        "* : (Tensor[(2), int8], Tensor[(), float32])",
        "nn.relu(*) | nn.relu(*) : float32",
        "(nn.relu(*) | abs(*)) : float32",
        "(nn.relu(*) | abs(*)).0",
        "* | (var | const)",
        "*{Composite=\"dnnl.conv2d\", Primitive=1}",
        "dominates(nn.conv2d(*, *), nn.relu(*), add(*, *))",
        "clip(*){a_max=6.5f, a_min=0.0f}",
        "nn.conv2d(*, *){channels=None, padding=[1, 1, 1, 1]}",
    ] {
        assert_eq!(parse(s).to_string(), s, "printing the parse of '{s}'");
    }
}

#[test]
fn spacing_and_trailing_commas_are_free() {
    assert_eq!(parse("  add( * ,const ) ").to_string(), "add(*, const)");
    assert_eq!(parse("(*, *, )").to_string(), "(*, *)");
    assert_eq!(parse("((*))").to_string(), "*");
    assert_eq!(
        parse("clip(*){a_min=1, a_max=2.5}").to_string(),
        "clip(*){a_max=2.5f, a_min=1}"
    );
}

#[test]
fn parses_to_the_builder_patterns() {
    let built = Pattern::call(
        "nn.relu",
        [Pattern::call(
            "add",
            [
                Pattern::call("nn.conv2d", [Pattern::wildcard(), Pattern::constant()]),
                Pattern::wildcard(),
            ],
        )],
    );
    assert_eq!(parse("nn.relu(add(nn.conv2d(*, const), *))"), built);
    let opt = Pattern::call("nn.conv2d", [Pattern::wildcard(), Pattern::wildcard()])
        .optional("nn.relu", []);
    assert_eq!(parse("nn.relu?(nn.conv2d(*, *))"), opt);
    assert_eq!(
        parse("*.0 | var : int8"),
        Pattern::wildcard()
            .get(0)
            .or(Pattern::var().has_dtype(DType::Int8))
    );
    assert_eq!(
        parse("* : Tensor[(2, 3), float32]"),
        Pattern::wildcard().has_type(Type::tensor([2, 3], DType::Float32))
    );
    assert_eq!(parse("* : (2, 3)"), Pattern::wildcard().has_shape([2, 3]));
    assert_eq!(
        parse("nn.conv2d(*, *){groups=2}"),
        Pattern::call("nn.conv2d", [Pattern::wildcard(), Pattern::wildcard()])
            .has_attr("groups", 2)
    );
    match parse("*.0.1").kind() {
        PatternKind::TupleGetItem {
            tuple,
            index: Some(1),
        } => {
            assert!(matches!(
                tuple.kind(),
                PatternKind::TupleGetItem { index: Some(0), .. }
            ))
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn unbalanced_parentheses_are_located() {
    let e = err("nn.relu(add(*, *)");
    assert_eq!(e.span, at(18));
    assert!(
        matches!(e.kind, ParseErrorKind::Unclosed { open: '(', open_at, .. } if open_at == at(8)),
        "{e}"
    );
    assert_eq!(
        e.to_string(),
        "1:18: '(' opened at 1:8 is not closed: expected ')', found end of input"
    );
    let e = err("add(*, *))");
    assert_eq!(e.span, at(10));
    assert_eq!(e.kind, ParseErrorKind::Unopened(')'));
    let e = err("add(* *)");
    assert_eq!(e.to_string(), "1:7: expected ',' or ')', found '*'");
}

#[test]
fn unknown_ops_are_located() {
    let e = err("nn.relu(nn.conv3x(*))");
    assert_eq!(e.span, at(9));
    assert!(
        e.to_string().starts_with("1:9: unknown op 'nn.conv3x'"),
        "{e}"
    );
    let e = err("add(nn.relux(*), *)");
    assert_eq!(e.span, at(5));
    assert_eq!(
        e.to_string(),
        "1:5: unknown op 'nn.relux' (did you mean 'nn.relu'?)"
    );
    assert_eq!(
        err("frobnicate(*)").kind,
        ParseErrorKind::UnknownOp {
            op: "frobnicate".into(),
            suggestion: None
        }
    );
}

#[test]
fn arity_and_attributes_are_checked_against_the_op() {
    let e = err("nn.relu(*, *)");
    assert_eq!(e.span, at(1));
    assert!(
        matches!(e.kind, ParseErrorKind::Arity { got: 2, .. }),
        "{e}"
    );
    let e = err("nn.conv2d(*, *){strides=\"x\"}");
    assert_eq!(e.span, at(16));
    assert!(e.to_string().contains("strides"), "{e}");
    let e = err("nn.conv2d(*, *){colour=1}");
    assert!(e.to_string().contains("unknown attribute 'colour'"), "{e}");
}

#[test]
fn empty_alternatives_are_located() {
    let e = err("nn.relu(*) |");
    assert_eq!(e.span, at(12));
    assert_eq!(e.kind, ParseErrorKind::EmptyAlternative { side: "after" });
    assert_eq!(
        err("| *").kind,
        ParseErrorKind::EmptyAlternative { side: "before" }
    );
    assert_eq!(err("add(* | , *)").span, at(7));
    assert_eq!(err("* | | *").span, at(3));
}

#[test]
fn conflicting_named_wildcards_are_rejected() {
    let e = err("add(?x : float32, ?x : int8)");
    assert_eq!(e.span, at(24));
    assert_eq!(
        e.to_string(),
        "1:24: ?x is constrained to int8 here but to float32 at 1:10; no expression can be both"
    );
    let e = err("add(?x : Tensor[(2), float32], ?x : (3))");
    assert!(
        matches!(e.kind, ParseErrorKind::ConflictingBinding { .. }),
        "{e}"
    );
    // The same holds for attribute constraints, reported at the second '{'.
    let e = err("add(?x{axis=1}, ?x{axis=2})");
    assert_eq!(e.span, at(19));
    assert_eq!(
        e.to_string(),
        "1:19: ?x is constrained to axis=2 here but to axis=1 at 1:7; no expression can be both"
    );
    // Compatible constraints are fine.
    parse("add(?x{axis=1}, ?x{axis=1, exclude=False})");
    parse("add(?x : float32, ?x : (2))");
    parse("add(?x : float32, ?y : int8)");
}

#[test]
fn other_errors_name_what_was_expected() {
    assert_eq!(
        err("").to_string(),
        "1:1: expected a pattern, found end of input"
    );
    assert_eq!(
        err("add").to_string(),
        "1:4: expected '(' after the op name 'add', found end of input"
    );
    assert_eq!(err("* : float33").span, at(5));
    assert!(matches!(err("* : float33").kind, ParseErrorKind::DType(_)));
    assert_eq!(
        err("*.x").to_string(),
        "1:3: expected a field index or '*' after '.', found 'x'"
    );
    assert_eq!(
        err("?").to_string(),
        "1:2: expected a name after '?', found end of input"
    );
    assert_eq!(err("* $").kind, ParseErrorKind::BadChar('$'));
    assert!(matches!(err("*{a=\"x}").kind, ParseErrorKind::BadString(_)));
    assert_eq!(
        err("expr(%1)").kind,
        ParseErrorKind::BuilderOnly("expression")
    );
    assert_eq!(err("nn.relu(*)\n | ").span, Span { line: 2, col: 2 });
}

#[test]
fn builder_only_expression_pattern_prints() {
    let f = {
        let mut b = byoc_ir::FunctionBuilder::new();
        let x = b.param("x", Type::tensor([1], DType::Float32));
        b.finish(vec![x], x, Attrs::new()).unwrap()
    };
    assert_eq!(Pattern::expr(f.body).to_string(), "expr(%0)");
}

fn leaf() -> impl Strategy<Value = Pattern> {
    prop_oneof![
        Just(Pattern::wildcard()),
        Just(Pattern::var()),
        Just(Pattern::constant()),
        "[a-z][a-z0-9_]{0,3}".prop_map(Pattern::named),
    ]
}

fn attr_value() -> impl Strategy<Value = AttrValue> {
    let scalar = prop_oneof![
        any::<i64>().prop_map(AttrValue::Int),
        (-1e6f64..1e6).prop_map(AttrValue::Float),
        any::<bool>().prop_map(AttrValue::Bool),
        Just(AttrValue::None),
        "[ -~\\n\\t]{0,6}".prop_map(AttrValue::Str),
    ];
    prop_oneof![
        scalar.clone(),
        prop::collection::vec(scalar, 0..3).prop_map(AttrValue::List),
    ]
}

fn constraint() -> impl Strategy<Value = TypeConstraint> {
    let dtype = prop::sample::select(vec![
        DType::Float32,
        DType::Int8,
        DType::Float16,
        DType::Bool,
    ]);
    let shape = prop::collection::vec(0usize..64, 0..4);
    prop_oneof![
        dtype.clone().prop_map(TypeConstraint::DType),
        shape.clone().prop_map(TypeConstraint::Shape),
        (shape, dtype).prop_map(|(s, d)| TypeConstraint::Type(Type::tensor(s, d))),
    ]
}

fn pattern() -> impl Strategy<Value = Pattern> {
    leaf().prop_recursive(4, 24, 3, |inner| {
        let unary = prop::sample::select(vec!["nn.relu", "abs", "exp"]);
        prop_oneof![
            (unary, inner.clone()).prop_map(|(op, p)| Pattern::call(op, [p])),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| Pattern::call("add", [a, b])),
            Just(Pattern::call_any("multiply")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| a.optional("subtract", [b])),
            prop::collection::vec(inner.clone(), 0..3).prop_map(Pattern::tuple),
            Just(Pattern::tuple_any()),
            (inner.clone(), prop::option::of(0usize..4)).prop_map(|(p, i)| match i {
                Some(i) => p.get(i),
                None => p.get_any(),
            }),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| a.or(b)),
            // Attributes on op calls are checked against the op's schema; keep them on the rest.
            (
                inner.clone().prop_filter("attrs on a non-call", |p| {
                    !matches!(p.kind(), PatternKind::Call { .. })
                }),
                "[a-z_][a-z0-9_]{0,5}",
                attr_value(),
            )
                .prop_map(|(p, k, v)| p.has_attrs(Attrs::new().with(&k, v))),
            (inner.clone(), constraint()).prop_map(|(p, c)| match c {
                TypeConstraint::DType(d) => p.has_dtype(d),
                TypeConstraint::Shape(s) => p.has_shape(s),
                TypeConstraint::Type(t) => p.has_type(t),
            }),
            (inner.clone(), inner.clone(), inner).prop_map(|(c, p, i)| c.dominates(p, i)),
        ]
    })
}

proptest! {
    #[test]
    fn display_then_parse_is_identity(p in pattern()) {
        let text = p.to_string();
        let back = match text.parse::<Pattern>() {
            // The builder does not check named wildcards for contradictory types; the parser does.
            Err(PatternParseError { kind: ParseErrorKind::ConflictingBinding { .. }, .. }) => {
                return Err(TestCaseError::reject("contradictory ?x constraints"));
            }
            other => other.map_err(|e| TestCaseError::fail(format!("'{text}': {e}")))?,
        };
        prop_assert_eq!(&back, &p, "text: {}", text);
        prop_assert_eq!(back.to_string(), text);
    }
}
