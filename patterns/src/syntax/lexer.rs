//! The tokens of the pattern syntax.
//!
//! Names may contain dots (`nn.conv2d`) when a letter or `_` follows the dot; a dot followed by
//! a digit is a tuple-get-item (`p.0`), and a number right after a dot is always an integer, so
//! `p.0.1` reads as two projections.

use byoc_ir::Span;

use super::error::{ParseErrorKind, PatternParseError};

/// A token kind.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Tok {
    Star,
    Question,
    LParen,
    RParen,
    LBrace,
    RBrace,
    LBracket,
    RBracket,
    Comma,
    Dot,
    DotDot,
    Pipe,
    Colon,
    Eq,
    Percent,
    Ident(String),
    Int(i64),
    Float(f64),
    Str(String),
    Eof,
}

impl Tok {
    /// How the token reads in an error message.
    pub(crate) fn describe(&self) -> String {
        match self {
            Tok::Star => "'*'".into(),
            Tok::Question => "'?'".into(),
            Tok::LParen => "'('".into(),
            Tok::RParen => "')'".into(),
            Tok::LBrace => "'{'".into(),
            Tok::RBrace => "'}'".into(),
            Tok::LBracket => "'['".into(),
            Tok::RBracket => "']'".into(),
            Tok::Comma => "','".into(),
            Tok::Dot => "'.'".into(),
            Tok::DotDot => "'..'".into(),
            Tok::Pipe => "'|'".into(),
            Tok::Colon => "':'".into(),
            Tok::Eq => "'='".into(),
            Tok::Percent => "'%'".into(),
            Tok::Ident(s) => format!("'{s}'"),
            Tok::Int(v) => format!("'{v}'"),
            Tok::Float(v) => format!("'{v}'"),
            Tok::Str(s) => format!("string \"{s}\""),
            Tok::Eof => "end of input".into(),
        }
    }
}

/// A token and where it starts.
#[derive(Clone, Debug)]
pub(crate) struct Token {
    pub tok: Tok,
    pub span: Span,
}

struct Lexer<'a> {
    chars: std::iter::Peekable<std::str::Chars<'a>>,
    line: u32,
    col: u32,
}

