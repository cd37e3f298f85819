//! The csource target as a byoc plugin: [`CSource`] implements the SDK's [`Plugin`], and the
//! crate's `cdylib` exports it (`export_plugin!` in `lib.rs`), so byoc loads
//! `libbyoc_plugin_csource.so` like any vendor plugin.
//!
//! - `describe`: the ops of [`crate::support::SUPPORTED_OPS`] restricted to their layouts and
//!   to float32, each with the generator's own check as predicate
//!   ([`crate::codegen::check_call`]), the composite table [`crate::support::PATTERNS`], and
//!   pruning of partitions without a conv2d or dense.
//! - `compile`: generate the C, compile it with the system C compiler, load the `.so`
//!   ([`CSourceModule`]); `deserialize` loads the `.so` carried in an artifact, without any
//!   compiler; `emit_source` returns the C `compile` would build.
//!
//! Settings come from the compile options (`--plugin-option csource.KEY=VALUE`) and the
//! environment, options first ([`Settings::from_options`]).

use std::sync::Arc;

use byoc_sdk::prelude::*;
use byoc_sdk::OptionsError;

use crate::codegen::{check_call, CSourceCodegen, CodegenOptions, GeneratedSource};
use crate::compile::{compile, CompilerOptions};
use crate::module::CSourceModule;
use crate::support::{op_rule, PATTERNS, SUPPORTED_OPS, TARGET};

/// Extra compiler flags from the environment, used when `csource.cflags` is not given.
pub const CFLAGS_ENV: &str = "BYOC_CSOURCE_CFLAGS";

/// The plugin's options (`--plugin-option csource.KEY=VALUE`).
pub fn options_schema() -> OptionSchema {
    OptionSchema::new(TARGET)
        .text("cc", None, "the C compiler command (default: $CC, then cc)")
        .text(
            "cflags",
            None,
            "extra compiler flags after the defaults, e.g. \"-O3\" (default: $BYOC_CSOURCE_CFLAGS)",
        )
        .flag("fast_math", false, "true adds -ffast-math")
        .flag("march_native", false, "true adds -march=native")
        .flag(
            "embed_constants",
            true,
            "false passes constants as arguments instead of static arrays",
        )
        .flag("fuse", true, "false gives one loop nest per op")
}

/// What one compilation uses: generator and compiler options.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Settings {
    /// Generator options.
    pub codegen: CodegenOptions,
    /// Compiler options.
    pub compiler: CompilerOptions,
}

impl Settings {
    /// Reads the `csource.*` options ([`options_schema`]; other keys belong to other plugins
    /// and are ignored), then `$BYOC_CSOURCE_CFLAGS` when `csource.cflags` is absent; `$CC`
    /// is read when the compiler runs, if `csource.cc` is absent.
    pub fn from_options(options: &CompileOptions) -> Result<Settings, OptionsError> {
        let o = options_schema().parse(options)?;
        let cflags = o
            .text("cflags")
            .map(str::to_string)
            .or_else(|| std::env::var(CFLAGS_ENV).ok());
        let mut compiler = CompilerOptions {
            compiler: o.text("cc").map(str::to_string),
            fast_math: o.flag("fast_math"),
            march_native: o.flag("march_native"),
            ..CompilerOptions::default()
        };
        if let Some(extra) = cflags {
            compiler
                .flags
                .extend(extra.split_whitespace().map(String::from));
        }
        Ok(Settings {
            codegen: CodegenOptions {
                embed_constants: o.flag("embed_constants"),
                fuse: o.flag("fuse"),
            },
            compiler,
        })
    }
}

/// A function that edits the generated source before it is compiled or shown (tests inject
/// faults with it, e.g. a syntax error).
pub type SourceHook = Arc<dyn Fn(&mut GeneratedSource) + Send + Sync>;

/// The csource plugin.
#[derive(Clone, Default)]
pub struct CSource {
    source_hook: Option<SourceHook>,
}

impl std::fmt::Debug for CSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CSource")
            .field("source_hook", &self.source_hook.is_some())
            .finish()
    }
}

fn plugin_error(e: impl std::fmt::Display) -> PluginError {
    PluginError::new(e.to_string())
}

impl CSource {
    /// The plugin as the cdylib exports it.
    pub fn new() -> Self {
        CSource::default()
    }

    /// The plugin with `hook` run on every generated source (a test hook).
    pub fn with_source_hook(mut self, hook: SourceHook) -> Self {
        self.source_hook = Some(hook);
        self
    }

    /// Generates the C of `function` with the settings of `options`.
    fn generate(
        &self,
        function: &PartitionedFunction,
        settings: &Settings,
    ) -> Result<GeneratedSource, PluginError> {
        let mut source = CSourceCodegen::new(settings.codegen.clone())
            .generate(&function.function)
            .map_err(plugin_error)?;
        if let Some(hook) = &self.source_hook {
            hook(&mut source);
        }
        Ok(source)
    }
}

impl Plugin for CSource {
    fn name(&self) -> &str {
        TARGET
    }

    fn version(&self) -> &str {
        env!("CARGO_PKG_VERSION")
    }

    fn describe(&self) -> TargetDescription {
        let ops = SUPPORTED_OPS
            .iter()
            .fold(TargetDescription::new(TARGET), |d, s| {
                d.with_rule_checked(op_rule(s), check_call)
            });
        PATTERNS
            .iter()
            .fold(ops, |d, (name, pattern)| d.with_pattern(*name, *pattern))
            .with_prune(PruneConfig {
                min_ops: 1,
                require_any: vec!["nn.conv2d".to_string(), "nn.dense".to_string()],
                ..PruneConfig::default()
            })
    }

    fn options(&self) -> OptionSchema {
        options_schema()
    }

    fn compile(
        &self,
        function: &PartitionedFunction,
        options: &CompileOptions,
    ) -> Result<Box<dyn CompiledModule>, PluginError> {
        let settings = Settings::from_options(options)?;
        let source = self.generate(function, &settings)?;
        let object = compile(&source, &settings.compiler).map_err(plugin_error)?;
        Ok(Box::new(CSourceModule::load(object).map_err(plugin_error)?))
    }

    fn deserialize(
        &self,
        bytes: &[u8],
        options: &CompileOptions,
    ) -> Result<Box<dyn CompiledModule>, PluginError> {
        // The options are checked (an undeclared csource key is an error here too); a
        // loaded module needs none of them.
        Settings::from_options(options)?;
        Ok(Box::new(
            CSourceModule::from_bytes(bytes).map_err(plugin_error)?,
        ))
    }

    fn emit_source(
        &self,
        function: &PartitionedFunction,
        options: &CompileOptions,
    ) -> Result<Option<EmittedSource>, PluginError> {
        let settings = Settings::from_options(options)?;
        let source = self.generate(function, &settings)?;
        Ok(Some(EmittedSource {
            extension: "c".to_string(),
            code: source.code,
        }))
    }
}
