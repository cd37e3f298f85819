//! Steps every example shares: compile a module for targets ([`byoc_pipeline::build`]), print a
//! partitioning summary and a host-only comparison as text, and turn a report into an exit
//! code. Each example includes this file as its `common` module (`#[path = "../common/mod.rs"]`),
//! as does `tests/examples.rs`.

use std::collections::BTreeMap;
use std::fmt;

use anyhow::Result;
use byoc_ir::Module;
use byoc_pipeline::report::summary::Summary;
use byoc_pipeline::target::Target;
use byoc_pipeline::verify::OutputError;
use byoc_pipeline::{BuildOptions, Compiled, HostCodegen};

/// Largest relative error a partitioned output may have against the host-only run (the
/// default of `byoc verify --rtol`).
pub const RTOL: f64 = 1e-4;
/// The floor of the relative error, as a fraction of an output's peak (`byoc verify --floor`).
pub const FLOOR: f64 = 1e-2;

/// Compiles `module` for `targets` (priority order) with [`byoc_pipeline::build`]: the BYOC
/// pipeline, then every partition by the runtime its target carries. What stays on the host
/// runs on the reference kernels ([`HostCodegen::Kernels`]): the examples check the
/// partitions' numerics against host-only execution.
pub fn build(module: &Module, targets: &[Target]) -> Result<Compiled> {
    let options = BuildOptions {
        host_codegen: HostCodegen::Kernels,
        ..BuildOptions::default()
    };
    Ok(byoc_pipeline::build(module, targets, &options)?)
}

/// `name ×count` for each distinct entry of a sorted list with repetition.
fn counted(ops: &[String]) -> String {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for op in ops {
        *counts.entry(op).or_default() += 1;
    }
    let parts: Vec<String> = counts.iter().map(|(op, n)| format!("{op} ×{n}")).collect();
    if parts.is_empty() {
        "(none)".to_string()
    } else {
        parts.join(", ")
    }
}

/// The summary as indented lines: each partition with its target and ops, the host ops, and
/// why ops were declined.
pub fn summary_text(summary: &Summary) -> String {
    let mut out = String::new();
    for f in &summary.functions {
        out.push_str(&format!(
            "  partition @{} on {}: {}\n",
            f.name,
            f.target,
            counted(&f.ops)
        ));
    }
    out.push_str(&format!("  host: {}\n", counted(&summary.host_ops)));
    for r in &summary.rejected {
        out.push_str(&format!(
            "  declined by {}: {} ×{} ({})\n",
            r.target, r.op, r.count, r.reason
        ));
    }
    for d in &summary.declined {
        out.push_str(&format!(
            "  not fused as {}: {} ×{} ({})\n",
            d.pattern, d.op, d.count, d.reason
        ));
    }
    out
}

/// True when every output is within [`RTOL`].
pub fn all_within(errors: &[OutputError]) -> bool {
    errors.iter().all(|e| e.max_rel <= RTOL)
}

/// One line per output: its largest errors against the host-only run and the verdict.
pub fn errors_text(errors: &[OutputError]) -> String {
    errors
        .iter()
        .map(|e| {
            format!(
                "  {}: max_abs_err={:.3e} max_rel_err={:.3e} {}\n",
                e.name,
                e.max_abs,
                e.max_rel,
                if e.max_rel <= RTOL { "ok" } else { "FAILED" }
            )
        })
        .collect()
}

/// An example's report: printed as text, with a check that can fail.
pub trait Checked: fmt::Display {
    /// True when every numerical check passed.
    fn ok(&self) -> bool;
}

/// Prints `result` (the report on standard output, an error on standard error after the
/// example's name) and returns the exit code: 0 ok, 1 a check failed, 2 an error.
pub fn exit_code<R: Checked>(example: &str, result: &Result<R>) -> u8 {
    match result {
        Ok(report) => {
            print!("{report}");
            if report.ok() {
                0
            } else {
                1
            }
        }
        Err(e) => {
            eprintln!("{example}: {e:#}");
            2
        }
    }
}
