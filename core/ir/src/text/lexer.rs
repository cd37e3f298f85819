//! The tokenizer of the text format.
//!
//! Produces every token with its 1-based line and column; comments (`// ...`, `/* ... */`) and
//! whitespace are skipped. Numbers keep their text so the parser can read them exactly in the
//! type the context asks for. A `-` directly before a digit starts a negative number (the
//! format has no infix operators); `->` is the arrow; any other `-` is [`Tok::Minus`] (used in
//! `-inf`). After a `.` token only digits are taken, so `%t.0.1` is two tuple projections.

use std::fmt;

use super::error::{ParseError, ParseErrorKind};
use crate::Span;

/// A token kind with its text where it has one.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Tok {
    /// `%name` or `%0`, without the `%`.
    Local(String),
    /// `@name`, without the `@`.
    Global(String),
    /// An identifier, possibly dotted (`nn.conv2d`, `float32`, `True`).
    Ident(String),
    /// A number: its text without suffix (`-1`, `0.5`, `1e-05`, `0x7fc00001`) and its suffix
    /// (`f`, `f64`, `i64`, or empty).
    Number {
        text: String,
        suffix: String,
    },
    /// A string literal, escapes resolved.
    Str(String),
    LParen,
    RParen,
    LBracket,
    RBracket,
    LBrace,
    RBrace,
    Comma,
    Semi,
    Colon,
    Eq,
    Dot,
    Arrow,
    Minus,
    Hash,
    /// The end of the input.
    Eof,
}

impl fmt::Display for Tok {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let punct = match self {
            Tok::Local(n) => return write!(f, "'%{n}'"),
            Tok::Global(n) => return write!(f, "'@{n}'"),
            Tok::Ident(n) => return write!(f, "'{n}'"),
            Tok::Number { text, suffix } => return write!(f, "'{text}{suffix}'"),
            Tok::Str(s) => return write!(f, "string \"{}\"", crate::escape(s)),
            Tok::Eof => return f.write_str("end of input"),
            Tok::LParen => "(",
            Tok::RParen => ")",
            Tok::LBracket => "[",
            Tok::RBracket => "]",
            Tok::LBrace => "{",
            Tok::RBrace => "}",
            Tok::Comma => ",",
            Tok::Semi => ";",
            Tok::Colon => ":",
            Tok::Eq => "=",
            Tok::Dot => ".",
            Tok::Arrow => "->",
            Tok::Minus => "-",
            Tok::Hash => "#",
        };
        write!(f, "'{punct}'")
    }
}

/// A token and where it starts.
#[derive(Clone, Debug)]
pub(crate) struct Token {
    pub tok: Tok,
    pub span: Span,
}

struct Lexer<'s> {
    chars: std::iter::Peekable<std::str::Chars<'s>>,
    line: u32,
    col: u32,
}

