//! The C ABI between the host and a plugin `.so`, and the plugin side of it.
//!
//! A plugin exports one symbol, [`ENTRY_SYMBOL`]: `extern "C" fn() -> *const PluginHeader`.
//! The header never changes: a magic number, the ABI major and minor version, the size of the
//! table that follows it, and the SDK (byoc-sdk) version the plugin was built with. The host
//! checks the magic and the major version before it reads anything else; the header is the
//! first field of [`PluginVTable`], whose slots are append-only within a major version (a host
//! reads only slots that lie within `table_size`). Slots appended after 2.0 must be `Option`s
//! (a null pointer when absent): the host widens a table of an older minor version with `None`
//! for the slots it lacks ([`PluginVTable::widen`]).
//!
//! | version | table |
//! |---|---|
//! | 2.0 | `describe` .. `release_buf`, `emit_source`; `deserialize` takes the loading process's options |
//! | 2.1 | `counters` (a module's accelerator counters of its last run) |
//!
//! ABI 1.x plugins (SDK 0.1 before the vendor SDK settled) are refused with a message naming
//! both versions: rebuilding against this SDK is the upgrade path.
//!
//! Rules every slot follows:
//! - Every slot runs the plugin's code inside `catch_unwind`; a panic becomes
//!   [`STATUS_PANIC`] with the panic message, never an unwind across the boundary.
//! - Memory is freed by the side that allocated it: [`OwnedBuf`]s and module handles are
//!   allocated by the plugin and given back through `release_buf` / `release_module`;
//!   everything the host passes in ([`StrView`], [`TensorView`]) is borrowed for the call.
//! - Partitioned functions cross as function records ([`super::record`]); op calls as Relay
//!   text, descriptions and options as JSON, tensors as views of the caller's memory.
//!
//! Vendors do not use this module directly: [`crate::export_plugin!`] builds the table.

use std::any::Any;
use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::NonNull;

use super::describe::{CheckKind, TargetDescription};
use super::function::{OwnedCall, PartitionedFunction};
use super::plugin::{CompileOptions, CompiledModule, EmittedSource, Plugin};
use super::view::TensorView;
use byoc_ir::tensor::{TensorMut, TensorRef};
use byoc_ir::TensorType;

/// `BYOCPLUG` in little-endian bytes: marks a byoc plugin table.
pub const MAGIC: u64 = u64::from_le_bytes(*b"BYOCPLUG");
/// The ABI major version: plugins of another major are refused.
pub const ABI_MAJOR: u32 = 2;
/// The ABI minor version: grows when slots are appended (see the table in the module docs).
pub const ABI_MINOR: u32 = 1;
/// The SDK version (the byoc-sdk crate version) this code was built as.
pub const SDK_VERSION: &str = env!("CARGO_PKG_VERSION");
/// The symbol every plugin exports.
pub const ENTRY_SYMBOL: &str = "byoc_plugin_entry";

/// The slot succeeded.
pub const STATUS_OK: u32 = 0;
/// The plugin returned an error; the buffer holds the message.
pub const STATUS_ERROR: u32 = 1;
/// The plugin panicked; the buffer holds the panic message.
pub const STATUS_PANIC: u32 = 2;
/// A predicate declined the call; the buffer holds the reason.
pub const STATUS_REJECT: u32 = 3;

/// Borrowed bytes (UTF-8 text for names, calls and JSON; a function record or text for
/// functions).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct StrView {
    /// The first byte.
    pub ptr: *const u8,
    /// The length in bytes.
    pub len: usize,
}

impl StrView {
    /// A view of `bytes`, valid while they are.
    pub fn of(bytes: &[u8]) -> Self {
        StrView {
            ptr: bytes.as_ptr(),
            len: bytes.len(),
        }
    }

