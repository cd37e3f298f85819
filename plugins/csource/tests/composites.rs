//! Composites (merged with the csource pattern table) generated as fused loop nests, constants
//! embedded or passed in, several outputs, and arena reuse; each compared with the host
//! executor.

mod common;

use anyhow::{anyhow, Result};
use byoc_ir::infer_types;
use byoc_ir::{Attrs, Callee, Expr, FunctionBuilder, Module};
use byoc_ir::{DType, TensorType, Type};
use byoc_passes::Pass;
use byoc_plugin_csource::CodegenOptions;
use common::{as_partition, check_function, module, random};

/// x -> conv2d(w) -> bias_add(b) -> relu, and a dense head, with constant weights.
fn conv_dense_module() -> Result<Module> {
    let f32t = |s: &[usize]| TensorType::new(s.to_vec(), DType::Float32);
    let mut b = FunctionBuilder::new();
    let x = b.param("x", Type::Tensor(f32t(&[1, 3, 9, 7])));
    let w = b.constant(random(&f32t(&[5, 3, 3, 3]), 1));
    let bias = b.constant(random(&f32t(&[5]), 2));
    let conv = b.call(
        "nn.conv2d",
        &[x, w],
        Attrs::new().with("padding", vec![1i64, 2, 0, 1]),
    )?;
    let biased = b.call("nn.bias_add", &[conv, bias], Attrs::new())?;
    let relu = b.call("nn.relu", &[biased], Attrs::new())?;
    let flat = b.call("nn.batch_flatten", &[relu], Attrs::new())?;
    let dw = b.constant(random(&f32t(&[10, 5 * 8 * 8]), 3));
    let db = b.constant(random(&f32t(&[10]), 4));
    let dense = b.call("nn.dense", &[flat, dw], Attrs::new())?;
    let dense_b = b.call("nn.bias_add", &[dense, db], Attrs::new())?;
    let out = b.call("nn.relu", &[dense_b], Attrs::new())?;
    let mut m = Module::from_main(b.finish(vec![x], out, Attrs::new())?);
    infer_types(&mut m).map_err(|e| anyhow!("{e}"))?;
    Ok(m)
}

fn composite_names(m: &Module) -> Result<Vec<String>> {
    let f = m.main().map_err(|e| anyhow!("{e}"))?;
    Ok(f.iter()
        .filter_map(|(_, n)| match &n.expr {
            Expr::Call(c) => match c.callee {
                Callee::Local(l) => f
                    .expr(l)
                    .as_function()
                    .and_then(|lit| lit.attrs.get_str("Composite"))
                    .map(str::to_string),
                _ => None,
            },
            _ => None,
        })
        .collect())
}

#[test]
fn composites_fuse_into_one_loop_nest_each() -> Result<()> {
    let mut m = conv_dense_module()?;
    let table =
        byoc_patterns::PatternTable::parse(&byoc_plugin_csource::support::pattern_table_text())
            .map_err(|e| anyhow!("{e}"))?;
    byoc_patterns::MergeComposite::new(&table)
        .run(&mut m, &mut byoc_passes::PassContext::new())
        .map_err(|e| anyhow!("{e}"))?;
    assert_eq!(
        composite_names(&m)?,
        ["csource.conv2d_bias_relu", "csource.dense_bias_relu"]
    );
    let f = as_partition(&m, "csource_0")?;
    let src = check_function(&f, CodegenOptions::default(), "composites")?;
    // Two steps, each one loop nest storing every output element once.
    assert_eq!(src.code.matches("/* %").count(), 2, "{}", src.code);
    assert!(src
        .code
        .contains("nn.conv2d + nn.bias_add + nn.relu [csource.conv2d_bias_relu]"));
    assert!(src
        .code
        .contains("nn.dense + nn.bias_add + nn.relu [csource.dense_bias_relu]"));
    Ok(())
}

#[test]
fn unfused_and_passed_constants_agree_with_host() -> Result<()> {
    let m = conv_dense_module()?;
    let f = as_partition(&m, "csource_1")?;
    for (fuse, embed_constants) in [(true, true), (false, true), (true, false), (false, false)] {
        let options = CodegenOptions {
            embed_constants,
            fuse,
        };
        let src = check_function(&f, options.clone(), &format!("{options:?}"))?;
        let steps = src.code.matches("/* %").count();
        assert_eq!(steps, if fuse { 2 } else { 6 }, "{options:?}");
        assert_eq!(src.constants.len(), if embed_constants { 0 } else { 4 });
        assert_eq!(
            src.code.contains("static const float cst0"),
            embed_constants
        );
    }
    Ok(())
}

#[test]
fn several_outputs_inputs_and_repeats() -> Result<()> {
    let m = module(
        "def @main(%x: Tensor[(2, 3), float32], %y: Tensor[(2, 3), float32]) {
           %0 = add(%x, %y);
           %1 = nn.relu(%0);
           %2 = reshape(%1, newshape=[6]);
           (%1, %x, %2, %1, const((2, 2), float32, [1f, 2f, 3f, 4f]))
         }",
        false,
    )?;
    let f = as_partition(&m, "multi")?;
    let src = check_function(&f, CodegenOptions::default(), "several outputs")?;
    assert_eq!(src.outputs.len(), 5);
    assert_eq!(src.code.matches("memcpy(").count(), 4, "{}", src.code);
    Ok(())
}

#[test]
fn intermediates_share_the_arena() -> Result<()> {
    // A chain of six same-sized intermediates: liveness lets them use two slots.
    let m = module(
        "def @main(%x: Tensor[(4, 16), float32]) {
           %0 = sigmoid(%x);
           %1 = tanh(%0);
           %2 = add(%1, %x);
           %3 = nn.relu(%2);
           %4 = multiply(%3, %0);
           %5 = subtract(%4, %x);
           nn.softmax(%5)
         }",
        false,
    )?;
    let f = as_partition(&m, "chain")?;
    let src = check_function(&f, CodegenOptions::default(), "arena chain")?;
    // %0 lives to %4, so three 256-byte buffers are live at once at most.
    assert_eq!(src.arena_bytes, 3 * 256, "{}", src.code);
    Ok(())
}

#[test]
fn one_loaded_partition_runs_on_several_threads() -> Result<()> {
    let m = conv_dense_module()?;
    let f = as_partition(&m, "csource_threads")?;
    let (_, p) = common::build(&f, CodegenOptions::default())?;
    let inputs = common::inputs_for(&f, 3)?;
    let want = common::host(&f, &inputs)?;
    std::thread::scope(|s| {
        let runs: Vec<_> = (0..4)
            .map(|_| s.spawn(|| common::run(&p, &inputs)))
            .collect();
        for r in runs {
            let got = r.join().map_err(|_| anyhow!("a run panicked"))??;
            common::assert_close(&got, &want, "threaded run")?;
        }
        Ok(())
    })
}
