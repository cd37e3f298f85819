//! Links oneDNN (Debian's `libdnnl-dev` 2.6) and the OpenMP runtime it is built with; fails
//! with an install hint when the header or the library is missing.

use std::path::{Path, PathBuf};

const HINT: &str = "the dnnl plugin needs oneDNN 2.6: install libdnnl-dev \
     (`sudo apt-get install libdnnl-dev`, or `./scripts/dev setup`); set DNNL_ROOT to use \
     a oneDNN 2.x installed elsewhere (DNNL_ROOT/include, DNNL_ROOT/lib)";

fn main() {
    println!("cargo:rerun-if-env-changed=DNNL_ROOT");
    let (include_dirs, lib_dirs): (Vec<PathBuf>, Vec<PathBuf>) = match std::env::var_os("DNNL_ROOT")
    {
        Some(root) => {
            let root = PathBuf::from(root);
            (
                vec![root.join("include")],
                vec![root.join("lib"), root.join("lib64")],
            )
        }
        None => (
            vec![
                PathBuf::from("/usr/include"),
                PathBuf::from("/usr/local/include"),
            ],
            vec![
                PathBuf::from("/usr/lib/x86_64-linux-gnu"),
                PathBuf::from("/usr/lib/aarch64-linux-gnu"),
                PathBuf::from("/usr/lib"),
                PathBuf::from("/usr/local/lib"),
            ],
        ),
    };
    let header = include_dirs
        .iter()
        .map(|d| d.join("oneapi/dnnl/dnnl.h"))
        .find(|h| h.is_file());
    let Some(header) = header else {
        fail(&format!(
            "oneapi/dnnl/dnnl.h not found in {}",
            list(&include_dirs)
        ));
    };
    println!("cargo:rerun-if-changed={}", header.display());
    let Some(lib_dir) = lib_dirs.iter().find(|d| d.join("libdnnl.so").exists()) else {
        fail(&format!("libdnnl.so not found in {}", list(&lib_dirs)));
    };
    check_version(&header);
    println!("cargo:rustc-link-search=native={}", lib_dir.display());
    println!("cargo:rustc-link-lib=dylib=dnnl");
    // libdnnl needs libgomp; the plugin sets the OpenMP thread count itself. Debian ships
    // only the runtime name libgomp.so.1 (no libgomp.so without gcc's dev files).
    let gomp = if lib_dir.join("libgomp.so").exists() {
        "gomp"
    } else {
        "+verbatim=libgomp.so.1"
    };
    if gomp == "gomp" {
        println!("cargo:rustc-link-lib=dylib=gomp");
    } else {
        println!("cargo:rustc-link-lib=dylib:{gomp}");
    }
}

/// Refuses oneDNN 3.x headers: the bindings are for the 2.x C API.
fn check_version(header: &Path) {
    let version = header.with_file_name("dnnl_version.h");
    let Ok(text) = std::fs::read_to_string(&version) else {
        fail(&format!("cannot read {}", version.display()));
    };
    let major = text
        .lines()
        .find_map(|l| l.strip_prefix("#define DNNL_VERSION_MAJOR"))
        .map(str::trim);
    if major != Some("2") {
        fail(&format!(
            "{} says oneDNN major version {}, the bindings are for 2.x",
            version.display(),
            major.unwrap_or("?")
        ));
    }
}

fn list(dirs: &[PathBuf]) -> String {
    dirs.iter()
        .map(|d| d.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

fn fail(what: &str) -> ! {
    eprintln!("error: {what}: {HINT}");
    panic!("{what}: {HINT}");
}
