//! The vta plugin through the SDK traits: compile, serialize, deserialize and run (matching
//! the host), chained layers in one partition, the assembly of `emit_source`, options and
//! configuration errors, corrupt module bytes, and layers the compiler refuses.

mod common;

use anyhow::{anyhow, Result};
use byoc_ir::infer_types;
use byoc_ir::{AttrValue, Attrs, FunctionBuilder, Module};
use byoc_ir::{DType, Tensor, TensorType, Type};
use byoc_plugin_vta::{Vta, VtaConfig};
use byoc_sdk::{CompileOptions, PartitionedFunction, Plugin};
use common::{assert_same, build, host, partition, run, Case};

fn partitioned(m: &Module) -> Result<PartitionedFunction> {
    Ok(PartitionedFunction {
        symbol: "vta_0".to_string(),
        function: partition(m)?,
    })
}

#[test]
fn compile_serialize_deserialize_run() -> Result<()> {
    let (m, inputs) = build(
        &Case {
            residual: true,
            ..Case::conv(24, 7, 40)
        },
        11,
    )?;
    let want = host(&m, &inputs)?;
    let vta = Vta::new();
    let module = vta.compile(&partitioned(&m)?, &CompileOptions::new())?;
    assert_same(&run(module.as_ref(), &inputs, &want)?, &want, "compiled")?;
    let bytes = module.serialize()?;
    let back = vta.deserialize(&bytes, &CompileOptions::new())?;
    assert_same(&run(back.as_ref(), &inputs, &want)?, &want, "deserialized")?;
    assert_eq!(back.serialize()?, bytes, "serialization is deterministic");
    // Corrupt bytes are errors, not panics.
    for bad in [&b"junk"[..], &bytes[..bytes.len() - 1], &bytes[..20]] {
        assert!(vta.deserialize(bad, &CompileOptions::new()).is_err());
    }
    let mut version = bytes.clone();
    version[8] = 9;
    let e = vta
        .deserialize(&version, &CompileOptions::new())
        .err()
        .expect("refused")
        .to_string();
    assert!(e.contains("version 9"), "{e}");
    Ok(())
}

/// Two chained conv layers in one partition (the first one's output feeds the second and is
/// also a partition output), weights as inputs.
#[test]
fn chained_layers_in_one_partition() -> Result<()> {
    let i8t = |s: &[usize]| Type::Tensor(TensorType::new(s.to_vec(), DType::Int8));
    let mut b = FunctionBuilder::new();
    let x = b.param("x", i8t(&[1, 16, 6, 6]));
    let w1 = b.param("w1", i8t(&[20, 16, 3, 3]));
    let w2 = b.param("w2", i8t(&[20, 20, 1, 1]));
    let requant = |b: &mut FunctionBuilder, v| -> Result<_> {
        let s = b.constant(Tensor::scalar(5i32));
        let v = b.call("right_shift", &[v, s], Attrs::new())?;
        let v = b.call(
            "clip",
            &[v],
            Attrs::new()
                .with("a_min", AttrValue::Float(-127.0))
                .with("a_max", AttrValue::Float(127.0)),
        )?;
        Ok(b.call("cast", &[v], Attrs::new().with("dtype", "int8"))?)
    };
    let conv = |pad: i64| {
        Attrs::new()
            .with("padding", vec![pad; 4])
            .with("out_dtype", "int32")
    };
    let c1 = b.call("nn.conv2d", &[x, w1], conv(1))?;
    let a1 = requant(&mut b, c1)?;
    let c2 = b.call("nn.conv2d", &[a1, w2], conv(0))?;
    let a2 = requant(&mut b, c2)?;
    let body = b.tuple(&[a2, a1])?;
    let mut m = Module::from_main(b.finish(vec![x, w1, w2], body, Attrs::new())?);
    infer_types(&mut m).map_err(|e| anyhow!("{e}"))?;
    let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(3);
    let inputs: Vec<Tensor> = m
        .main()
        .map_err(|e| anyhow!("{e}"))?
        .param_types()
        .iter()
        .map(|t| match t {
            Type::Tensor(t) => {
                Tensor::random_uniform(t.clone(), &mut rng).map_err(|e| anyhow!("{e}"))
            }
            _ => Err(anyhow!("tensor params only")),
        })
        .collect::<Result<_>>()?;
    let want = host(&m, &inputs)?;
    let module = Vta::new().compile(&partitioned(&m)?, &CompileOptions::new())?;
    assert_same(&run(module.as_ref(), &inputs, &want)?, &want, "chained")?;
    Ok(())
}

