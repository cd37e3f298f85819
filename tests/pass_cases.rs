//! Text-based pass tests: every `tests/cases/**/*.case` file is one case (format in
//! `tests/cases/README.md`). A case gives an input module, a pattern table or target specs,
//! options and a stage or the passes to run, and the expected printed module, check lines,
//! or expected error; a differing output is shown as a unified diff.
//! Every case whose module can run is also executed on the host, original against
//! transformed, on seeded random inputs.
//!
//! `BYOC_BLESS=1 cargo test --test pass_cases` rewrites the `expected` sections from the
//! actual output (read the diff before committing). `BYOC_CASE=substring` runs only matching
//! case files.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use byoc_exec::plugin::{compile_externals, Runtimes};
use byoc_exec::{ExecOptions, Executor};
use byoc_ir::infer_types;
use byoc_ir::target::TargetSupport;
use byoc_ir::text::{parse_module, print_module};
use byoc_ir::{Module, Tensor};
use byoc_passes::{Pass, PassContext, PassManager, QConfig, Quantize};
use byoc_patterns::{MergeComposite, PatternTable};
use byoc_pipeline::inputs::random_tensor;
use byoc_pipeline::pipeline::{create_pass, partition, PartitionOptions, Stage};
use byoc_pipeline::target::Target;
use byoc_sdk::CompileOptions;
use rand::rngs::StdRng;
use rand::SeedableRng;

/// Section headers, in the order a case writes them.
const SECTIONS: [&str; 8] = [
    "module", "patterns", "target", "passes", "options", "expected", "check", "error",
];

/// Outputs of the original and transformed module may differ by this much (relative, with
/// an absolute floor of the same size).
const TOLERANCE: f64 = 1e-5;

#[derive(Debug, Default)]
struct Case {
    /// Leading comment lines, kept when blessing.
    header: String,
    sections: Vec<(String, String)>,
}

impl Case {
    fn parse(text: &str) -> Result<Self, String> {
        let mut case = Case::default();
        for line in text.lines() {
            if let Some(name) = line.strip_prefix("--- ") {
                let name = name.trim();
                if !SECTIONS.contains(&name) {
                    return Err(format!(
                        "unknown section '--- {name}' (sections: {})",
                        SECTIONS.join(", ")
                    ));
                }
                case.sections.push((name.to_string(), String::new()));
            } else if let Some((_, body)) = case.sections.last_mut() {
                body.push_str(line);
                body.push('\n');
            } else {
                case.header.push_str(line);
                case.header.push('\n');
            }
        }
        Ok(case)
    }

    fn all(&self, name: &'static str) -> impl Iterator<Item = &str> {
        self.sections
            .iter()
            .filter(move |(n, _)| n == name)
            .map(|(_, b)| b.as_str())
    }

    fn one(&self, name: &'static str) -> Result<Option<&str>, String> {
        let mut it = self.all(name);
        let first = it.next();
        if it.next().is_some() {
            return Err(format!("section '{name}' appears twice"));
        }
        Ok(first)
    }

    /// The case text with `expected` replaced (or added) by `actual`.
    fn blessed(&self, actual: &str) -> String {
        let mut out = self.header.clone();
        let mut written = false;
        for (name, body) in &self.sections {
            let body = if name == "expected" {
                written = true;
                actual
            } else {
                body.as_str()
            };
            let _ = write!(out, "--- {name}\n{body}");
        }
        if !written {
            let _ = write!(out, "--- expected\n{actual}");
        }
        out
    }
}

/// What a case asks for, from its `options` section.
struct Options {
    partition: PartitionOptions,
    /// Run the quantize pass with this configuration instead of the partitioning pipeline.
    quantize: Option<QConfig>,
    /// Why the module cannot run on the host, when it cannot.
    no_run: Option<String>,
}

