//! The pass manager: runs an ordered pipeline of passes over a module.
//!
//! Around each pass it can hand the module to a print sink (before and/or after the passes
//! named in its print sets, as `--print-before` / `--print-after` do), verify the result
//! ([`Module::verify`], and a fresh type inference that must agree with the recorded types; on
//! by default in debug builds and tests), and time the pass. Every error leaves as
//! [`PassError::InPass`] naming the pass, so messages read `in pass fold-constant: ...`.
//! Verification errors name the global function and the expression by its id in the printed
//! text (`in @main, at %3: ...`, as `byoc inspect` prints the module).

use std::collections::BTreeSet;
use std::time::Instant;

use super::{Pass, PassContext, PassError, PassTiming};
use byoc_ir::infer_types;
use byoc_ir::text::printed_ids;
use byoc_ir::Module;

/// Where a print hook fires relative to its pass.
pub const BEFORE: &str = "before";
/// Where a print hook fires relative to its pass.
pub const AFTER: &str = "after";

/// The callback that receives the module around the passes named in the print sets:
/// `(pass name, "before" | "after", module)`.
pub type PrintSink<'s> = Box<dyn FnMut(&str, &str, &Module) + 's>;

/// An ordered pipeline of passes with print hooks, verification and timing. Passes may borrow
/// what they read (the targets of AnnotateTarget, a pattern table) for the lifetime `'s`.
pub struct PassManager<'s> {
    passes: Vec<Box<dyn Pass + 's>>,
    verify_each: bool,
    print_before: BTreeSet<String>,
    print_after: BTreeSet<String>,
    sink: Option<PrintSink<'s>>,
}

impl Default for PassManager<'_> {
    fn default() -> Self {
        PassManager::new()
    }
}

impl<'s> PassManager<'s> {
    /// An empty pipeline. Verification after each pass is on in debug builds.
    pub fn new() -> Self {
        PassManager {
            passes: Vec::new(),
            verify_each: cfg!(debug_assertions),
            print_before: BTreeSet::new(),
            print_after: BTreeSet::new(),
            sink: None,
        }
    }

    /// Appends a pass.
    pub fn pass(mut self, pass: impl Pass + 's) -> Self {
        self.passes.push(Box::new(pass));
        self
    }

    /// Appends a boxed pass (for passes chosen at run time, e.g. by name).
    pub fn push(&mut self, pass: Box<dyn Pass + 's>) {
        self.passes.push(pass);
    }

    /// Turns verification after each pass on or off.
    pub fn verify_each(mut self, on: bool) -> Self {
        self.verify_each = on;
        self
    }

    /// Prints the module before each pass named here (names are checked when the pipeline runs).
    pub fn print_before<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.print_before.extend(names.into_iter().map(Into::into));
        self
    }

    /// Prints the module after each pass named here (names are checked when the pipeline runs).
    pub fn print_after<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.print_after.extend(names.into_iter().map(Into::into));
        self
    }

    /// Sets the callback the print hooks call.
    pub fn print_sink(mut self, sink: impl FnMut(&str, &str, &Module) + 's) -> Self {
        self.sink = Some(Box::new(sink));
        self
    }

    /// The names of the pipeline's passes, in order.
    pub fn pass_names(&self) -> Vec<&'static str> {
        self.passes.iter().map(|p| p.name()).collect()
    }

    /// Runs the pipeline over `module`, recording timings and remarks in `cx`.
    ///
    /// Fails before running anything when a print set names a pass that is not in the pipeline.
    pub fn run(&mut self, module: &mut Module, cx: &mut PassContext) -> Result<(), PassError> {
        self.check_print_names()?;
        for pass in &self.passes {
            let name = pass.name();
            if let Some(sink) = self.sink.as_mut() {
                if self.print_before.contains(name) {
                    sink(name, BEFORE, module);
                }
            }
            let start = Instant::now();
            let result = pass.run(module, cx);
            cx.timings.push(PassTiming {
                pass: name,
                elapsed: start.elapsed(),
            });
            result.map_err(|e| e.in_pass(name))?;
            if self.verify_each {
                verify(module).map_err(|e| e.in_pass(name))?;
            }
            if let Some(sink) = self.sink.as_mut() {
                if self.print_after.contains(name) {
                    sink(name, AFTER, module);
                }
            }
        }
        Ok(())
    }

    fn check_print_names(&self) -> Result<(), PassError> {
        let names = self.pass_names();
        match self
            .print_before
            .iter()
            .chain(&self.print_after)
            .find(|n| !names.contains(&n.as_str()))
        {
            Some(unknown) => Err(PassError::UnknownPass {
                name: unknown.clone(),
                known: names.join(", "),
            }),
            None => Ok(()),
        }
    }
}

/// Runs the one pass `pass` on a copy of `module`, as a [`PassManager`] holding only it does
/// (verified afterwards in debug builds and tests), and returns the result with what the pass
/// reported in the [`PassContext`] (rejections, pruned partitions, remarks). Every pass runs
/// through its [`Pass::run`]; this is the way to run one alone.
pub fn run_pass(pass: &dyn Pass, module: &Module) -> Result<(Module, PassContext), PassError> {
    let mut module = module.clone();
    let mut cx = PassContext::new();
    PassManager::new().pass(pass).run(&mut module, &mut cx)?;
    Ok((module, cx))
}

/// Checks that `module` is well-formed, type-checks, and that every live expression carries
/// the type a fresh inference gives it (passes keep types up to date). Errors name the global
/// function and the expression by its printed id ([`byoc_ir::text::printed_ids`]).
pub fn verify(module: &Module) -> Result<(), PassError> {
    module.verify().map_err(PassError::Verify)?;
    let mut fresh = module.clone();
    infer_types(&mut fresh)?;
    for ((name, f), (_, g)) in module.functions().zip(fresh.functions()) {
        for id in f.live_ids() {
            if f.ty(id) != g.ty(id) {
                return Err(PassError::StaleType {
                    function: name.to_string(),
                    at: printed_ids(f).render(id),
                    recorded: f
                        .ty(id)
                        .map_or_else(|| "none".to_string(), |t| t.to_string()),
                    inferred: g
                        .ty(id)
                        .map_or_else(|| "none".to_string(), |t| t.to_string()),
                });
            }
        }
    }
    Ok(())
}
