//! A recursive-descent parser for the pattern syntax (`docs/patterns.md`).
//!
//! Grammar, loosest binding first:
//!
//! ```text
//! pattern  := alt EOF
//! alt      := typed ('|' typed)*                    left-associative, left tried first
//! typed    := postfix (':' constraint)*
//! postfix  := primary ('.' INT | '.' '*' | '{' attrs '}')*
//! primary  := '*' | '?' NAME | 'const' | 'var' | '(' ')' | '(' '..' ')' | '(' alt ')'
//!           | '(' alt ',' (alt (',' alt)*)? ','? ')' | OP '?'? '(' ('..' | alt (',' alt)*)? ')'
//!           | 'dominates' '(' alt ',' alt ',' alt ')'
//! constraint := DTYPE | '(' INT, ... ')' | TYPE        dtype, shape, or a whole type
//! ```
//!
//! Ops are checked against the registry (name, arity, attribute names and kinds; an unknown op
//! gets the closest registered name as a hint), and a named wildcard constrained to two
//! incompatible types, or to two values of one attribute, is rejected at its later use, all
//! with the position of the offending token.

use std::collections::HashMap;

use byoc_ir::op::OpRegistry;
use byoc_ir::DType;
use byoc_ir::{AttrValue, Attrs, Span, TensorType, Type};

use super::error::{ParseErrorKind, PatternParseError};
use super::lexer::{tokenize, Tok, Token};
use crate::matcher::value_eq;
use crate::pattern::{Pattern, PatternKind, TypeConstraint};

/// Parses a whole pattern text.
pub(crate) fn parse(text: &str) -> Result<Pattern, PatternParseError> {
    let mut p = Parser {
        toks: tokenize(text)?,
        pos: 0,
        constrained: HashMap::new(),
        attr_constrained: HashMap::new(),
    };
    let pat = p.alt()?;
    match p.peek() {
        Tok::Eof => Ok(pat),
        Tok::RParen => Err(p.error(ParseErrorKind::Unopened(')'))),
        other => {
            let found = other.describe();
            Err(p.error(ParseErrorKind::Unexpected {
                expected: "'|', ':', '.', '{' or end of input".into(),
                found,
            }))
        }
    }
}

struct Parser {
    toks: Vec<Token>,
    pos: usize,
    /// The type constraints put directly on each named wildcard so far, with where.
    constrained: HashMap<String, Vec<(TypeConstraint, Span)>>,
    /// The attribute constraints put on each named wildcard so far, with where.
    attr_constrained: HashMap<String, Vec<(String, AttrValue, Span)>>,
}

type PResult<T> = Result<T, PatternParseError>;

impl Parser {
    fn peek(&self) -> &Tok {
        &self.toks[self.pos].tok
    }

    fn peek_at(&self, k: usize) -> &Tok {
        let i = (self.pos + k).min(self.toks.len() - 1);
        &self.toks[i].tok
    }

    fn span(&self) -> Span {
        self.toks[self.pos].span
    }

    fn bump(&mut self) -> Token {
        let t = self.toks[self.pos].clone();
        if self.pos + 1 < self.toks.len() {
            self.pos += 1;
        }
        t
    }

    fn error(&self, kind: ParseErrorKind) -> PatternParseError {
        PatternParseError {
            span: self.span(),
            kind,
        }
    }

    fn unexpected(&self, expected: &str) -> PatternParseError {
        self.error(ParseErrorKind::Unexpected {
            expected: expected.into(),
            found: self.peek().describe(),
        })
    }

    fn expect(&mut self, tok: Tok, expected: &str) -> PResult<Span> {
        if *self.peek() == tok {
            Ok(self.bump().span)
        } else {
            Err(self.unexpected(expected))
        }
    }

