//! The recursive-descent reader of the text format (grammar in `docs/text-format.md`).
//!
//! Every node it creates carries the [`Span`] of the token that starts it, so later passes
//! (type inference) can point at the source. Names are resolved while reading: each global
//! function and each local function literal is a scope; a local function body may use names of
//! enclosing scopes only when they are free of variables (constants and what is computed from
//! them), because local functions are closed. Calls of global functions are checked once the
//! whole module is read. Nesting is bounded by [`MAX_DEPTH`], so hostile input cannot overflow
//! the stack.

use std::collections::HashMap;

use super::error::{ParseError, ParseErrorKind as K};
use super::lexer::{tokenize, Tok, Token};
use super::literal::{self, ElemLit};
use crate::op::OpRegistry;
use crate::tensor::Tensor;
use crate::{
    AttrValue, Attrs, DType, Expr, ExprId, FunctionBuilder, IrError, Module, Span, TensorType, Type,
};

/// The deepest nesting of expressions, types and lists the reader accepts.
pub const MAX_DEPTH: usize = 100;

/// The largest inline constant, in bytes.
pub const MAX_CONSTANT_BYTES: usize = 1 << 28;

/// Reads a module from Relay-style text.
pub fn parse_module(src: &str) -> Result<Module, ParseError> {
    let mut p = Parser {
        toks: tokenize(src)?,
        pos: 0,
        depth: 0,
        global_calls: Vec::new(),
    };
    p.header()?;
    let mut module = Module::new();
    let mut defined: HashMap<String, Span> = HashMap::new();
    while p.peek() != &Tok::Eof {
        p.keyword("def")?;
        let span = p.span();
        let name = match p.next() {
            Tok::Global(name) => name,
            other => return Err(p.expected_at(span, "a global function name (@name)", &other)),
        };
        if let Some(&first) = defined.get(&name) {
            return Err(ParseError::new(span, K::DuplicateGlobal { name, first }));
        }
        let mut cx = FnCtx::default();
        cx.frames.push(HashMap::new());
        let (params, attrs) = p.params_and_attrs(&mut cx)?;
        let body = p.ret_and_body(&mut cx)?;
        let f =
            cx.b.finish(params, body, attrs)
                .map_err(|e| ParseError::new(span, K::Ir(e)))?;
        defined.insert(name.clone(), span);
        module.insert(name, f);
    }
    if let Some((name, span)) = p
        .global_calls
        .iter()
        .find(|(n, _)| !defined.contains_key(n))
    {
        return Err(ParseError::new(*span, K::UndefinedGlobal(name.clone())));
    }
    Ok(module)
}

/// The function being read: its arena, its scopes, and which nodes are free of variables.
#[derive(Default)]
struct FnCtx {
    b: FunctionBuilder,
    /// One name table per function (global first, then enclosing literals).
    frames: Vec<HashMap<String, (ExprId, Span)>>,
    /// `var_free[i]`: node `i` depends on no variable (it may be shared into closed literals).
    var_free: Vec<bool>,
}

impl FnCtx {
    /// Records the span of a new node and whether it is free of variables.
    fn added(&mut self, id: ExprId, span: Span) -> ExprId {
        self.b.set_span(id, span);
        let free = match self.b.get(id) {
            Some(Expr::Var(_)) | None => false,
            Some(Expr::Constant(_) | Expr::Function(_)) => true,
            Some(e) => e
                .operands()
                .iter()
                .all(|o| self.var_free.get(o.index()).copied().unwrap_or(false)),
        };
        self.var_free.resize(id.index(), false);
        self.var_free.push(free);
        id
    }

    fn bind(&mut self, name: String, id: ExprId, span: Span) -> Result<(), ParseError> {
        let frame = self
            .frames
            .last_mut()
            .expect("a scope is open while reading a body");
        if let Some(&(_, first)) = frame.get(&name) {
            return Err(ParseError::new(span, K::DuplicateName { name, first }));
        }
        frame.insert(name, (id, span));
        Ok(())
    }

