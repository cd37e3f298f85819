//! The object-detection story of TVM's BYOC blog post: a detector whose accelerator runs the
//! convolutions but has no non-maximum suppression. byoc offloads the backbone and the heads
//! and keeps `vision.get_valid_counts` / `vision.non_max_suppression` on the host; the model
//! runs end to end either way.
//!
//! The model is `examples/models/detector.relay` (from `scripts/gen_detector_model.py`), the
//! accelerator the declarative target `examples/targets/detacc.json` (its partitions run on
//! the reference runtime). The example partitions the model, runs it with profiling on
//! seeded random pixels, prints which op ran on which target, the detections, and the
//! comparison with host-only execution.

use std::fmt;
use std::time::Duration;

use anyhow::{Context, Result};
use byoc_exec::ExecOptions;
use byoc_ir::infer_types;
use byoc_ir::text::parse_module;
use byoc_pipeline::inputs::resolve_inputs;
use byoc_pipeline::report::summary::Summary;
use byoc_pipeline::target::{Target, HOST_TARGET};
use byoc_pipeline::verify::{verify_partitioned, OutputError};

use crate::common::{all_within, build, errors_text, summary_text, Checked, FLOOR};

/// The detector.
pub const MODEL: &str = include_str!("../models/detector.relay");
/// The accelerator's target spec.
pub const TARGET_SPEC: &str = include_str!("../targets/detacc.json");
/// Seed of the random input image.
const SEED: u64 = 3;

/// One kernel call of the partitioned run.
pub struct Placed {
    /// `host`, or the target whose partition it was.
    pub target: String,
    /// The op, or `@partition` for a call of an offloaded function.
    pub op: String,
    /// Its wall-clock time.
    pub time: Duration,
}

/// What the example found.
pub struct Report {
    /// What went where.
    pub summary: Summary,
    /// Every kernel call of the partitioned run, in execution order.
    pub calls: Vec<Placed>,
    /// The kept boxes `(score, x1, y1, x2, y2)`, highest score first.
    pub detections: Vec<[f32; 5]>,
    /// Each output against the host-only run.
    pub errors: Vec<OutputError>,
}

impl Checked for Report {
    /// True when the partitioned run matches the host-only run.
    fn ok(&self) -> bool {
        all_within(&self.errors)
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "== partitions (examples/targets/detacc.json)")?;
        write!(f, "{}", summary_text(&self.summary))?;
        writeln!(f, "== which ops ran where (profile of the partitioned run)")?;
        for c in &self.calls {
            writeln!(
                f,
                "  {:<8} {:<28} {:>9.3} ms",
                c.target,
                c.op,
                c.time.as_secs_f64() * 1e3
            )?;
        }
        writeln!(f, "== detections after NMS (score, x1, y1, x2, y2)")?;
        for [s, x1, y1, x2, y2] in &self.detections {
            writeln!(f, "  {s:.3}  ({x1:.3}, {y1:.3}, {x2:.3}, {y2:.3})")?;
        }
        writeln!(f, "== against host-only execution")?;
        write!(f, "{}", errors_text(&self.errors))
    }
}

/// Partitions, runs and checks the detector.
pub fn run() -> Result<Report> {
    let mut model = parse_module(MODEL).context("examples/models/detector.relay: parse error")?;
    infer_types(&mut model).context("examples/models/detector.relay: type error")?;
    let target = Target::from_spec_json(TARGET_SPEC)
        .context("examples/targets/detacc.json: bad target spec")?;
    let compiled = build(&model, &[target])?;
    let inputs = resolve_inputs(&model, None, Some(SEED))?;
    let options = ExecOptions {
        threads: 1,
        profile: true,
        memory_budget: None,
    };
    let checked = verify_partitioned(
        &model,
        compiled.module(),
        compiled.externals(),
        &inputs,
        options,
        FLOOR,
    )?;
    let calls = checked
        .profile
        .map(|p| p.calls)
        .unwrap_or_default()
        .into_iter()
        .map(|c| Placed {
            target: if c.target == HOST_TARGET {
                "host".to_string()
            } else {
                c.target
            },
            op: c.op,
            time: c.time,
        })
        .collect();
    let boxes = checked
        .partitioned
        .values()
        .next()
        .context("the detector has no output")?
        .to_f64_vec();
    let detections = boxes
        .chunks_exact(5)
        .filter(|row| row[0] >= 0.0)
        .map(|row| [row[0], row[1], row[2], row[3], row[4]].map(|v| v as f32))
        .collect();
    Ok(Report {
        summary: compiled.summary(),
        calls,
        detections,
        errors: checked.errors,
    })
}
