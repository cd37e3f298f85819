//! Loading a model file into a typed [`Module`], chosen by the file extension.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Context, Result};
use byoc_core::onnx::{import_file, ImportOptions};
use byoc_core::passes::infer_types;
use byoc_core::Module;

/// Reads a `.relay` or `.onnx` model and infers its types. `input_shapes` fixes symbolic
/// dimensions of ONNX inputs (`--input-shape name=1,3,224,224`). Errors name the file and, for
/// text, the line and column.
pub fn load_model(path: &Path, input_shapes: &BTreeMap<String, Vec<usize>>) -> Result<Module> {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    match ext {
        "relay" => {
            if !input_shapes.is_empty() {
                bail!("--input-shape applies to .onnx models; a .relay model declares its input types");
            }
            let src = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read model '{}'", path.display()))?;
            let mut module = byoc_core::text::parse_module(&src)
                .with_context(|| format!("{}: parse error", path.display()))?;
            infer_types(&mut module).with_context(|| format!("{}: type error", path.display()))?;
            Ok(module)
        }
        "onnx" => {
            let opts = ImportOptions {
                input_shapes: input_shapes.clone(),
            };
            import_file(path, &opts).with_context(|| format!("{}: cannot import", path.display()))
        }
        _ => bail!(
            "'{}': unsupported model format '.{ext}' (expected .relay or .onnx)",
            path.display()
        ),
    }
}

/// Parses `--input-shape` values `name=d0,d1,...` into a map; errors name the bad value.
pub fn parse_input_shapes(values: &[String]) -> Result<BTreeMap<String, Vec<usize>>> {
    let mut shapes = BTreeMap::new();
    for v in values {
        let Some((name, dims)) = v.split_once('=') else {
            bail!("--input-shape '{v}': expected NAME=D0,D1,... (e.g. data=1,3,224,224)");
        };
        let dims = dims
            .split(',')
            .map(|d| d.trim().parse::<usize>())
            .collect::<Result<Vec<_>, _>>()
            .with_context(|| {
                format!("--input-shape '{v}': dimensions must be non-negative integers")
            })?;
        if shapes.insert(name.to_string(), dims).is_some() {
            bail!("--input-shape gives '{name}' twice");
        }
    }
    Ok(shapes)
}