    fn lookup(&self, name: &str, span: Span) -> Result<ExprId, ParseError> {
        for (depth, frame) in self.frames.iter().enumerate().rev() {
            if let Some(&(id, _)) = frame.get(name) {
                let inner = depth + 1 < self.frames.len();
                if inner && !self.var_free.get(id.index()).copied().unwrap_or(false) {
                    return Err(ParseError::new(span, K::Capture(name.to_string())));
                }
                return Ok(id);
            }
        }
        Err(ParseError::new(span, K::UndefinedVar(name.to_string())))
    }
}

struct Parser {
    toks: Vec<Token>,
    pos: usize,
    depth: usize,
    /// Every `@name(...)` call, checked against the defined functions at the end.
    global_calls: Vec<(String, Span)>,
}

type PResult<T> = Result<T, ParseError>;

impl Parser {
    fn peek(&self) -> &Tok {
        &self.toks[self.pos.min(self.toks.len() - 1)].tok
    }

    fn peek2(&self) -> &Tok {
        &self.toks[(self.pos + 1).min(self.toks.len() - 1)].tok
    }

    fn span(&self) -> Span {
        self.toks[self.pos.min(self.toks.len() - 1)].span
    }

    fn next(&mut self) -> Tok {
        let t = self.peek().clone();
        if self.pos < self.toks.len() - 1 {
            self.pos += 1;
        }
        t
    }

    fn expected_at(&self, span: Span, expected: &str, found: &Tok) -> ParseError {
        ParseError::new(
            span,
            K::Expected {
                expected: expected.to_string(),
                found: found.to_string(),
            },
        )
    }

    fn expected(&self, expected: &str) -> ParseError {
        self.expected_at(self.span(), expected, self.peek())
    }

    fn expect(&mut self, tok: Tok) -> PResult<Span> {
        let span = self.span();
        if *self.peek() == tok {
            self.next();
            Ok(span)
        } else {
            Err(self.expected(&tok.to_string()))
        }
    }

    fn eat(&mut self, tok: &Tok) -> bool {
        if self.peek() == tok {
            self.next();
            true
        } else {
            false
        }
    }

    fn keyword(&mut self, word: &str) -> PResult<Span> {
        self.expect(Tok::Ident(word.to_string()))
    }

    fn is_ident(&self, word: &str) -> bool {
        matches!(self.peek(), Tok::Ident(w) if w == word)
    }

    /// Runs `f` one nesting level deeper, failing past [`MAX_DEPTH`].
    fn nested<T>(&mut self, f: impl FnOnce(&mut Self) -> PResult<T>) -> PResult<T> {
        if self.depth >= MAX_DEPTH {
            return Err(ParseError::new(self.span(), K::TooDeep(MAX_DEPTH)));
        }
        self.depth += 1;
        let r = f(self);
        self.depth -= 1;
        r
    }

    /// Items separated by commas up to `close` (a trailing comma allowed); returns the item
    /// count and whether a trailing comma was written.
    fn list(
        &mut self,
        close: Tok,
        mut item: impl FnMut(&mut Self) -> PResult<()>,
    ) -> PResult<(usize, bool)> {
        let mut n = 0;
        let mut trailing = false;
        while *self.peek() != close {
            item(self)?;
            n += 1;
            trailing = self.eat(&Tok::Comma);
            if !trailing && *self.peek() != close {
                return Err(self.expected(&format!("',' or {close}")));
            }
        }
        self.next();
        Ok((n, trailing))
    }

    /// `#[version = "0.0.5"]`, optional.
    fn header(&mut self) -> PResult<()> {
        if self.eat(&Tok::Hash) {
            self.expect(Tok::LBracket)?;
            self.keyword("version")?;
            self.expect(Tok::Eq)?;
            match self.next() {
                Tok::Str(_) => {}
                other => {
                    return Err(self.expected_at(
                        self.toks[self.pos - 1].span,
                        "a version string",
                        &other,
                    ))
                }
            }
            self.expect(Tok::RBracket)?;
        }
        Ok(())
    }