fn parse_options(text: Option<&str>) -> Result<Options, String> {
    let mut opts = Options {
        partition: PartitionOptions::default(),
        quantize: None,
        no_run: None,
    };
    for line in text.unwrap_or("").lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (key, value) = line.split_once('=').map_or((line, ""), |(k, v)| (k, v));
        let p = &mut opts.partition;
        match (key.trim(), value.trim()) {
            ("stage", s) => {
                p.stop_after = match s {
                    "composite" => Stage::Composite,
                    "annotate" => Stage::Annotate,
                    "merge" => Stage::Merge,
                    "partition" => Stage::Partition,
                    other => return Err(format!("unknown stage '{other}'")),
                }
            }
            ("no-merge", "") => p.merge = false,
            ("no-prune", "") => p.prune = false,
            ("no-non-call-ops", "") => p.include_non_call_ops = false,
            ("constants-as-params", "") => p.bind_constants = false,
            ("no-run", reason) if !reason.is_empty() => opts.no_run = Some(reason.to_string()),
            ("quantize", "") => {
                opts.quantize = Some(QConfig::default());
                // Quantized outputs differ from float ones by design; tests/quantize.rs in
                // byoc-passes checks the integer numerics against numpy.
                opts.no_run = Some("quantized".to_string());
            }
            ("skip-conv-layers", list) => {
                let layers = list
                    .split(',')
                    .filter(|s| !s.trim().is_empty())
                    .map(|s| {
                        s.trim()
                            .parse::<usize>()
                            .map_err(|e| format!("'{line}': {e}"))
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                match &mut opts.quantize {
                    Some(config) => config.skip_conv_layers = layers,
                    None => return Err("skip-conv-layers needs 'quantize' first".to_string()),
                }
            }
            _ => return Err(format!("unknown option '{line}'")),
        }
    }
    Ok(opts)
}

/// Runs the case's transformation; `Err` is the transformation's error message.
fn transform(
    case: &Case,
    module: &Module,
    opts: &Options,
) -> Result<Result<Module, String>, String> {
    let targets = case
        .all("target")
        .map(Target::from_spec_json)
        .collect::<Result<Vec<_>, _>>();
    let targets = match targets {
        Ok(t) => t,
        Err(e) => return Ok(Err(e.to_string())),
    };
    if let Some(config) = &opts.quantize {
        let mut m = module.clone();
        return Ok(Quantize::new(config.clone())
            .run(&mut m, &mut PassContext::new())
            .map(|()| m)
            .map_err(|e| e.to_string()));
    }
    let table = match case.one("patterns")?.map(PatternTable::parse) {
        None => None,
        Some(Ok(t)) => Some(t),
        Some(Err(e)) => return Ok(Err(e.to_string())),
    };
    let passes = case.one("passes")?;
    if table.is_some() && !targets.is_empty() {
        return Err("a 'patterns' section needs no targets".to_string());
    }
    if table.is_some() && passes.is_none() && opts.partition.stop_after != Stage::Composite {
        return Err("a 'patterns' section without 'passes' needs stage=composite".to_string());
    }
    if passes.is_none() && table.is_none() {
        return Ok(partition(module, &targets, &opts.partition)
            .map(|p| p.module)
            .map_err(|e| format!("{e:#}")));
    }
    // The named passes only (a pattern table alone runs MergeComposite alone), with no
    // implicit prepare; the manager verifies the module after each of them.
    let names: Vec<&str> =
        passes.map_or(vec!["merge-composite"], |p| p.split_whitespace().collect());
    let supports: Vec<TargetSupport> = targets.iter().map(|t| t.support.clone()).collect();
    let mut manager = PassManager::new().verify_each(true);
    for name in names {
        let pass: Box<dyn Pass> = match (&table, name) {
            (Some(table), "merge-composite") => Box::new(MergeComposite::new(table)),
            _ => match create_pass(name, &targets, &supports, &opts.partition) {
                Ok(pass) => pass,
                Err(e) => return Ok(Err(e.to_string())),
            },
        };
        manager.push(pass);
    }
    let mut m = module.clone();
    Ok(manager
        .run(&mut m, &mut PassContext::new())
        .map(|()| m)
        .map_err(|e| e.to_string()))
}

/// `expected` and `actual` as a unified diff of lines.
fn unified_diff(expected: &str, actual: &str) -> String {
    similar::TextDiff::from_lines(expected, actual)
        .unified_diff()
        .context_radius(3)
        .header("expected", "actual")
        .to_string()
}

fn check_lines(checks: &str, actual: &str) -> Result<(), String> {
    let mut from = 0;
    for line in checks.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if let Some(want) = line.strip_prefix("CHECK:") {
            let want = want.trim();
            match actual[from..].find(want) {
                Some(at) => from += at + want.len(),
                None => return Err(format!("CHECK: '{want}' not found (in order)")),
            }
        } else if let Some(not) = line.strip_prefix("CHECK-NOT:") {
            if actual.contains(not.trim()) {
                return Err(format!("CHECK-NOT: '{}' found", not.trim()));
            }
        } else if !line.starts_with('#') {
            return Err(format!("bad check line '{line}' (CHECK: or CHECK-NOT:)"));
        }
    }
    Ok(())
}

