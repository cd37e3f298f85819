//! The csource plugin through the SDK's `Plugin` trait (linked statically): its description,
//! compile + run against the host executor, serialize/deserialize round trips (constants
//! embedded and passed in), the compile options, compiler failures (a failing `cc`, a syntax
//! error injected through the source hook) and damaged serialized modules.

mod common;

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{anyhow, Result};
use byoc_ir::Attrs;
use byoc_ir::Tensor;
use byoc_plugin_csource::module::{CSourceModule, MODULE_MAGIC};
use byoc_plugin_csource::CSource;
use byoc_sdk::{CompileOptions, CompiledModule, PartitionedFunction, Plugin, TensorMut};
use common::{as_partition, assert_close, host, inputs_for, module};

/// A conv2d + bias + relu composite, a pool and a softmax-free dense head.
const NET: &str = "def @main(%x: Tensor[(1, 3, 9, 7), float32]) {
  %0 = nn.conv2d(%x, const((4, 3, 3, 3), float32, fill=0.25f), padding=[1, 0, 0, 1]);
  %1 = nn.bias_add(%0, const((4), float32, [0.5f, -1f, 0.25f, 0f]));
  %2 = nn.relu(%1);
  %3 = nn.max_pool2d(%2, pool_size=[2, 2], strides=[2, 2], ceil_mode=True);
  %4 = nn.batch_flatten(%3);
  nn.dense(%4, const((5, 48), float32, fill=-0.125f))
}";

fn partition(text: &str, composites: bool) -> Result<PartitionedFunction> {
    let m = module(text, composites)?;
    Ok(PartitionedFunction {
        symbol: "csource_0".to_string(),
        function: as_partition(&m, "csource_0")?,
    })
}

fn run(m: &dyn CompiledModule, f: &PartitionedFunction) -> Result<()> {
    let inputs = inputs_for(&f.function, 3)?;
    let want = host(&f.function, &inputs)?;
    let mut got: Vec<Tensor> = want.iter().map(|t| Tensor::zeros(t.ty().clone())).collect();
    let views: Vec<_> = inputs.iter().map(Tensor::view).collect();
    let mut outs: Vec<TensorMut<'_>> = got.iter_mut().map(Tensor::view_mut).collect();
    m.run(&views, &mut outs)?;
    assert_close(&got, &want, "csource plugin")
}

fn compile_err(plugin: &CSource, options: &CompileOptions) -> Result<String> {
    match plugin.compile(&partition(NET, true)?, options) {
        Ok(_) => Err(anyhow!("compiled")),
        Err(e) => Ok(e.message),
    }
}

/// The path in a compiler error (`... on PATH (kept for inspection)`), which must exist.
fn kept_file(message: &str) -> Result<PathBuf> {
    let path = message
        .split(" on ")
        .nth(1)
        .and_then(|rest| rest.split(" (kept for inspection)").next())
        .ok_or_else(|| anyhow!("no kept file in {message}"))?;
    let path = PathBuf::from(path);
    if !path.is_file() {
        return Err(anyhow!("kept file {} does not exist", path.display()));
    }
    Ok(path)
}

#[test]
fn description_lists_ops_patterns_predicates_and_pruning() -> Result<()> {
    let d = CSource::new().describe();
    assert_eq!(d.target, "csource");
    assert!(d.op_names().contains(&"nn.conv2d") && d.op_names().contains(&"nn.softmax"));
    assert!(d.ops.iter().all(|o| o.predicate.is_some()));
    assert_eq!(d.patterns.len(), 6);
    assert_eq!(d.prune.require_any, ["nn.conv2d", "nn.dense"]);
    // The predicate is the generator's own check: an NHWC conv is declined with its reason.
    let m = module(
        "def @main(%x: Tensor[(1, 5, 5, 3), float32], %w: Tensor[(3, 3, 3, 4), float32]) {
           nn.conv2d(%x, %w, data_layout=\"NHWC\", kernel_layout=\"HWIO\")
         }",
        false,
    )?;
    let main = m.main().map_err(|e| anyhow!("{e}"))?;
    let (op, call) = main
        .expr(main.body)
        .as_op_call()
        .ok_or_else(|| anyhow!("not a call"))?;
    let arg_types: Vec<_> = call
        .args
        .iter()
        .map(|&a| main.ty(a).cloned().ok_or_else(|| anyhow!("untyped")))
        .collect::<Result<_>>()?;
    let view = byoc_sdk::CallView {
        op,
        attrs: &call.attrs,
        arg_types: &arg_types,
        result_type: main.ty(main.body).ok_or_else(|| anyhow!("untyped"))?,
    };
    let conv = d
        .ops
        .iter()
        .find(|o| o.rule.op == "nn.conv2d")
        .and_then(|o| o.predicate.clone())
        .ok_or_else(|| anyhow!("no conv2d predicate"))?;
    let reason = conv(&view).err().ok_or_else(|| anyhow!("accepted"))?;
    assert_eq!(
        reason.0,
        "data_layout=\"NHWC\" not supported (needs \"NCHW\")"
    );
    Ok(())
}

#[test]
fn compiled_and_reloaded_modules_match_the_host() -> Result<()> {
    let plugin = CSource::new();
    for (composites, embed) in [(true, "true"), (false, "false")] {
        let f = partition(NET, composites)?;
        let options = CompileOptions::new().with("csource.embed_constants", embed);
        let compiled = plugin.compile(&f, &options)?;
        run(compiled.as_ref(), &f)?;
        let bytes = compiled.serialize()?;
        assert!(bytes.starts_with(MODULE_MAGIC));
        let reloaded = plugin.deserialize(&bytes, &options)?;
        run(reloaded.as_ref(), &f)?;
        assert_eq!(reloaded.serialize()?, bytes);
    }
    Ok(())
}

