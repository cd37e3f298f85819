//! Typed plugin options: a plugin declares its keys once ([`OptionSchema`]: name, type,
//! default, help) and reads the parsed values ([`PluginOptions`]) instead of strings.
//!
//! Options reach every plugin as one string map ([`CompileOptions`], from `--plugin-option
//! KEY=VALUE` and the host's own settings), so keys are scoped: `<plugin>.<name>` belongs to
//! the plugin of that name, and must be one it declared; keys of other plugins are left to
//! them. One key is shared by all: [`THREADS_OPTION`], the host's worker-thread count, which
//! every schema reads ([`PluginOptions::threads`]). Parsing is the one place that checks
//! values: a wrong type or an undeclared key of the plugin's own scope is an
//! [`OptionsError`] naming the key, and for undeclared keys listing the declared ones.

use std::collections::BTreeMap;
use std::fmt;

use thiserror::Error;

use super::plugin::{CompileOptions, THREADS_OPTION};

/// The type of an option's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OptionKind {
    /// `true` or `false`.
    Flag,
    /// A non-negative integer.
    Count,
    /// Any text.
    Text,
}

impl fmt::Display for OptionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            OptionKind::Flag => "true or false",
            OptionKind::Count => "a non-negative integer",
            OptionKind::Text => "text",
        })
    }
}

/// A parsed option value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OptionValue {
    /// A [`OptionKind::Flag`].
    Flag(bool),
    /// A [`OptionKind::Count`].
    Count(u64),
    /// A [`OptionKind::Text`].
    Text(String),
}

impl OptionValue {
    fn parse(kind: OptionKind, text: &str) -> Option<OptionValue> {
        match kind {
            OptionKind::Flag => match text {
                "true" => Some(OptionValue::Flag(true)),
                "false" => Some(OptionValue::Flag(false)),
                _ => None,
            },
            OptionKind::Count => text.parse().ok().map(OptionValue::Count),
            OptionKind::Text => Some(OptionValue::Text(text.to_string())),
        }
    }
}

/// One declared option.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OptionSpec {
    /// The name within the plugin's scope (`cflags` for the key `csource.cflags`).
    pub name: String,
    /// The value's type.
    pub kind: OptionKind,
    /// The value when the key is absent (`None`: absent stays absent).
    pub default: Option<OptionValue>,
    /// What it sets, for listings and docs.
    pub help: String,
}

/// The options a plugin declares, under its scope `<plugin>.`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OptionSchema {
    scope: String,
    specs: Vec<OptionSpec>,
}

impl OptionSchema {
    /// No options yet, for the plugin named `plugin` (its keys are `<plugin>.<name>`).
    pub fn new(plugin: impl Into<String>) -> Self {
        OptionSchema {
            scope: plugin.into(),
            specs: Vec::new(),
        }
    }

    fn declare(
        mut self,
        name: &str,
        kind: OptionKind,
        default: Option<OptionValue>,
        help: &str,
    ) -> Self {
        self.specs.push(OptionSpec {
            name: name.to_string(),
            kind,
            default,
            help: help.to_string(),
        });
        self
    }

    /// Declares a boolean option with its default.
    pub fn flag(self, name: &str, default: bool, help: &str) -> Self {
        self.declare(
            name,
            OptionKind::Flag,
            Some(OptionValue::Flag(default)),
            help,
        )
    }

    /// Declares a non-negative integer option, with a default or none.
    pub fn count(self, name: &str, default: Option<u64>, help: &str) -> Self {
        self.declare(
            name,
            OptionKind::Count,
            default.map(OptionValue::Count),
            help,
        )
    }

    /// Declares a text option, with a default or none.
    pub fn text(self, name: &str, default: Option<&str>, help: &str) -> Self {
        let default = default.map(|d| OptionValue::Text(d.to_string()));
        self.declare(name, OptionKind::Text, default, help)
    }

    /// The declared options, in declaration order.
    pub fn specs(&self) -> &[OptionSpec] {
        &self.specs
    }

    /// The full key of option `name`: `<plugin>.<name>`.
    pub fn key(&self, name: &str) -> String {
        format!("{}.{name}", self.scope)
    }