    /// Consumes the closing bracket of one opened at `open_at`.
    fn close(&mut self, open: char, open_at: Span, close: Tok, expected: &str) -> PResult<()> {
        if *self.peek() == close {
            self.bump();
            return Ok(());
        }
        if *self.peek() == Tok::Eof {
            let close = match close {
                Tok::RParen => ')',
                Tok::RBrace => '}',
                _ => ']',
            };
            return Err(self.error(ParseErrorKind::Unclosed {
                open,
                open_at,
                close,
                found: Tok::Eof.describe(),
            }));
        }
        Err(self.unexpected(expected))
    }

    fn ident(&mut self, expected: &str) -> PResult<(String, Span)> {
        match self.peek().clone() {
            Tok::Ident(s) => Ok((s, self.bump().span)),
            _ => Err(self.unexpected(expected)),
        }
    }

    fn alt(&mut self) -> PResult<Pattern> {
        if *self.peek() == Tok::Pipe {
            return Err(self.error(ParseErrorKind::EmptyAlternative { side: "before" }));
        }
        let mut left = self.typed()?;
        while *self.peek() == Tok::Pipe {
            let pipe = self.bump().span;
            if matches!(
                self.peek(),
                Tok::Pipe | Tok::Eof | Tok::RParen | Tok::Comma | Tok::RBrace
            ) {
                return Err(PatternParseError {
                    span: pipe,
                    kind: ParseErrorKind::EmptyAlternative { side: "after" },
                });
            }
            let right = self.typed()?;
            left = left.or(right);
        }
        Ok(left)
    }

    fn typed(&mut self) -> PResult<Pattern> {
        let mut p = self.postfix()?;
        while *self.peek() == Tok::Colon {
            self.bump();
            let at = self.span();
            let constraint = self.constraint()?;
            if let Some(name) = named_base(&p) {
                self.record_constraint(name.to_string(), &constraint, at)?;
            }
            p = Pattern::new(PatternKind::Type {
                inner: p,
                constraint,
            });
        }
        Ok(p)
    }

    fn record_constraint(&mut self, name: String, c: &TypeConstraint, at: Span) -> PResult<()> {
        let seen = self.constrained.entry(name.clone()).or_default();
        if let Some((before, before_at)) = seen.iter().find(|(b, _)| conflicts(b, c)) {
            return Err(PatternParseError {
                span: at,
                kind: ParseErrorKind::ConflictingBinding {
                    name,
                    here: c.to_string(),
                    before: before.to_string(),
                    before_at: *before_at,
                },
            });
        }
        seen.push((c.clone(), at));
        Ok(())
    }

    /// Records `attrs` put on `?name` at `at`; an attribute it already constrained to another
    /// value is a conflict.
    fn record_attrs(&mut self, name: &str, attrs: &Attrs, at: Span) -> PResult<()> {
        let seen = self.attr_constrained.entry(name.to_string()).or_default();
        for (key, value) in attrs.iter() {
            if let Some((_, before, before_at)) = seen
                .iter()
                .find(|(k, v, _)| k == key && !value_eq(v, value))
            {
                return Err(PatternParseError {
                    span: at,
                    kind: ParseErrorKind::ConflictingBinding {
                        name: name.to_string(),
                        here: format!("{key}={value}"),
                        before: format!("{key}={before}"),
                        before_at: *before_at,
                    },
                });
            }
        }
        seen.extend(attrs.iter().map(|(k, v)| (k.to_string(), v.clone(), at)));
        Ok(())
    }

    fn postfix(&mut self) -> PResult<Pattern> {
        let mut p = self.primary()?;
        loop {
            match self.peek() {
                Tok::Dot => {
                    self.bump();
                    p = match self.peek().clone() {
                        Tok::Int(i) => {
                            let index = usize::try_from(i).map_err(|_| {
                                self.error(ParseErrorKind::BadNumber(i.to_string()))
                            })?;
                            self.bump();
                            p.get(index)
                        }
                        Tok::Star => {
                            self.bump();
                            p.get_any()
                        }
                        _ => return Err(self.unexpected("a field index or '*' after '.'")),
                    };
                }
                Tok::LBrace => {
                    let open_at = self.bump().span;
                    let attrs = self.attrs(open_at)?;
                    if let PatternKind::Call { op, .. } = p.kind() {
                        if let Some(op) = OpRegistry::lookup(op) {
                            op.normalize_attrs(attrs.clone())
                                .map_err(|e| PatternParseError {
                                    span: open_at,
                                    kind: ParseErrorKind::Attr(e),
                                })?;
                        }
                    }
                    if let Some(name) = named_base(&p) {
                        let name = name.to_string();
                        self.record_attrs(&name, &attrs, open_at)?;
                    }
                    p = p.has_attrs(attrs);
                }
                _ => return Ok(p),
            }
        }
    }