impl Lexer<'_> {
    fn span(&self) -> Span {
        Span {
            line: self.line,
            col: self.col,
        }
    }

    fn peek(&mut self) -> Option<char> {
        self.chars.peek().copied()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.chars.next()?;
        if c == '\n' {
            self.line = self.line.saturating_add(1);
            self.col = 1;
        } else {
            self.col = self.col.saturating_add(1);
        }
        Some(c)
    }

    fn take_while(&mut self, mut ok: impl FnMut(char) -> bool) -> String {
        let mut s = String::new();
        while let Some(c) = self.peek().filter(|&c| ok(c)) {
            s.push(c);
            self.bump();
        }
        s
    }

    /// Skips whitespace and comments.
    fn skip_trivia(&mut self) -> Result<(), ParseError> {
        loop {
            match self.peek() {
                Some(c) if c.is_whitespace() => {
                    self.bump();
                }
                Some('/') => {
                    let start = self.span();
                    let mut ahead = self.chars.clone();
                    ahead.next();
                    match ahead.next() {
                        Some('/') => {
                            self.take_while(|c| c != '\n');
                        }
                        Some('*') => {
                            self.bump();
                            self.bump();
                            let mut prev = ' ';
                            loop {
                                match self.bump() {
                                    None => {
                                        return Err(ParseError::new(
                                            start,
                                            ParseErrorKind::UnterminatedComment,
                                        ))
                                    }
                                    Some('/') if prev == '*' => break,
                                    Some(c) => prev = c,
                                }
                            }
                        }
                        _ => return Ok(()),
                    }
                }
                _ => return Ok(()),
            }
        }
    }

    fn string(&mut self, start: Span) -> Result<Tok, ParseError> {
        self.bump();
        let mut s = String::new();
        loop {
            let at = self.span();
            match self.bump() {
                None | Some('\n') => {
                    return Err(ParseError::new(start, ParseErrorKind::UnterminatedString))
                }
                Some('"') => return Ok(Tok::Str(s)),
                Some('\\') => {
                    let bad = |e: String| ParseError::new(at, ParseErrorKind::BadEscape(e));
                    match self.bump() {
                        Some('"') => s.push('"'),
                        Some('\\') => s.push('\\'),
                        Some('n') => s.push('\n'),
                        Some('t') => s.push('\t'),
                        Some('r') => s.push('\r'),
                        Some('u') => {
                            if self.peek() != Some('{') {
                                return Err(bad("u".to_string()));
                            }
                            self.bump();
                            let hex = self.take_while(|c| c.is_ascii_hexdigit());
                            let ch = u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32);
                            match (ch, self.bump()) {
                                (Some(ch), Some('}')) => s.push(ch),
                                _ => return Err(bad(format!("u{{{hex}"))),
                            }
                        }
                        Some(c) => return Err(bad(c.to_string())),
                        None => {
                            return Err(ParseError::new(start, ParseErrorKind::UnterminatedString))
                        }
                    }
                }
                Some(c) => s.push(c),
            }
        }
    }

    /// A number starting at the current character (a digit or a `-` before a digit).
    fn number(&mut self, after_dot: bool) -> Tok {
        let mut text = String::new();
        if self.peek() == Some('-') {
            self.bump();
            text.push('-');
        }
        if after_dot {
            text.push_str(&self.take_while(|c| c.is_ascii_digit()));
            return Tok::Number {
                text,
                suffix: String::new(),
            };
        }
        let mut ahead = self.chars.clone();
        if ahead.next() == Some('0') && matches!(ahead.next(), Some('x' | 'X')) {
            self.bump();
            self.bump();
            text.push_str("0x");
            text.push_str(&self.take_while(|c| c.is_ascii_hexdigit()));
            return Tok::Number {
                text,
                suffix: String::new(),
            };
        }
        text.push_str(&self.take_while(|c| c.is_ascii_digit()));
        let mut ahead = self.chars.clone();
        if ahead.next() == Some('.') && ahead.next().is_some_and(|c| c.is_ascii_digit()) {
            self.bump();
            text.push('.');
            text.push_str(&self.take_while(|c| c.is_ascii_digit()));
        }
        let mut ahead = self.chars.clone();
        if matches!(ahead.next(), Some('e' | 'E')) {
            let sign = ahead.clone().next();
            let digit_at = if matches!(sign, Some('+' | '-')) {
                ahead.nth(1)
            } else {
                sign
            };
            if digit_at.is_some_and(|c| c.is_ascii_digit()) {
                text.extend(self.bump());
                if matches!(self.peek(), Some('+' | '-')) {
                    text.extend(self.bump());
                }
                text.push_str(&self.take_while(|c| c.is_ascii_digit()));
            }
        }
        let suffix = self.take_while(|c| c.is_ascii_alphanumeric() || c == '_');
        Tok::Number { text, suffix }
    }

    fn next_token(&mut self, prev: Option<&Tok>) -> Result<Token, ParseError> {
        self.skip_trivia()?;
        let span = self.span();
        let Some(c) = self.peek() else {
            return Ok(Token {
                tok: Tok::Eof,
                span,
            });
        };
        let is_name = |c: char| c.is_ascii_alphanumeric() || c == '_';
        let tok = match c {
            '"' => self.string(span)?,
            '0'..='9' => self.number(prev == Some(&Tok::Dot)),
            '-' => {
                let mut ahead = self.chars.clone();
                ahead.next();
                match ahead.next() {
                    Some('>') => {
                        self.bump();
                        self.bump();
                        Tok::Arrow
                    }
                    Some(d) if d.is_ascii_digit() => self.number(false),
                    _ => {
                        self.bump();
                        Tok::Minus
                    }
                }
            }
            '%' => {
                self.bump();
                Tok::Local(self.take_while(is_name))
            }
            '@' => {
                self.bump();
                Tok::Global(self.take_while(|c| is_name(c) || c == '.'))
            }
            c if c.is_ascii_alphabetic() || c == '_' => Tok::Ident(self.dotted_ident()),
            _ => {
                self.bump();
                match c {
                    '(' => Tok::LParen,
                    ')' => Tok::RParen,
                    '[' => Tok::LBracket,
                    ']' => Tok::RBracket,
                    '{' => Tok::LBrace,
                    '}' => Tok::RBrace,
                    ',' => Tok::Comma,
                    ';' => Tok::Semi,
                    ':' => Tok::Colon,
                    '=' => Tok::Eq,
                    '.' => Tok::Dot,
                    '#' => Tok::Hash,
                    other => {
                        return Err(ParseError::new(span, ParseErrorKind::UnexpectedChar(other)))
                    }
                }
            }
        };
        Ok(Token { tok, span })
    }

    /// `name(.name)*` where each segment starts with a letter or `_`.
    fn dotted_ident(&mut self) -> String {
        let is_name = |c: char| c.is_ascii_alphanumeric() || c == '_';
        let mut s = self.take_while(is_name);
        loop {
            let mut ahead = self.chars.clone();
            if ahead.next() != Some('.')
                || !ahead
                    .next()
                    .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            {
                return s;
            }
            self.bump();
            s.push('.');
            s.push_str(&self.take_while(is_name));
        }
    }
}