impl Lexer<'_> {
    fn peek(&mut self) -> Option<char> {
        self.chars.peek().copied()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.chars.next()?;
        if c == '\n' {
            self.line += 1;
            self.col = 1;
        } else {
            self.col += 1;
        }
        Some(c)
    }

    fn span(&self) -> Span {
        Span {
            line: self.line,
            col: self.col,
        }
    }

    fn take_while(&mut self, out: &mut String, f: impl Fn(char) -> bool) {
        while let Some(c) = self.peek().filter(|&c| f(c)) {
            out.push(c);
            self.bump();
        }
    }

    fn ident(&mut self, first: char) -> Tok {
        let mut s = String::from(first);
        loop {
            self.take_while(&mut s, |c| c.is_ascii_alphanumeric() || c == '_');
            // `nn.conv2d` continues the name; `p.0` and `p.*` do not.
            let mut ahead = self.chars.clone();
            if ahead.next() == Some('.')
                && ahead
                    .next()
                    .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            {
                s.push('.');
                self.bump();
                continue;
            }
            return Tok::Ident(s);
        }
    }

    /// A number whose first character (`-` or a digit) is already consumed.
    fn number(&mut self, first: char, after_dot: bool) -> Result<Tok, ParseErrorKind> {
        let mut s = String::from(first);
        self.take_while(&mut s, |c| c.is_ascii_digit());
        let mut is_float = false;
        if !after_dot {
            let mut ahead = self.chars.clone();
            if ahead.next() == Some('.') && ahead.next().is_some_and(|c| c.is_ascii_digit()) {
                is_float = true;
                s.push('.');
                self.bump();
                self.take_while(&mut s, |c| c.is_ascii_digit());
            }
            if matches!(self.peek(), Some('e' | 'E')) {
                let mut ahead = self.chars.clone();
                ahead.next();
                let mut next = ahead.next();
                if matches!(next, Some('+' | '-')) {
                    next = ahead.next();
                }
                if next.is_some_and(|c| c.is_ascii_digit()) {
                    is_float = true;
                    s.push('e');
                    self.bump();
                    if let Some(sign) = self.peek().filter(|c| matches!(c, '+' | '-')) {
                        s.push(sign);
                        self.bump();
                    }
                    self.take_while(&mut s, |c| c.is_ascii_digit());
                }
            }
            if self.peek() == Some('f') {
                is_float = true;
                self.bump();
            }
        }
        if is_float {
            s.parse::<f64>()
                .map(Tok::Float)
                .map_err(|_| ParseErrorKind::BadNumber(s))
        } else {
            s.parse::<i64>()
                .map(Tok::Int)
                .map_err(|_| ParseErrorKind::BadNumber(s))
        }
    }

    fn string(&mut self) -> Result<Tok, ParseErrorKind> {
        let mut s = String::new();
        loop {
            match self.bump() {
                None => return Err(ParseErrorKind::BadString("missing closing '\"'".into())),
                Some('"') => return Ok(Tok::Str(s)),
                Some('\\') => match self.bump() {
                    Some('"') => s.push('"'),
                    Some('\\') => s.push('\\'),
                    Some('n') => s.push('\n'),
                    Some('t') => s.push('\t'),
                    Some('u') => s.push(self.unicode_escape()?),
                    other => {
                        return Err(ParseErrorKind::BadString(format!(
                            "unknown escape '\\{}'",
                            other.map(String::from).unwrap_or_default()
                        )))
                    }
                },
                Some(c) => s.push(c),
            }
        }
    }

    fn unicode_escape(&mut self) -> Result<char, ParseErrorKind> {
        let bad = || ParseErrorKind::BadString("bad '\\u{...}' escape".into());
        if self.bump() != Some('{') {
            return Err(bad());
        }
        let mut hex = String::new();
        self.take_while(&mut hex, |c| c.is_ascii_hexdigit());
        if self.bump() != Some('}') {
            return Err(bad());
        }
        u32::from_str_radix(&hex, 16)
            .ok()
            .and_then(char::from_u32)
            .ok_or_else(bad)
    }
}

/// Splits `text` into tokens, ending with [`Tok::Eof`].
pub(crate) fn tokenize(text: &str) -> Result<Vec<Token>, PatternParseError> {
    let mut lx = Lexer {
        chars: text.chars().peekable(),
        line: 1,
        col: 1,
    };
    let mut out: Vec<Token> = Vec::new();
    loop {
        lx.take_while(&mut String::new(), char::is_whitespace);
        let span = lx.span();
        let Some(c) = lx.bump() else {
            out.push(Token {
                tok: Tok::Eof,
                span,
            });
            return Ok(out);
        };
        let after_dot = matches!(out.last(), Some(Token { tok: Tok::Dot, .. }));
        let tok = match c {
            '*' => Ok(Tok::Star),
            '?' => Ok(Tok::Question),
            '(' => Ok(Tok::LParen),
            ')' => Ok(Tok::RParen),
            '{' => Ok(Tok::LBrace),
            '}' => Ok(Tok::RBrace),
            '[' => Ok(Tok::LBracket),
            ']' => Ok(Tok::RBracket),
            ',' => Ok(Tok::Comma),
            '|' => Ok(Tok::Pipe),
            ':' => Ok(Tok::Colon),
            '=' => Ok(Tok::Eq),
            '%' => Ok(Tok::Percent),
            '.' if lx.peek() == Some('.') => {
                lx.bump();
                Ok(Tok::DotDot)
            }
            '.' => Ok(Tok::Dot),
            '"' => lx.string(),
            '-' if lx.peek().is_some_and(|c| c.is_ascii_digit()) => lx.number('-', false),
            c if c.is_ascii_digit() => lx.number(c, after_dot),
            c if c.is_ascii_alphabetic() || c == '_' => Ok(lx.ident(c)),
            c => Err(ParseErrorKind::BadChar(c)),
        }
        .map_err(|kind| PatternParseError { span, kind })?;
        out.push(Token { tok, span });
    }
}
