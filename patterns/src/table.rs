//! Pattern tables: the ordered `(name, pattern, check)` entries a target gives MergeComposite.
//!
//! Invariants, checked when an entry is added: names are non-empty, free of whitespace and
//! unique in the table; in a table made for a target ([`PatternTable::for_target`]) every name
//! is `<target>.<rest>`, as composite names are; every op a pattern names is
//! registered; a pattern can only match a call, tuple or tuple-get-item (a pattern that may
//! match a bare leaf would make an empty composite).
//!
//! Text form (for tests and declarative targets): one entry per line, `name = pattern`;
//! blank lines and lines starting with `#` are skipped. Errors name the line and column.

use std::fmt;

use byoc_ir::op::OpRegistry;
use byoc_ir::Span;
use thiserror::Error;

use crate::partition::Check;
use crate::pattern::Pattern;
use crate::syntax::PatternParseError;

/// One entry of a pattern table.
#[derive(Clone)]
pub struct TableEntry {
    /// The composite name (`dnnl.conv2d_bias_relu`).
    pub name: String,
    /// The pattern.
    pub pattern: Pattern,
    /// An optional predicate on the typed root call of each match.
    pub check: Option<Check>,
}

impl fmt::Debug for TableEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TableEntry")
            .field("name", &self.name)
            .field("pattern", &self.pattern.to_string())
            .field("check", &self.check.is_some())
            .finish()
    }
}

/// Errors of building a pattern table.
#[derive(Debug, Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum TableError {
    /// An empty name, or one with whitespace.
    #[error("bad composite name '{0}': names are non-empty and have no whitespace")]
    BadName(String),
    /// Two entries with one name.
    #[error("pattern table has two entries named '{0}'")]
    Duplicate(String),
    /// A name without the `<target>.` prefix in a table made for a target.
    #[error(
        "composite name '{name}' must start with '{target}.' (the table is for target '{target}')"
    )]
    MissingTargetPrefix {
        /// The name.
        name: String,
        /// The table's target.
        target: String,
    },
    /// A pattern naming an op the registry does not know.
    #[error("entry '{entry}': unknown op '{op}'")]
    UnknownOp {
        /// The entry.
        entry: String,
        /// The op.
        op: String,
    },
    /// A pattern that may match a bare variable, constant or wildcard.
    #[error("entry '{entry}': pattern '{pattern}' may match a single leaf; a composite needs a call, tuple or tuple-get-item at its root")]
    Trivial {
        /// The entry.
        entry: String,
        /// The pattern text.
        pattern: String,
    },
    /// A line of a table text that is not `name = pattern`.
    #[error("line {line}: expected 'name = pattern'")]
    BadLine {
        /// The line, from 1.
        line: u32,
    },
    /// A pattern text that does not parse.
    #[error("{0}")]
    Parse(PatternParseError),
    /// A bad entry of a table text, with where its name starts.
    #[error("{span}: {source}")]
    At {
        /// Line and column of the entry's name.
        span: Span,
        /// What is wrong with the entry.
        source: Box<TableError>,
    },
}

/// An ordered pattern table; earlier entries win.
#[derive(Clone, Debug, Default)]
pub struct PatternTable {
    entries: Vec<TableEntry>,
    target: Option<String>,
}

impl PatternTable {
    /// An empty table that accepts any valid name.
    pub fn new() -> Self {
        PatternTable::default()
    }

    /// An empty table of target `target`: every entry name must be `<target>.<rest>`.
    pub fn for_target(target: impl Into<String>) -> Self {
        PatternTable {
            entries: Vec::new(),
            target: Some(target.into()),
        }
    }

    /// The target whose prefix names must carry, for a table made with
    /// [`PatternTable::for_target`].
    pub fn target(&self) -> Option<&str> {
        self.target.as_deref()
    }

    /// Appends an entry without a check.
    pub fn add(&mut self, name: impl Into<String>, pattern: Pattern) -> Result<(), TableError> {
        self.push(TableEntry {
            name: name.into(),
            pattern,
            check: None,
        })
    }

    /// Appends an entry with a check on the typed root call of each match.
    pub fn add_with_check(
        &mut self,
        name: impl Into<String>,
        pattern: Pattern,
        check: Check,
    ) -> Result<(), TableError> {
        self.push(TableEntry {
            name: name.into(),
            pattern,
            check: Some(check),
        })
    }

    /// Appends an entry after validating it (see the module docs).
    pub fn push(&mut self, entry: TableEntry) -> Result<(), TableError> {
        if entry.name.is_empty() || entry.name.chars().any(char::is_whitespace) {
            return Err(TableError::BadName(entry.name));
        }
        if let Some(target) = &self.target {
            let prefixed = entry
                .name
                .strip_prefix(target.as_str())
                .and_then(|rest| rest.strip_prefix('.'))
                .is_some_and(|rest| !rest.is_empty());
            if !prefixed {
                return Err(TableError::MissingTargetPrefix {
                    name: entry.name,
                    target: target.clone(),
                });
            }
        }
        if self.entries.iter().any(|e| e.name == entry.name) {
            return Err(TableError::Duplicate(entry.name));
        }
        if let Some(op) = entry
            .pattern
            .ops()
            .into_iter()
            .find(|op| OpRegistry::lookup(op).is_none())
        {
            return Err(TableError::UnknownOp {
                entry: entry.name.clone(),
                op: op.to_string(),
            });
        }
        if !entry.pattern.is_structural() {
            return Err(TableError::Trivial {
                entry: entry.name.clone(),
                pattern: entry.pattern.to_string(),
            });
        }
        self.entries.push(entry);
        Ok(())
    }

    /// The entries in priority order.
    pub fn entries(&self) -> &[TableEntry] {
        &self.entries
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when the table has no entry.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Parses the text form into a table that accepts any valid name; errors are located in
    /// the whole text.
    pub fn parse(text: &str) -> Result<Self, TableError> {
        PatternTable::new().parse_into(text)
    }

    /// Parses the text form into a table of target `target` (names must be
    /// `<target>.<rest>`); errors are located in the whole text.
    pub fn parse_for_target(target: impl Into<String>, text: &str) -> Result<Self, TableError> {
        PatternTable::for_target(target).parse_into(text)
    }

    fn parse_into(mut self, text: &str) -> Result<Self, TableError> {
        for (i, line) in text.lines().enumerate() {
            let lineno = u32::try_from(i + 1).unwrap_or(u32::MAX);
            let trimmed = line.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            let (name, pattern) = line
                .split_once('=')
                .ok_or(TableError::BadLine { line: lineno })?;
            let offset = u32::try_from(name.chars().count() + 1).unwrap_or(u32::MAX);
            let pattern: Pattern = pattern.parse().map_err(|e: PatternParseError| {
                TableError::Parse(PatternParseError {
                    span: Span {
                        line: lineno,
                        col: e.span.col.saturating_add(offset),
                    },
                    kind: e.kind,
                })
            })?;
            let indent = name.chars().take_while(|c| c.is_whitespace()).count();
            self.add(name.trim(), pattern)
                .map_err(|source| TableError::At {
                    span: Span {
                        line: lineno,
                        col: u32::try_from(indent + 1).unwrap_or(u32::MAX),
                    },
                    source: Box::new(source),
                })?;
        }
        Ok(self)
    }
}

impl fmt::Display for PatternTable {
    /// The text form, one `name = pattern` line per entry (checks are not printed).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for e in &self.entries {
            writeln!(f, "{} = {}", e.name, e.pattern)?;
        }
        Ok(())
    }
}