    /// The bytes.
    ///
    /// # Safety
    /// `ptr` must point to `len` readable bytes that outlive `'a`.
    pub unsafe fn bytes<'a>(self) -> &'a [u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: guaranteed by the caller.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// The bytes as text, replacing invalid UTF-8.
    ///
    /// # Safety
    /// As for [`StrView::bytes`].
    pub unsafe fn text(self) -> String {
        // SAFETY: guaranteed by the caller.
        String::from_utf8_lossy(unsafe { self.bytes() }).into_owned()
    }
}

/// Bytes allocated by the plugin (a `Vec<u8>` taken apart); the host copies what it needs and
/// gives the buffer back with [`PluginVTable::release_buf`].
#[repr(C)]
#[derive(Debug)]
pub struct OwnedBuf {
    /// The first byte (null for an empty buffer).
    pub ptr: *mut u8,
    /// Bytes used.
    pub len: usize,
    /// Bytes allocated.
    pub cap: usize,
}

impl OwnedBuf {
    /// The empty buffer (nothing to release).
    pub const EMPTY: OwnedBuf = OwnedBuf {
        ptr: std::ptr::null_mut(),
        len: 0,
        cap: 0,
    };

    fn from_vec(v: Vec<u8>) -> Self {
        let mut v = std::mem::ManuallyDrop::new(v);
        OwnedBuf {
            ptr: v.as_mut_ptr(),
            len: v.len(),
            cap: v.capacity(),
        }
    }

