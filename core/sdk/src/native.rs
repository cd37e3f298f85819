//! Native code: the checks before it is loaded, and loading it. A compiled partition (or any
//! other native section of an artifact) must be an ELF shared object for this machine's class
//! and architecture, whole (every segment within the bytes present: the loader maps segments
//! from the file, and one past its end faults at the first touch), that exports the symbols
//! its loader will look up. [`open`] then loads it with every symbol resolved at once, so a
//! library that needs a symbol nothing defines is refused at load instead of killing the
//! process at its first call.
//!
//! The check reads the bytes with the `object` crate and runs nothing; a plugin calls
//! [`check_shared_object`] before `dlopen`, so bytes that are not such a library are refused
//! with a message instead of reaching the dynamic loader. It is a sanity check, not a
//! security boundary: a well-formed library can still do anything when loaded, which is why
//! artifacts are signed (see the `artifact` module of the host).

use std::path::Path;

use object::{Architecture, BinaryFormat, Object, ObjectKind, ObjectSegment, ObjectSymbol};
use thiserror::Error;

/// The ELF magic number.
const ELF_MAGIC: &[u8; 4] = b"\x7fELF";

/// The architecture native code must be built for: this process's.
#[cfg(target_arch = "x86_64")]
pub const HOST_ARCHITECTURE: Architecture = Architecture::X86_64;
/// The architecture native code must be built for: this process's.
#[cfg(target_arch = "aarch64")]
pub const HOST_ARCHITECTURE: Architecture = Architecture::Aarch64;

/// Why bytes are not a loadable shared object; each names what was expected.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum NativeCodeError {
    /// The bytes do not start with the ELF magic.
    #[error("not an ELF file (it does not start with the ELF magic)")]
    NotElf,
    /// An ELF file the reader cannot parse (bad headers or tables).
    #[error("malformed ELF file: {0}")]
    Malformed(String),
    /// Not a 64-bit ELF file.
    #[error("a 32-bit ELF file; this machine loads 64-bit shared objects")]
    Class,
    /// Built for another architecture.
    #[error("built for {found}, not for this machine ({expected})")]
    Architecture {
        /// The file's architecture.
        found: String,
        /// This machine's.
        expected: String,
    },
    /// Not a shared object (an executable, a relocatable object, a core file).
    #[error("an ELF {found} file, not a shared object")]
    Kind {
        /// The file's kind.
        found: String,
    },
    /// A segment extends past the end of the bytes (a truncated file).
    #[error("a segment at bytes {offset}..{end} lies past the end of the {len} bytes present (the file is truncated)")]
    Truncated {
        /// The segment's first byte in the file.
        offset: u64,
        /// One past its last byte (saturated at `u64::MAX`).
        end: u64,
        /// The bytes present.
        len: usize,
    },
    /// An expected symbol is not exported.
    #[error("the shared object does not export the symbol '{symbol}'")]
    MissingSymbol {
        /// The symbol.
        symbol: String,
    },
}

/// Checks that `bytes` are a 64-bit ELF shared object for [`HOST_ARCHITECTURE`] that defines
/// every symbol of `symbols` in its dynamic symbol table.
pub fn check_shared_object(bytes: &[u8], symbols: &[&str]) -> Result<(), NativeCodeError> {
    if !bytes.starts_with(ELF_MAGIC) {
        return Err(NativeCodeError::NotElf);
    }
    let file = object::File::parse(bytes).map_err(|e| NativeCodeError::Malformed(e.to_string()))?;
    if file.format() != BinaryFormat::Elf {
        return Err(NativeCodeError::NotElf);
    }
    if !file.is_64() {
        return Err(NativeCodeError::Class);
    }
    if file.architecture() != HOST_ARCHITECTURE {
        return Err(NativeCodeError::Architecture {
            found: format!("{:?}", file.architecture()),
            expected: format!("{HOST_ARCHITECTURE:?}"),
        });
    }
    if file.kind() != ObjectKind::Dynamic {
        return Err(NativeCodeError::Kind {
            found: format!("{:?}", file.kind()).to_lowercase(),
        });
    }
    for segment in file.segments() {
        let (offset, size) = segment.file_range();
        let end = offset.saturating_add(size);
        if end > bytes.len() as u64 {
            return Err(NativeCodeError::Truncated {
                offset,
                end,
                len: bytes.len(),
            });
        }
    }
    for symbol in symbols {
        let exported = file.dynamic_symbols().any(|s| {
            s.is_definition() && s.is_global() && s.name_bytes().ok() == Some(symbol.as_bytes())
        });
        if !exported {
            return Err(NativeCodeError::MissingSymbol {
                symbol: (*symbol).to_string(),
            });
        }
    }
    Ok(())
}

/// Opens the shared object at `path` with every symbol resolved now (`RTLD_NOW`): a library
/// that needs a symbol no loaded library defines is refused here, with the dynamic loader's
/// message naming the symbol, instead of ending the process at its first call (lazy binding).
/// Its symbols stay local (`RTLD_LOCAL`): they serve no library loaded later.
///
/// # Safety
///
/// Loading runs the library's initializers: the caller trusts the code (a plugin, or native
/// code this process compiled or read from a signed artifact and [`check_shared_object`]ed).
pub unsafe fn open(path: &Path) -> Result<libloading::Library, libloading::Error> {
    #[cfg(unix)]
    {
        use libloading::os::unix::{Library, RTLD_LOCAL, RTLD_NOW};
        // SAFETY: the caller's contract above.
        unsafe { Library::open(Some(path), RTLD_NOW | RTLD_LOCAL) }.map(Into::into)
    }
    #[cfg(not(unix))]
    {
        // SAFETY: the caller's contract above; Windows binds every import at load.
        unsafe { libloading::Library::new(path) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This test binary's own executable: an ELF file for this machine, not a shared object.
    fn own_executable() -> Vec<u8> {
        std::fs::read(std::env::current_exe().unwrap()).unwrap()
    }

    #[test]
    fn non_libraries_are_refused_with_the_reason() {
        assert_eq!(
            check_shared_object(b"#!/bin/sh\n", &[]),
            Err(NativeCodeError::NotElf)
        );
        assert!(matches!(
            check_shared_object(b"\x7fELF\x02\x01\x01", &[]),
            Err(NativeCodeError::Malformed(_))
        ));
        let mut exe = own_executable();
        // A test binary is linked as a position-independent executable (ET_DYN) or a plain
        // one (ET_EXEC); either way it exports no `byoc_no_such_symbol`.
        let err = check_shared_object(&exe, &["byoc_no_such_symbol"]).unwrap_err();
        assert!(
            matches!(
                err,
                NativeCodeError::MissingSymbol { .. } | NativeCodeError::Kind { .. }
            ),
            "{err}"
        );
        // e_machine (bytes 18..20): 40 is 32-bit ARM, not this machine.
        exe[18..20].copy_from_slice(&40u16.to_le_bytes());
        assert!(matches!(
            check_shared_object(&exe, &[]),
            Err(NativeCodeError::Architecture { .. })
        ));
        // EI_CLASS (byte 4): 1 is ELFCLASS32.
        let mut class32 = own_executable();
        class32[4] = 1;
        assert!(check_shared_object(&class32, &[]).is_err());
    }
}