    fn attrs(&mut self, open_at: Span) -> PResult<Attrs> {
        let mut attrs = Attrs::new();
        if *self.peek() != Tok::RBrace {
            loop {
                let (name, _) = self.ident("an attribute name")?;
                self.expect(Tok::Eq, "'=' after the attribute name")?;
                let value = self.attr_value()?;
                attrs.set(&name, value);
                if *self.peek() != Tok::Comma {
                    break;
                }
                self.bump();
            }
        }
        self.close('{', open_at, Tok::RBrace, "',' or '}'")?;
        Ok(attrs)
    }

    fn attr_value(&mut self) -> PResult<AttrValue> {
        let v = match self.peek().clone() {
            Tok::Int(v) => AttrValue::Int(v),
            Tok::Float(v) => AttrValue::Float(v),
            Tok::Str(s) => AttrValue::Str(s),
            Tok::Ident(s) if s == "True" => AttrValue::Bool(true),
            Tok::Ident(s) if s == "False" => AttrValue::Bool(false),
            Tok::Ident(s) if s == "None" => AttrValue::None,
            Tok::LBracket => {
                let open_at = self.bump().span;
                let mut items = Vec::new();
                if *self.peek() != Tok::RBracket {
                    loop {
                        items.push(self.attr_value()?);
                        if *self.peek() != Tok::Comma {
                            break;
                        }
                        self.bump();
                    }
                }
                self.close('[', open_at, Tok::RBracket, "',' or ']'")?;
                return Ok(AttrValue::List(items));
            }
            _ => {
                return Err(self.unexpected(
                    "an attribute value (number, string, True, False, None or a list)",
                ))
            }
        };
        self.bump();
        Ok(v)
    }

    fn primary(&mut self) -> PResult<Pattern> {
        match self.peek().clone() {
            Tok::Star => {
                self.bump();
                Ok(Pattern::wildcard())
            }
            Tok::Question => {
                self.bump();
                let (name, _) = self.ident("a name after '?'")?;
                Ok(Pattern::named(name))
            }
            Tok::LParen => self.paren(),
            Tok::Ident(name) => match name.as_str() {
                "const" => {
                    self.bump();
                    if *self.peek() != Tok::LParen {
                        return Ok(Pattern::constant());
                    }
                    let open_at = self.bump().span;
                    let value = match self.peek().clone() {
                        Tok::Int(v) => v as f64,
                        Tok::Float(v) => v,
                        _ => return Err(self.unexpected("the constant's value (a number)")),
                    };
                    self.bump();
                    self.close('(', open_at, Tok::RParen, "')'")?;
                    Ok(Pattern::constant_of(value))
                }
                "var" => {
                    self.bump();
                    Ok(Pattern::var())
                }
                "expr" if *self.peek_at(1) == Tok::LParen => {
                    Err(self.error(ParseErrorKind::BuilderOnly("expression")))
                }
                "dominates" if *self.peek_at(1) == Tok::LParen => self.dominates(),
                _ => self.call(),
            },
            Tok::RParen => Err(self.error(ParseErrorKind::Unopened(')'))),
            _ => Err(self.unexpected("a pattern")),
        }
    }