/// Splits `src` into tokens, ending with [`Tok::Eof`].
pub(crate) fn tokenize(src: &str) -> Result<Vec<Token>, ParseError> {
    let mut lexer = Lexer {
        chars: src.chars().peekable(),
        line: 1,
        col: 1,
    };
    let mut tokens: Vec<Token> = Vec::new();
    loop {
        let t = lexer.next_token(tokens.last().map(|t| &t.tok))?;
        let end = t.tok == Tok::Eof;
        tokens.push(t);
        if end {
            return Ok(tokens);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(src: &str) -> Vec<Tok> {
        tokenize(src).unwrap().into_iter().map(|t| t.tok).collect()
    }

    fn num(text: &str, suffix: &str) -> Tok {
        Tok::Number {
            text: text.to_string(),
            suffix: suffix.to_string(),
        }
    }

    #[test]
    fn numbers_keep_text_and_suffix() {
        assert_eq!(
            toks("1e-05f -1f 2i64 0.5 0x7fc00001 -> -inf"),
            vec![
                num("1e-05", "f"),
                num("-1", "f"),
                num("2", "i64"),
                num("0.5", ""),
                num("0x7fc00001", ""),
                Tok::Arrow,
                Tok::Minus,
                Tok::Ident("inf".to_string()),
                Tok::Eof
            ]
        );
    }

    #[test]
    fn tuple_projections_after_dot_are_integers() {
        assert_eq!(
            toks("%t.0.1 nn.conv2d /* c */ // x\n"),
            vec![
                Tok::Local("t".to_string()),
                Tok::Dot,
                num("0", ""),
                Tok::Dot,
                num("1", ""),
                Tok::Ident("nn.conv2d".to_string()),
                Tok::Eof
            ]
        );
    }

    #[test]
    fn positions_and_errors() {
        let t = tokenize("a\n  \"x\\\"y\"").unwrap();
        assert_eq!(t[1].span, Span { line: 2, col: 3 });
        assert_eq!(t[1].tok, Tok::Str("x\"y".to_string()));
        let e = tokenize("a /* b").unwrap_err();
        assert_eq!(e.to_string(), "1:3: unterminated /* comment");
        let e = tokenize("\"a\\q\"").unwrap_err();
        assert_eq!(
            e.to_string(),
            "1:3: unknown escape sequence '\\q' in string literal"
        );
    }
}
