//! Custom datatypes through the plugin ABI, end to end: the posit plugin is built as a `.so`
//! and loaded; its `posites2` declaration is validated, every library function of its
//! lowering table is resolved in the library and callable through the host's table,
//! `custom[posites2]N` parses in the text format, unknown names and widths are errors that list
//! what is registered, and `byoc plugins` lists the datatype.

mod plugin_build;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use byoc_core::ir::DType;
use byoc_core::plugin::{datatype_library, load_plugin};
use byoc_core::sdk::{LoweringKey, Plugin};
use byoc_core::text::{parse_module, print_module};
use plugin_build::build_next_to_byoc;

fn posit_so() -> &'static Path {
    static SO: OnceLock<PathBuf> = OnceLock::new();
    SO.get_or_init(|| {
        let dir = build_next_to_byoc(
            Path::new(env!("CARGO_MANIFEST_DIR")),
            &["byoc-plugin-posit"],
        );
        dir.join(format!(
            "{}byoc_plugin_posit{}",
            std::env::consts::DLL_PREFIX,
            std::env::consts::DLL_SUFFIX
        ))
    })
}

fn loaded() {
    static LOADED: OnceLock<()> = OnceLock::new();
    LOADED.get_or_init(|| {
        let plugin = load_plugin(posit_so()).expect("the posit plugin loads");
        assert_eq!(plugin.describe().datatypes.len(), 1);
    });
}

#[test]
fn the_lowering_table_is_resolved_and_callable() {
    loaded();
    let DType::Custom { code, bits } = "custom[posites2]16".parse::<DType>().unwrap() else {
        panic!("a custom dtype");
    };
    assert_eq!((code, bits), (132, 16));
    let library = datatype_library(code).expect("registered at load");
    assert_eq!(library.plugin, "posit");
    assert_eq!(library.functions.len(), 75);
    let add = library
        .function(&LoweringKey::Op {
            op: "Add".into(),
            bits: 16,
        })
        .expect("Add over 16 bits");
    assert_eq!(add.symbol, "Posit16es2Add");
    // SAFETY: an `Op` lowering of 16 bits has the signature (u16, u16) -> u16.
    let add: extern "C" fn(u16, u16) -> u16 = unsafe { std::mem::transmute(add.address) };
    assert_eq!(add(0x4000, 0x4000), 0x4800, "1 + 1 = 2 in posit16");
    let min = library
        .function(&LoweringKey::MinValue { bits: 32 })
        .expect("min value of 32 bits");
    // SAFETY: a `MinValue` lowering of 32 bits has the signature () -> u32.
    let min: extern "C" fn() -> u32 = unsafe { std::mem::transmute(min.address) };
    assert_eq!(min(), 0x8000_0001, "-maxpos, not TVM's truncated +minpos");
    let to_float = library
        .function(&LoweringKey::Cast {
            src: "posites2".into(),
            dst: "float".into(),
            src_bits: 8,
            dst_bits: 32,
        })
        .expect("posit8 to float32");
    // SAFETY: a cast from an 8-bit custom type to float32 has the signature (u8) -> f32.
    let to_float: extern "C" fn(u8) -> f32 = unsafe { std::mem::transmute(to_float.address) };
    assert_eq!(to_float(0x30), 0.25);
}

#[test]
fn custom_types_parse_in_text_and_bad_names_list_the_registry() {
    loaded();
    let module = parse_module(
        "def @main(%x: Tensor[(4), custom[posites2]8], %y: Tensor[(4), custom[posites2]32]) { %x }",
    )
    .expect("custom types parse once registered");
    let text = print_module(&module);
    assert!(text.contains("custom[posites2]8"), "{text}");
    let err = "custom[posites2]64"
        .parse::<DType>()
        .unwrap_err()
        .to_string();
    assert!(err.contains("does not come in 64 bits"), "{err}");
    assert!(err.contains("custom[posites2]8|16|32 (code 132)"), "{err}");
    let err = parse_module("def @main(%x: Tensor[(4), custom[posit]16]) { %x }")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("'posit' is not registered; registered: custom[posites2]8|16|32 (code 132)"),
        "{err}"
    );
}

#[test]
fn byoc_plugins_lists_the_datatype() {
    let out = Command::new(env!("CARGO_BIN_EXE_byoc"))
        .args(["plugins", "--plugin-path"])
        .arg(posit_so())
        .output()
        .expect("byoc runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("datatype: custom[posites2]8|16|32 (code 132, 75 library functions)"),
        "{stdout}"
    );
}
