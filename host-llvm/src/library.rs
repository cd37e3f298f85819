//! Native code as a shared library: the object file LLVM writes is linked by the system C
//! compiler (`$CC`, else `cc`) into a `.so` whose bytes go into the artifact, and a `.so` is
//! loaded from bytes by writing it to a private temporary file (mode 0600, random name) and
//! opening it with `dlopen`. Partitions of one build share one library; loading keeps one
//! handle per distinct library (by content), so an artifact opens it once.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::io::Write;
use std::process::Command;
use std::sync::{Arc, Mutex, OnceLock, Weak};

/// Linking or loading a library failed; the message says what and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct LibraryError(pub String);

/// The C compiler command: a non-empty `$CC`, else `cc`.
fn compiler() -> String {
    std::env::var("CC")
        .ok()
        .filter(|cc| !cc.trim().is_empty())
        .unwrap_or_else(|| "cc".to_string())
}

/// Links a relocatable object into a shared library (with the C math library) and returns
/// its bytes.
pub fn link_shared(object: &[u8]) -> Result<Vec<u8>, LibraryError> {
    let dir = tempfile::tempdir()
        .map_err(|e| LibraryError(format!("cannot create a temporary directory: {e}")))?;
    let obj = dir.path().join("kernels.o");
    let lib = dir.path().join("kernels.so");
    std::fs::write(&obj, object)
        .map_err(|e| LibraryError(format!("cannot write '{}': {e}", obj.display())))?;
    let cc = compiler();
    let mut words = cc.split_whitespace();
    let program = words.next().unwrap_or("cc");
    let out = Command::new(program)
        .args(words)
        .arg("-shared")
        .arg("-o")
        .arg(&lib)
        .arg(&obj)
        .arg("-lm")
        .output()
        .map_err(|e| LibraryError(format!("cannot run the C compiler '{cc}' to link: {e}")))?;
    if !out.status.success() {
        return Err(LibraryError(format!(
            "the C compiler '{cc}' failed to link the host kernels ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    std::fs::read(&lib).map_err(|e| LibraryError(format!("cannot read '{}': {e}", lib.display())))
}

/// An opened shared library and its bytes.
pub struct Library {
    handle: libloading::Library,
    bytes: Arc<Vec<u8>>,
}

impl std::fmt::Debug for Library {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Library")
            .field("bytes", &self.bytes.len())
            .finish_non_exhaustive()
    }
}

/// The signature of a compiled kernel: `(bufs, lo, hi)`.
pub type KernelFn = unsafe extern "C" fn(*const *mut f32, i64, i64);

impl Library {
    /// The library's bytes (what the artifact stores).
    pub fn bytes(&self) -> &Arc<Vec<u8>> {
        &self.bytes
    }

    /// The kernel called `symbol`.
    pub fn kernel(&self, symbol: &str) -> Result<KernelFn, LibraryError> {
        // SAFETY: every exported float kernel has the `KernelFn` signature (crate::codegen).
        unsafe { self.function::<KernelFn>(symbol) }
    }

    /// The function `symbol` as a `T` (a function pointer type).
    ///
    /// # Safety
    /// The symbol must be a function with the signature `T`. The pointer stays valid while
    /// `self` (held by every module using it) is alive.
    pub(crate) unsafe fn function<T: Copy>(&self, symbol: &str) -> Result<T, LibraryError> {
        // SAFETY: the caller guarantees the signature.
        unsafe {
            self.handle
                .get::<T>(symbol.as_bytes())
                .map(|s| *s)
                .map_err(|e| {
                    LibraryError(format!("the host kernel library has no '{symbol}': {e}"))
                })
        }
    }
}

type Cache = Mutex<HashMap<u64, Vec<Weak<Library>>>>;

fn cache() -> &'static Cache {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

fn content_key(bytes: &[u8]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut h);
    h.finish()
}

/// Opens the shared library `bytes`, or returns the already open one with the same content.
pub fn load(bytes: Arc<Vec<u8>>) -> Result<Arc<Library>, LibraryError> {
    // Bytes from an artifact reach here too: refuse what the dynamic loader would fault on.
    byoc_sdk::native::check_shared_object(&bytes, &[])
        .map_err(|e| LibraryError(format!("the host kernel library is not loadable: {e}")))?;
    let key = content_key(&bytes);
    let mut cache = cache().lock().unwrap_or_else(|e| e.into_inner());
    let entry = cache.entry(key).or_default();
    entry.retain(|w| w.strong_count() > 0);
    if let Some(lib) = entry
        .iter()
        .filter_map(Weak::upgrade)
        .find(|l| l.bytes[..] == bytes[..])
    {
        return Ok(lib);
    }
    let mut file = tempfile::Builder::new()
        .prefix("byoc-host-")
        .suffix(".so")
        .tempfile()
        .map_err(|e| LibraryError(format!("cannot create a temporary file: {e}")))?;
    file.write_all(&bytes)
        .and_then(|()| file.flush())
        .map_err(|e| LibraryError(format!("cannot write the host kernel library: {e}")))?;
    // SAFETY: the library is code this crate generated (or read from an artifact whose
    // checksums the artifact reader verified); it has no initializers beyond the C runtime's.
    let handle = unsafe { byoc_sdk::native::open(file.path()) }
        .map_err(|e| LibraryError(format!("cannot open the host kernel library: {e}")))?;
    let lib = Arc::new(Library { handle, bytes });
    entry.push(Arc::downgrade(&lib));
    Ok(lib)
}