    /// `(%x: T, ..., Attr=value, ...)`: binds the parameters in the innermost scope.
    fn params_and_attrs(&mut self, cx: &mut FnCtx) -> PResult<(Vec<ExprId>, Attrs)> {
        self.expect(Tok::LParen)?;
        let mut params = Vec::new();
        let mut attrs = AttrList::default();
        self.list(Tok::RParen, |p| {
            let span = p.span();
            match p.peek().clone() {
                Tok::Local(name) => {
                    p.next();
                    if !p.eat(&Tok::Colon) {
                        return Err(ParseError::new(span, K::MissingParamType(name)));
                    }
                    let ty = p.ty()?;
                    let id = cx.b.param(name.clone(), ty);
                    cx.added(id, span);
                    cx.bind(name, id, span)?;
                    params.push(id);
                    Ok(())
                }
                Tok::Ident(_) if *p.peek2() == Tok::Eq => p.attr(&mut attrs),
                _ => Err(p.expected("a parameter (%name: Type) or an attribute (Name=value)")),
            }
        })?;
        Ok((params, attrs.attrs))
    }

    /// `[-> Type] { body }`.
    fn ret_and_body(&mut self, cx: &mut FnCtx) -> PResult<ExprId> {
        if self.eat(&Tok::Arrow) {
            self.ty()?;
        }
        self.expect(Tok::LBrace)?;
        loop {
            let span = self.span();
            let is_let = self.is_ident("let");
            if is_let {
                self.next();
            }
            let second = self.peek2().clone();
            match self.peek().clone() {
                Tok::Local(name) if second == Tok::Eq || (is_let && second == Tok::Colon) => {
                    self.next();
                    if self.eat(&Tok::Colon) {
                        self.ty()?;
                    }
                    self.expect(Tok::Eq)?;
                    let value = self.expr(cx)?;
                    self.expect(Tok::Semi)?;
                    cx.bind(name, value, span)?;
                }
                _ if is_let => return Err(self.expected("a variable to bind (%name)")),
                _ => {
                    let body = self.expr(cx)?;
                    self.expect(Tok::RBrace)?;
                    return Ok(body);
                }
            }
        }
    }

    fn expr(&mut self, cx: &mut FnCtx) -> PResult<ExprId> {
        self.nested(|p| {
            let mut e = p.primary(cx)?;
            loop {
                let span = p.span();
                match p.peek() {
                    Tok::LParen => {
                        let args = p.call_args(cx, None)?.0;
                        let id =
                            cx.b.call_local(e, &args)
                                .map_err(|err| ParseError::new(span, K::Ir(err)))?;
                        e = cx.added(id, span);
                    }
                    Tok::Dot => {
                        p.next();
                        let index = p.index()?;
                        let id =
                            cx.b.tuple_get_item(e, index)
                                .map_err(|err| ParseError::new(span, K::Ir(err)))?;
                        e = cx.added(id, span);
                    }
                    _ => return Ok(e),
                }
            }
        })
    }

    fn index(&mut self) -> PResult<usize> {
        let span = self.span();
        match self.next() {
            Tok::Number { text, suffix } if suffix.is_empty() && !text.starts_with('-') => {
                text.parse().map_err(|_| {
                    ParseError::new(
                        span,
                        K::NumberOverflow {
                            text,
                            ty: "a tuple index".to_string(),
                        },
                    )
                })
            }
            other => Err(self.expected_at(span, "a tuple index", &other)),
        }
    }

