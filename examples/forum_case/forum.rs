//! The TVM forum case: in `conv2d → bias_add → relu → conv2d → bias_add → relu → softmax`
//! the two conv2d calls have the same attributes, yet only the second should run on the
//! accelerator `acc`. An op-name rule cannot tell them apart; two ways can:
//!
//! 1. **A Rust predicate.** The target `acc` takes conv2d only when its input has at most 3
//!    channels (the first conv2d reads 8, the second 3). Its composite pattern
//!    `acc.conv2d_bias_relu` carries the same test as a check, so the first conv2d block is
//!    neither fused nor offloaded, and AnnotateTarget records why.
//! 2. **Manual annotation.** `examples/models/forum_annotated.relay` wraps the second block's
//!    three calls in `annotation.compiler_begin/end` by hand (per-op form); the pipeline runs
//!    with a target `acc` that takes no op of its own (it only names the runtime of `@acc_0`)
//!    and MergeCompilerRegions / PartitionGraph do the rest.
//!
//! Both partitioned modules run (partitions on the reference runtime, host kernels) against
//! the unpartitioned model on the host executor, on the same seeded random inputs.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use anyhow::{Context, Result};
use byoc_exec::ExecOptions;
use byoc_ir::infer_types;
use byoc_ir::target::{CallView, RejectReason, TargetSupport};
use byoc_ir::text::{parse_module, print_module};
use byoc_ir::{ExprId, Function, Module, Type};
use byoc_patterns::{Pattern, PatternTable};
use byoc_pipeline::inputs::resolve_inputs;
use byoc_pipeline::report::summary::Summary;
use byoc_pipeline::target::Target;
use byoc_pipeline::verify::{verify_partitioned, OutputError};

use crate::common::{all_within, build, errors_text, summary_text, Checked, FLOOR};

/// The model, unannotated.
pub const MODEL: &str = include_str!("../models/forum.relay");
/// The same model with the second conv2d block annotated for `acc` by hand.
pub const ANNOTATED: &str = include_str!("../models/forum_annotated.relay");
/// The accelerator's name.
pub const TARGET: &str = "acc";
/// Most input channels the accelerator's conv2d takes.
pub const MAX_CHANNELS: usize = 3;
/// Seed of the random inputs (weights are parameters of the model).
const SEED: u64 = 7;

/// The input channels of a conv2d (NCHW): dimension 1 of its first argument.
fn input_channels(arg_types: &[Type]) -> Option<usize> {
    arg_types.first()?.as_tensor()?.shape.get(1).copied()
}

/// The predicate: conv2d only when its input has at most [`MAX_CHANNELS`] channels.
fn small_conv2d(call: &CallView<'_>) -> Result<(), RejectReason> {
    let channels = input_channels(call.arg_types)
        .ok_or_else(|| RejectReason::from("input is not an NCHW tensor"))?;
    if channels <= MAX_CHANNELS {
        Ok(())
    } else {
        Err(format!("input has {channels} channels, more than {MAX_CHANNELS}").into())
    }
}

/// The composite check: follows the first argument from the pattern's root (relu) down to
/// the conv2d and applies [`small_conv2d`]'s channel test to its input.
fn small_conv2d_block(f: &Function, root: ExprId) -> Result<(), String> {
    let mut id = root;
    while let Some((op, call)) = f.expr(id).as_op_call() {
        let Some(&first) = call.args.first() else {
            break;
        };
        if op.name() == "nn.conv2d" {
            let arg_types: Option<Vec<Type>> =
                call.args.iter().map(|&a| f.ty(a).cloned()).collect();
            return match arg_types.and_then(|t| input_channels(&t)) {
                Some(c) if c <= MAX_CHANNELS => Ok(()),
                Some(c) => Err(format!("input has {c} channels, more than {MAX_CHANNELS}")),
                None => Err("the conv2d's input is not a typed NCHW tensor".to_string()),
            };
        }
        id = first;
    }
    Err("no conv2d under the block's root".to_string())
}

/// The accelerator as a Rust target: conv2d under the predicate, and the fused block
/// `acc.conv2d_bias_relu` when the check accepts it. bias_add and relu are not ops of their
/// own on this target, so they go with a conv2d block or stay on the host.
pub fn predicate_target() -> Result<Target> {
    let support = TargetSupport::new(TARGET)
        .with_ops(["nn.conv2d"])
        .with_predicate(Some("nn.conv2d"), small_conv2d);
    let mut patterns = PatternTable::for_target(TARGET);
    patterns.add_with_check(
        format!("{TARGET}.conv2d_bias_relu"),
        Pattern::from_str("nn.relu(nn.bias_add(nn.conv2d(*, *), *))")?,
        Arc::new(small_conv2d_block),
    )?;
    Ok(Target::new(support).with_patterns(patterns))
}

/// The accelerator for manual annotation: it takes no op itself; the annotations decide, and
/// it compiles their partition (on the reference runtime).
pub fn annotated_target() -> Target {
    Target::new(TargetSupport::new(TARGET))
}

/// One way of placing the second block, partitioned and checked.
pub struct Placement {
    /// How the placement was decided.
    pub how: &'static str,
    /// The partitioned module, printed.
    pub module: String,
    /// What went where.
    pub summary: Summary,
    /// Each output against the host-only run.
    pub errors: Vec<OutputError>,
}

/// Both placements.
pub struct Report {
    /// By the predicate, then by manual annotation.
    pub placements: Vec<Placement>,
}

impl Checked for Report {
    /// True when every partitioned run matches the host-only run.
    fn ok(&self) -> bool {
        self.placements.iter().all(|p| all_within(&p.errors))
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for p in &self.placements {
            writeln!(f, "== {}", p.how)?;
            write!(f, "{}", p.module)?;
            write!(f, "{}", summary_text(&p.summary))?;
            writeln!(f, "  against host-only execution:")?;
            write!(f, "{}", errors_text(&p.errors))?;
        }
        Ok(())
    }
}

fn typed(text: &str, what: &str) -> Result<Module> {
    let mut module = parse_module(text).with_context(|| format!("{what}: parse error"))?;
    infer_types(&mut module).with_context(|| format!("{what}: type error"))?;
    Ok(module)
}

/// Compiles `module` for `targets`, runs it and the host-only `reference` on the same inputs,
/// and compares.
fn place(
    how: &'static str,
    module: &Module,
    targets: &[Target],
    reference: &Module,
) -> Result<Placement> {
    let compiled = build(module, targets)?;
    let inputs = resolve_inputs(reference, None, Some(SEED))?;
    let checked = verify_partitioned(
        reference,
        compiled.module(),
        compiled.externals(),
        &inputs,
        ExecOptions::default(),
        FLOOR,
    )?;
    Ok(Placement {
        how,
        module: print_module(compiled.module()),
        summary: compiled.summary(),
        errors: checked.errors,
    })
}

/// Places the second block both ways and checks each against host-only execution.
pub fn run() -> Result<Report> {
    let model = typed(MODEL, "examples/models/forum.relay")?;
    let annotated = typed(ANNOTATED, "examples/models/forum_annotated.relay")?;
    let by_predicate = place(
        "by a Rust predicate: conv2d only when its input has at most 3 channels",
        &model,
        &[predicate_target()?],
        &model,
    )?;
    let mut by_hand = place(
        "by manual annotation (examples/models/forum_annotated.relay)",
        &annotated,
        &[annotated_target()],
        &model,
    )?;
    // The annotations alone place the block: that `acc` declines every other op (it lists
    // none) says nothing about the placement.
    by_hand.summary.rejected.clear();
    Ok(Report {
        placements: vec![by_predicate, by_hand],
    })
}