    /// Reads `options`: the plugin's own keys (each declared, each of its type), defaults for
    /// the absent ones, and the shared [`THREADS_OPTION`].
    pub fn parse(&self, options: &CompileOptions) -> Result<PluginOptions, OptionsError> {
        let mut values = BTreeMap::new();
        for spec in &self.specs {
            if let Some(d) = &spec.default {
                values.insert(spec.name.clone(), d.clone());
            }
        }
        let prefix = format!("{}.", self.scope);
        for (key, text) in &options.values {
            let Some(name) = key.strip_prefix(&prefix) else {
                continue;
            };
            let Some(spec) = self.specs.iter().find(|s| s.name == name) else {
                let declared: Vec<String> = self.specs.iter().map(|s| self.key(&s.name)).collect();
                return Err(OptionsError::Unknown {
                    plugin: self.scope.clone(),
                    key: key.clone(),
                    declared: if declared.is_empty() {
                        "none".to_string()
                    } else {
                        declared.join(", ")
                    },
                });
            };
            let value =
                OptionValue::parse(spec.kind, text).ok_or_else(|| OptionsError::Invalid {
                    key: key.clone(),
                    value: text.clone(),
                    expected: spec.kind,
                })?;
            values.insert(spec.name.clone(), value);
        }
        let threads = match options.get(THREADS_OPTION) {
            None => None,
            Some(text) => match text.parse::<usize>() {
                Ok(0) => None,
                Ok(n) => Some(check_threads(n).map_err(OptionsError::Threads)?),
                Err(_) => {
                    return Err(OptionsError::Invalid {
                        key: THREADS_OPTION.to_string(),
                        value: text.to_string(),
                        expected: OptionKind::Count,
                    })
                }
            },
        };
        Ok(PluginOptions { values, threads })
    }
}

/// The most worker threads one pool may ask for: four per core the machine offers (its
/// available parallelism). Every thread count a user gives (the executor's `--threads`, the
/// plugins' [`THREADS_OPTION`]) is checked against it: a count in the thousands only exhausts
/// memory or the OpenMP runtime (oneDNN's team), and no machine runs it faster.
pub fn max_threads() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .saturating_mul(4)
}

/// A thread count over [`max_threads`].
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[error("{threads} worker threads is more than {max}, four per core of this machine")]
pub struct TooManyThreads {
    /// The count asked for.
    pub threads: usize,
    /// [`max_threads`].
    pub max: usize,
}

/// `threads` when it is at most [`max_threads`].
pub fn check_threads(threads: usize) -> Result<usize, TooManyThreads> {
    let max = max_threads();
    if threads > max {
        return Err(TooManyThreads { threads, max });
    }
    Ok(threads)
}

/// Options a plugin cannot use.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum OptionsError {
    /// A key in the plugin's scope that it did not declare.
    #[error("unknown {plugin} option '{key}' (declared: {declared})")]
    Unknown {
        /// The plugin.
        plugin: String,
        /// The full key.
        key: String,
        /// The declared keys, comma-separated (`none` when there are none).
        declared: String,
    },
    /// A key that belongs to none of the plugins in use.
    #[error("option '{key}' is not read by any plugin in use ({plugins}): plugin options are <plugin>.<name>, or {threads}", threads = THREADS_OPTION)]
    Unclaimed {
        /// The key.
        key: String,
        /// The plugins in use, comma-separated (`none` when there are none).
        plugins: String,
    },
    /// A thread count over [`max_threads`].
    #[error("option '{threads_key}': {0}", threads_key = THREADS_OPTION)]
    Threads(TooManyThreads),
    /// A value that is not of the option's type.
    #[error("option '{key}={value}': expected {expected}")]
    Invalid {
        /// The full key.
        key: String,
        /// The value given.
        value: String,
        /// The option's type.
        expected: OptionKind,
    },
}