#[test]
fn emit_source_is_the_compiled_c() -> Result<()> {
    let f = partition(NET, true)?;
    let plugin = CSource::new();
    let source = plugin
        .emit_source(&f, &CompileOptions::new())?
        .ok_or_else(|| anyhow!("no source"))?;
    assert_eq!(source.extension, "c");
    assert!(source
        .code
        .contains("int32_t csource_0(const byoc_tensor *const *args"));
    assert!(source.code.contains("[csource.conv2d_bias_relu]"));
    let passed = plugin
        .emit_source(
            &f,
            &CompileOptions::new().with("csource.embed_constants", "false"),
        )?
        .ok_or_else(|| anyhow!("no source"))?;
    assert!(passed.code.contains("(passed after the outputs)"));
    Ok(())
}

#[test]
fn options_are_checked() -> Result<()> {
    let plugin = CSource::new();
    let e = compile_err(&plugin, &CompileOptions::new().with("csource.opt", "3"))?;
    assert!(
        e.starts_with("unknown csource option 'csource.opt' (declared: csource.cc, "),
        "{e}"
    );
    let e = compile_err(&plugin, &CompileOptions::new().with("csource.fuse", "yes"))?;
    assert_eq!(e, "option 'csource.fuse=yes': expected true or false");
    // Other plugins' options are not ours to judge.
    plugin.compile(
        &partition(NET, true)?,
        &CompileOptions::new()
            .with("dnnl.threads", "2")
            .with("csource.cflags", "-O1")
            .with("csource.fuse", "false"),
    )?;
    Ok(())
}

#[test]
fn failing_compiler_gives_its_status_and_keeps_the_c_file() -> Result<()> {
    let e = compile_err(
        &CSource::new(),
        &CompileOptions::new().with("csource.cc", "false"),
    )?;
    assert!(
        e.starts_with("csource: 'false' failed (exit status: 1) on "),
        "{e}"
    );
    let kept = kept_file(&e)?;
    assert!(kept.ends_with("csource_0.c"));
    std::fs::remove_dir_all(kept.parent().ok_or_else(|| anyhow!("no dir"))?)?;
    Ok(())
}

#[test]
fn injected_syntax_error_gives_the_compiler_output() -> Result<()> {
    let plugin = CSource::new().with_source_hook(Arc::new(|s| {
        s.code.push_str("\nthis is not C;\n");
    }));
    let e = compile_err(&plugin, &CompileOptions::new())?;
    let kept = kept_file(&e)?;
    // gcc and clang both name the file and the line, and say "error".
    let diagnostics = e.split_once('\n').map(|(_, d)| d).unwrap_or("");
    assert!(
        diagnostics.contains(&kept.display().to_string()) && diagnostics.contains("error"),
        "{e}"
    );
    assert!(std::fs::read_to_string(&kept)?.ends_with("this is not C;\n"));
    std::fs::remove_dir_all(kept.parent().ok_or_else(|| anyhow!("no dir"))?)?;
    Ok(())
}

#[test]
fn damaged_modules_are_refused_with_the_reason() -> Result<()> {
    let plugin = CSource::new();
    let f = partition(NET, true)?;
    let bytes = plugin.compile(&f, &CompileOptions::new())?.serialize()?;
    let message = |bytes: &[u8]| -> Result<String> {
        match plugin.deserialize(bytes, &CompileOptions::new()) {
            Ok(_) => Err(anyhow!("loaded")),
            Err(e) => Ok(e.message),
        }
    };
    assert_eq!(
        message(b"garbage")?,
        "not a csource module (the 7 bytes do not start with the csource module magic)"
    );
    let mut future = bytes.clone();
    future[8] = 9;
    assert_eq!(
        message(&future)?,
        "csource module format version 9 is not supported (this plugin reads version 1); rebuild the artifact"
    );
    let e = message(&bytes[..bytes.len() - 1])?;
    assert!(
        e.starts_with("csource module: the header describes "),
        "{e}"
    );
    // A valid layout around bytes that are not a shared object (same length, so only the
    // loader can tell).
    let header_len = u32::from_le_bytes([bytes[12], bytes[13], bytes[14], bytes[15]]) as usize;
    let mut corrupt = bytes.clone();
    for b in &mut corrupt[16 + header_len..16 + header_len + 64] {
        *b = 0xAB;
    }
    let e = message(&corrupt)?;
    assert!(
        e.starts_with("partition csource_0: the compiled module (")
            && e.contains("bytes) is not a loadable shared object: "),
        "{e}"
    );
    let _ = CSourceModule::from_bytes(&bytes)?;
    Ok(())
}

#[test]
fn a_partition_without_a_symbol_is_a_clear_error() -> Result<()> {
    let m = module("def @main(%x: Tensor[(4), float32]) { nn.relu(%x) }", false)?;
    let mut f = m.main().map_err(|e| anyhow!("{e}"))?.clone();
    f.attrs = Attrs::new().with("Compiler", "csource");
    let f = PartitionedFunction {
        symbol: "csource_9".to_string(),
        function: f,
    };
    let e = CSource::new()
        .compile(&f, &CompileOptions::new())
        .err()
        .ok_or_else(|| anyhow!("compiled"))?;
    assert_eq!(
        e.message,
        "partition has no global_symbol attribute to name its C entry point"
    );
    Ok(())
}
