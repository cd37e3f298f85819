//! A plugin from a future SDK: its entry point returns a byoc plugin header (the layout of
//! `byoc_sdk::abi::PluginHeader`, which never changes) with ABI major version 99 and SDK
//! version 99.0.0. The host must refuse it after reading the header, naming both versions.

/// `byoc_sdk::abi::StrView`.
#[repr(C)]
pub struct StrView {
    ptr: *const u8,
    len: usize,
}

/// `byoc_sdk::abi::PluginHeader`.
#[repr(C)]
pub struct PluginHeader {
    magic: u64,
    abi_major: u32,
    abi_minor: u32,
    table_size: usize,
    sdk_version: StrView,
}

/// A header only; wrapped so it can be a `static`.
pub struct Header(PluginHeader);

// SAFETY: the header is immutable and points to static data.
unsafe impl Sync for Header {}

const SDK: &str = "99.0.0";

static HEADER: Header = Header(PluginHeader {
    magic: u64::from_le_bytes(*b"BYOCPLUG"),
    abi_major: 99,
    abi_minor: 3,
    table_size: 4096,
    sdk_version: StrView {
        ptr: SDK.as_ptr(),
        len: SDK.len(),
    },
});

/// The plugin entry point.
#[no_mangle]
pub extern "C" fn byoc_plugin_entry() -> *const PluginHeader {
    &HEADER.0
}