    /// The bytes, borrowed.
    ///
    /// # Safety
    /// The buffer must have been filled by a slot and not released yet.
    pub unsafe fn bytes(&self) -> &[u8] {
        if self.ptr.is_null() {
            return &[];
        }
        // SAFETY: a filled buffer holds `len` initialized bytes.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

/// The part of the table that never changes.
#[repr(C)]
#[derive(Debug)]
pub struct PluginHeader {
    /// [`MAGIC`].
    pub magic: u64,
    /// [`ABI_MAJOR`] of the plugin's SDK.
    pub abi_major: u32,
    /// [`ABI_MINOR`] of the plugin's SDK.
    pub abi_minor: u32,
    /// `size_of::<PluginVTable>()` in the plugin's SDK.
    pub table_size: usize,
    /// [`SDK_VERSION`] of the plugin's SDK.
    pub sdk_version: StrView,
}

/// An opaque compiled module owned by the plugin.
#[repr(C)]
pub struct ModuleHandle {
    _private: [u8; 0],
}

/// Writes the plugin's description (JSON) into the buffer.
pub type DescribeFn = unsafe extern "C" fn(out: *mut OwnedBuf) -> u32;
/// Asks predicate `index` of list `kind` (0 ops, 1 patterns) about a call text.
pub type CheckFn =
    unsafe extern "C" fn(kind: u32, index: u32, call: StrView, out: *mut OwnedBuf) -> u32;
/// Runs the optimize hook on a function (record or text); the buffer gets the new function in
/// the same form.
pub type OptimizeFn = unsafe extern "C" fn(function: StrView, out: *mut OwnedBuf) -> u32;
/// Compiles a function (record or text) with JSON options into a module handle.
pub type CompileFn = unsafe extern "C" fn(
    function: StrView,
    options: StrView,
    module: *mut *mut ModuleHandle,
    out: *mut OwnedBuf,
) -> u32;
/// Rebuilds a module handle from serialized bytes with JSON options (the loading process's).
pub type DeserializeFn = unsafe extern "C" fn(
    bytes: StrView,
    options: StrView,
    module: *mut *mut ModuleHandle,
    out: *mut OwnedBuf,
) -> u32;
/// Runs a module on views of the caller's buffers.
pub type RunFn = unsafe extern "C" fn(
    module: *const ModuleHandle,
    inputs: *const TensorView,
    n_inputs: usize,
    outputs: *const TensorView,
    n_outputs: usize,
    out: *mut OwnedBuf,
) -> u32;
/// Serializes a module into the buffer.
pub type SerializeFn = unsafe extern "C" fn(module: *const ModuleHandle, out: *mut OwnedBuf) -> u32;
/// Frees a module handle.
pub type ReleaseModuleFn = unsafe extern "C" fn(module: *mut ModuleHandle);
/// Frees a buffer.
pub type ReleaseBufFn = unsafe extern "C" fn(buf: OwnedBuf);
/// Generates the source of a function text with JSON options; the buffer gets the JSON of an
/// `Option<`[`EmittedSource`]`>` (`null` when the plugin has no source to show).
pub type EmitSourceFn =
    unsafe extern "C" fn(function: StrView, options: StrView, out: *mut OwnedBuf) -> u32;

/// Writes the JSON of a module's accelerator counters of its last run
/// (`[[name, value], ...]`) into the buffer. ABI 2.1.
pub type CountersFn = unsafe extern "C" fn(module: *const ModuleHandle, out: *mut OwnedBuf) -> u32;

/// The plugin's function table (ABI 2.1). Append-only within a major version.
#[repr(C)]
pub struct PluginVTable {
    /// The fixed header.
    pub header: PluginHeader,
    /// The plugin's name.
    pub name: StrView,
    /// The plugin's version.
    pub version: StrView,
    /// See [`DescribeFn`].
    pub describe: DescribeFn,
    /// See [`CheckFn`].
    pub check: CheckFn,
    /// See [`OptimizeFn`].
    pub optimize: OptimizeFn,
    /// See [`CompileFn`].
    pub compile: CompileFn,
    /// See [`DeserializeFn`].
    pub deserialize: DeserializeFn,
    /// See [`RunFn`].
    pub run: RunFn,
    /// See [`SerializeFn`].
    pub serialize: SerializeFn,
    /// See [`ReleaseModuleFn`].
    pub release_module: ReleaseModuleFn,
    /// See [`ReleaseBufFn`].
    pub release_buf: ReleaseBufFn,
    /// See [`EmitSourceFn`] (`None`: the plugin has no source to show).
    pub emit_source: Option<EmitSourceFn>,
    /// See [`CountersFn`] (ABI 2.1; `None` in a widened 2.0 table).
    pub counters: Option<CountersFn>,
}

/// The size of an ABI 2.0 table: the smallest table a host of this major version reads.
/// Slots appended in later minor versions lie beyond it and must be `Option`s.
pub const TABLE_SIZE_2_0: usize = std::mem::offset_of!(PluginVTable, counters);

impl PluginVTable {
    /// The table behind `header`, widened to this SDK's layout: slots beyond the plugin's
    /// `table_size` are `None`. Returns `None` when the table is smaller than
    /// [`TABLE_SIZE_2_0`].
    ///
    /// # Safety
    /// `header` must be the first field of a plugin table of `header.table_size` readable
    /// bytes (as `export_plugin!` builds it) with a matching major version.
    pub unsafe fn widen(header: &PluginHeader) -> Option<PluginVTable> {
        let size = header.table_size;
        if size < TABLE_SIZE_2_0 {
            return None;
        }
        let mut table = std::mem::MaybeUninit::<PluginVTable>::uninit();
        let dst = table.as_mut_ptr();
        // SAFETY: the appended slots are `Option`s of function pointers, for which null is
        // `None`; the plugin's prefix (at least the 2.0 table) then overwrites what it has.
        // The source holds `size` readable bytes by the caller's guarantee.
        unsafe {
            std::ptr::write_bytes(
                dst.cast::<u8>().add(TABLE_SIZE_2_0),
                0,
                std::mem::size_of::<PluginVTable>() - TABLE_SIZE_2_0,
            );
            std::ptr::copy_nonoverlapping(
                (header as *const PluginHeader).cast::<u8>(),
                dst.cast::<u8>(),
                size.min(std::mem::size_of::<PluginVTable>()),
            );
            Some(table.assume_init())
        }
    }
}

/// The exported state of one plugin: the instance, its cached description and its table.
pub struct Exported<P> {
    plugin: P,
    description: TargetDescription,
    wire: String,
    _name: String,
    _version: String,
    table: PluginVTable,
}

impl<P> Exported<P> {
    /// The exported C table (what `byoc_plugin_entry` hands the host).
    pub fn table(&self) -> &PluginVTable {
        &self.table
    }
}

// SAFETY: the table's pointers refer to the strings owned by the same value (heap data that
// never moves or changes), and `P: Plugin` is `Send + Sync`.
unsafe impl<P: Send> Send for Exported<P> {}
// SAFETY: as above; nothing is mutated after construction.
unsafe impl<P: Sync> Sync for Exported<P> {}

/// Ties the generic slots to one plugin instance; implemented by [`crate::export_plugin!`].
pub trait Export: 'static {
    /// The plugin type.
    type Plugin: Plugin + 'static;
    /// The process-wide instance (created on first use).
    fn instance() -> &'static Exported<Self::Plugin>;
}

impl<P: Plugin> Exported<P> {
    /// Builds the state for `plugin`, with the slots of export `E`.
    pub fn new<E: Export<Plugin = P>>(plugin: P) -> Self {
        let description = plugin.describe();
        let wire = description.to_wire();
        let name = plugin.name().to_string();
        let version = plugin.version().to_string();
        let table = PluginVTable {
            header: PluginHeader {
                magic: MAGIC,
                abi_major: ABI_MAJOR,
                abi_minor: ABI_MINOR,
                table_size: std::mem::size_of::<PluginVTable>(),
                sdk_version: StrView::of(SDK_VERSION.as_bytes()),
            },
            name: StrView::of(name.as_bytes()),
            version: StrView::of(version.as_bytes()),
            describe: describe::<E>,
            check: check::<E>,
            optimize: optimize::<E>,
            compile: compile::<E>,
            deserialize: deserialize::<E>,
            run,
            serialize,
            release_module,
            release_buf,
            emit_source: Some(emit_source::<E>),
            counters: Some(counters),
        };
        Exported {
            plugin,
            description,
            wire,
            _name: name,
            _version: version,
            table,
        }
    }
}

thread_local! {
    /// The message and location of the last panic on this thread inside the plugin.
    static LAST_PANIC: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Replaces the plugin's panic hook (the plugin has its own copy of std) with one that
/// records the message and location for the error the host receives, instead of printing.
fn install_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        std::panic::set_hook(Box::new(|info| {
            let at = info
                .location()
                .map(|l| format!(" at {}:{}", l.file(), l.line()))
                .unwrap_or_default();
            let message = format!("{}{at}", panic_message(info.payload()));
            LAST_PANIC.with(|p| *p.borrow_mut() = Some(message));
        }));
    });
}