    fn paren(&mut self) -> PResult<Pattern> {
        let open_at = self.bump().span;
        match self.peek() {
            Tok::RParen => {
                self.bump();
                return Ok(Pattern::tuple([]));
            }
            Tok::DotDot => {
                self.bump();
                self.close('(', open_at, Tok::RParen, "')' after '..'")?;
                return Ok(Pattern::tuple_any());
            }
            _ => {}
        }
        let first = self.alt()?;
        if *self.peek() != Tok::Comma {
            self.close('(', open_at, Tok::RParen, "',' or ')'")?;
            return Ok(first);
        }
        let mut fields = vec![first];
        while *self.peek() == Tok::Comma {
            self.bump();
            if *self.peek() == Tok::RParen {
                break;
            }
            fields.push(self.alt()?);
        }
        self.close('(', open_at, Tok::RParen, "',' or ')'")?;
        Ok(Pattern::tuple(fields))
    }

    fn args(&mut self) -> PResult<Option<Vec<Pattern>>> {
        let open_at = self.expect(Tok::LParen, "'('")?;
        if *self.peek() == Tok::DotDot {
            self.bump();
            self.close('(', open_at, Tok::RParen, "')' after '..'")?;
            return Ok(None);
        }
        let mut args = Vec::new();
        if *self.peek() != Tok::RParen {
            loop {
                args.push(self.alt()?);
                if *self.peek() != Tok::Comma {
                    break;
                }
                self.bump();
            }
        }
        self.close('(', open_at, Tok::RParen, "',' or ')'")?;
        Ok(Some(args))
    }

    fn dominates(&mut self) -> PResult<Pattern> {
        self.bump();
        let at = self.span();
        let args = self.args()?.unwrap_or_default();
        match <[Pattern; 3]>::try_from(args) {
            Ok([parent, path, child]) => Ok(child.dominates(parent, path)),
            Err(_) => Err(PatternParseError {
                span: at,
                kind: ParseErrorKind::Unexpected {
                    expected: "three patterns: dominates(parent, path, child)".into(),
                    found: "another argument list".into(),
                },
            }),
        }
    }

    fn call(&mut self) -> PResult<Pattern> {
        let (name, at) = self.ident("an op name")?;
        let op = OpRegistry::lookup(&name).ok_or_else(|| PatternParseError {
            span: at,
            kind: ParseErrorKind::UnknownOp {
                suggestion: OpRegistry::closest(&name),
                op: name.clone(),
            },
        })?;
        let optional = *self.peek() == Tok::Question;
        if optional {
            self.bump();
        }
        if *self.peek() != Tok::LParen {
            return Err(self.unexpected(&format!("'(' after the op name '{name}'")));
        }
        let args = self.args()?;
        if let Some(args) = &args {
            if !op.arity.accepts(args.len()) || (optional && args.is_empty()) {
                return Err(PatternParseError {
                    span: at,
                    kind: ParseErrorKind::Arity {
                        op: name,
                        expected: op.arity,
                        got: args.len(),
                    },
                });
            }
        }
        Ok(match (optional, args) {
            (true, Some(args)) => Pattern::new(PatternKind::Optional { op: name, args }),
            (true, None) => {
                return Err(PatternParseError {
                    span: at,
                    kind: ParseErrorKind::Unexpected {
                        expected: "argument patterns in an optional call (the first is what remains without the call)".into(),
                        found: "'..'".into(),
                    },
                })
            }
            (false, args) => Pattern::new(PatternKind::Call { op: name, args }),
        })
    }

    fn constraint(&mut self) -> PResult<TypeConstraint> {
        match self.peek().clone() {
            Tok::LParen if matches!(self.peek_at(1), Tok::Int(_) | Tok::RParen) => {
                Ok(TypeConstraint::Shape(self.shape()?))
            }
            Tok::LParen => Ok(TypeConstraint::Type(self.full_type()?)),
            Tok::Ident(s) if s == "Tensor" => Ok(TypeConstraint::Type(self.full_type()?)),
            Tok::Ident(_) => Ok(TypeConstraint::DType(self.dtype()?)),
            _ => Err(self.unexpected("a dtype, a shape '(d0, ...)' or a type after ':'")),
        }
    }