/// Checks that every key of `options` is [`THREADS_OPTION`] or in the scope `<plugin>.` of one
/// of `plugins`: a key no plugin reads is a mistake to report, not a setting to ignore. Each
/// plugin then checks the keys and values of its own scope ([`OptionSchema::parse`]).
pub fn check_scopes(options: &CompileOptions, plugins: &[&str]) -> Result<(), OptionsError> {
    for key in options.values.keys() {
        let claimed = key == THREADS_OPTION
            || plugins.iter().any(|p| {
                key.strip_prefix(p)
                    .is_some_and(|rest| rest.starts_with('.'))
            });
        if !claimed {
            return Err(OptionsError::Unclaimed {
                key: key.clone(),
                plugins: if plugins.is_empty() {
                    "none".to_string()
                } else {
                    plugins.join(", ")
                },
            });
        }
    }
    Ok(())
}

/// Parsed options: declared values (defaults filled in) and the host's thread count.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PluginOptions {
    values: BTreeMap<String, OptionValue>,
    threads: Option<usize>,
}

impl PluginOptions {
    /// The value of option `name` (set or default), if it has one.
    pub fn value(&self, name: &str) -> Option<&OptionValue> {
        self.values.get(name)
    }

    /// Flag `name`; `false` when it is neither set nor defaulted, or not a flag.
    pub fn flag(&self, name: &str) -> bool {
        matches!(self.values.get(name), Some(OptionValue::Flag(true)))
    }

    /// Count `name`, if set or defaulted.
    pub fn count(&self, name: &str) -> Option<u64> {
        match self.values.get(name) {
            Some(OptionValue::Count(n)) => Some(*n),
            _ => None,
        }
    }

    /// Text `name`, if set or defaulted.
    pub fn text(&self, name: &str) -> Option<&str> {
        match self.values.get(name) {
            Some(OptionValue::Text(t)) => Some(t),
            _ => None,
        }
    }

    /// The host's worker-thread count ([`THREADS_OPTION`]); `None` when unset or 0 (the
    /// plugin's own default).
    pub fn threads(&self) -> Option<usize> {
        self.threads
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> OptionSchema {
        OptionSchema::new("acc")
            .flag("fuse", true, "fuse ops")
            .count("tile", None, "tile size")
            .text("cc", Some("cc"), "compiler")
    }

    #[test]
    fn values_parse_by_type_with_defaults_and_other_scopes_ignored() {
        let opts = CompileOptions::new()
            .with("acc.fuse", "false")
            .with("acc.tile", "16")
            .with("other.x", "y")
            .with(THREADS_OPTION, "3");
        let p = schema().parse(&opts).unwrap();
        assert!(!p.flag("fuse"));
        assert_eq!(p.count("tile"), Some(16));
        assert_eq!(p.text("cc"), Some("cc"));
        assert_eq!(p.threads(), Some(3));
        let d = schema().parse(&CompileOptions::new()).unwrap();
        assert!(d.flag("fuse"));
        assert_eq!((d.count("tile"), d.threads()), (None, None));
    }

    #[test]
    fn unknown_keys_and_wrong_types_are_refused_by_name() {
        let err = schema()
            .parse(&CompileOptions::new().with("acc.tiles", "1"))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown acc option 'acc.tiles' (declared: acc.fuse, acc.tile, acc.cc)"
        );
        let err = schema()
            .parse(&CompileOptions::new().with("acc.fuse", "yes"))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "option 'acc.fuse=yes': expected true or false"
        );
        let err = schema()
            .parse(&CompileOptions::new().with(THREADS_OPTION, "-1"))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "option 'threads=-1': expected a non-negative integer"
        );
        // A count no machine runs faster, which only exhausts memory or the OpenMP runtime.
        let max = max_threads();
        let over = (max + 1).to_string();
        let err = schema()
            .parse(&CompileOptions::new().with(THREADS_OPTION, over.as_str()))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "option 'threads': {} worker threads is more than {max}, four per core of this machine",
                max + 1
            )
        );
        let at_max = schema()
            .parse(&CompileOptions::new().with(THREADS_OPTION, max.to_string()))
            .expect("the maximum is allowed");
        assert_eq!(at_max.threads(), Some(max));
        let none = OptionSchema::new("bare").parse(&CompileOptions::new().with("bare.x", "1"));
        assert_eq!(
            none.unwrap_err().to_string(),
            "unknown bare option 'bare.x' (declared: none)"
        );
    }
}
