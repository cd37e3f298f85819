//! The plugin conformance kit: the same checks run against any [`Plugin`], in-process (an
//! rlib) or loaded from its `.so`.
//!
//! A plugin's test names a few small Relay modules its target should take (each op and
//! pattern it offers, in a call or two) and runs [`Conformance::check`]:
//!
//! ```
//! use std::sync::Arc;
//!
//! use byoc_sdk::Plugin;
//! use byoc_pipeline::conformance::Conformance;
//!
//! fn check(plugin: Arc<dyn Plugin>) {
//!     Conformance::new(plugin)
//!         .case("add_relu", "def @main(%a: Tensor[(2, 3), float32], %b: Tensor[(2, 3), float32]) {\n  nn.relu(add(%a, %b))\n}\n")
//!         .check()
//!         .unwrap();
//! }
//! ```
//!
//! The checks, each failure named by check and case:
//! - **describes itself**: the description's target is the plugin's name; it validates and
//!   its patterns parse into a pipeline [`Target`] (the path every target takes); its JSON
//!   form reads back to the same JSON; declared option names are distinct.
//! - **offloads and computes**: each case, partitioned for the plugin's target alone, puts
//!   at least one partition on it; the compiled partitions run inside the host executor and
//!   match the host reference executor on seeded random inputs (relative tolerance
//!   [`Conformance::tolerance`]).
//! - **round trip**: every compiled module, serialized and deserialized, computes results
//!   bit-identical to the module it came from.
//! - **bad input is an error**: empty and truncated module bytes, and a run with no tensors,
//!   return errors; a panic counts as a failure (a plugin must not panic on bad input).
//! - **options**: an undeclared key in the plugin's scope (`<name>.<key>`) fails compile with
//!   a message naming the key and every declared key; a flag or count option given text
//!   that is not of its type fails compile.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use byoc_exec::{ExecOptions, Executor, ExternalModules};
use byoc_ir::infer_types;
use byoc_ir::text::parse_module;
use byoc_ir::Module;
use byoc_ir::Tensor;
use byoc_sdk::{CompileOptions, CompiledModule, OptionKind, Plugin, TargetDescription};
use rand::rngs::StdRng;
use rand::SeedableRng;

use crate::build::{build, BuildOptions, Compiled, HostCodegen};
use crate::target::Target;

/// One failed check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// The check (`describes itself`, `round trip`, ...).
    pub check: &'static str,
    /// The case, when the check ran per case.
    pub case: Option<String>,
    /// What went wrong.
    pub message: String,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.case {
            Some(case) => write!(f, "{} [{case}]: {}", self.check, self.message),
            None => write!(f, "{}: {}", self.check, self.message),
        }
    }
}

/// Every failed check of one run.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("plugin '{plugin}' fails {} conformance check(s):\n{}", failures.len(), failures.iter().map(|f| format!("  - {f}")).collect::<Vec<_>>().join("\n"))]
pub struct ConformanceError {
    /// The plugin.
    pub plugin: String,
    /// The failures, in the order the checks ran.
    pub failures: Vec<Failure>,
}

/// The kit for one plugin: its cases and settings.
pub struct Conformance {
    plugin: Arc<dyn Plugin>,
    cases: Vec<(String, String)>,
    options: CompileOptions,
    tolerance: f64,
}

impl Conformance {
    /// The kit for `plugin`, with no cases yet, no compile options and a relative tolerance
    /// of 1e-5.
    pub fn new(plugin: Arc<dyn Plugin>) -> Self {
        Conformance {
            plugin,
            cases: Vec::new(),
            options: CompileOptions::new(),
            tolerance: 1e-5,
        }
    }

    /// Adds a case: a Relay module (text) with at least one call the plugin's target takes.
    pub fn case(mut self, name: &str, module: &str) -> Self {
        self.cases.push((name.to_string(), module.to_string()));
        self
    }

    /// Compile options for every compile and deserialize of the cases.
    pub fn options(mut self, options: CompileOptions) -> Self {
        self.options = options;
        self
    }

    /// The relative tolerance against the host (`|got - want| <= tol * max(|want|, 1)`).
    pub fn tolerance(mut self, tolerance: f64) -> Self {
        self.tolerance = tolerance;
        self
    }

