//! `bad-datatype`: a test plugin that brings one custom datatype, `custom[<name>]16`, with a
//! declaration the host must refuse when it loads the library. Each example of this crate
//! exports the plugin with one [`Malformation`] as its own plugin library:
//!
//! - `byoc_testplugin_taken_code`: `custom[stolen]16` with code 132, the posit plugin's;
//! - `byoc_testplugin_unknown_op`: a lowering for the op `Pow`, which TVM's table lacks;
//! - `byoc_testplugin_bad_cast`: a cast from `double`, not a type name casts use (`float`);
//! - `byoc_testplugin_missing_symbol`: an `Add` lowering naming a function the library does
//!   not export.
//!
//! Apart from that one problem the declarations are complete: the float32 casts every width
//! needs are exported below.

use byoc_sdk::{
    CompileOptions, CompiledModule, CustomDatatype, DatatypeLowering, LoweringKey,
    PartitionedFunction, Plugin, PluginError, TargetDescription,
};

/// What is wrong with the declaration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Malformation {
    /// The code of a datatype another plugin registered (posit's 132).
    TakenCode,
    /// A lowering keyed by an op TVM's table does not have.
    UnknownOp,
    /// A cast whose other side is not `float`, `int` or `uint`.
    BadCast,
    /// A lowering whose function the library does not export.
    MissingSymbol,
}

impl Malformation {
    /// The plugin's name (each example is its own plugin).
    fn plugin(self) -> &'static str {
        match self {
            Malformation::TakenCode => "takencode",
            Malformation::UnknownOp => "unknownop",
            Malformation::BadCast => "badcast",
            Malformation::MissingSymbol => "missingsymbol",
        }
    }

    /// The datatype's name.
    fn datatype(self) -> &'static str {
        match self {
            Malformation::TakenCode => "stolen",
            _ => "broken",
        }
    }
}

/// `float` to the datatype: the bits of the float32's upper half.
#[no_mangle]
pub extern "C" fn BrokenFromFloat(x: f32) -> u16 {
    (x.to_bits() >> 16) as u16
}

/// The datatype to `float`.
#[no_mangle]
pub extern "C" fn BrokenToFloat(x: u16) -> f32 {
    f32::from_bits(u32::from(x) << 16)
}

/// The plugin with one malformed datatype declaration.
#[derive(Clone, Copy, Debug)]
pub struct BadDatatype(pub Malformation);

impl BadDatatype {
    /// The declaration, malformed as chosen.
    fn declaration(self) -> CustomDatatype {
        let name = self.0.datatype();
        let mut d = CustomDatatype {
            name: name.to_string(),
            code: if self.0 == Malformation::TakenCode {
                132
            } else {
                230
            },
            widths: vec![16],
            lowerings: Vec::new(),
            dot_product_option: None,
        };
        let [from_float, to_float] = d.float_casts(16);
        let mut lower = |key, function: &str| {
            d.lowerings.push(DatatypeLowering {
                key,
                function: function.to_string(),
            })
        };
        lower(from_float, "BrokenFromFloat");
        lower(to_float, "BrokenToFloat");
        match self.0 {
            Malformation::TakenCode => {}
            Malformation::UnknownOp => lower(
                LoweringKey::Op {
                    op: "Pow".into(),
                    bits: 16,
                },
                "BrokenToFloat",
            ),
            Malformation::BadCast => lower(
                LoweringKey::Cast {
                    src: "double".into(),
                    dst: name.into(),
                    src_bits: 64,
                    dst_bits: 16,
                },
                "BrokenFromFloat",
            ),
            Malformation::MissingSymbol => lower(
                LoweringKey::Op {
                    op: "Add".into(),
                    bits: 16,
                },
                "BrokenAdd",
            ),
        }
        d
    }

    fn no_partitions(self) -> PluginError {
        PluginError::new(format!(
            "the {} test plugin offloads no ops",
            self.0.plugin()
        ))
    }
}

impl Plugin for BadDatatype {
    fn name(&self) -> &str {
        self.0.plugin()
    }

    fn version(&self) -> &str {
        "0.0.1"
    }

    fn describe(&self) -> TargetDescription {
        TargetDescription::new(self.0.plugin()).with_datatype(self.declaration())
    }

    fn compile(
        &self,
        _function: &PartitionedFunction,
        _options: &CompileOptions,
    ) -> Result<Box<dyn CompiledModule>, PluginError> {
        Err(self.no_partitions())
    }

    fn deserialize(
        &self,
        _bytes: &[u8],
        _options: &CompileOptions,
    ) -> Result<Box<dyn CompiledModule>, PluginError> {
        Err(self.no_partitions())
    }
}
