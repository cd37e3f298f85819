//! Loading a model file into a typed [`Module`], chosen by the file extension.

use std::path::Path;

use anyhow::{bail, Context, Result};
use byoc_core::passes::infer_types;
use byoc_core::Module;

/// Reads a `.relay` model and infers its types. Errors name the file and, for text, the
/// line and column.
pub fn load_model(path: &Path) -> Result<Module> {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    match ext {
        "relay" => {
            let src = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read model '{}'", path.display()))?;
            let mut module = byoc_core::text::parse_module(&src)
                .with_context(|| format!("{}: parse error", path.display()))?;
            infer_types(&mut module).with_context(|| format!("{}: type error", path.display()))?;
            Ok(module)
        }
        _ => bail!(
            "'{}': unsupported model format '.{ext}' (expected a .relay file)",
            path.display()
        ),
    }
}