    fn primary(&mut self, cx: &mut FnCtx) -> PResult<ExprId> {
        let span = self.span();
        let ir = |e: IrError| ParseError::new(span, K::Ir(e));
        match self.peek().clone() {
            Tok::Local(name) => {
                self.next();
                cx.lookup(&name, span)
            }
            Tok::Global(name) => {
                self.next();
                if *self.peek() != Tok::LParen {
                    return Err(
                        self.expected(&format!("'(' (global function @{name} can only be called)"))
                    );
                }
                let args = self.call_args(cx, None)?.0;
                self.global_calls.push((name.clone(), span));
                let id = cx.b.call_global(name, &args).map_err(ir)?;
                Ok(cx.added(id, span))
            }
            Tok::Number { text, suffix } => {
                self.next();
                let tensor = scalar(&text, &suffix).map_err(|k| ParseError::new(span, k))?;
                let id = cx.b.constant(tensor);
                Ok(cx.added(id, span))
            }
            Tok::LParen => {
                self.next();
                let mut fields = Vec::new();
                let (n, trailing) = self.list(Tok::RParen, |p| {
                    fields.push(p.expr(cx)?);
                    Ok(())
                })?;
                if n == 1 && !trailing {
                    return Ok(fields[0]);
                }
                let id = cx.b.tuple(&fields).map_err(ir)?;
                Ok(cx.added(id, span))
            }
            Tok::Ident(word) => {
                self.next();
                match word.as_str() {
                    "True" | "False" => {
                        let byte = [u8::from(word == "True")];
                        let tensor = Tensor::from_bytes(TensorType::scalar(DType::Bool), &byte)
                            .map_err(|e| ParseError::new(span, K::BadConstant(e.to_string())))?;
                        let id = cx.b.constant(tensor);
                        Ok(cx.added(id, span))
                    }
                    "fn" => self.function(cx, span),
                    "const" => {
                        let tensor = self.constant()?;
                        let id = cx.b.constant(tensor);
                        Ok(cx.added(id, span))
                    }
                    "meta" => Err(ParseError::new(span, K::Metadata)),
                    _ => self.op_call(cx, word, span),
                }
            }
            _ => Err(self.expected("an expression")),
        }
    }

    fn op_call(&mut self, cx: &mut FnCtx, name: String, span: Span) -> PResult<ExprId> {
        let Some(op) = OpRegistry::lookup(&name) else {
            let suggestion = OpRegistry::closest(&name);
            return Err(ParseError::new(span, K::UnknownOp { name, suggestion }));
        };
        if *self.peek() != Tok::LParen {
            return Err(self.expected(&format!("'(' after op {name}")));
        }
        let (args, attrs) = self.call_args(cx, Some(AttrList::default()))?;
        let attrs = attrs.unwrap_or_default();
        let id = cx.b.call_op(&op, &args, attrs.attrs).map_err(|e| {
            let at = match &e {
                IrError::UnknownAttr { attr, .. } | IrError::AttrType { attr, .. } => {
                    attrs.spans.get(attr).copied().unwrap_or(span)
                }
                _ => span,
            };
            ParseError::new(at, K::Ir(e))
        })?;
        Ok(cx.added(id, span))
    }

    /// `(arg, ..., key=value, ...)`; attributes only when `attrs` is given.
    fn call_args(
        &mut self,
        cx: &mut FnCtx,
        mut attrs: Option<AttrList>,
    ) -> PResult<(Vec<ExprId>, Option<AttrList>)> {
        self.expect(Tok::LParen)?;
        let mut args = Vec::new();
        self.list(Tok::RParen, |p| {
            let is_attr = matches!(p.peek(), Tok::Ident(_)) && *p.peek2() == Tok::Eq;
            match attrs.as_mut() {
                Some(list) if is_attr => return p.attr(list),
                Some(list) if !list.spans.is_empty() => {
                    return Err(
                        p.expected("an attribute (name=value): arguments come before attributes")
                    )
                }
                None if is_attr => {
                    return Err(p.expected("an argument (only op calls take attributes)"))
                }
                _ => {}
            }
            args.push(p.expr(cx)?);
            Ok(())
        })?;
        Ok((args, attrs))
    }

    /// `Name=value` into `list`.
    fn attr(&mut self, list: &mut AttrList) -> PResult<()> {
        let span = self.span();
        let name = match self.next() {
            Tok::Ident(name) => name,
            other => return Err(self.expected_at(span, "an attribute name", &other)),
        };
        self.expect(Tok::Eq)?;
        let value = self.attr_value()?;
        if list.spans.contains_key(&name) {
            return Err(ParseError::new(span, K::DuplicateAttr(name)));
        }
        list.attrs.set(&name, value);
        list.spans.insert(name, span);
        Ok(())
    }