/// A partition holding an op outside the composites is refused with the reason.
#[test]
fn non_composite_ops_are_refused() -> Result<()> {
    let (m, _) = build(&Case::conv(16, 4, 16), 1)?;
    let mut f = partition(&m)?;
    let mut b = f.to_builder();
    let relu = b.call("nn.relu", &[f.body], Attrs::new())?;
    f = b.finish(f.params.clone(), relu, f.attrs.clone())?;
    let mut wrapped = Module::new();
    wrapped.insert("vta_0".to_string(), f);
    infer_types(&mut wrapped).map_err(|e| anyhow!("{e}"))?;
    let f = wrapped.remove("vta_0").expect("inserted");
    let e = Vta::new()
        .compile(
            &PartitionedFunction {
                symbol: "vta_0".to_string(),
                function: f,
            },
            &CompileOptions::new(),
        )
        .err()
        .expect("refused")
        .to_string();
    assert!(e.contains("not a vta.* composite"), "{e}");
    Ok(())
}

#[test]
fn emit_source_is_readable_assembly() -> Result<()> {
    let (m, _) = build(&Case::conv(16, 4, 16), 1)?;
    let src = Vta::new()
        .emit_source(&partitioned(&m)?, &CompileOptions::new())?
        .expect("vta emits assembly");
    assert_eq!(src.extension, "asm");
    // Shown with --nocapture: docs/vta.md's worked example is this layer.
    println!("{}", src.code);
    for needle in [
        "LOAD   inp",
        "LOAD   wgt",
        "GEMM   rst",
        "GEMM   mac",
        "ALU    shr",
        "STORE  out",
        "FINISH",
        "pop_prev",
    ] {
        assert!(
            src.code.contains(needle),
            "{needle} missing in\n{}",
            src.code
        );
    }
    Ok(())
}

