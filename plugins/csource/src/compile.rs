//! Compilation of a generated C file into a shared object with the system C compiler.
//!
//! The compiler is [`CompilerOptions::compiler`], else `$CC`, else `cc`; it runs in a fresh
//! temporary directory on `<symbol>.c` and writes `<symbol>.so`, whose bytes become the
//! [`SharedObject`] (so an artifact can carry the compiled module without the compiler).
//! The directory is removed afterwards, except when compilation fails: then it is kept and
//! its path is in the error, next to the compiler's diagnostics, verbatim.
//!
//! Flags that would change the C ABI are refused before the compiler runs
//! ([`crate::cflags`]). Defaults are `-O2 -fPIC -shared` and `-lm`. `-ffast-math` is off by default: it lets the
//! compiler reassociate sums and assume no NaN/Inf, which changes results against the host
//! reference; `-march=native` is off by default so a module runs on any machine of the same
//! architecture.

use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use byoc_sdk::ir::Tensor;
use byoc_sdk::ir::TensorType;
use thiserror::Error;

use crate::cflags::{check_flags, AbiFlag};
use crate::codegen::GeneratedSource;

/// How to invoke the C compiler.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompilerOptions {
    /// The compiler command; `None` uses `$CC`, then `cc`. A command with spaces
    /// (`ccache gcc`) is split into the program and its leading arguments.
    pub compiler: Option<String>,
    /// Flags before the file names.
    pub flags: Vec<String>,
    /// Adds `-ffast-math` (results may then differ from the host kernels in the last bits
    /// and in NaN/Inf handling).
    pub fast_math: bool,
    /// Adds `-march=native` (the module then only runs on CPUs like the compiling one).
    pub march_native: bool,
    /// Libraries after the file names.
    pub libs: Vec<String>,
}

impl Default for CompilerOptions {
    fn default() -> Self {
        CompilerOptions {
            compiler: None,
            flags: ["-O2", "-fPIC", "-shared"].map(String::from).to_vec(),
            fast_math: false,
            march_native: false,
            libs: vec!["-lm".to_string()],
        }
    }
}

impl CompilerOptions {
    /// The compiler command that will run: the option, else a non-empty `$CC`, else `cc`.
    pub fn compiler_command(&self) -> String {
        self.compiler
            .clone()
            .or_else(|| std::env::var("CC").ok().filter(|cc| !cc.trim().is_empty()))
            .unwrap_or_else(|| "cc".to_string())
    }
}

/// A compiled partition: the shared object's bytes and what its entry point expects.
#[derive(Clone, Debug, PartialEq)]
pub struct SharedObject {
    /// The exported entry symbol.
    pub symbol: String,
    /// The shared object file's bytes.
    pub bytes: Vec<u8>,
    /// Input tensor types, in entry-argument order.
    pub inputs: Vec<TensorType>,
    /// Output tensor types, in entry-argument order after the inputs.
    pub outputs: Vec<TensorType>,
    /// Constants passed after the outputs (empty when they were embedded).
    pub constants: Vec<Arc<Tensor>>,
}

/// Why compilation failed.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum CompileError {
    /// A file-system step (temporary directory, writing the C file, reading the `.so`).
    #[error("csource: cannot {what} {}: {source}", path.display())]
    Io {
        /// What was being done.
        what: &'static str,
        /// The path involved.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
    /// A compiler flag that would break the C ABI of the entry point or the library calls
    /// ([`crate::cflags`]).
    #[error("csource: the compiler flag '{}' {} (byoc calls the compiled code through a fixed C ABI; check csource.cc, csource.cflags and $BYOC_CSOURCE_CFLAGS)", .0.flag, .0.reason)]
    AbiFlag(AbiFlag),
    /// The compiler could not be started.
    #[error("csource: cannot run the C compiler '{compiler}' on {}: {source}", source_path.display())]
    Spawn {
        /// The compiler command.
        compiler: String,
        /// The generated C file, kept for inspection.
        source_path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
    /// The compiler ran and failed.
    #[error("csource: '{compiler}' failed ({status}) on {} (kept for inspection):\n{diagnostics}", source_path.display())]
    Failed {
        /// The compiler command.
        compiler: String,
        /// How it exited.
        status: String,
        /// Its standard error and output, verbatim.
        diagnostics: String,
        /// The generated C file, kept for inspection.
        source_path: PathBuf,
    },
}

fn io_error<'p>(what: &'static str, path: &'p Path) -> impl FnOnce(io::Error) -> CompileError + 'p {
    move |source| CompileError::Io {
        what,
        path: path.to_path_buf(),
        source,
    }
}

/// Compiles `source` into a shared object.
pub fn compile(
    source: &GeneratedSource,
    options: &CompilerOptions,
) -> Result<SharedObject, CompileError> {
    let compiler = options.compiler_command();
    let mut words = compiler.split_whitespace();
    let program = words.next().unwrap_or("cc");
    let leading: Vec<String> = words.map(String::from).collect();
    let all_flags: Vec<String> = leading.iter().chain(&options.flags).cloned().collect();
    check_flags(&all_flags, &source.code).map_err(CompileError::AbiFlag)?;
    let tmp = std::env::temp_dir();
    let dir = tempfile::Builder::new()
        .prefix("byoc-csource-")
        .tempdir()
        .map_err(io_error("create a temporary directory in", &tmp))?;
    let c_path = dir.path().join(format!("{}.c", source.symbol));
    let so_path = dir.path().join(format!("{}.so", source.symbol));
    std::fs::write(&c_path, &source.code).map_err(io_error("write", &c_path))?;

    let mut cmd = Command::new(program);
    cmd.args(&all_flags);
    if options.fast_math {
        cmd.arg("-ffast-math");
    }
    if options.march_native {
        cmd.arg("-march=native");
    }
    cmd.arg("-o").arg(&so_path).arg(&c_path).args(&options.libs);
    let output = match cmd.output() {
        Ok(output) => output,
        Err(source) => {
            return Err(CompileError::Spawn {
                compiler,
                source_path: keep(dir, &c_path),
                source,
            })
        }
    };
    if !output.status.success() {
        let mut diagnostics = String::from_utf8_lossy(&output.stderr).into_owned();
        diagnostics.push_str(&String::from_utf8_lossy(&output.stdout));
        return Err(CompileError::Failed {
            compiler,
            status: output.status.to_string(),
            diagnostics,
            source_path: keep(dir, &c_path),
        });
    }
    let bytes = std::fs::read(&so_path).map_err(io_error("read", &so_path))?;
    Ok(SharedObject {
        symbol: source.symbol.clone(),
        bytes,
        inputs: source.inputs.clone(),
        outputs: source.outputs.clone(),
        constants: source.constants.clone(),
    })
}

/// Keeps the temporary directory on disk and returns the C file's path in it.
fn keep(dir: tempfile::TempDir, c_path: &Path) -> PathBuf {
    let _kept = dir.keep();
    c_path.to_path_buf()
}