    fn attr_value(&mut self) -> PResult<AttrValue> {
        self.nested(|p| {
            let span = p.span();
            match p.next() {
                Tok::Str(s) => Ok(AttrValue::Str(s)),
                Tok::Number { text, suffix } => {
                    attr_number(&text, &suffix).map_err(|k| ParseError::new(span, k))
                }
                Tok::Minus if p.is_ident("inf") => {
                    p.next();
                    Ok(AttrValue::Float(f64::NEG_INFINITY))
                }
                Tok::LBracket => {
                    let mut items = Vec::new();
                    p.list(Tok::RBracket, |p| {
                        items.push(p.attr_value()?);
                        Ok(())
                    })?;
                    Ok(AttrValue::List(items))
                }
                Tok::Ident(w) if w == "True" => Ok(AttrValue::Bool(true)),
                Tok::Ident(w) if w == "False" => Ok(AttrValue::Bool(false)),
                Tok::Ident(w) if w == "None" => Ok(AttrValue::None),
                Tok::Ident(w) if w == "inf" => Ok(AttrValue::Float(f64::INFINITY)),
                Tok::Ident(w) if w == "nan" => Ok(AttrValue::Float(f64::NAN)),
                other => Err(p.expected_at(span, "an attribute value", &other)),
            }
        })
    }

    /// `fn (params, attrs) [-> T] { body }` after the `fn`.
    fn function(&mut self, cx: &mut FnCtx, span: Span) -> PResult<ExprId> {
        self.nested(|p| {
            cx.frames.push(HashMap::new());
            let (params, attrs) = p.params_and_attrs(cx)?;
            let body = p.ret_and_body(cx)?;
            cx.frames.pop();
            let id =
                cx.b.function(&params, body, attrs)
                    .map_err(|e| ParseError::new(span, K::Ir(e)))?;
            Ok(cx.added(id, span))
        })
    }

    /// `const(shape, dtype, fill=v)` or `const(shape, dtype, [v, ...])` after the `const`.
    fn constant(&mut self) -> PResult<Tensor> {
        self.expect(Tok::LParen)?;
        let shape_span = self.span();
        let shape = self.shape()?;
        self.expect(Tok::Comma)?;
        let dtype = self.dtype()?;
        let ty = checked_type(shape, dtype, shape_span)?;
        let bytes = ty.num_elements() * dtype.size_bytes();
        if bytes > MAX_CONSTANT_BYTES {
            return Err(ParseError::new(
                shape_span,
                K::ConstantTooLarge {
                    bytes,
                    limit: MAX_CONSTANT_BYTES,
                },
            ));
        }
        self.expect(Tok::Comma)?;
        let mut data = Vec::with_capacity(bytes);
        let values_span = self.span();
        let bad = |span: Span, msg: String| ParseError::new(span, K::BadConstant(msg));
        if self.is_ident("fill") {
            self.next();
            self.expect(Tok::Eq)?;
            let span = self.span();
            let lit = self.elem_lit()?;
            literal::encode(dtype, &lit, &mut data).map_err(|m| bad(span, m))?;
            data = data.repeat(ty.num_elements());
        } else {
            self.expect(Tok::LBracket)?;
            let mut count = 0usize;
            self.elem_list(&mut |p: &mut Self| {
                let span = p.span();
                let lit = p.elem_lit()?;
                count += 1;
                if count > ty.num_elements() {
                    return Err(bad(
                        span,
                        format!(
                            "more values than the {} of shape {}",
                            ty.num_elements(),
                            shape_text(&ty.shape)
                        ),
                    ));
                }
                literal::encode(dtype, &lit, &mut data).map_err(|m| bad(span, m))
            })?;
            if count != ty.num_elements() {
                return Err(bad(
                    values_span,
                    format!(
                        "shape {} needs {} values but {count} were given",
                        shape_text(&ty.shape),
                        ty.num_elements()
                    ),
                ));
            }
        }
        self.expect(Tok::RParen)?;
        Tensor::from_bytes(ty, &data).map_err(|e| bad(values_span, e.to_string()))
    }