/// The body of the exported entry symbol: the table's header, or null when building the
/// plugin instance panicked.
pub fn entry<E: Export>() -> *const PluginHeader {
    install_panic_hook();
    match catch_unwind(E::instance) {
        Ok(e) => &e.table.header,
        Err(_) => std::ptr::null(),
    }
}

/// Why a slot did not succeed.
enum Failure {
    Error(String),
    Reject(String),
}

impl<T: std::fmt::Display> From<T> for Failure {
    fn from(e: T) -> Self {
        Failure::Error(e.to_string())
    }
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_string()
    }
}

/// Runs a slot body: catches panics, fills `out` with the result or the message.
///
/// # Safety
/// `out` must be writable.
unsafe fn guard(out: *mut OwnedBuf, body: impl FnOnce() -> Result<Vec<u8>, Failure>) -> u32 {
    let (status, bytes) = match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(bytes)) => (STATUS_OK, bytes),
        Ok(Err(Failure::Error(m))) => (STATUS_ERROR, m.into_bytes()),
        Ok(Err(Failure::Reject(m))) => (STATUS_REJECT, m.into_bytes()),
        Err(payload) => {
            let recorded = LAST_PANIC.with(|p| p.borrow_mut().take());
            let message = recorded.unwrap_or_else(|| panic_message(payload.as_ref()));
            (STATUS_PANIC, message.into_bytes())
        }
    };
    if !out.is_null() {
        // SAFETY: the caller passes a writable buffer slot.
        unsafe { out.write(OwnedBuf::from_vec(bytes)) };
    }
    status
}

fn into_handle(m: Box<dyn CompiledModule>) -> *mut ModuleHandle {
    Box::into_raw(Box::new(m)).cast()
}

/// # Safety
/// `m` must come from [`into_handle`] and not be released.
unsafe fn module_ref<'a>(m: *const ModuleHandle) -> &'a dyn CompiledModule {
    // SAFETY: guaranteed by the caller.
    unsafe { &**m.cast::<Box<dyn CompiledModule>>() }
}

unsafe extern "C" fn describe<E: Export>(out: *mut OwnedBuf) -> u32 {
    // SAFETY: the host passes a writable buffer.
    unsafe { guard(out, || Ok(E::instance().wire.clone().into_bytes())) }
}

unsafe extern "C" fn check<E: Export>(
    kind: u32,
    index: u32,
    call: StrView,
    out: *mut OwnedBuf,
) -> u32 {
    let body = || {
        // SAFETY: the host passes the call text for the duration of the call.
        let text = unsafe { call.text() };
        let call = OwnedCall::parse(&text)?;
        let kind = if kind == 0 {
            CheckKind::Op
        } else {
            CheckKind::Pattern
        };
        let e = E::instance();
        let predicate = e
            .description
            .check(kind, index)
            .ok_or_else(|| Failure::Error(format!("no {kind:?} predicate at index {index}")))?;
        predicate(&call.view()).map_err(|r| Failure::Reject(r.0))?;
        Ok(Vec::new())
    };
    // SAFETY: the host passes a writable buffer.
    unsafe { guard(out, body) }
}

