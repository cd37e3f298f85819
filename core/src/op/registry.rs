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
}