    /// The rest of a value list after its `[`; nested lists are flattened.
    fn elem_list(&mut self, item: &mut dyn FnMut(&mut Self) -> PResult<()>) -> PResult<()> {
        self.nested(|p| {
            p.list(Tok::RBracket, |p| {
                if p.eat(&Tok::LBracket) {
                    p.elem_list(item)
                } else {
                    item(p)
                }
            })
            .map(|_| ())
        })
    }

    fn elem_lit(&mut self) -> PResult<ElemLit> {
        let span = self.span();
        match self.next() {
            Tok::Number { text, .. } => Ok(ElemLit::Num(text)),
            Tok::Minus if self.is_ident("inf") => {
                self.next();
                Ok(ElemLit::Inf(true))
            }
            Tok::Ident(w) if w == "True" || w == "False" => Ok(ElemLit::Bool(w == "True")),
            Tok::Ident(w) if w == "inf" => Ok(ElemLit::Inf(false)),
            Tok::Ident(w) if w == "nan" => {
                if !self.eat(&Tok::LParen) {
                    return Ok(ElemLit::Nan(None));
                }
                let span = self.span();
                let bits = match self.next() {
                    Tok::Number { text, suffix } if text.starts_with("0x") && suffix.is_empty() => {
                        text
                    }
                    other => {
                        return Err(self.expected_at(span, "NaN bits in hex (0x7fc00001)", &other))
                    }
                };
                self.expect(Tok::RParen)?;
                Ok(ElemLit::Nan(Some(bits)))
            }
            other => Err(self.expected_at(span, "a constant value", &other)),
        }
    }

    fn ty(&mut self) -> PResult<Type> {
        self.nested(|p| {
            let span = p.span();
            match p.next() {
                Tok::Ident(w) if w == "Tensor" => {
                    p.expect(Tok::LBracket)?;
                    let shape_span = p.span();
                    let shape = p.shape()?;
                    p.expect(Tok::Comma)?;
                    let dtype = p.dtype()?;
                    p.expect(Tok::RBracket)?;
                    Ok(Type::Tensor(checked_type(shape, dtype, shape_span)?))
                }
                Tok::Ident(w) if w == "fn" => {
                    p.expect(Tok::LParen)?;
                    let mut params = Vec::new();
                    p.list(Tok::RParen, |p| {
                        params.push(p.ty()?);
                        Ok(())
                    })?;
                    p.expect(Tok::Arrow)?;
                    let ret = Box::new(p.ty()?);
                    Ok(Type::Func(crate::FuncType { params, ret }))
                }
                Tok::LParen => {
                    let mut fields = Vec::new();
                    p.list(Tok::RParen, |p| {
                        fields.push(p.ty()?);
                        Ok(())
                    })?;
                    Ok(Type::Tuple(fields))
                }
                other => Err(p.expected_at(span, "a type", &other)),
            }
        })
    }

    /// `(d0, d1)`, `(d0,)`, `()` or `[d0, d1]`.
    fn shape(&mut self) -> PResult<Vec<usize>> {
        let close = match self.next() {
            Tok::LParen => Tok::RParen,
            Tok::LBracket => Tok::RBracket,
            other => {
                return Err(self.expected_at(
                    self.toks[self.pos.saturating_sub(1)].span,
                    "a shape ((d0, d1, ...))",
                    &other,
                ))
            }
        };
        let mut dims = Vec::new();
        self.list(close, |p| {
            let span = p.span();
            match p.next() {
                Tok::Number { text, suffix }
                    if suffix.is_empty()
                        && literal::is_integer_text(&text)
                        && !text.starts_with('-') =>
                {
                    let d = literal::parse_int(&text)
                        .and_then(|v| usize::try_from(v).ok())
                        .ok_or_else(|| {
                            ParseError::new(
                                span,
                                K::NumberOverflow {
                                    text,
                                    ty: "a shape dimension".to_string(),
                                },
                            )
                        })?;
                    dims.push(d);
                    Ok(())
                }
                other => Err(p.expected_at(span, "a dimension (a non-negative integer)", &other)),
            }
        })?;
        Ok(dims)
    }

