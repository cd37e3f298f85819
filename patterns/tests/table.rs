//! Pattern tables: validation of entries, the text form, and located errors.

mod common;

use byoc_ir::Span;
use byoc_patterns::{ParseErrorKind, PatternTable, TableError};

fn parse_err(text: &str) -> TableError {
    match PatternTable::parse(text) {
        Ok(t) => panic!("'{text}' parsed into {t}"),
        Err(e) => e,
    }
}

#[test]
fn text_form_round_trips() {
    let text =
        "# DNNL-like\n\ndnnl.conv2d_relu = nn.relu(nn.conv2d(*, *))\n  dnnl.add = add(*, *)\n";
    let t = PatternTable::parse(text).unwrap();
    assert_eq!(t.len(), 2);
    assert_eq!(t.entries()[1].name, "dnnl.add");
    let printed = t.to_string();
    assert_eq!(
        printed,
        "dnnl.conv2d_relu = nn.relu(nn.conv2d(*, *))\ndnnl.add = add(*, *)\n"
    );
    let again = PatternTable::parse(&printed).unwrap();
    assert_eq!(again.to_string(), printed);
}

#[test]
fn duplicate_names_are_rejected_with_their_line() {
    let e = parse_err("a.x = add(*, *)\n\n  a.x = nn.relu(*)\n");
    assert_eq!(
        e,
        TableError::At {
            span: Span { line: 3, col: 3 },
            source: Box::new(TableError::Duplicate("a.x".into())),
        }
    );
    assert_eq!(
        e.to_string(),
        "3:3: pattern table has two entries named 'a.x'"
    );
    let mut t = PatternTable::new();
    t.add("a.x", "add(*, *)".parse().unwrap()).unwrap();
    assert_eq!(
        t.add("a.x", "nn.relu(*)".parse().unwrap()),
        Err(TableError::Duplicate("a.x".into()))
    );
}

#[test]
fn tables_for_a_target_require_its_prefix() {
    let mut t = PatternTable::for_target("dnnl");
    assert_eq!(t.target(), Some("dnnl"));
    t.add("dnnl.add_relu", "nn.relu(add(*, *))".parse().unwrap())
        .unwrap();
    for bad in ["add_relu", "dnnl", "dnnl.", "dnnlx.add", "vta.add_relu"] {
        assert_eq!(
            t.add(bad, "nn.relu(add(*, *))".parse().unwrap()),
            Err(TableError::MissingTargetPrefix {
                name: bad.into(),
                target: "dnnl".into()
            }),
            "{bad}"
        );
    }
    let e = PatternTable::parse_for_target("dnnl", "dnnl.a = abs(*)\nconv = nn.conv2d(*, *)\n")
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "2:1: composite name 'conv' must start with 'dnnl.' (the table is for target 'dnnl')"
    );
    // Without a target any valid name goes.
    PatternTable::parse("conv = nn.conv2d(*, *)").unwrap();
}

#[test]
fn bad_entries_are_rejected() {
    let e = parse_err("a.leaf = *");
    assert!(
        matches!(&e, TableError::At { source, .. } if matches!(**source, TableError::Trivial { .. })),
        "{e}"
    );
    assert!(matches!(parse_err("a b = abs(*)"), TableError::At { .. }));
    assert_eq!(
        parse_err("x\n").to_string(),
        "line 1: expected 'name = pattern'"
    );
    let mut t = PatternTable::new();
    assert_eq!(
        t.add("", "abs(*)".parse().unwrap()),
        Err(TableError::BadName(String::new()))
    );
}

#[test]
fn pattern_errors_are_located_in_the_table_text() {
    let e = parse_err("a.ok = abs(*)\na.bad = nn.relu(add(*, *)\n");
    let TableError::Parse(p) = e else {
        panic!("{e}")
    };
    // Column 26 of line 2: the end of the line, where ')' is missing.
    assert_eq!(p.span, Span { line: 2, col: 26 });
    assert!(matches!(p.kind, ParseErrorKind::Unclosed { .. }), "{p}");
    let e = parse_err("a.x = nn.rleu(*)");
    assert_eq!(
        e.to_string(),
        "1:7: unknown op 'nn.rleu' (did you mean 'nn.relu'?)"
    );
}