/// Runs both modules on the same seeded random inputs and compares every output.
fn check_same_results(original: &Module, transformed: &Module) -> Result<(), String> {
    let main = original.main().map_err(|e| e.to_string())?;
    let mut rng = StdRng::seed_from_u64(7);
    let inputs: Vec<Tensor> = main
        .params
        .iter()
        .map(|&p| {
            let ty = main
                .ty(p)
                .and_then(|t| t.as_tensor())
                .ok_or("a non-tensor @main parameter")?;
            random_tensor(ty, &mut rng).map_err(|e| format!("{:#}", anyhow::Error::from(e)))
        })
        .collect::<Result<_, String>>()?;
    let run = |m: &Module, what: &str| -> Result<Vec<Tensor>, String> {
        let externals = compile_externals(m, &Runtimes::reference_for(m), &CompileOptions::new())
            .map_err(|e| format!("compiling the {what} module's partitions: {e}"))?;
        Executor::with_externals(m, ExecOptions::default(), &externals)
            .and_then(|e| e.run(&inputs))
            .map_err(|e| format!("running the {what} module: {e}"))
    };
    let want = run(original, "original")?;
    let got = run(transformed, "transformed")?;
    if want.len() != got.len() {
        return Err(format!("{} outputs, expected {}", got.len(), want.len()));
    }
    for (i, (w, g)) in want.iter().zip(&got).enumerate() {
        if w.ty() != g.ty() {
            return Err(format!("output {i}: type {} vs {}", g.ty(), w.ty()));
        }
        for (a, b) in w.to_f64_vec().into_iter().zip(g.to_f64_vec()) {
            if (a - b).abs() > TOLERANCE * a.abs().max(1.0) && !(a.is_nan() && b.is_nan()) {
                return Err(format!("output {i}: {b} differs from {a}"));
            }
        }
    }
    Ok(())
}

fn run_case(path: &Path, bless: bool) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let case = Case::parse(&text)?;
    let src = case.one("module")?.ok_or("no 'module' section")?;
    let mut module = parse_module(src).map_err(|e| format!("module: {e}"))?;
    infer_types(&mut module).map_err(|e| format!("module: {e}"))?;
    let opts = parse_options(case.one("options")?)?;
    let expected_error = case.one("error")?.map(str::trim);
    let result = transform(&case, &module, &opts)?;
    let transformed = match (result, expected_error) {
        (Err(e), Some(want)) if e.contains(want) => return Ok(()),
        (Err(e), Some(want)) => return Err(format!("error '{e}' does not contain '{want}'")),
        (Err(e), None) => return Err(format!("unexpected error: {e}")),
        (Ok(_), Some(want)) => return Err(format!("succeeded, but expected error '{want}'")),
        (Ok(m), None) => m,
    };
    let actual = print_module(&transformed);
    if let Some(checks) = case.one("check")? {
        check_lines(checks, &actual)?;
    }
    match case.one("expected")? {
        _ if bless => std::fs::write(path, case.blessed(&actual)).map_err(|e| e.to_string())?,
        Some(want) if want.trim_end() != actual.trim_end() => {
            return Err(format!(
                "output differs (BYOC_BLESS=1 rewrites it):\n{}",
                unified_diff(
                    &format!("{}\n", want.trim_end()),
                    &format!("{}\n", actual.trim_end())
                )
            ))
        }
        Some(_) => {}
        None if case.one("check")?.is_none() => {
            return Err("no 'expected' or 'check' section (bless to create one)".to_string())
        }
        None => {}
    }
    // Re-parse the printed output: what a case expects must itself be valid text.
    parse_module(&actual).map_err(|e| format!("printed output does not parse: {e}"))?;
    if opts.no_run.is_none() {
        check_same_results(&module, &transformed)?;
    }
    Ok(())
}

fn case_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            case_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "case") {
            out.push(p);
        }
    }
}

#[test]
fn pass_cases() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cases");
    let mut files = Vec::new();
    case_files(&root, &mut files);
    let filter = std::env::var("BYOC_CASE").unwrap_or_default();
    let bless = std::env::var("BYOC_BLESS").is_ok_and(|v| v == "1");
    let mut failures = Vec::new();
    let mut ran = 0;
    for f in files
        .iter()
        .filter(|f| f.to_string_lossy().contains(&filter))
    {
        ran += 1;
        if let Err(e) = run_case(f, bless) {
            failures.push(format!(
                "{}: {e}",
                f.strip_prefix(&root).unwrap_or(f).display()
            ));
        }
    }
    assert!(
        ran > 0,
        "no case files under {} match '{filter}'",
        root.display()
    );
    assert!(
        failures.is_empty(),
        "{} of {ran} cases failed:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}