    fn shape(&mut self) -> PResult<Vec<usize>> {
        let open_at = self.expect(Tok::LParen, "'('")?;
        let mut dims = Vec::new();
        while let Tok::Int(d) = *self.peek() {
            let d = usize::try_from(d)
                .map_err(|_| self.error(ParseErrorKind::BadNumber(d.to_string())))?;
            dims.push(d);
            self.bump();
            if *self.peek() != Tok::Comma {
                break;
            }
            self.bump();
        }
        self.close('(', open_at, Tok::RParen, "a dimension, ',' or ')'")?;
        Ok(dims)
    }

    fn full_type(&mut self) -> PResult<Type> {
        match self.peek().clone() {
            Tok::Ident(s) if s == "Tensor" => {
                self.bump();
                let open_at = self.expect(Tok::LBracket, "'[' after 'Tensor'")?;
                let shape = self.shape()?;
                self.expect(Tok::Comma, "',' after the shape")?;
                let dtype = self.dtype()?;
                self.close('[', open_at, Tok::RBracket, "']'")?;
                Ok(Type::Tensor(TensorType::new(shape, dtype)))
            }
            Tok::LParen => {
                let open_at = self.bump().span;
                let mut fields = Vec::new();
                while *self.peek() != Tok::RParen {
                    fields.push(self.full_type()?);
                    if *self.peek() != Tok::Comma {
                        break;
                    }
                    self.bump();
                }
                self.close('(', open_at, Tok::RParen, "',' or ')'")?;
                Ok(Type::Tuple(fields))
            }
            _ => Err(self.unexpected("a type ('Tensor[...]' or a tuple of types)")),
        }
    }

    fn dtype(&mut self) -> PResult<DType> {
        let at = self.span();
        let (mut name, _) = self.ident("a dtype")?;
        if name == "custom" {
            // `custom[posit]16`
            let open_at = self.expect(Tok::LBracket, "'[' after 'custom'")?;
            let inner = match self.peek().clone() {
                Tok::Ident(s) => s,
                Tok::Int(v) => v.to_string(),
                _ => return Err(self.unexpected("a custom dtype name")),
            };
            self.bump();
            self.close('[', open_at, Tok::RBracket, "']'")?;
            let Tok::Int(bits) = *self.peek() else {
                return Err(self.unexpected("the bit width of the custom dtype"));
            };
            self.bump();
            name = format!("custom[{inner}]{bits}");
        }
        name.parse().map_err(|e| PatternParseError {
            span: at,
            kind: ParseErrorKind::DType(e),
        })
    }
}

/// The named wildcard a constraint applies to directly (through attribute and type
/// constraints only).
fn named_base(p: &Pattern) -> Option<&str> {
    match p.kind() {
        PatternKind::Named(n) => Some(n),
        PatternKind::Type { inner, .. } | PatternKind::Attr { inner, .. } => named_base(inner),
        _ => None,
    }
}

/// True when no type satisfies both constraints.
fn conflicts(a: &TypeConstraint, b: &TypeConstraint) -> bool {
    use TypeConstraint as C;
    let tensor_conflict = |t: &Type, check: &dyn Fn(&TensorType) -> bool| match t {
        Type::Tensor(t) => !check(t),
        _ => true,
    };
    match (a, b) {
        (C::DType(x), C::DType(y)) => x != y,
        (C::Shape(x), C::Shape(y)) => x != y,
        (C::Type(x), C::Type(y)) => x != y,
        (C::DType(_), C::Shape(_)) | (C::Shape(_), C::DType(_)) => false,
        (C::Type(t), C::DType(d)) | (C::DType(d), C::Type(t)) => {
            tensor_conflict(t, &|t| t.dtype == *d)
        }
        (C::Type(t), C::Shape(s)) | (C::Shape(s), C::Type(t)) => {
            tensor_conflict(t, &|t| t.shape == *s)
        }
    }
}
