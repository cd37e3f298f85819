//! An indenting text buffer for C: lines, blocks opened with `{` and closed with `}`.
//!
//! Invariant: every `open` is matched by a `close` before the text is taken; indentation is
//! two spaces per level, so the emitted C reads like hand-written code.

use std::fmt::Write as _;

/// Builds C text line by line.
#[derive(Default)]
pub(crate) struct CWriter {
    text: String,
    depth: usize,
}

impl CWriter {
    /// Appends one line at the current indentation (an empty `line` gives an empty line).
    pub fn line(&mut self, line: impl AsRef<str>) {
        let line = line.as_ref();
        if !line.is_empty() {
            for _ in 0..self.depth {
                self.text.push_str("  ");
            }
            self.text.push_str(line);
        }
        self.text.push('\n');
    }

    /// Appends `head {` and indents.
    pub fn open(&mut self, head: impl AsRef<str>) {
        let head = head.as_ref();
        if head.is_empty() {
            self.line("{");
        } else {
            self.line(format!("{head} {{"));
        }
        self.depth += 1;
    }

    /// Dedents and appends `}`.
    pub fn close(&mut self) {
        self.close_with("");
    }

    /// Dedents and appends `}` followed by `suffix` (`;` after an initializer).
    pub fn close_with(&mut self, suffix: &str) {
        self.depth = self.depth.saturating_sub(1);
        self.line(format!("}}{suffix}"));
    }

    /// `for (long v = 0; v < n; ++v) {`.
    pub fn open_for(&mut self, var: &str, n: usize) {
        self.open(format!("for (long {var} = 0; {var} < {n}; ++{var})"));
    }

    /// The text so far.
    pub fn finish(self) -> String {
        self.text
    }
}

/// A float as a C `float` literal that reads back to the same bits (`NAN`, `INFINITY` for the
/// non-finite values).
pub(crate) fn float_literal(v: f32) -> String {
    if v.is_nan() {
        "NAN".to_string()
    } else if v.is_infinite() {
        if v > 0.0 { "INFINITY" } else { "-INFINITY" }.to_string()
    } else {
        // Nine significant digits round-trip any f32; `{:e}` keeps huge and tiny values short.
        let mut s = String::new();
        let _ = write!(s, "{:.8e}f", v);
        s
    }
}

/// `a * b + ...` index arithmetic over loop variables, leaving out zero strides; `0` when every
/// stride is zero.
pub(crate) fn index_expr(vars: &[String], strides: &[usize]) -> String {
    let terms: Vec<String> = vars
        .iter()
        .zip(strides)
        .filter(|(_, &s)| s != 0)
        .map(|(v, &s)| {
            if s == 1 {
                v.clone()
            } else {
                format!("{v} * {s}")
            }
        })
        .collect();
    if terms.is_empty() {
        "0".to_string()
    } else {
        terms.join(" + ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_literals_round_trip() {
        for v in [0.1f32, -3.5, 1e-38, 3.4e38, 0.0, -0.0, 1.0 / 3.0] {
            let s = float_literal(v);
            let back: f32 = s.trim_end_matches('f').parse().unwrap();
            assert_eq!(back.to_bits(), v.to_bits(), "{s}");
        }
        assert_eq!(float_literal(f32::NAN), "NAN");
        assert_eq!(float_literal(f32::NEG_INFINITY), "-INFINITY");
    }

    #[test]
    fn index_terms_skip_zero_strides() {
        let vars = ["i0".to_string(), "i1".to_string(), "i2".to_string()];
        assert_eq!(index_expr(&vars, &[12, 0, 1]), "i0 * 12 + i2");
        assert_eq!(index_expr(&vars, &[0, 0, 0]), "0");
    }

    #[test]
    fn blocks_indent() {
        let mut w = CWriter::default();
        w.open_for("i", 3);
        w.line("y[i] = 0.0f;");
        w.close();
        assert_eq!(
            w.finish(),
            "for (long i = 0; i < 3; ++i) {\n  y[i] = 0.0f;\n}\n"
        );
    }
}