#[test]
fn options_and_configurations_are_validated() -> Result<()> {
    let (m, _) = build(&Case::conv(16, 4, 16), 1)?;
    let f = partitioned(&m)?;
    let vta = Vta::new();
    let compile = |k: &str, v: &str| {
        vta.compile(&f, &CompileOptions::new().with(k, v))
            .err()
            .map(|e| e.to_string())
    };
    assert!(compile("vta.virtual_threads", "3")
        .unwrap()
        .contains("expected 1 or 2"));
    assert!(compile("vta.speed", "fast")
        .unwrap()
        .contains("unknown vta option 'vta.speed' (declared: vta.config, vta.virtual_threads)"));
    assert!(compile("vta.config", "/nonexistent/vta.json")
        .unwrap()
        .contains("cannot read"));
    assert!(compile("vta.virtual_threads", "1").is_none());
    let dir = std::env::temp_dir().join(format!("vta-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let bad = dir.join("bad.json");
    let base = byoc_plugin_vta::config::DEFAULT_CONFIG_JSON;
    for (from, to, expect) in [
        ("\"LOG_BLOCK\": 4", "\"LOG_BLOCK\": 9", "LOG_BLOCK = 9"),
        ("\"LOG_INP_WIDTH\": 3", "\"LOG_INP_WIDTH\": 4", "int8"),
        (
            "\"LOG_ACC_BUFF_SIZE\": 17",
            "\"LOG_ACC_BUFF_SIZE\": 25",
            "bits",
        ),
        (
            "\"LOG_BATCH\": 0",
            "\"LOG_BATCH\": 0, \"SPEED\": 1",
            "SPEED",
        ),
    ] {
        std::fs::write(&bad, base.replace(from, to))?;
        let e = compile("vta.config", bad.to_str().unwrap()).expect("refused");
        assert!(e.contains(expect) && e.contains("bad.json"), "{e}");
    }
    // A tiny accumulator buffer still compiles a small layer (more tiles).
    let tiny = dir.join("tiny.json");
    std::fs::write(
        &tiny,
        base.replace("\"LOG_ACC_BUFF_SIZE\": 17", "\"LOG_ACC_BUFF_SIZE\": 9"),
    )?;
    assert_eq!(compile("vta.config", tiny.to_str().unwrap()), None);
    assert!(VtaConfig::from_json("{").is_err());
    Ok(())
}

#[test]
fn unsupported_layers_are_refused_with_reasons() -> Result<()> {
    // A clip bound beyond the ALU's 16-bit immediate.
    let (m, _) = build(
        &Case {
            clip: Some((-100000.0, 100.0)),
            ..Case::conv(16, 4, 16)
        },
        1,
    )?;
    let e = Vta::new()
        .compile(&partitioned(&m)?, &CompileOptions::new())
        .err()
        .expect("refused")
        .to_string();
    assert!(e.contains("16-bit immediate"), "{e}");
    Ok(())
}

/// An edit of a serialized module's JSON header.
type HeaderEdit = dyn Fn(&mut serde_json::Value);

/// A serialized module with its JSON header edited by `edit`.
fn with_header(bytes: &[u8], edit: impl Fn(&mut serde_json::Value)) -> Vec<u8> {
    let len = u32::from_le_bytes([bytes[12], bytes[13], bytes[14], bytes[15]]) as usize;
    let mut header: serde_json::Value = serde_json::from_slice(&bytes[16..16 + len]).unwrap();
    edit(&mut header);
    let json = serde_json::to_vec(&header).unwrap();
    let mut out = bytes[..12].to_vec();
    out.extend_from_slice(&(json.len() as u32).to_le_bytes());
    out.extend_from_slice(&json);
    out.extend_from_slice(&bytes[16 + len..]);
    out
}

#[test]
fn tampered_module_headers_are_refused() -> Result<()> {
    let (m, _) = build(
        &Case {
            residual: true,
            ..Case::conv(16, 5, 16)
        },
        2,
    )?;
    let vta = Vta::new();
    let bytes = vta
        .compile(&partitioned(&m)?, &CompileOptions::new())?
        .serialize()?;
    assert!(vta
        .deserialize(&with_header(&bytes, |_| {}), &CompileOptions::new())
        .is_ok());
    let cases: Vec<(&str, Box<HeaderEdit>)> = vec![
        ("threads", Box::new(|h| h["threads"] = 7.into())),
        (
            "LOG_BLOCK",
            Box::new(|h| h["config"]["log_block"] = 9.into()),
        ),
        ("parameter", Box::new(|h| h["num_params"] = 0.into())),
        (
            "16-bit DMA",
            Box::new(|h| h["layers"][0]["geometry"]["w"] = 100000.into()),
        ),
        (
            "broadcast",
            Box::new(|h| h["layers"][0]["operands"][1]["shape"] = serde_json::json!([3, 3])),
        ),
        (
            "operand",
            Box::new(|h| h["layers"][0]["epilogue"][0] = serde_json::json!({"Add": 9})),
        ),
        (
            "does not",
            Box::new(|h| h["layers"][0]["geometry"]["o"] = 32.into()),
        ),
    ];
    for (expect, edit) in cases {
        let e = vta
            .deserialize(&with_header(&bytes, edit), &CompileOptions::new())
            .err()
            .unwrap_or_else(|| panic!("{expect}: accepted"))
            .to_string();
        assert!(e.contains(expect), "{expect}: {e}");
    }
    Ok(())
}

proptest::proptest! {
    /// Any set of options is read or refused by the vta plugin, never a panic: an undeclared
    /// `vta.` key is refused naming it, and a virtual-thread count other than 1 or 2 is
    /// refused. Files are read within a 16 MiB budget (`/dev/zero` never ends).
    #[test]
    fn any_options_are_read_or_refused(
        entries in proptest::collection::vec((option_key(), option_value()), 0..5)
    ) {
        let mut options = CompileOptions::new();
        for (k, v) in &entries {
            options = options.with(k.clone(), v.clone());
        }
        let declared = byoc_plugin_vta::plugin::options_schema();
        let undeclared = options.values.keys().find(|k| {
            k.strip_prefix("vta.")
                .is_some_and(|name| !declared.specs().iter().any(|s| s.name == name))
        });
        let read = byoc_ir::memory::with_budget(Some(16 << 20), || {
            byoc_plugin_vta::plugin::Settings::from_options(&options)
        });
        match read {
            Ok(settings) => {
                proptest::prop_assert!(undeclared.is_none(), "{:?}", entries);
                proptest::prop_assert!(matches!(settings.threads, 1 | 2));
            }
            Err(e) => {
                if let Some(k) = undeclared {
                    proptest::prop_assert!(e.to_string().contains(k.as_str()), "{e}");
                }
            }
        }
    }
}

/// Option keys: the declared vta keys, undeclared ones of its scope, another plugin's, text.
fn option_key() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    prop_oneof![
        3 => prop::sample::select(vec![
            "vta.config", "vta.virtual_threads", "vta.", "vta.speed", "vta", "csource.cc", "",
        ])
        .prop_map(String::from),
        1 => "[a-z.]{0,10}",
    ]
}

/// Option values: counts (and what only looks like one), files that do not exist or never
/// end, the config folder itself, and text.
fn option_value() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    prop_oneof![
        2 => prop::sample::select(vec![
            "1", "2", "0", "3", "-1", "18446744073709551616", "", "/nonexistent.json",
            "/dev/zero", "/", "true",
        ])
        .prop_map(String::from),
        1 => ".{0,16}",
    ]
}