    /// Runs every check; `Err` lists every failure.
    pub fn check(&self) -> Result<(), ConformanceError> {
        let mut failures = Vec::new();
        let mut fail = |check, case: Option<&str>, message: String| {
            failures.push(Failure {
                check,
                case: case.map(str::to_string),
                message,
            })
        };
        let description = self.plugin.describe();
        let target = match self.describes_itself(&description) {
            Ok(t) => Some(t),
            Err(m) => {
                fail("describes itself", None, m);
                None
            }
        };
        if let Err(m) = self.options_are_validated() {
            fail("options", None, m);
        }
        if let Some(target) = target {
            for (name, text) in &self.cases {
                if let Err((check, m)) = self.run_case(&target, text) {
                    fail(check, Some(name), m);
                }
            }
        }
        if failures.is_empty() {
            Ok(())
        } else {
            Err(ConformanceError {
                plugin: self.plugin.name().to_string(),
                failures,
            })
        }
    }

    fn describes_itself(&self, d: &TargetDescription) -> Result<Target, String> {
        if d.target != self.plugin.name() {
            return Err(format!(
                "the description's target '{}' is not the plugin's name '{}'",
                d.target,
                self.plugin.name()
            ));
        }
        let target = Target::from_description(d).map_err(|e| e.to_string())?;
        let wire = d.to_wire();
        let back = TargetDescription::from_wire(&wire, |_, _| Arc::new(|_| Ok(())))
            .map_err(|e| format!("its JSON form does not read back: {e}"))?;
        if back.to_wire() != wire {
            return Err(format!(
                "its JSON form changes on a round trip:\n{wire}\n{}",
                back.to_wire()
            ));
        }
        let schema = self.plugin.options();
        let specs = schema.specs();
        if let Some((i, s)) = specs
            .iter()
            .enumerate()
            .find(|(i, s)| specs[..*i].iter().any(|t| t.name == s.name))
        {
            return Err(format!("option '{}' is declared twice (entry {i})", s.name));
        }
        Ok(target)
    }

    /// Compiles the first case's partitions with bad options.
    fn options_are_validated(&self) -> Result<(), String> {
        let Some((_, text)) = self.cases.first() else {
            return Ok(());
        };
        let target = Target::from_description(&self.plugin.describe())
            .map_err(|e| e.to_string())?
            .with_runtime(self.plugin.clone());
        let compile =
            |options: &CompileOptions| self.guarded(|| built(&target, text, options).map(drop));
        let schema = self.plugin.options();
        let key = schema.key("conformance_undeclared");
        let message = match compile(&self.options.clone().with(&key, "1")) {
            Ok(()) => return Err(format!("compile accepted the undeclared option '{key}'")),
            Err(m) => m,
        };
        for needed in
            std::iter::once(key.clone()).chain(schema.specs().iter().map(|s| schema.key(&s.name)))
        {
            if !message.contains(&needed) {
                return Err(format!(
                    "refusing '{key}', the message does not name '{needed}': {message}"
                ));
            }
        }
        for spec in schema.specs().iter().filter(|s| s.kind != OptionKind::Text) {
            let key = schema.key(&spec.name);
            if compile(&self.options.clone().with(&key, "not-a-value")).is_ok() {
                return Err(format!("compile accepted '{key}=not-a-value'"));
            }
        }
        Ok(())
    }

    fn run_case(&self, target: &Target, text: &str) -> Result<(), (&'static str, String)> {
        let compute = "offloads and computes";
        let target = target.clone().with_runtime(self.plugin.clone());
        let host = parse_module(text)
            .map_err(|e| (compute, e.to_string()))
            .and_then(|mut m| {
                infer_types(&mut m).map_err(|e| (compute, e.to_string()))?;
                Ok(m)
            })?;
        let inputs = random_inputs(&host).map_err(|m| (compute, m))?;
        let want = run(&host, &ExternalModules::new(), &inputs).map_err(|m| (compute, m))?;
        let built = self
            .guarded(|| built(&target, text, &self.options))
            .map_err(|m| (compute, m))?;
        let (module, compiled) = (built.module(), built.externals());
        if compiled.is_empty() {
            return Err((
                compute,
                format!("nothing was offloaded to '{}'", target.name()),
            ));
        }
        let got = run(module, compiled, &inputs).map_err(|m| (compute, m))?;
        close(&got, &want, self.tolerance).map_err(|m| (compute, m))?;
        let mut reloaded = ExternalModules::new();
        for (name, e) in compiled.iter() {
            let round = "round trip";
            let bytes = self
                .guarded(|| e.module.serialize().map_err(|e| e.to_string()))
                .map_err(|m| (round, format!("@{name}: serialize: {m}")))?;
            let back = self
                .guarded(|| {
                    self.plugin
                        .deserialize(&bytes, &self.options)
                        .map_err(|e| e.to_string())
                })
                .map_err(|m| (round, format!("@{name}: deserialize: {m}")))?;
            self.bad_input_is_an_error(name, &bytes, back.as_ref())
                .map_err(|m| ("bad input is an error", m))?;
            let mut copy = e.clone();
            copy.module = Arc::from(back);
            reloaded.insert(name, copy);
        }
        let again = run(module, &reloaded, &inputs).map_err(|m| ("round trip", m))?;
        if again != got {
            return Err((
                "round trip",
                "deserialized modules compute other values than the compiled ones".to_string(),
            ));
        }
        Ok(())
    }

