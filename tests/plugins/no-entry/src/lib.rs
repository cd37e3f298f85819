//! A shared library that exports a function, but not `byoc_plugin_entry`: byoc must say it
//! is not a byoc plugin.

/// Some unrelated export.
#[no_mangle]
pub extern "C" fn unrelated_function() -> u32 {
    42
}
