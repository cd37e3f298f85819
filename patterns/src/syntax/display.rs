//! Printing patterns in the text syntax, so that parsing the printed text gives back an equal
//! pattern (for patterns the text can express: all but [`PatternKind::Expr`]).
//!
//! Parentheses are added only where precedence needs them: `|` binds loosest, then `:`, then
//! the postfix forms `.i` and `{...}`.

use std::fmt;

use crate::pattern::{Pattern, PatternKind, TypeConstraint};

/// Binding strength of a pattern's outermost form.
fn level(p: &Pattern) -> u8 {
    match p.kind() {
        PatternKind::Alt(..) => 0,
        PatternKind::Type { .. } => 1,
        _ => 2,
    }
}

fn write_at(f: &mut fmt::Formatter<'_>, p: &Pattern, min: u8) -> fmt::Result {
    if level(p) < min {
        write!(f, "({p})")
    } else {
        write!(f, "{p}")
    }
}

fn write_list(f: &mut fmt::Formatter<'_>, items: &[Pattern]) -> fmt::Result {
    for (i, p) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write_at(f, p, 0)?;
    }
    Ok(())
}

fn write_args(f: &mut fmt::Formatter<'_>, args: &Option<Vec<Pattern>>) -> fmt::Result {
    match args {
        None => f.write_str("(..)"),
        Some(args) => {
            f.write_str("(")?;
            write_list(f, args)?;
            f.write_str(")")
        }
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind() {
            PatternKind::Wildcard => f.write_str("*"),
            PatternKind::Named(n) => write!(f, "?{n}"),
            PatternKind::Var => f.write_str("var"),
            PatternKind::Const(None) => f.write_str("const"),
            PatternKind::Const(Some(v)) => write!(f, "const({v:?})"),
            PatternKind::Expr(id) => write!(f, "expr({id})"),
            PatternKind::Call { op, args } => {
                f.write_str(op)?;
                write_args(f, args)
            }
            PatternKind::Optional { op, args } => {
                write!(f, "{op}?(")?;
                write_list(f, args)?;
                f.write_str(")")
            }
            PatternKind::Tuple(None) => f.write_str("(..)"),
            PatternKind::Tuple(Some(fields)) => {
                f.write_str("(")?;
                write_list(f, fields)?;
                if fields.len() == 1 {
                    f.write_str(",")?;
                }
                f.write_str(")")
            }
            PatternKind::TupleGetItem { tuple, index } => {
                write_at(f, tuple, 2)?;
                match index {
                    Some(i) => write!(f, ".{i}"),
                    None => f.write_str(".*"),
                }
            }
            PatternKind::Alt(a, b) => {
                write_at(f, a, 0)?;
                f.write_str(" | ")?;
                write_at(f, b, 1)
            }
            PatternKind::Attr { inner, attrs } => {
                write_at(f, inner, 2)?;
                f.write_str("{")?;
                for (i, (k, v)) in attrs.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{k}={v}")?;
                }
                f.write_str("}")
            }
            PatternKind::Type { inner, constraint } => {
                write_at(f, inner, 1)?;
                write!(f, " : {constraint}")
            }
            PatternKind::Dominator {
                parent,
                path,
                child,
            } => {
                f.write_str("dominates(")?;
                write_list(f, &[parent.clone(), path.clone(), child.clone()])?;
                f.write_str(")")
            }
        }
    }
}

impl fmt::Display for TypeConstraint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TypeConstraint::DType(d) => write!(f, "{d}"),
            TypeConstraint::Shape(dims) => {
                f.write_str("(")?;
                for (i, d) in dims.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{d}")?;
                }
                f.write_str(")")
            }
            TypeConstraint::Type(t) => write!(f, "{t}"),
        }
    }
}
