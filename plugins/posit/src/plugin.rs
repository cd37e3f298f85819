//! The byoc plugin: it offloads no ops and brings one datatype, `posites2` (code 132, TVM's
//! test code), in 8, 16 and 32 bits, with the lowering table that maps every op, intrinsic and
//! cast to the C functions of [`crate::cabi`], and the quire's exact dot product
//! (`PositNes2QuireDot`) as the `DotProduct` lowering, enabled by the flag `posit.quire`.

use byoc_sdk::{
    CompileOptions, CompiledModule, CustomDatatype, DatatypeLowering, LoweringKey, OptionSchema,
    PartitionedFunction, Plugin, PluginError, TargetDescription,
};

/// The datatype name, `custom[posites2]N`.
pub const DATATYPE_NAME: &str = "posites2";
/// The datatype code (TVM's tests register `posites2` as 132).
pub const DATATYPE_CODE: u8 = 132;
/// The widths.
pub const WIDTHS: [u16; 3] = [8, 16, 32];
/// The plugin's name, the scope of its options.
pub const PLUGIN_NAME: &str = "posit";
/// The flag (`posit.quire=true`) that makes the host sum products in the quire.
pub const QUIRE_OPTION: &str = "quire";

/// The options: `posit.quire`, off by default (TVM's sequential posit sums).
pub fn options_schema() -> OptionSchema {
    OptionSchema::new(PLUGIN_NAME).flag(
        QUIRE_OPTION,
        false,
        "sum the products of conv2d, dense, batch_matmul and average pooling in the quire, rounding each output once",
    )
}

/// Binary ops and comparisons with the suffix of their function (`Posit16es2Add`).
const BINARY: [&str; 12] = [
    "Add", "Sub", "Mul", "Div", "Max", "Min", "EQ", "NE", "LT", "LE", "GT", "GE",
];

/// Intrinsics with the suffix of their function (`Posit16es2Sqrt`).
const INTRINSICS: [(&str, &str); 6] = [
    ("tir.sqrt", "Sqrt"),
    ("tir.fabs", "Abs"),
    ("tir.exp", "Exp"),
    ("tir.log", "Log"),
    ("tir.tanh", "Tanh"),
    ("tir.sigmoid", "Sigmoid"),
];

/// The `posites2` declaration with its lowering table.
pub fn posites2() -> CustomDatatype {
    let mut lowerings = Vec::new();
    let mut add = |key, function: String| lowerings.push(DatatypeLowering { key, function });
    for bits in WIDTHS {
        let posit = format!("Posit{bits}es2");
        for op in BINARY {
            add(
                LoweringKey::Op {
                    op: op.to_string(),
                    bits,
                },
                format!("{posit}{op}"),
            );
        }
        add(
            LoweringKey::Op {
                op: "FloatImm".to_string(),
                bits,
            },
            format!("DoubleToPosit{bits}es2"),
        );
        for (name, suffix) in INTRINSICS {
            add(
                LoweringKey::Intrinsic {
                    name: name.to_string(),
                    bits,
                },
                format!("{posit}{suffix}"),
            );
        }
        // Casts from and to float32, float64 and int32.
        for (native, native_bits, from, to) in [
            ("float", 32, "Float", "Float"),
            ("float", 64, "Double", "Double"),
            ("int", 32, "Int", "Int"),
        ] {
            add(
                LoweringKey::Cast {
                    src: native.to_string(),
                    dst: DATATYPE_NAME.to_string(),
                    src_bits: native_bits,
                    dst_bits: bits,
                },
                format!("{from}ToPosit{bits}es2"),
            );
            add(
                LoweringKey::Cast {
                    src: DATATYPE_NAME.to_string(),
                    dst: native.to_string(),
                    src_bits: bits,
                    dst_bits: native_bits,
                },
                format!("{posit}To{to}"),
            );
        }
        add(LoweringKey::MinValue { bits }, format!("MinPosit{bits}es2"));
        add(LoweringKey::DotProduct { bits }, format!("{posit}QuireDot"));
    }
    CustomDatatype {
        name: DATATYPE_NAME.to_string(),
        code: DATATYPE_CODE,
        widths: WIDTHS.to_vec(),
        lowerings,
        dot_product_option: Some(QUIRE_OPTION.to_string()),
    }
}

/// The posit plugin.
#[derive(Clone, Copy, Debug, Default)]
pub struct PositPlugin;

impl PositPlugin {
    fn no_partitions() -> PluginError {
        PluginError::new(format!(
            "the posit plugin brings the '{DATATYPE_NAME}' datatype and offloads no ops, so it has no partitions to compile"
        ))
    }
}

impl Plugin for PositPlugin {
    fn name(&self) -> &str {
        PLUGIN_NAME
    }

    fn version(&self) -> &str {
        env!("CARGO_PKG_VERSION")
    }

    fn describe(&self) -> TargetDescription {
        TargetDescription::new(PLUGIN_NAME).with_datatype(posites2())
    }

    fn options(&self) -> OptionSchema {
        options_schema()
    }

    fn compile(
        &self,
        _function: &PartitionedFunction,
        _options: &CompileOptions,
    ) -> Result<Box<dyn CompiledModule>, PluginError> {
        Err(Self::no_partitions())
    }

    fn deserialize(
        &self,
        _bytes: &[u8],
        _options: &CompileOptions,
    ) -> Result<Box<dyn CompiledModule>, PluginError> {
        Err(Self::no_partitions())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_declaration_is_valid() {
        let d = posites2();
        d.validate().unwrap();
        // 12 ops, FloatImm, 5 intrinsics, 6 casts, the min value and the dot product per width.
        assert_eq!(d.lowerings.len(), 3 * 27);
        let sqrt = LoweringKey::Intrinsic {
            name: "tir.sqrt".into(),
            bits: 16,
        };
        assert_eq!(d.function(&sqrt), Some("Posit16es2Sqrt"));
        let dot = LoweringKey::DotProduct { bits: 8 };
        assert_eq!(d.function(&dot), Some("Posit8es2QuireDot"));
        let options = options_schema()
            .parse(&CompileOptions::new().with("posit.quire", "true"))
            .unwrap();
        assert!(options.flag(QUIRE_OPTION));
        assert!(!options_schema()
            .parse(&CompileOptions::new())
            .unwrap()
            .flag(QUIRE_OPTION));
    }
}