unsafe extern "C" fn optimize<E: Export>(function: StrView, out: *mut OwnedBuf) -> u32 {
    let body = || {
        // SAFETY: the host passes the function for the duration of the call.
        let (f, form) = PartitionedFunction::from_bytes(unsafe { function.bytes() })?;
        let f = E::instance().plugin.optimize(f)?;
        Ok(f.to_bytes(form)?)
    };
    // SAFETY: the host passes a writable buffer.
    unsafe { guard(out, body) }
}

/// Runs `make` under [`guard`] and hands the module it builds to the host's handle slot.
///
/// # Safety
/// `module` and `out` must be writable slots.
unsafe fn module_slot(
    module: *mut *mut ModuleHandle,
    out: *mut OwnedBuf,
    make: impl FnOnce() -> Result<Box<dyn CompiledModule>, Failure>,
) -> u32 {
    let body = || {
        let m = make()?;
        // SAFETY: the caller passes a writable handle slot.
        unsafe { module.write(into_handle(m)) };
        Ok(Vec::new())
    };
    // SAFETY: the caller passes a writable buffer.
    unsafe { guard(out, body) }
}

/// Compile options from their JSON crossing.
fn options_of(json: &str) -> Result<CompileOptions, Failure> {
    let values: BTreeMap<String, String> = serde_json::from_str(json)?;
    Ok(CompileOptions { values })
}

unsafe extern "C" fn compile<E: Export>(
    function: StrView,
    options: StrView,
    module: *mut *mut ModuleHandle,
    out: *mut OwnedBuf,
) -> u32 {
    // SAFETY: the host passes writable slots, and the function and the options for the
    // duration of the call.
    unsafe {
        module_slot(module, out, || {
            let (f, _) = PartitionedFunction::from_bytes(function.bytes())?;
            let options = options_of(&options.text())?;
            Ok(E::instance().plugin.compile(&f, &options)?)
        })
    }
}

unsafe extern "C" fn deserialize<E: Export>(
    bytes: StrView,
    options: StrView,
    module: *mut *mut ModuleHandle,
    out: *mut OwnedBuf,
) -> u32 {
    // SAFETY: the host passes writable slots, and the bytes and the options for the
    // duration of the call.
    unsafe {
        module_slot(module, out, || {
            let options = options_of(&options.text())?;
            Ok(E::instance().plugin.deserialize(bytes.bytes(), &options)?)
        })
    }
}

unsafe extern "C" fn emit_source<E: Export>(
    function: StrView,
    options: StrView,
    out: *mut OwnedBuf,
) -> u32 {
    let body = || {
        // SAFETY: the host passes the function and the options for the duration of the call.
        let (f, opts) = unsafe { (function.bytes(), options.text()) };
        let (f, _) = PartitionedFunction::from_bytes(f)?;
        let source: Option<EmittedSource> =
            E::instance().plugin.emit_source(&f, &options_of(&opts)?)?;
        Ok(serde_json::to_vec(&source)?)
    };
    // SAFETY: the host passes a writable buffer.
    unsafe { guard(out, body) }
}

/// The tensor types of `n` views.
///
/// # Safety
/// `views` must point to `n` views whose shape pointers are valid.
unsafe fn view_types(
    views: *const TensorView,
    n: usize,
    what: &str,
) -> Result<Vec<TensorType>, Failure> {
    let views = if n == 0 {
        &[][..]
    } else {
        // SAFETY: guaranteed by the caller.
        unsafe { std::slice::from_raw_parts(views, n) }
    };
    views
        .iter()
        .enumerate()
        // SAFETY: the views' shapes are valid for the call.
        .map(|(i, v)| {
            unsafe { v.tensor_type() }.map_err(|m| Failure::Error(format!("{what} {i}: {m}")))
        })
        .collect()
}

fn data_ptr(v: &TensorView) -> *mut u8 {
    if v.data.is_null() {
        NonNull::<u64>::dangling().as_ptr().cast()
    } else {
        v.data
    }
}

