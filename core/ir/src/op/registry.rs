//! The process-wide op registry.

use std::collections::HashMap;
use std::fmt;
use std::ops::Deref;
use std::sync::{Arc, OnceLock, RwLock};

use thiserror::Error;

use super::OpDef;

/// A shared handle to a registered op. Equality and hashing go by name.
#[derive(Clone)]
pub struct Op(Arc<OpDef>);

impl Op {
    /// The op's name.
    pub fn name(&self) -> &str {
        &self.0.name
    }
}

impl Deref for Op {
    type Target = OpDef;

    fn deref(&self) -> &OpDef {
        &self.0
    }
}

impl PartialEq for Op {
    fn eq(&self, other: &Self) -> bool {
        self.0.name == other.0.name
    }
}

impl Eq for Op {}

impl std::hash::Hash for Op {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.name.hash(state);
    }
}

impl fmt::Debug for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Op({})", self.0.name)
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.name)
    }
}

/// Errors of op registration.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RegistryError {
    /// An op of that name exists already.
    #[error("op '{0}' is already registered")]
    Duplicate(String),
}

/// The registry of all ops known to this process.
pub struct OpRegistry;

fn table() -> &'static RwLock<HashMap<String, Op>> {
    static TABLE: OnceLock<RwLock<HashMap<String, Op>>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut map = HashMap::new();
        for def in crate::ops::builtin_ops() {
            let name = def.name.clone();
            let previous = map.insert(name.clone(), Op(Arc::new(def)));
            assert!(previous.is_none(), "built-in op {name} defined twice");
        }
        RwLock::new(map)
    })
}

impl OpRegistry {
    /// The op called `name`.
    pub fn lookup(name: &str) -> Option<Op> {
        let t = table().read().unwrap_or_else(|e| e.into_inner());
        t.get(name).cloned()
    }

    /// Registers a new op (a plugin's or a test's); names must be unique.
    pub fn register(def: OpDef) -> Result<Op, RegistryError> {
        let mut t = table().write().unwrap_or_else(|e| e.into_inner());
        if t.contains_key(&def.name) {
            return Err(RegistryError::Duplicate(def.name));
        }
        let op = Op(Arc::new(def));
        t.insert(op.name().to_string(), op.clone());
        Ok(op)
    }

    /// All registered op names, sorted.
    pub fn names() -> Vec<String> {
        let t = table().read().unwrap_or_else(|e| e.into_inner());
        let mut names: Vec<String> = t.keys().cloned().collect();
        names.sort();
        names
    }

    /// The registered op name closest to `name` (for "did you mean" hints), if within edit
    /// distance 2; ties go to the first in name order.
    pub fn closest(name: &str) -> Option<String> {
        OpRegistry::names()
            .into_iter()
            .map(|n| (edit_distance(name, &n), n))
            .filter(|(d, _)| *d <= 2)
            .min_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(&b.1)))
            .map(|(_, n)| n)
    }
}

/// Levenshtein distance over characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distance_counts_edits() {
        assert_eq!(edit_distance("nn.conv2", "nn.conv2d"), 1);
        assert_eq!(edit_distance("relu", "nn.relu"), 3);
        assert_eq!(edit_distance("", "ab"), 2);
    }
}
