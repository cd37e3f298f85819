//! The posit example: `examples/models/small_cnn.relay` (two conv + bias + relu blocks,
//! pooling, a dense classifier and softmax) runs in float32 and, through ChangeDatatype, in
//! posit32, posit16 and posit8: every op of the converted model calls the posit plugin's
//! library. Inputs are seeded random float32 tensors; the report gives, per datatype, the
//! largest and mean absolute error of the class probabilities against float32, their cosine
//! similarity and how often the top-1 class agrees.
//!
//! Claims checked: posit32 matches float32 to within 1e-5 of the output's peak and agrees on
//! every top-1 class; posit16 stays within 1e-2 of the peak. posit8 (one or two fraction bits
//! near 1) is reported, not checked.

use std::fmt;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use byoc_exec::plugin::load_plugin;
use byoc_exec::{ExecOptions, Executor};
use byoc_ir::text::parse_module;
use byoc_ir::DType;
use byoc_pipeline::datatype::convert_to_datatype;
use byoc_pipeline::inputs::resolve_inputs;
use byoc_pipeline::verify::Accuracy;

use crate::common::Checked;

/// The model.
pub const MODEL: &str = include_str!("../models/small_cnn.relay");
/// Input samples compared.
pub const SAMPLES: u64 = 8;
/// The posit widths, widest first.
const WIDTHS: [u16; 3] = [32, 16, 8];

/// One datatype's accuracy against float32.
#[derive(Clone, Debug)]
pub struct Row {
    /// The datatype (`custom[posites2]16`).
    pub dtype: String,
    /// The width in bits.
    pub bits: u16,
    /// Errors, cosine and top-1 agreement over the samples.
    pub accuracy: Accuracy,
    /// The largest |float32 output| over the samples.
    pub peak: f64,
}

/// What the example found.
#[derive(Clone, Debug)]
pub struct Report {
    /// The plugin library used.
    pub plugin: PathBuf,
    /// One row per posit width.
    pub rows: Vec<Row>,
}

impl Row {
    fn ok(&self) -> bool {
        let a = &self.accuracy;
        match self.bits {
            32 => a.max_abs <= 1e-5 * self.peak && a.top1_agree == a.top1_rows,
            16 => a.max_abs <= 1e-2 * self.peak,
            _ => true,
        }
    }
}

impl Checked for Report {
    fn ok(&self) -> bool {
        self.rows.len() == WIDTHS.len() && self.rows.iter().all(Row::ok)
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "small_cnn in posits (plugin {})", self.plugin.display())?;
        writeln!(
            f,
            "{:<20} {:>12} {:>12} {:>10} {:>8}  check",
            "dtype", "max |err|", "mean |err|", "cosine", "top-1"
        )?;
        for r in &self.rows {
            let a = &r.accuracy;
            writeln!(
                f,
                "{:<20} {:>12.3e} {:>12.3e} {:>10.6} {:>5}/{:<2}  {}",
                r.dtype,
                a.max_abs,
                a.mean_abs(),
                a.cosine(),
                a.top1_agree,
                a.top1_rows,
                match (r.bits, r.ok()) {
                    (8, _) => "reported",
                    (_, true) => "ok",
                    (_, false) => "FAILED",
                }
            )?;
        }
        Ok(())
    }
}

/// The posit plugin library: `explicit`, or `libbyoc_plugin_posit.so` in the directory of
/// this executable or the one above it (`target/debug` for `target/debug/examples/...`).
fn locate(explicit: Option<PathBuf>) -> Result<PathBuf> {
    if let Some(path) = explicit {
        return Ok(path);
    }
    let file = format!(
        "{}byoc_plugin_posit{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    );
    let exe = std::env::current_exe().context("cannot locate this executable")?;
    let found = exe
        .ancestors()
        .skip(1)
        .take(2)
        .map(|dir| dir.join(&file))
        .find(|p| p.is_file());
    match found {
        Some(path) => Ok(path),
        None => bail!("{file} not found next to the example: build it first (cargo build -p byoc-plugin-posit) or give its path"),
    }
}

/// Runs the example on `samples` seeded inputs with the plugin at `plugin` (or found next to
/// the executable).
pub fn run(plugin: Option<PathBuf>, samples: u64) -> Result<Report> {
    let plugin = locate(plugin)?;
    load_plugin(&plugin).with_context(|| format!("cannot load '{}'", plugin.display()))?;
    let module = parse_module(MODEL).context("small_cnn.relay")?;
    let options = ExecOptions::default();
    let float = Executor::new(&module, options).context("float32 plan")?;
    let mut rows = Vec::new();
    for bits in WIDTHS {
        let dtype: DType = format!("custom[posites2]{bits}").parse()?;
        let converted = convert_to_datatype(&module, dtype)
            .with_context(|| format!("converting to {dtype}"))?;
        let posit = Executor::new(&converted, options).with_context(|| format!("{dtype} plan"))?;
        let mut accuracy = Accuracy::default();
        let mut peak = 0f64;
        for seed in 0..samples {
            let inputs = resolve_inputs(&module, None, Some(seed))?;
            let want = float.run_named(&inputs)?;
            let got = posit.run_named(&inputs)?;
            let (want, got) = (want[0].to_f64_vec(), got[0].to_f64_vec());
            peak = want.iter().fold(peak, |m, v| m.max(v.abs()));
            accuracy.add(&want, &got, want.len());
        }
        rows.push(Row {
            dtype: dtype.to_string(),
            bits,
            accuracy,
            peak,
        });
    }
    Ok(Report { plugin, rows })
}
