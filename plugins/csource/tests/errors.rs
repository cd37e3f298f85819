//! Clear errors: unsupported ops, dtypes and attributes name the op and the partition; a failing
//! compiler gives its output verbatim and keeps the C file; a corrupt shared object and wrong
//! tensors at run time are refused.

mod common;

use anyhow::{anyhow, Result};
use byoc_ir::Attrs;
use byoc_ir::{DType, Tensor, TensorType};
use byoc_plugin_csource::{
    compile, CSourceCodegen, CodegenError, CodegenOptions, CompileError, CompilerOptions,
    LoadError, LoadedPartition, RunError, SharedObject,
};
use common::{as_partition, build, module, partition_attrs};

fn generate_err(text: &str) -> Result<CodegenError> {
    let m = module(text, false)?;
    let f = as_partition(&m, "csource_3")?;
    match CSourceCodegen::default().generate(&f) {
        Ok(_) => Err(anyhow!("generation succeeded")),
        Err(e) => Ok(e),
    }
}

#[test]
fn unsupported_op_names_op_and_partition() -> Result<()> {
    let e = generate_err("def @main(%x: Tensor[(2, 3), float32]) { exp(%x) }")?;
    assert_eq!(
        e.to_string(),
        "partition csource_3: exp: op not supported by the csource target"
    );
    Ok(())
}

#[test]
fn unsupported_layout_and_dtype() -> Result<()> {
    let e = generate_err(
        "def @main(%x: Tensor[(1, 5, 5, 3), float32], %w: Tensor[(3, 3, 3, 4), float32]) {
           nn.conv2d(%x, %w, data_layout=\"NHWC\", kernel_layout=\"HWIO\")
         }",
    )?;
    assert_eq!(
        e.to_string(),
        "partition csource_3: nn.conv2d: data_layout=\"NHWC\" not supported (needs \"NCHW\")"
    );
    let e = generate_err("def @main(%x: Tensor[(4), float16]) { nn.relu(%x) }")?;
    assert_eq!(
        e.to_string(),
        "partition csource_3: parameter %x has dtype float16; csource generates float32 code only"
    );
    Ok(())
}

#[test]
fn partition_attributes_are_checked() -> Result<()> {
    let m = module("def @main(%x: Tensor[(4), float32]) { nn.relu(%x) }", false)?;
    let mut f = as_partition(&m, "csource_0")?;
    f.attrs = Attrs::new()
        .with("Compiler", "dnnl")
        .with("global_symbol", "dnnl_0");
    let e = CSourceCodegen::default()
        .generate(&f)
        .err()
        .ok_or(anyhow!("accepted"))?;
    assert_eq!(
        e.to_string(),
        "partition dnnl_0: Compiler attribute is \"dnnl\", not \"csource\""
    );
    f.attrs = partition_attrs("0bad");
    let e = CSourceCodegen::default()
        .generate(&f)
        .err()
        .ok_or(anyhow!("accepted"))?;
    assert!(matches!(e, CodegenError::BadSymbol { .. }), "{e}");
    f.attrs = Attrs::new().with("Compiler", "csource");
    let e = CSourceCodegen::default()
        .generate(&f)
        .err()
        .ok_or(anyhow!("accepted"))?;
    assert!(matches!(e, CodegenError::MissingSymbol), "{e}");
    Ok(())
}

fn relu_source() -> Result<byoc_plugin_csource::GeneratedSource> {
    let m = module("def @main(%x: Tensor[(4), float32]) { nn.relu(%x) }", false)?;
    Ok(CSourceCodegen::new(CodegenOptions::default()).generate(&as_partition(&m, "relu_0")?)?)
}

#[test]
fn failing_compiler_reports_status_and_keeps_the_file() -> Result<()> {
    let options = CompilerOptions {
        compiler: Some("false".to_string()),
        ..CompilerOptions::default()
    };
    let e = compile(&relu_source()?, &options)
        .err()
        .ok_or(anyhow!("compiled"))?;
    let CompileError::Failed {
        compiler,
        status,
        source_path,
        ..
    } = &e
    else {
        return Err(anyhow!("unexpected error {e}"));
    };
    assert_eq!(compiler, "false");
    assert!(status.contains('1'), "{status}");
    assert!(source_path.ends_with("relu_0.c") && source_path.exists());
    assert!(e
        .to_string()
        .starts_with("csource: 'false' failed (exit status: 1) on "));
    std::fs::remove_dir_all(source_path.parent().ok_or(anyhow!("no dir"))?)?;
    Ok(())
}

