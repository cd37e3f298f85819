//! Opening a plugin library and checking its table before anything else is read.
//!
//! The library is opened with `RTLD_NOW | RTLD_LOCAL` (unresolved symbols fail at load, the
//! plugin's symbols do not leak into later libraries) and never closed: its handle is
//! forgotten on purpose, because unloading a Rust library that used thread-locals is unsound.
//! Checks, in order: the file exists, the system loader accepts it, it exports
//! [`ENTRY_SYMBOL`], the entry returns a table with [`MAGIC`], the ABI major version matches
//! and the table is at least an ABI 2.0 table ([`checked_table`]). A table of an older minor
//! version is widened to this host's layout (the slots it lacks are absent, see
//! [`PluginVTable::widen`]). Then the plugin's custom datatypes are validated, their library
//! functions resolved in the library, and registered (`byoc_kernels::datatypes`).

use std::path::Path;

use super::error::LoadError;
use super::loaded::LoadedPlugin;
use byoc_kernels::datatypes::register_datatypes;
use byoc_sdk::abi::{
    PluginHeader, PluginVTable, ABI_MAJOR, ABI_MINOR, ENTRY_SYMBOL, MAGIC, SDK_VERSION,
};

type EntryFn = unsafe extern "C" fn() -> *const PluginHeader;

/// Loads the plugin in the shared library at `path` and checks its ABI.
pub fn load_plugin(path: &Path) -> Result<LoadedPlugin, LoadError> {
    if !path.exists() {
        return Err(LoadError::NotFound {
            path: path.to_path_buf(),
        });
    }
    // SAFETY: loading runs the library's initializers; loading a plugin means trusting it.
    let lib = unsafe { byoc_sdk::native::open(path) }.map_err(|e| LoadError::Open {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    // SAFETY: the symbol's type is the one `export_plugin!` defines.
    let entry: EntryFn = match unsafe { lib.get::<EntryFn>(ENTRY_SYMBOL.as_bytes()) } {
        Ok(sym) => *sym,
        Err(_) => {
            return Err(LoadError::NoEntry {
                path: path.to_path_buf(),
                symbol: ENTRY_SYMBOL,
            })
        }
    };
    // Never unloaded: the entry point, everything it returns and the datatypes' library
    // functions stay valid.
    let lib: &'static libloading::Library = Box::leak(Box::new(lib));
    // SAFETY: the entry point takes no arguments and catches its own panics.
    let header = unsafe { entry() };
    if header.is_null() {
        return Err(LoadError::EntryFailed {
            path: path.to_path_buf(),
        });
    }
    // SAFETY: a non-null entry result points to a header in the library's static data.
    let h: &'static PluginHeader = unsafe { &*header };
    if h.magic != MAGIC {
        return Err(LoadError::BadMagic {
            path: path.to_path_buf(),
        });
    }
    let table = checked_table(h, path)?;
    // The copy lives as long as the library: for the rest of the process.
    let table: &'static PluginVTable = Box::leak(Box::new(table));
    let plugin = LoadedPlugin::from_table(table, path).map_err(|(plugin, message)| {
        LoadError::Description {
            path: path.to_path_buf(),
            plugin,
            message,
        }
    })?;
    let lookup = |symbol: &str| {
        // SAFETY: only the address is taken; it is called with the signature its lowering key
        // implies, which the plugin's declaration promises.
        unsafe { lib.get::<*const ()>(symbol.as_bytes()) }
            .ok()
            .map(|f| *f as usize)
    };
    register_datatypes(&plugin.name, &plugin.description.datatypes, lookup).map_err(|error| {
        LoadError::Datatype {
            path: path.to_path_buf(),
            plugin: plugin.name.clone(),
            error: Box::new(error),
        }
    })?;
    Ok(plugin)
}

/// The table behind a header with the byoc magic, widened to this host's layout; a plugin of
/// another ABI major version (or a table shorter than 2.0's) is refused with both versions
/// named, before anything past the header is read.
fn checked_table(h: &'static PluginHeader, path: &Path) -> Result<PluginVTable, LoadError> {
    let widened = (h.abi_major == ABI_MAJOR)
        // SAFETY: a header of this major version heads a table of `table_size` bytes.
        .then(|| unsafe { PluginVTable::widen(h) })
        .flatten();
    widened.ok_or_else(|| LoadError::Incompatible {
        path: path.to_path_buf(),
        // SAFETY: the header's version string is static data of the library.
        plugin_sdk: unsafe { h.sdk_version.text() },
        plugin_major: h.abi_major,
        plugin_minor: h.abi_minor,
        host_sdk: SDK_VERSION,
        host_major: ABI_MAJOR,
        host_minor: ABI_MINOR,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use byoc_sdk::abi::{StrView, MAGIC};

    #[test]
    fn a_plugin_of_the_pre_2_0_abi_is_refused_naming_both_versions() {
        static SDK: &str = "0.1.0-abi1";
        let header: &'static PluginHeader = Box::leak(Box::new(PluginHeader {
            magic: MAGIC,
            abi_major: 1,
            abi_minor: 3,
            table_size: 4096,
            sdk_version: StrView::of(SDK.as_bytes()),
        }));
        let err = checked_table(header, Path::new("old.so"))
            .err()
            .expect("an ABI 1.3 plugin is refused")
            .to_string();
        assert_eq!(
            err,
            format!(
                "'old.so': incompatible SDK version: the plugin was built with byoc SDK 0.1.0-abi1 \
                 (plugin ABI 1.3), this byoc has SDK {SDK_VERSION} (plugin ABI 2.1); rebuild the \
                 plugin against SDK {SDK_VERSION}"
            )
        );
    }
}
