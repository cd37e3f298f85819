//! Quantize (`quantize`): TVM's `relay.quantize` flow (annotate, calibrate, realize) in one
//! pass, producing the *realized* int8 form that integer backends consume.
//!
//! The configuration is TVM's `qconfig` with its defaults ([`QConfig`]): int8 inputs and
//! weights, int32 accumulation, power-of-two scales, round-for-shift requantization, clipping
//! to `[-127, 127]`, the first conv2d left in float (`skip_conv_layers=[0]`), dense layers left
//! in float (`skip_dense_layer`), and a `global_scale` of 8.0 for activations unless a
//! data-aware calibration ([`CalibrateMode`]) is asked for.
//!
//! Steps:
//! 1. Batch norms are folded first: SimplifyInference, FoldConstant, FoldScaleAxis,
//!    FoldConstant (TVM runs the quantizer at `opt_level=3` for the same reason), so a
//!    conv-bn-relu chain reaches the rewrite as `nn.relu(nn.bias_add(nn.conv2d(x, w'), b'))`.
//! 2. [`plan`] decides which calls run on integers and which float values must be quantized
//!    to int8 (the *quantization points*: the data operand of every quantized conv2d/dense).
//! 3. [`calibrate`] gives each point a power-of-two scale: from `global_scale`, or from the
//!    float values the model computes at the point on calibration inputs (`percentile`,
//!    `kl`), rounded up to a power of two.
//! 4. [`realize`] rewrites `@main` into the integer form (described in `docs/quantization.md`).
//!
//! Needs: a verified module with a `@main`. Holds after: every live expression is typed, the
//! outputs keep their float types, no `nn.batch_norm` over float data is left. Global
//! functions other than `@main` are left as they are.
//! Cost: linear in the module size, plus one float run of `@main` per calibration sample in
//! the data-aware modes, plus `O(bins^2)` per point for `kl`.

mod calibrate;
mod error;
mod kl;
mod plan;
mod realize;

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use byoc_ir::tensor::Tensor;
use byoc_ir::Module;

use super::{
    eliminate_dead_code, FoldConstant, FoldScaleAxis, Pass, PassContext, PassError,
    SimplifyInference,
};
use byoc_ir::infer_types;

pub use error::QuantizeError;
pub use kl::kl_divergence_threshold;

/// How activation scales are chosen (TVM's `calibrate_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum CalibrateMode {
    /// Every activation gets `global_scale` (TVM's `global_scale`; needs no data).
    #[default]
    GlobalScale,
    /// The 99.999th percentile of `|x|` over the calibration samples (TVM's `percentile`).
    Percentile,
    /// The threshold minimizing the KL divergence between the histogram of `x` and its 8-bit
    /// quantization (TVM's `kl_divergence`).
    Kl,
}

impl CalibrateMode {
    /// The command-line names, in order.
    pub const NAMES: [&'static str; 3] = ["global-scale", "percentile", "kl"];

    /// Whether the mode needs calibration inputs.
    pub fn needs_data(self) -> bool {
        self != CalibrateMode::GlobalScale
    }
}

impl fmt::Display for CalibrateMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let i = *self as usize;
        f.write_str(Self::NAMES[i])
    }
}

impl FromStr for CalibrateMode {
    type Err = QuantizeError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "global-scale" | "global_scale" => Ok(CalibrateMode::GlobalScale),
            "percentile" => Ok(CalibrateMode::Percentile),
            "kl" | "kl_divergence" => Ok(CalibrateMode::Kl),
            other => Err(QuantizeError::UnknownMode(other.to_string())),
        }
    }
}

/// TVM's `qconfig`, restricted to what the realized int8 form supports.
#[derive(Clone, Debug, PartialEq)]
pub struct QConfig {
    /// The activation range `[-global_scale, global_scale]` of the `global-scale` mode; a
    /// power of two (TVM's default 8.0), so requantization stays a shift.
    pub global_scale: f64,
    /// Indices (in topological order, counting every `nn.conv2d`) of the conv2d calls left in
    /// float.
    pub skip_conv_layers: Vec<usize>,
    /// Leave every `nn.dense` in float.
    pub skip_dense_layer: bool,
    /// How activation scales are chosen.
    pub calibrate_mode: CalibrateMode,
}

impl Default for QConfig {
    fn default() -> Self {
        QConfig {
            global_scale: 8.0,
            skip_conv_layers: vec![0],
            skip_dense_layer: true,
            calibrate_mode: CalibrateMode::GlobalScale,
        }
    }
}

/// Called after each calibration sample with `(done, total)`.
pub type CalibrationProgress = Arc<dyn Fn(usize, usize) + Send + Sync>;

/// The `quantize` pass.
#[derive(Clone, Default)]
pub struct Quantize {
    /// The configuration.
    pub config: QConfig,
    /// Calibration samples for the data-aware modes: each one value per `@main` parameter,
    /// in parameter order.
    pub samples: Vec<Vec<Tensor>>,
    /// Progress of the calibration runs.
    pub progress: Option<CalibrationProgress>,
}

impl fmt::Debug for Quantize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Quantize")
            .field("config", &self.config)
            .field("samples", &self.samples.len())
            .finish()
    }
}

impl Quantize {
    /// The pass with `config` and no calibration samples (enough for `global-scale`).
    pub fn new(config: QConfig) -> Self {
        Quantize {
            config,
            samples: Vec::new(),
            progress: None,
        }
    }
}

impl Pass for Quantize {
    fn name(&self) -> &'static str {
        "quantize"
    }

    fn run(&self, module: &mut Module, cx: &mut PassContext) -> Result<(), PassError> {
        let err = |e: QuantizeError| PassError::Quantize(Box::new(e));
        if self.config.calibrate_mode.needs_data() && self.samples.is_empty() {
            return Err(err(QuantizeError::NoSamples(self.config.calibrate_mode)));
        }
        SimplifyInference::default().run(module, cx)?;
        FoldConstant.run(module, cx)?;
        FoldScaleAxis.run(module, cx)?;
        FoldConstant.run(module, cx)?;
        infer_types(module)?;
        let plan = plan::plan(module.main()?, &self.config);
        let scales = calibrate::scales(
            module,
            &plan,
            &self.config,
            &self.samples,
            self.progress.as_deref(),
        )
        .map_err(err)?;
        let realized = realize::realize(module.main()?, &plan, &scales).map_err(err)?;
        let realized = eliminate_dead_code(&realized)?;
        for skipped in &plan.remarks {
            cx.remark("quantize", skipped.clone());
        }
        module.insert("main", realized);
        infer_types(module)?;
        Ok(())
    }
}