unsafe extern "C" fn run(
    module: *const ModuleHandle,
    inputs: *const TensorView,
    n_inputs: usize,
    outputs: *const TensorView,
    n_outputs: usize,
    out: *mut OwnedBuf,
) -> u32 {
    let body = || {
        // SAFETY: the host passes `n_inputs` / `n_outputs` valid views.
        let in_types = unsafe { view_types(inputs, n_inputs, "input")? };
        // SAFETY: as above.
        let out_types = unsafe { view_types(outputs, n_outputs, "output")? };
        let ins: Vec<TensorRef<'_>> = in_types
            .iter()
            .enumerate()
            .map(|(i, ty)| {
                // SAFETY: view `i` exists and borrows `size_bytes` readable bytes (checked
                // against `byte_len` by `tensor_type`).
                let v = unsafe { &*inputs.add(i) };
                TensorRef {
                    ty,
                    // SAFETY: as above.
                    bytes: unsafe { std::slice::from_raw_parts(data_ptr(v), ty.size_bytes()) },
                }
            })
            .collect();
        let mut outs: Vec<TensorMut<'_>> = out_types
            .iter()
            .enumerate()
            .map(|(i, ty)| {
                // SAFETY: view `i` exists and borrows `size_bytes` writable bytes that alias no
                // input (the host's storage plan guarantees it).
                let v = unsafe { &*outputs.add(i) };
                TensorMut {
                    ty,
                    // SAFETY: as above.
                    bytes: unsafe { std::slice::from_raw_parts_mut(data_ptr(v), ty.size_bytes()) },
                }
            })
            .collect();
        // SAFETY: the host passes a live handle.
        let m = unsafe { module_ref(module) };
        m.run(&ins, &mut outs)?;
        Ok(Vec::new())
    };
    // SAFETY: the host passes a writable buffer.
    unsafe { guard(out, body) }
}

unsafe extern "C" fn serialize(module: *const ModuleHandle, out: *mut OwnedBuf) -> u32 {
    // SAFETY: the host passes a live handle and a writable buffer.
    unsafe { guard(out, || Ok(module_ref(module).serialize()?)) }
}

unsafe extern "C" fn counters(module: *const ModuleHandle, out: *mut OwnedBuf) -> u32 {
    // SAFETY: the host passes a live handle and a writable buffer.
    unsafe {
        guard(out, || {
            let counters = module_ref(module).counters()?;
            serde_json::to_vec(&counters).map_err(|e| Failure::Error(e.to_string()))
        })
    }
}

unsafe extern "C" fn release_module(module: *mut ModuleHandle) {
    if module.is_null() {
        return;
    }
    // SAFETY: the handle came from `into_handle` and is released once; a panic in the
    // module's destructor is caught and dropped here.
    let _ = catch_unwind(AssertUnwindSafe(|| unsafe {
        drop(Box::from_raw(module.cast::<Box<dyn CompiledModule>>()));
    }));
}

unsafe extern "C" fn release_buf(buf: OwnedBuf) {
    if buf.ptr.is_null() {
        return;
    }
    // SAFETY: the buffer was made by `OwnedBuf::from_vec` in this library.
    drop(unsafe { Vec::from_raw_parts(buf.ptr, buf.len, buf.cap) });
}

/// Exports a [`Plugin`](crate::Plugin) from a `cdylib`: `export_plugin!(MyPlugin,
/// MyPlugin::new())`. The expression builds the instance on first use; the macro defines the
/// `byoc_plugin_entry` symbol the host looks for.
#[macro_export]
macro_rules! export_plugin {
    ($plugin:ty, $make:expr) => {
        #[doc(hidden)]
        pub struct ByocPluginExport;

        impl $crate::abi::Export for ByocPluginExport {
            type Plugin = $plugin;
            fn instance() -> &'static $crate::abi::Exported<$plugin> {
                static CELL: ::std::sync::OnceLock<$crate::abi::Exported<$plugin>> =
                    ::std::sync::OnceLock::new();
                CELL.get_or_init(|| $crate::abi::Exported::new::<ByocPluginExport>($make))
            }
        }

        /// The byoc plugin entry point.
        #[no_mangle]
        pub extern "C" fn byoc_plugin_entry() -> *const $crate::abi::PluginHeader {
            $crate::abi::entry::<ByocPluginExport>()
        }
    };
}