    /// A dtype name: `float32`, `custom[posit]16`.
    fn dtype(&mut self) -> PResult<DType> {
        let span = self.span();
        let name = match self.next() {
            Tok::Ident(w) if w == "custom" && *self.peek() == Tok::LBracket => {
                self.next();
                let inner = match self.next() {
                    Tok::Ident(n) => n,
                    Tok::Number { text, suffix } => format!("{text}{suffix}"),
                    other => return Err(self.expected_at(span, "a custom datatype name", &other)),
                };
                self.expect(Tok::RBracket)?;
                let bits = match self.next() {
                    Tok::Number { text, suffix } => format!("{text}{suffix}"),
                    other => {
                        return Err(self.expected_at(span, "the bits of a custom datatype", &other))
                    }
                };
                format!("custom[{inner}]{bits}")
            }
            Tok::Ident(w) => w,
            other => return Err(self.expected_at(span, "a dtype", &other)),
        };
        name.parse().map_err(|e| ParseError::new(span, K::DType(e)))
    }
}

/// Attributes being read, with where each was written.
#[derive(Default)]
struct AttrList {
    attrs: Attrs,
    spans: HashMap<String, Span>,
}

/// A tensor type whose byte size fits in `isize` and whose dimensions fit `i64`
/// ([`crate::memory::tensor_bytes`]).
fn checked_type(shape: Vec<usize>, dtype: DType, span: Span) -> PResult<TensorType> {
    let ty = TensorType::new(shape, dtype);
    match crate::memory::tensor_bytes(&ty) {
        Ok(size) if isize::try_from(size).is_ok() => Ok(ty),
        _ => Err(ParseError::new(
            span,
            K::ShapeOverflow(shape_text(&ty.shape)),
        )),
    }
}

fn shape_text(shape: &[usize]) -> String {
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    format!("({})", dims.join(", "))
}

/// A scalar literal (`1f`, `2`, `2i64`, `0.5f`, `1f64`).
fn scalar(text: &str, suffix: &str) -> Result<Tensor, K> {
    let dtype = match suffix {
        "" if literal::is_integer_text(text) => DType::Int32,
        "" => DType::Float32,
        s => literal::suffix_dtype(s).ok_or_else(|| K::BadNumber(format!("{text}{suffix}")))?,
    };
    let mut bytes = Vec::new();
    literal::encode(dtype, &ElemLit::Num(text.to_string()), &mut bytes).map_err(|_| {
        if dtype.is_float() || !literal::is_integer_text(text) {
            K::BadNumber(format!("{text}{suffix}"))
        } else {
            K::NumberOverflow {
                text: text.to_string(),
                ty: dtype.to_string(),
            }
        }
    })?;
    Tensor::from_bytes(TensorType::scalar(dtype), &bytes)
        .map_err(|_| K::BadNumber(text.to_string()))
}

/// An attribute number: integers stay integers unless a float suffix is written.
fn attr_number(text: &str, suffix: &str) -> Result<AttrValue, K> {
    let bad = || K::BadNumber(format!("{text}{suffix}"));
    let float = match suffix {
        "f" | "f16" | "f32" | "f64" => true,
        "" => !literal::is_integer_text(text),
        "i8" | "i16" | "i32" | "i64" | "u8" => false,
        _ => return Err(bad()),
    };
    if float {
        return text.parse::<f64>().map(AttrValue::Float).map_err(|_| bad());
    }
    if !literal::is_integer_text(text) {
        return Err(bad());
    }
    literal::parse_int(text)
        .and_then(|v| i64::try_from(v).ok())
        .map(AttrValue::Int)
        .ok_or_else(|| K::NumberOverflow {
            text: text.to_string(),
            ty: "int64".to_string(),
        })
}
