//! The vta target as a byoc plugin: [`Vta`] implements the SDK's [`Plugin`]; the crate's
//! `cdylib` exports it.
//!
//! - `describe`: no single ops, only the composite table [`PATTERNS`] (an int8 conv2d or dense
//!   with its realized-quantization epilogue; then a conv2d whose int32 result leaves as it is,
//!   with its bias, residual add and relu), so everything else stays on the host; partitions
//!   without a conv2d or dense are pruned.
//! - `compile`: reads the partition's layers and generates their instruction streams
//!   ([`VtaModule::compile`]); `deserialize` reads a module from an artifact; `emit_source`
//!   returns the streams as assembly (`byoc inspect --emit-source DIR` writes `DIR/vta_0.asm`).
//!
//! Options (`--plugin-option KEY=VALUE`): `vta.config=FILE.json` (a `vta_config.json`),
//! `vta.virtual_threads=1|2` (default 2).

use std::path::Path;

use byoc_sdk::prelude::*;

use crate::config::VtaConfig;
use crate::module::VtaModule;

/// The target name.
pub const TARGET: &str = "vta";

/// The plugin's declared options (`--plugin-option vta.KEY=VALUE`).
pub fn options_schema() -> OptionSchema {
    OptionSchema::new(TARGET)
        .text(
            "config",
            None,
            "a vta_config.json file (default: VTA's 1x16x16 configuration)",
        )
        .count(
            "virtual_threads",
            Some(2),
            "1 or 2 (default 2): buffer slots for latency hiding",
        )
}

/// The epilogue around a conv2d / dense call pattern `core`, in TVM's realized form: bias and
/// residual adds, relu, a rounding add, right shift, clip, relu, the cast to int8, and a relu
/// after it.
fn epilogue(core: &str) -> String {
    let biased = accumulate(core);
    let shifted = format!("right_shift?(add?({biased}, const), const)");
    let clipped = format!("nn.relu?(clip?(nn.relu?({shifted})))");
    format!("nn.relu?(cast({clipped}){{dtype=\"int8\"}})")
}

/// The int32 part of an epilogue: bias and residual adds, relu.
fn accumulate(core: &str) -> String {
    format!("nn.relu?(add?(add?({core}, *), *))")
}

/// The int8 conv2d the target runs.
const CONV: &str = r#"nn.conv2d(* : int8, * : int8){groups=1, dilation=[1, 1], data_layout="NCHW", kernel_layout="OIHW", out_dtype="int32"}"#;
/// The int8 dense the target runs.
const DENSE: &str = r#"nn.dense(* : int8, * : int8){out_dtype="int32"}"#;

/// The composite names, in priority order. `vta.conv2d_int32` takes the convolutions whose
/// int32 result is used as it is (a ResNet shortcut, or a residual sum that the host both
/// requantizes and adds to a later block), after `vta.conv2d` took those that end in int8.
pub const PATTERNS: &[&str] = &["vta.conv2d", "vta.dense", "vta.conv2d_int32"];

/// The pattern table: `(name, pattern)` in the pattern syntax.
pub fn patterns() -> Vec<(&'static str, String)> {
    vec![
        (PATTERNS[0], epilogue(CONV)),
        (PATTERNS[1], epilogue(DENSE)),
        (PATTERNS[2], accumulate(CONV)),
    ]
}

/// The pattern table as text, one `name = pattern` line per entry.
pub fn pattern_table_text() -> String {
    patterns()
        .iter()
        .map(|(name, pattern)| format!("{name} = {pattern}\n"))
        .collect()
}

/// What one compilation uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// The hardware configuration.
    pub config: VtaConfig,
    /// Virtual threads (1 or 2).
    pub threads: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            config: VtaConfig::default(),
            threads: 2,
        }
    }
}

impl Settings {
    /// Reads the `vta.*` options ([`options_schema`]; other plugins' keys are ignored,
    /// undeclared `vta.*` keys refused).
    pub fn from_options(options: &CompileOptions) -> Result<Self, PluginError> {
        let parsed = options_schema().parse(options)?;
        let mut s = Settings::default();
        if let Some(path) = parsed.text("config") {
            let text = byoc_sdk::ir::memory::read_file_to_string(Path::new(path))
                .map_err(|e| PluginError::new(format!("vta.config: cannot read {path}: {e}")))?;
            s.config = VtaConfig::from_json(&text)
                .map_err(|e| PluginError::new(format!("{path}: {e}")))?;
        }
        s.threads = match parsed.count("virtual_threads") {
            Some(1) => 1,
            Some(2) | None => 2,
            Some(n) => {
                return Err(PluginError::new(format!(
                    "vta.virtual_threads={n}: expected 1 or 2"
                )))
            }
        };
        Ok(s)
    }
}

/// The vta plugin.
#[derive(Clone, Debug, Default)]
pub struct Vta;

impl Vta {
    /// The plugin as the cdylib exports it.
    pub fn new() -> Self {
        Vta
    }

    fn build(
        function: &PartitionedFunction,
        options: &CompileOptions,
    ) -> Result<VtaModule, PluginError> {
        let s = Settings::from_options(options)?;
        VtaModule::compile(&function.function, &s.config, s.threads)
            .map_err(|e| PluginError::new(format!("{}: {e}", function.symbol)))
    }
}

impl Plugin for Vta {
    fn name(&self) -> &str {
        TARGET
    }

    fn version(&self) -> &str {
        env!("CARGO_PKG_VERSION")
    }

    fn describe(&self) -> TargetDescription {
        patterns()
            .into_iter()
            .fold(TargetDescription::new(TARGET), |d, (name, pattern)| {
                d.with_pattern(name, pattern)
            })
            .with_prune(PruneConfig {
                min_ops: 1,
                require_any: vec!["nn.conv2d".to_string(), "nn.dense".to_string()],
                ..PruneConfig::default()
            })
    }

    fn compile(
        &self,
        function: &PartitionedFunction,
        options: &CompileOptions,
    ) -> Result<Box<dyn CompiledModule>, PluginError> {
        Ok(Box::new(Self::build(function, options)?))
    }

    fn options(&self) -> OptionSchema {
        options_schema()
    }

    fn deserialize(
        &self,
        bytes: &[u8],
        options: &CompileOptions,
    ) -> Result<Box<dyn CompiledModule>, PluginError> {
        options_schema().parse(options)?;
        Ok(Box::new(VtaModule::from_bytes(bytes)?))
    }

    fn emit_source(
        &self,
        function: &PartitionedFunction,
        options: &CompileOptions,
    ) -> Result<Option<EmittedSource>, PluginError> {
        Ok(Some(EmittedSource {
            extension: "asm".to_string(),
            code: Self::build(function, options)?.assembly(),
        }))
    }
}
