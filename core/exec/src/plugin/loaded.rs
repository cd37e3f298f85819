//! A plugin loaded from a shared library: [`Plugin`] and [`CompiledModule`] over the C table.
//!
//! Every call goes through one slot of the plugin's [`PluginVTable`]: functions are written
//! as function records, op calls as Relay text, options and descriptions as JSON, tensors are [`TensorView`]s of the
//! caller's buffers. Buffers the plugin returns are copied and given back to the plugin
//! (`release_buf`); module handles are released by the plugin when the [`LoadedModule`]
//! drops. A panic inside the plugin comes back as an error whose message starts with
//! `panicked:`. The library itself is never unloaded, so the table is `'static`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use byoc_ir::target::OpPredicate;
use byoc_ir::TensorType;
use byoc_sdk::abi::{
    ModuleHandle, OwnedBuf, PluginVTable, StrView, STATUS_OK, STATUS_PANIC, STATUS_REJECT,
};
use byoc_sdk::{
    call_to_text, CheckKind, CompileOptions, CompiledModule, EmittedSource, FunctionForm,
    PartitionedFunction, Plugin, PluginError, RejectReason, TargetDescription, TensorMut,
    TensorRef, TensorView,
};

/// The table of a library that is never unloaded.
#[derive(Clone, Copy)]
pub(crate) struct Table(pub(crate) &'static PluginVTable);

// SAFETY: the table is immutable static data of a library that stays loaded; its slots are
// thread-safe by the SDK's contract (`Plugin: Send + Sync`).
unsafe impl Send for Table {}
// SAFETY: as above.
unsafe impl Sync for Table {}

/// The outcome of one slot call.
enum Outcome {
    Ok(Vec<u8>),
    Rejected(String),
    Failed(PluginError),
}

impl Table {
    /// Calls a slot that fills a buffer, copies the buffer and gives it back to the plugin.
    fn call(self, slot: impl FnOnce(*mut OwnedBuf) -> u32) -> Outcome {
        let mut buf = OwnedBuf::EMPTY;
        let status = slot(&mut buf);
        // SAFETY: the slot filled the buffer (or left it empty); it is released right after.
        let bytes = unsafe { buf.bytes() }.to_vec();
        // SAFETY: the buffer came from this plugin and is released once.
        unsafe { (self.0.release_buf)(buf) };
        let text = || String::from_utf8_lossy(&bytes).into_owned();
        match status {
            STATUS_OK => Outcome::Ok(bytes),
            STATUS_REJECT => Outcome::Rejected(text()),
            STATUS_PANIC => Outcome::Failed(PluginError::new(format!("panicked: {}", text()))),
            _ => Outcome::Failed(PluginError::new(text())),
        }
    }

    fn ok(self, slot: impl FnOnce(*mut OwnedBuf) -> u32) -> Result<Vec<u8>, PluginError> {
        match self.call(slot) {
            Outcome::Ok(bytes) => Ok(bytes),
            Outcome::Rejected(m) => Err(PluginError::new(m)),
            Outcome::Failed(e) => Err(e),
        }
    }

    fn module(
        self,
        slot: impl FnOnce(*mut *mut ModuleHandle, *mut OwnedBuf) -> u32,
    ) -> Result<Box<dyn CompiledModule>, PluginError> {
        let mut handle: *mut ModuleHandle = std::ptr::null_mut();
        self.ok(|out| slot(&mut handle, out))?;
        if handle.is_null() {
            return Err(PluginError::new("the plugin returned no module"));
        }
        Ok(Box::new(LoadedModule {
            table: self,
            handle,
        }))
    }
}

/// A plugin loaded from a `.so`.
pub struct LoadedPlugin {
    pub(crate) table: Table,
    pub(crate) path: PathBuf,
    pub(crate) name: String,
    pub(crate) version: String,
    pub(crate) sdk_version: String,
    pub(crate) abi: (u32, u32),
    pub(crate) description: TargetDescription,
}

impl std::fmt::Debug for LoadedPlugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedPlugin")
            .field("name", &self.name)
            .field("version", &self.version)
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl LoadedPlugin {
    /// Reads the name, version and description of a checked table.
    pub(crate) fn from_table(
        table: &'static PluginVTable,
        path: &Path,
    ) -> Result<Self, (String, String)> {
        let table = Table(table);
        // SAFETY: the table's strings are static data of the loaded library.
        let (name, version, sdk_version) = unsafe {
            (
                table.0.name.text(),
                table.0.version.text(),
                table.0.header.sdk_version.text(),
            )
        };
        let failed = |m: String| (name.clone(), m);
        // SAFETY: the slot fills the buffer the closure passes.
        let wire = table
            .ok(|out| unsafe { (table.0.describe)(out) })
            .map_err(|e| failed(e.message))?;
        let wire = String::from_utf8(wire).map_err(|e| failed(e.to_string()))?;
        let plugin_name = name.clone();
        let description = TargetDescription::from_wire(&wire, |kind, index| {
            remote_predicate(table, plugin_name.clone(), kind, index)
        })
        .map_err(|e| failed(e.to_string()))?;
        Ok(LoadedPlugin {
            table,
            path: path.to_path_buf(),
            abi: (table.0.header.abi_major, table.0.header.abi_minor),
            name,
            version,
            sdk_version,
            description,
        })
    }

    /// The file it was loaded from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The SDK version the plugin was built with.
    pub fn sdk_version(&self) -> &str {
        &self.sdk_version
    }

    /// The plugin's ABI version (major, minor).
    pub fn abi_version(&self) -> (u32, u32) {
        self.abi
    }

    /// `function` as it crosses the ABI: a function record.
    fn function_bytes(&self, function: &PartitionedFunction) -> Result<Vec<u8>, PluginError> {
        function
            .to_bytes(FunctionForm::Record)
            .map_err(|e| PluginError::new(format!("@{}: {e}", function.symbol)))
    }

    /// What `compile` and `emit_source` send: the function as a record, and the options as
    /// JSON.
    fn crossing(
        &self,
        function: &PartitionedFunction,
        options: &CompileOptions,
    ) -> Result<(Vec<u8>, String), PluginError> {
        Ok((self.function_bytes(function)?, options_json(options)))
    }
}

/// Compile options as they cross the ABI: a JSON object of strings.
fn options_json(options: &CompileOptions) -> String {
    serde_json::to_string(&options.values).unwrap_or_else(|_| "{}".to_string())
}

/// A predicate that asks the plugin across the ABI. A plugin that fails or panics while
/// deciding declines the call, with the failure as the reason.
fn remote_predicate(table: Table, plugin: String, kind: CheckKind, index: u32) -> OpPredicate {
    let kind_code = match kind {
        CheckKind::Op => 0,
        CheckKind::Pattern => 1,
    };
    Arc::new(move |call| {
        let text = call_to_text(call).map_err(|e| RejectReason(e.to_string()))?;
        let view = StrView::of(text.as_bytes());
        // SAFETY: the text outlives the call; the slot fills the buffer.
        match table.call(|out| unsafe { (table.0.check)(kind_code, index, view, out) }) {
            Outcome::Ok(_) => Ok(()),
            Outcome::Rejected(reason) => Err(RejectReason(reason)),
            Outcome::Failed(e) => Err(RejectReason(format!(
                "plugin '{plugin}' failed deciding: {e}"
            ))),
        }
    })
}

impl Plugin for LoadedPlugin {
    fn name(&self) -> &str {
        &self.name
    }

    fn version(&self) -> &str {
        &self.version
    }

    fn describe(&self) -> TargetDescription {
        self.description.clone()
    }

    fn optimize(&self, function: PartitionedFunction) -> Result<PartitionedFunction, PluginError> {
        let bytes = self.function_bytes(&function)?;
        let view = StrView::of(&bytes);
        let table = self.table;
        // SAFETY: the bytes outlive the call; the slot fills the buffer.
        let out = table.ok(|out| unsafe { (table.0.optimize)(view, out) })?;
        PartitionedFunction::from_bytes(&out)
            .map(|(f, _)| f)
            .map_err(|e| PluginError::new(format!("optimize returned an unreadable function: {e}")))
    }

    fn compile(
        &self,
        function: &PartitionedFunction,
        options: &CompileOptions,
    ) -> Result<Box<dyn CompiledModule>, PluginError> {
        let (bytes, opts) = self.crossing(function, options)?;
        let (f, o) = (StrView::of(&bytes), StrView::of(opts.as_bytes()));
        let table = self.table;
        // SAFETY: the function and the options outlive the call; the slot fills the handle and the buffer.
        table.module(|m, out| unsafe { (table.0.compile)(f, o, m, out) })
    }

    fn emit_source(
        &self,
        function: &PartitionedFunction,
        options: &CompileOptions,
    ) -> Result<Option<EmittedSource>, PluginError> {
        // A table may leave the slot out: the plugin has no source to show.
        let Some(slot) = self.table.0.emit_source else {
            return Ok(None);
        };
        let (bytes, opts) = self.crossing(function, options)?;
        let (f, o) = (StrView::of(&bytes), StrView::of(opts.as_bytes()));
        // SAFETY: the function and the options outlive the call; the slot fills the buffer.
        let out = self.table.ok(|out| unsafe { slot(f, o, out) })?;
        serde_json::from_slice(&out)
            .map_err(|e| PluginError::new(format!("emit_source returned unreadable JSON: {e}")))
    }

    fn deserialize(
        &self,
        bytes: &[u8],
        options: &CompileOptions,
    ) -> Result<Box<dyn CompiledModule>, PluginError> {
        let opts = options_json(options);
        let (b, o) = (StrView::of(bytes), StrView::of(opts.as_bytes()));
        let table = self.table;
        // SAFETY: the bytes and the options outlive the call; the slot fills the handle and
        // the buffer.
        table.module(|m, out| unsafe { (table.0.deserialize)(b, o, m, out) })
    }
}

/// A compiled module that lives in a plugin.
pub struct LoadedModule {
    table: Table,
    handle: *mut ModuleHandle,
}

// SAFETY: the handle is only used through the plugin's slots, which `CompiledModule: Send +
// Sync` makes thread-safe.
unsafe impl Send for LoadedModule {}
// SAFETY: as above.
unsafe impl Sync for LoadedModule {}

impl Drop for LoadedModule {
    fn drop(&mut self) {
        // SAFETY: the handle came from this plugin and is released once.
        unsafe { (self.table.0.release_module)(self.handle) };
    }
}

/// Dimensions as DLPack wants them.
fn dims(ty: &TensorType) -> Vec<i64> {
    ty.shape
        .iter()
        .map(|&d| i64::try_from(d).unwrap_or(i64::MAX))
        .collect()
}

impl CompiledModule for LoadedModule {
    fn run(
        &self,
        inputs: &[TensorRef<'_>],
        outputs: &mut [TensorMut<'_>],
    ) -> Result<(), PluginError> {
        let in_dims: Vec<Vec<i64>> = inputs.iter().map(|t| dims(t.ty)).collect();
        let out_dims: Vec<Vec<i64>> = outputs.iter().map(|t| dims(t.ty)).collect();
        let ins: Vec<TensorView> = inputs
            .iter()
            .zip(&in_dims)
            .map(|(t, d)| TensorView::new(t.ty, d, t.bytes.as_ptr(), t.bytes.len()))
            .collect();
        let outs: Vec<TensorView> = outputs
            .iter_mut()
            .zip(&out_dims)
            .map(|(t, d)| TensorView::new(t.ty, d, t.bytes.as_mut_ptr(), t.bytes.len()))
            .collect();
        let table = self.table;
        let handle = self.handle;
        // SAFETY: the views borrow `inputs` / `outputs` (and the dims) for the call; the
        // handle is live; the slot fills the buffer.
        table
            .ok(|out| unsafe {
                (table.0.run)(
                    handle,
                    ins.as_ptr(),
                    ins.len(),
                    outs.as_ptr(),
                    outs.len(),
                    out,
                )
            })
            .map(drop)
    }

    fn serialize(&self) -> Result<Vec<u8>, PluginError> {
        let table = self.table;
        let handle = self.handle;
        // SAFETY: the handle is live; the slot fills the buffer.
        table.ok(|out| unsafe { (table.0.serialize)(handle, out) })
    }

    fn counters(&self) -> Result<Vec<(String, f64)>, PluginError> {
        // A plugin of ABI 2.0 has no such slot: its modules keep no counters.
        let Some(slot) = self.table.0.counters else {
            return Ok(Vec::new());
        };
        let handle = self.handle;
        // SAFETY: the handle is live; the slot fills the buffer.
        let bytes = self.table.ok(|out| unsafe { slot(handle, out) })?;
        serde_json::from_slice(&bytes)
            .map_err(|e| PluginError::new(format!("malformed accelerator counters: {e}")))
    }
}
