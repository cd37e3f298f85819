//! The text format: the example of `docs/text-format.md`, printing, round trips (fixed and property-based),
//! every error kind with its position, and a bounded fuzz of the reader.

use std::sync::Arc;

use byoc_ir::text::{parse_module, print_module, print_module_with, PrintOptions};
use byoc_ir::{
    structural_eq_module, AttrValue, Attrs, Callee, Expr, ExprId, FunctionBuilder, Module, Span,
};
use byoc_ir::{DType, Tensor, TensorType, Type};
use proptest::prelude::*;

const FORMAT_EXAMPLE: &str = r#"#[version = "0.0.5"]
def @main(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(16, 3, 3, 3), float32], %b: Tensor[(16), float32]) {
  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1], channels=16, kernel_size=[3, 3]);
  %1 = nn.bias_add(%0, %b);
  %2 = nn.relu(%1);
  %3 = (%2, %0);
  %3.0
}
"#;

fn parse(src: &str) -> Module {
    parse_module(src).unwrap_or_else(|e| panic!("{e}\n{src}"))
}

fn assert_round_trip(m: &Module) -> String {
    let text = print_module(m);
    let back = parse_module(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    if let Err(mismatch) = structural_eq_module(&back, m) {
        panic!("{mismatch}\n{text}");
    }
    assert_eq!(print_module(&back), text, "printing is not stable");
    text
}

fn err(src: &str) -> String {
    match parse_module(src) {
        Ok(_) => panic!("parsed but should not:\n{src}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn design_example_parses_with_attrs_and_spans() {
    let m = parse(FORMAT_EXAMPLE);
    let main = m.main().unwrap();
    assert_eq!(main.params.len(), 3);
    let Expr::TupleGetItem { tuple, index: 0 } = main.expr(main.body) else {
        panic!("body is not %3.0");
    };
    let Expr::Tuple(fields) = main.expr(*tuple) else {
        panic!("not a tuple");
    };
    let (op, conv) = main.expr(fields[1]).as_op_call().unwrap();
    assert_eq!(op.name(), "nn.conv2d");
    assert_eq!(
        conv.attrs.get("padding"),
        Some(&AttrValue::ints([1, 1, 1, 1]))
    );
    assert_eq!(conv.attrs.get("channels"), Some(&AttrValue::Int(16)));
    assert_eq!(conv.attrs.get("strides"), Some(&AttrValue::ints([1, 1])));
    assert_eq!(main.node(fields[1]).span, Some(Span { line: 3, col: 8 }));
    assert_eq!(main.node(main.body).span, Some(Span { line: 7, col: 5 }));
    assert_eq!(
        main.node(main.params[2]).span,
        Some(Span { line: 2, col: 82 })
    );
    // The printer writes the same text back (defaults omitted, shortest forms).
    assert_eq!(
        assert_round_trip(&m),
        FORMAT_EXAMPLE.replace("  %3.0\n", "  %4 = %3.0;\n  %4\n")
    );
}

#[test]
fn relay_text_as_tvm_prints_it() {
    // Typed output of TVM v0.16's printer: return types, type comments, let, calls of
    // bound and inline function literals, tuple projections of calls.
    let src = r#"#[version = "0.0.5"]
// a comment
def @main(%data: Tensor[(1, 4), float32] /* ty=Tensor[(1, 4), float32] */) -> (Tensor[(1, 4), float32],) {
  %0 = fn (%p0: Tensor[(1, 4), float32], %p1: Tensor[(), float32], Composite="test.add_relu", PartitionedFromPattern="add_nn.relu_") -> Tensor[(1, 4), float32] {
    %1 = add(%p0, %p1) /* ty=Tensor[(1, 4), float32] */;
    nn.relu(%1)
  };
  let %v: Tensor[(1, 4), float32] = %0(%data, 1f);
  %2 = (fn (%q: Tensor[(1, 4), float32]) { (%q, %q) })(%v).1;
  %x.y = annotation.compiler_begin(%2, compiler="dnnl");
  (annotation.compiler_end(%x.y, compiler="dnnl"),)
}
"#
    .replace("%x.y", "%xy");
    let m = parse(&src);
    let main = m.main().unwrap();
    let lit = main
        .iter()
        .find_map(|(_, n)| n.expr.as_function().filter(|f| f.params.len() == 2))
        .unwrap();
    assert_eq!(lit.attrs.get_str("Composite"), Some("test.add_relu"));
    let text = assert_round_trip(&m);
    assert_eq!(
        text,
        r#"#[version = "0.0.5"]
def @main(%data: Tensor[(1, 4), float32]) {
  %0 = fn (%p0: Tensor[(1, 4), float32], %p1: Tensor[(), float32], Composite="test.add_relu", PartitionedFromPattern="add_nn.relu_") {
    %1 = add(%p0, %p1);
    %2 = nn.relu(%1);
    %2
  };
  %3 = 1.0f;
  %4 = %0(%data, %3);
  %5 = fn (%q: Tensor[(1, 4), float32]) {
    %6 = (%q, %q);
    %6
  };
  %7 = %5(%4);
  %8 = %7.1;
  %9 = annotation.compiler_begin(%8, compiler="dnnl");
  %10 = annotation.compiler_end(%9, compiler="dnnl");
  %11 = (%10,);
  %11
}
"#
    );
}

#[test]
fn shared_constants_print_in_the_common_scope() {
    let mut b = FunctionBuilder::new();
    let x = b.param("x", Type::tensor([2], DType::Float32));
    let c = b.constant(Tensor::from_vec([2], vec![1.0f32, 2.0]).unwrap());
    let lit = |b: &mut FunctionBuilder, name: &str| {
        let p = b.param("p", Type::tensor([2], DType::Float32));
        let s = b.call("add", &[p, c], Attrs::new()).unwrap();
        b.function(&[p], s, Attrs::new().with("Composite", name))
            .unwrap()
    };
    let f1 = lit(&mut b, "a");
    let f2 = lit(&mut b, "b");
    let y1 = b.call_local(f1, &[x]).unwrap();
    let y2 = b.call_local(f2, &[y1]).unwrap();
    let body = b.call("add", &[y2, c], Attrs::new()).unwrap();
    let m = Module::from_main(b.finish(vec![x], body, Attrs::new()).unwrap());
    assert_eq!(
        assert_round_trip(&m),
        r#"#[version = "0.0.5"]
def @main(%x: Tensor[(2), float32]) {
  %0 = const((2), float32, [1.0, 2.0]);
  %1 = fn (%p: Tensor[(2), float32], Composite="a") {
    %2 = add(%p, %0);
    %2
  };
  %3 = fn (%p_1: Tensor[(2), float32], Composite="b") {
    %4 = add(%p_1, %0);
    %4
  };
  %5 = %1(%x);
  %6 = %3(%5);
  %7 = add(%6, %0);
  %7
}
"#
    );
}

#[test]
fn show_types_appends_relay_type_comments() {
    let mut m = parse(
        "def @main(%x: Tensor[(1, 16, 8, 8), float32]) { %0 = nn.relu(%x); %1 = add(%0, %x); %1 }",
    );
    byoc_ir::infer_types(&mut m).unwrap();
    let text = print_module_with(&m, &PrintOptions { show_types: true });
    assert_eq!(
        text,
        r#"#[version = "0.0.5"]
def @main(%x: Tensor[(1, 16, 8, 8), float32]) -> Tensor[(1, 16, 8, 8), float32] {
  %0 = nn.relu(%x); /* ty=Tensor[(1, 16, 8, 8), float32] */
  %1 = add(%0, %x); /* ty=Tensor[(1, 16, 8, 8), float32] */
  %1
}
"#
    );
    assert_eq!(structural_eq_module(&parse(&text), &m), Ok(()));
    assert_eq!(m.to_string(), print_module(&m));
}

fn constant_of(src_expr: &str) -> Arc<Tensor> {
    let m = parse(&format!("def @main() {{ {src_expr} }}"));
    let main = m.main().unwrap();
    main.expr(main.body).as_constant().unwrap().clone()
}

#[test]
fn scalar_literals_and_constants() {
    let cases: [(&str, Tensor); 12] = [
        ("1f", Tensor::scalar(1.0f32)),
        ("0.5f", Tensor::scalar(0.5f32)),
        ("1e-05f", Tensor::scalar(1e-5f32)),
        ("-1f", Tensor::scalar(-1.0f32)),
        ("2", Tensor::scalar(2i32)),
        ("2i64", Tensor::scalar(2i64)),
        ("1f64", Tensor::scalar(1.0f64)),
        ("2.5", Tensor::scalar(2.5f32)),
        (
            "True",
            Tensor::from_bytes(TensorType::scalar(DType::Bool), &[1]).unwrap(),
        ),
        (
            "const((2, 2), float32, fill=0.5f)",
            Tensor::from_vec([2, 2], vec![0.5f32; 4]).unwrap(),
        ),
        (
            "const((3), int32, [1, 2, 3])",
            Tensor::from_vec([3], vec![1i32, 2, 3]).unwrap(),
        ),
        (
            "const([2, 1], int8, [[-128], [127]])",
            Tensor::from_vec([2, 1], vec![-128i8, 127]).unwrap(),
        ),
    ];
    for (text, want) in cases {
        assert_eq!(*constant_of(text), want, "{text}");
    }
}

#[test]
fn nan_and_inf_constants_round_trip_bit_exactly() {
    let values = [
        f32::NAN,
        f32::from_bits(0xffc0_0001),
        f32::INFINITY,
        f32::NEG_INFINITY,
        -0.0,
        0.1,
    ];
    let t = constant_of("const((6), float32, [nan, nan(0xffc00001), inf, -inf, -0.0, 0.1])");
    let bits: Vec<u32> = t
        .as_slice::<f32>()
        .unwrap()
        .iter()
        .map(|v| v.to_bits())
        .collect();
    assert_eq!(bits, values.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
    let mut b = FunctionBuilder::new();
    let c = b.constant(t.clone());
    let n = b.constant(Tensor::scalar(f32::NAN));
    let h = b.constant(Tensor::full(TensorType::new([2], DType::Float16), f64::INFINITY).unwrap());
    let body = b.tuple(&[c, n, h]).unwrap();
    let m = Module::from_main(b.finish(vec![], body, Attrs::new()).unwrap());
    let text = assert_round_trip(&m);
    assert!(
        text.contains("const((6), float32, [nan, nan(0xffc00001), inf, -inf, -0.0, 0.1])"),
        "{text}"
    );
    assert!(text.contains("const((), float32, fill=nan)"), "{text}");
    assert!(text.contains("const((2), float16, fill=inf)"), "{text}");
}

#[test]
fn errors_name_line_column_and_what() {
    let cases = [
        ("def @main(%x: Tensor[(1), float32]) {\n  %0 = nn.relu(%x;\n  %0\n}", "2:18: expected ',' or ')' but found ';'"),
        ("def @main(%x: Tensor[(1), float32]) {\n  nn.relu(%x)", "2:14: expected '}' but found end of input"),
        ("def @main(%x: Tensor[(1), float32]) {\n  nn.relu(%x", "2:13: expected ',' or ')' but found end of input"),
        ("def @main(%x: Tensor[(1), float32]) { nn.conv2(%x, %x) }", "1:39: unknown op 'nn.conv2' (did you mean 'nn.conv2d'?)"),
        ("def @main(%x: Tensor[(1), float32]) { frobnicate(%x) }", "1:39: unknown op 'frobnicate'"),
        ("def @main(%x: Tensor[(1), float32]) { nn.conv2d(%x, %x, channels=\"a\") }", "1:57: nn.conv2d: attribute 'channels' expects an int or None but got string \"a\""),
        ("def @main(%x: Tensor[(1), float32]) { nn.conv2d(%x, %x, chanels=4) }", "1:57: nn.conv2d: unknown attribute 'chanels' (known: strides, padding, dilation, groups, channels, kernel_size, data_layout, kernel_layout, out_layout, out_dtype)"),
        ("def @main(%x: Tensor[(1), float32]) { nn.relu(%x, %x) }", "1:39: nn.relu: expects 1 argument(s) but got 2"),
        ("def @main(%x: Tensor[(1), float32], %x: Tensor[(1), float32]) { %x }", "1:37: %x is already defined in this scope (at 1:11)"),
        ("def @main(%x: Tensor[(1), float32]) {\n  %0 = nn.relu(%x);\n  %0 = nn.relu(%0);\n  %0\n}", "3:3: %0 is already defined in this scope (at 2:3)"),
        ("def @main(%x: Tensor[(1), float32]) { nn.relu(%y) }", "1:47: undefined variable %y"),
        ("def @main(%x: Tensor[(1), float32]) { @f(%x) }", "1:39: call of undefined global function @f"),
        ("def @f() { 1f }\ndef @f() { 2f }", "2:5: global function @f is defined twice (first at 1:5)"),
        ("def @main(%x: Tensor[(1), floot32]) { %x }", "1:27: unknown dtype 'floot32' (expected float32, float16, bfloat16, float64, int8, int16, int32, int64, uint8, bool or custom[<name>]<bits>)"),
        ("def @main(%x: Tensor[(99999999999999999999), float32]) { %x }", "1:23: number 99999999999999999999 does not fit in a shape dimension"),
        ("def @main(%x: Tensor[(4294967296, 4294967296), float32]) { %x }", "1:22: shape (4294967296, 4294967296) is too large: its byte size overflows"),
        ("def @main() { meta[relay.Constant][0] }", "1:15: metadata sections are not supported: write the constant inline as const(shape, dtype, [v0, v1, ...]) or const(shape, dtype, fill=v)"),
        ("def @main() { 3000000000 }", "1:15: number 3000000000 does not fit in int32"),
        ("def @main() { const((2), float32, [1f]) }", "1:35: const: shape (2) needs 2 values but 1 were given"),
        ("def @main() { const((2), uint8, [1, 256]) }", "1:37: const: value 256 does not fit in uint8"),
        ("def @main(%x) { %x }", "1:11: parameter %x needs a type annotation (`%x: Tensor[(...), dtype]`)"),
        ("def @main(%x: Tensor[(1), float32]) {\n  %0 = nn.relu(%x);\n  %1 = fn (%a: Tensor[(1), float32]) { add(%a, %0) };\n  %1(%x)\n}", "3:48: local function uses %0 from an enclosing scope; local functions are closed (only constants may be shared), pass it as a parameter"),
        ("def @main() { \"abc }", "1:15: unterminated string literal"),
        ("def @main() { 1f } /* open", "1:20: unterminated /* comment"),
        ("def @main() { 1f $ }", "1:18: unexpected character '$'"),
        ("def @main(%x: Tensor[(1), float32]) { (%x, %x).x }", "1:48: expected a tuple index but found 'x'"),
    ];
    for (src, want) in cases {
        assert_eq!(err(src), want, "{src}");
    }
    let e = parse_module("def @main() { %x }").unwrap_err();
    assert_eq!((e.line(), e.col()), (1, 15));
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    for (open, close) in [("(", ")"), ("nn.relu(", ")"), ("fn () { ", " }")] {
        let src = format!(
            "def @main() {{ {}1f{} }}",
            open.repeat(100_000),
            close.repeat(100_000)
        );
        assert!(
            err(&src).ends_with("nesting deeper than 100 levels"),
            "{open}"
        );
    }
    let src = format!(
        "def @main(%x: {}Tensor[(1), float32]{}) {{ %x }}",
        "(".repeat(5000),
        ",)".repeat(5000)
    );
    assert!(err(&src).ends_with("nesting deeper than 100 levels"));
    let src = format!(
        "def @f(A={}1{}) {{ 1f }}",
        "[".repeat(5000),
        "]".repeat(5000)
    );
    assert!(err(&src).ends_with("nesting deeper than 100 levels"));
}

// ---- property tests ----

/// One step of building a random function (operands are picked modulo what exists).
#[derive(Clone, Debug)]
enum Step {
    Relu(u32),
    Add(u32, u32),
    Annotate(u32, bool, u8),
    Tuple(Vec<u32>),
    GetItem(u32, u8),
    Const(u8, u32),
    Local(u32, u8, bool),
    CallGlobal(u32),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        any::<u32>().prop_map(Step::Relu),
        (any::<u32>(), any::<u32>()).prop_map(|(a, b)| Step::Add(a, b)),
        (any::<u32>(), any::<bool>(), 0u8..3).prop_map(|(a, b, c)| Step::Annotate(a, b, c)),
        prop::collection::vec(any::<u32>(), 0..4).prop_map(Step::Tuple),
        (any::<u32>(), 0u8..3).prop_map(|(a, i)| Step::GetItem(a, i)),
        (0u8..6, any::<u32>()).prop_map(|(k, s)| Step::Const(k, s)),
        (any::<u32>(), 0u8..4, any::<bool>()).prop_map(|(a, k, n)| Step::Local(a, k, n)),
        any::<u32>().prop_map(Step::CallGlobal),
    ]
}

fn pick(pool: &[ExprId], i: u32) -> ExprId {
    pool[i as usize % pool.len()]
}

fn random_constant(kind: u8, seed: u32) -> Tensor {
    let f = |k: u32| match (seed.wrapping_add(k)) % 7 {
        0 => f32::NAN,
        1 => f32::from_bits(0x7f80_0001 | (seed & 0xff)),
        2 => f32::NEG_INFINITY,
        3 => -0.0,
        _ => (seed.wrapping_mul(k + 1) % 1000) as f32 / 7.0,
    };
    match kind {
        0 => Tensor::from_vec([2], vec![f(0); 2]).unwrap(),
        1 => Tensor::from_vec([2], vec![f(0), f(1)]).unwrap(),
        2 => Tensor::scalar(seed as i32),
        3 => Tensor::from_bytes(TensorType::scalar(DType::Bool), &[(seed % 2) as u8]).unwrap(),
        4 => Tensor::from_vec([3], vec![i64::from(seed), -1, i64::MIN]).unwrap(),
        _ => Tensor::full(TensorType::new([2, 1], DType::Float16), f64::from(f(2))).unwrap(),
    }
}

fn random_module(funcs: &[Vec<Step>]) -> Module {
    let names: Vec<String> = (0..funcs.len())
        .map(|i| {
            if i == 0 {
                "main".to_string()
            } else {
                format!("f{i}")
            }
        })
        .collect();
    let mut m = Module::new();
    for (fi, steps) in funcs.iter().enumerate() {
        let mut b = FunctionBuilder::new();
        let ty = Type::tensor([2], DType::Float32);
        let params = vec![
            b.param(["x", "0", "a.b"][fi % 3], ty.clone()),
            b.param("x", ty.clone()),
        ];
        let mut pool = params.clone();
        let mut consts = Vec::new();
        for s in steps {
            let id = match s {
                Step::Relu(a) => b.call("nn.relu", &[pick(&pool, *a)], Attrs::new()),
                Step::Add(a, c) => b.call("add", &[pick(&pool, *a), pick(&pool, *c)], Attrs::new()),
                Step::Annotate(a, end, c) => {
                    let op = if *end {
                        "annotation.compiler_end"
                    } else {
                        "annotation.compiler_begin"
                    };
                    let compiler = ["default", "dnnl", "we\"ird\\\n"][*c as usize];
                    b.call(
                        op,
                        &[pick(&pool, *a)],
                        Attrs::new().with("compiler", compiler),
                    )
                }
                Step::Tuple(items) => {
                    let fields: Vec<ExprId> = items.iter().map(|&i| pick(&pool, i)).collect();
                    b.tuple(&fields)
                }
                Step::GetItem(a, i) => b.tuple_get_item(pick(&pool, *a), usize::from(*i)),
                Step::Const(k, seed) => {
                    let c = b.constant(random_constant(*k, *seed));
                    consts.push(c);
                    Ok(c)
                }
                Step::Local(a, kind, nested) => {
                    let p = b.param("p", ty.clone());
                    let mut inner = b.call("nn.relu", &[p], Attrs::new()).unwrap();
                    if *kind % 2 == 1 && !consts.is_empty() {
                        inner = b
                            .call("add", &[inner, pick(&consts, *a)], Attrs::new())
                            .unwrap();
                    }
                    if *nested {
                        let q = b.param("q", ty.clone());
                        let r = b.call("nn.relu", &[q], Attrs::new()).unwrap();
                        let g = b
                            .function(&[q], r, Attrs::new().with("Composite", "t.inner"))
                            .unwrap();
                        inner = b.call_local(g, &[inner]).unwrap();
                    }
                    let mut attrs = Attrs::new().with("Composite", format!("t.c{kind}"));
                    if *kind >= 2 {
                        attrs.set("Primitive", 1i64);
                    }
                    let lit = b.function(&[p], inner, attrs).unwrap();
                    b.call_local(lit, &[pick(&pool, *a)])
                }
                Step::CallGlobal(a) => {
                    let callee = &names[*a as usize % names.len()];
                    b.call_global(callee.clone(), &[pick(&pool, *a)])
                }
            };
            pool.push(id.unwrap());
        }
        let body = match pool.len() {
            n if n > 3 && n % 2 == 0 => b.tuple(&[pool[n - 1], pool[n - 2]]).unwrap(),
            n => pool[n - 1],
        };
        let attrs = if fi == 0 {
            Attrs::new()
        } else {
            Attrs::new()
                .with("Compiler", "test")
                .with("Primitive", 1i64)
                .with("global_symbol", names[fi].as_str())
        };
        m.add(names[fi].clone(), b.finish(params, body, attrs).unwrap())
            .unwrap();
    }
    m
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn print_then_parse_is_structurally_equal(
        funcs in prop::collection::vec(prop::collection::vec(step(), 1..25), 1..4)
    ) {
        let m = random_module(&funcs);
        let text = print_module(&m);
        let back = parse_module(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        prop_assert_eq!(structural_eq_module(&back, &m), Ok(()), "{}", text);
    }
}

/// Characters that matter to the grammar, for mutations.
const INTERESTING: &[char] = &[
    '(', ')', '[', ']', '{', '}', ',', ';', ':', '=', '%', '@', '.', '-', '"', '\\', '0', '9', 'f',
    'x', 'e', '/', '*', ' ', '\n', '>', '#',
];

fn fuzz_seeds() -> Vec<String> {
    let mut seeds = vec![FORMAT_EXAMPLE.to_string()];
    seeds.push(print_module(&random_module(&[
        vec![
            Step::Const(1, 3),
            Step::Local(0, 3, true),
            Step::Tuple(vec![1, 2]),
            Step::GetItem(3, 1),
        ],
        vec![Step::Annotate(0, false, 2), Step::CallGlobal(0)],
    ])));
    seeds
}

/// Parses, and when that succeeds, checks that printing reads back equal.
fn parse_never_panics(src: &str) -> Result<(), TestCaseError> {
    if let Ok(m) = parse_module(src) {
        let text = print_module(&m);
        let back = parse_module(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        prop_assert_eq!(structural_eq_module(&back, &m), Ok(()), "{}", text);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn fuzz_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        parse_never_panics(&String::from_utf8_lossy(&bytes))?;
    }

    #[test]
    fn fuzz_arbitrary_strings(src in "\\PC{0,200}") {
        parse_never_panics(&src)?;
    }

    #[test]
    fn fuzz_mutated_valid_texts(
        seed in 0usize..2,
        edits in prop::collection::vec((any::<prop::sample::Index>(), 0u8..3, any::<prop::sample::Index>()), 1..6)
    ) {
        let mut chars: Vec<char> = fuzz_seeds()[seed].chars().collect();
        for (at, kind, what) in edits {
            let i = at.index(chars.len() + 1);
            let c = INTERESTING[what.index(INTERESTING.len())];
            match kind {
                0 if i < chars.len() => { chars.remove(i); }
                1 => chars.insert(i, c),
                _ if i < chars.len() => chars[i] = c,
                _ => chars.push(c),
            }
        }
        parse_never_panics(&chars.into_iter().collect::<String>())?;
    }
}

#[test]
fn callee_kinds_survive_round_trip() {
    let m = parse(
        "def @g(%a: Tensor[(2), float32], Primitive=1) { %a }\n\
         def @main(%x: Tensor[(2), float32]) { @g(%x) }",
    );
    let main = m.main().unwrap();
    let call = main.expr(main.body).as_call().unwrap();
    assert_eq!(call.callee, Callee::Global("g".to_string()));
    assert_eq!(
        m.get("g").unwrap().attrs.get("Primitive"),
        Some(&AttrValue::Int(1))
    );
    assert_round_trip(&m);
}
