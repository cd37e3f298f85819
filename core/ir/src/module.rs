//! A module: the named global functions of a program, `@main` among them.

use std::collections::BTreeMap;

use super::{Callee, Expr, Function, IrError, VerifyError};

/// A set of global functions keyed by name (without `@`), iterated in name order.
#[derive(Clone, Debug, Default)]
pub struct Module {
    functions: BTreeMap<String, Function>,
}

impl Module {
    /// An empty module.
    pub fn new() -> Self {
        Module::default()
    }

    /// A module holding only `@main`.
    pub fn from_main(main: Function) -> Self {
        let mut m = Module::new();
        m.functions.insert("main".to_string(), main);
        m
    }

    /// Adds a function; an existing one of that name is an error.
    pub fn add(&mut self, name: impl Into<String>, f: Function) -> Result<(), IrError> {
        let name = name.into();
        if self.functions.contains_key(&name) {
            return Err(IrError::DuplicateGlobal(name));
        }
        self.functions.insert(name, f);
        Ok(())
    }

    /// Adds or replaces a function.
    pub fn insert(&mut self, name: impl Into<String>, f: Function) {
        self.functions.insert(name.into(), f);
    }

    /// Removes a function.
    pub fn remove(&mut self, name: &str) -> Option<Function> {
        self.functions.remove(name)
    }

    /// The function called `name`.
    pub fn get(&self, name: &str) -> Option<&Function> {
        self.functions.get(name)
    }

    /// The function called `name`, mutably.
    pub fn get_mut(&mut self, name: &str) -> Option<&mut Function> {
        self.functions.get_mut(name)
    }

    /// `@main`.
    pub fn main(&self) -> Result<&Function, IrError> {
        self.get("main").ok_or(IrError::NoMain)
    }

    /// Functions in name order.
    pub fn functions(&self) -> impl Iterator<Item = (&str, &Function)> {
        self.functions.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// The partitions of the module: every global function marked for a target (its `Compiler`
    /// attribute, [`crate::partition::target_of`]), as `(name, target, function)` in name order.
    pub fn partitions(&self) -> impl Iterator<Item = (&str, &str, &Function)> {
        self.functions()
            .filter_map(|(name, f)| Some((name, crate::partition::target_of(f)?, f)))
    }

    /// Functions in name order, mutably.
    pub fn functions_mut(&mut self) -> impl Iterator<Item = (&str, &mut Function)> {
        self.functions.iter_mut().map(|(k, v)| (k.as_str(), v))
    }

    /// Function names in order.
    pub fn names(&self) -> Vec<String> {
        self.functions.keys().cloned().collect()
    }

    /// Number of functions.
    pub fn len(&self) -> usize {
        self.functions.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.functions.is_empty()
    }

    /// Checks every function ([`super::verify_function`]) and that every global call names a
    /// function of the module. The first error found names its function and uses the ids of
    /// the printed text (`in @main, at %3: ...`).
    pub fn verify(&self) -> Result<(), VerifyError> {
        for (name, f) in &self.functions {
            super::verify_function(f).map_err(|e| VerifyError::new(name, f, e, None))?;
            for (id, node) in f.iter() {
                if let Expr::Call(call) = &node.expr {
                    if let Callee::Global(callee) = &call.callee {
                        if !self.functions.contains_key(callee) {
                            let e = IrError::UnknownGlobal(callee.clone());
                            return Err(VerifyError::new(name, f, e, Some(id)));
                        }
                    }
                }
            }
        }
        Ok(())
    }
}