    fn bad_input_is_an_error(
        &self,
        name: &str,
        bytes: &[u8],
        module: &dyn CompiledModule,
    ) -> Result<(), String> {
        for (what, bad) in [
            ("empty", &bytes[..0]),
            ("truncated", &bytes[..bytes.len() / 2]),
        ] {
            let outcome = self.guarded(|| {
                self.plugin
                    .deserialize(bad, &self.options)
                    .map(drop)
                    .map_err(|e| e.to_string())
            });
            match outcome {
                Ok(()) => return Err(format!("@{name}: {what} module bytes were accepted")),
                Err(m) if m.starts_with("panicked") => return Err(format!("@{name}: {m}")),
                Err(_) => {}
            }
        }
        match self.guarded(|| module.run(&[], &mut []).map_err(|e| e.to_string())) {
            Ok(()) => Err(format!("@{name}: a run with no tensors succeeded")),
            Err(m) if m.starts_with("panicked") => Err(format!("@{name}: {m}")),
            Err(_) => Ok(()),
        }
    }

    /// Runs `f`; a panic becomes an error starting with `panicked`.
    fn guarded<T>(&self, f: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
        catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|payload| {
            let message = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            Err(format!("panicked: {message}"))
        })
    }
}

/// `text` parsed and built for `target` alone with `options`, the host part on the reference
/// kernels (so the numbers compared are the plugin's); errors with their causes.
fn built(target: &Target, text: &str, options: &CompileOptions) -> Result<Compiled, String> {
    let module = parse_module(text).map_err(|e| e.to_string())?;
    let options = BuildOptions {
        compile: options.clone(),
        host_codegen: HostCodegen::Kernels,
        exec: RUN,
        ..BuildOptions::default()
    };
    build(&module, std::slice::from_ref(target), &options).map_err(|e| {
        std::iter::successors(Some(&e as &dyn std::error::Error), |e| e.source())
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(": ")
    })
}

/// How the kit's runs execute: one thread, no profile.
const RUN: ExecOptions = ExecOptions {
    threads: 1,
    profile: false,
    memory_budget: None,
};

fn random_inputs(module: &Module) -> Result<Vec<Tensor>, String> {
    let main = module.main().map_err(|e| e.to_string())?;
    let mut rng = StdRng::seed_from_u64(7);
    main.param_types()
        .iter()
        .map(|ty| {
            let t = ty
                .as_tensor()
                .ok_or_else(|| format!("parameter of type {ty} is not a tensor"))?;
            Tensor::random_uniform(t.clone(), &mut rng).map_err(|e| e.to_string())
        })
        .collect()
}

fn run(
    module: &Module,
    externals: &ExternalModules,
    inputs: &[Tensor],
) -> Result<Vec<Tensor>, String> {
    Executor::with_externals(module, RUN, externals)
        .map_err(|e| e.to_string())?
        .run(inputs)
        .map_err(|e| e.to_string())
}

fn close(got: &[Tensor], want: &[Tensor], tolerance: f64) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!(
            "{} outputs, the host has {}",
            got.len(),
            want.len()
        ));
    }
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        if g.ty() != w.ty() {
            return Err(format!(
                "output {i} is {}, the host's is {}",
                g.ty(),
                w.ty()
            ));
        }
        for (j, (a, b)) in g.to_f64_vec().iter().zip(w.to_f64_vec()).enumerate() {
            let same = a == &b || (a.is_nan() && b.is_nan());
            if !same && (a - b).abs() > tolerance * b.abs().max(1.0) {
                return Err(format!("output {i}, element {j}: {a}, the host has {b}"));
            }
        }
    }
    Ok(())
}