#[test]
fn syntax_error_gives_compiler_diagnostics_verbatim() -> Result<()> {
    let mut src = relu_source()?;
    src.code.push_str("\nthis is not C;\n");
    let e = compile(&src, &CompilerOptions::default())
        .err()
        .ok_or(anyhow!("compiled"))?;
    let CompileError::Failed {
        diagnostics,
        source_path,
        ..
    } = &e
    else {
        return Err(anyhow!("unexpected error {e}"));
    };
    let path = source_path.display().to_string();
    assert!(
        diagnostics.contains(&path) && diagnostics.contains("error"),
        "{diagnostics}"
    );
    assert!(e.to_string().contains(diagnostics.as_str()));
    assert_eq!(std::fs::read_to_string(source_path)?, src.code);
    std::fs::remove_dir_all(source_path.parent().ok_or(anyhow!("no dir"))?)?;
    Ok(())
}

#[test]
fn missing_compiler_is_a_spawn_error() -> Result<()> {
    let options = CompilerOptions {
        compiler: Some("/nonexistent/byoc-cc".to_string()),
        ..CompilerOptions::default()
    };
    let e = compile(&relu_source()?, &options)
        .err()
        .ok_or(anyhow!("compiled"))?;
    assert!(matches!(e, CompileError::Spawn { .. }), "{e}");
    assert!(e
        .to_string()
        .contains("cannot run the C compiler '/nonexistent/byoc-cc'"));
    if let CompileError::Spawn { source_path, .. } = &e {
        std::fs::remove_dir_all(source_path.parent().ok_or(anyhow!("no dir"))?)?;
    }
    Ok(())
}

#[test]
fn corrupt_shared_object_is_a_load_error() -> Result<()> {
    let src = relu_source()?;
    let so = compile(&src, &CompilerOptions::default())?;
    let corrupt = SharedObject {
        bytes: b"\x7fELF but not really a shared object".to_vec(),
        ..so.clone()
    };
    let e = LoadedPartition::load(&corrupt)
        .err()
        .ok_or(anyhow!("loaded"))?;
    // Refused by the ELF check, before the dynamic loader sees the bytes.
    assert!(matches!(e, LoadError::Invalid { .. }), "{e}");
    assert!(e.to_string().starts_with(
        "partition relu_0: the compiled module (35 bytes) is not a loadable shared object: "
    ));
    let renamed = SharedObject {
        symbol: "other_0".to_string(),
        ..so
    };
    let e = LoadedPartition::load(&renamed)
        .err()
        .ok_or(anyhow!("loaded"))?;
    // The ELF check finds the entry symbol missing before the library is opened.
    assert!(matches!(e, LoadError::Invalid { .. }), "{e}");
    assert!(
        e.to_string()
            .ends_with("the shared object does not export the symbol 'other_0'"),
        "{e}"
    );
    Ok(())
}

#[test]
fn wrong_tensors_are_refused_before_the_call() -> Result<()> {
    let m = module("def @main(%x: Tensor[(4), float32]) { nn.relu(%x) }", false)?;
    let (_, p) = build(&as_partition(&m, "relu_1")?, CodegenOptions::default())?;
    let x = Tensor::from_vec([5], vec![0f32; 5])?;
    let mut y = Tensor::zeros(TensorType::new([4], DType::Float32));
    let e = p
        .run(&[x.view()], &mut [y.view_mut()])
        .err()
        .ok_or(anyhow!("ran"))?;
    assert!(matches!(e, RunError::ArgumentType { .. }), "{e}");
    let e = p
        .run(&[], &mut [y.view_mut()])
        .err()
        .ok_or(anyhow!("ran"))?;
    assert_eq!(
        e.to_string(),
        "partition relu_1: 0 inputs given, expected 1"
    );
    let x = Tensor::from_vec([4], vec![-1f32, 2.0, -3.0, 4.0])?;
    p.run(&[x.view()], &mut [y.view_mut()])?;
    assert_eq!(y.as_slice::<f32>()?, &[0.0, 2.0, 0.0, 4.0]);
    Ok(())
}
