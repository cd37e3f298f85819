//! Plugin options that change how the host computes on a custom datatype: today, whether sums
//! of products use the datatype's exact dot product ([`LoweringKey::DotProduct`]).
//!
//! A datatype that has `DotProduct` lowerings names the plugin flag that enables them
//! ([`byoc_sdk::CustomDatatype::dot_product_option`], `quire` for the posit plugin). The
//! option reaches the host as every plugin option does, `--plugin-option <plugin>.<flag>=true`
//! in the [`CompileOptions`]; [`apply_datatype_options`] reads it for every registered
//! datatype and records the choice beside the registry, where [`super::DatatypeCalls`] reads
//! it when a kernel is built. Like TVM's datatype registry (and the registry of resolved
//! lowering tables here), the choice is process-wide: it holds for every module planned after
//! the call, until the next call.

use std::collections::BTreeSet;
use std::sync::{OnceLock, RwLock};

use super::libraries::datatype_libraries;
use byoc_sdk::{CompileOptions, OptionKind, OptionsError};

fn enabled() -> &'static RwLock<BTreeSet<u8>> {
    static CODES: OnceLock<RwLock<BTreeSet<u8>>> = OnceLock::new();
    CODES.get_or_init(|| RwLock::new(BTreeSet::new()))
}

/// A datatype whose sums of products use its exact dot product.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DotProductSetting {
    /// The option that enabled it (`posit.quire`).
    pub key: String,
    /// The datatype's name (`posites2`).
    pub datatype: String,
    /// The datatype's code.
    pub code: u8,
    /// The datatype's widths as `8|16|32`.
    pub widths: String,
}

/// Reads, for every registered datatype with a dot-product option, the flag
/// `<plugin>.<option>` of `options` (absent: `false`) and records whether the host sums its
/// products with the `DotProduct` lowering. Returns the datatypes it is on for; a value other
/// than `true` or `false` is an error naming the key.
pub fn apply_datatype_options(
    options: &CompileOptions,
) -> Result<Vec<DotProductSetting>, OptionsError> {
    let mut on = Vec::new();
    let mut codes = BTreeSet::new();
    for library in datatype_libraries() {
        let d = &library.datatype;
        let Some(option) = &d.dot_product_option else {
            continue;
        };
        let key = format!("{}.{option}", library.plugin);
        let value = match options.get(&key) {
            None | Some("false") => false,
            Some("true") => true,
            Some(other) => {
                return Err(OptionsError::Invalid {
                    key,
                    value: other.to_string(),
                    expected: OptionKind::Flag,
                })
            }
        };
        if value {
            codes.insert(d.code);
            on.push(DotProductSetting {
                key,
                datatype: d.name.clone(),
                code: d.code,
                widths: d.widths_text(),
            });
        }
    }
    *enabled().write().unwrap_or_else(|e| e.into_inner()) = codes;
    Ok(on)
}

/// Whether sums of products of the datatype `code` use its `DotProduct` lowering.
pub fn uses_dot_product(code: u8) -> bool {
    enabled()
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .contains(&code)
}

/// The names of the plugins that registered datatypes: the scopes of datatype options, which
/// these plugins read even when they are no target.
pub fn datatype_plugins() -> Vec<String> {
    let mut names: Vec<String> = datatype_libraries()
        .iter()
        .map(|l| l.plugin.clone())
        .collect();
    names.sort();
    names.dedup();
    names
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datatypes::{register_datatypes, DatatypeCalls};
    use byoc_ir::DType;
    use byoc_sdk::{CustomDatatype, DatatypeLowering, LoweringKey};

    /// A stand-in dot product: the wrapping integer `Σ a·b` of the bit patterns.
    unsafe extern "C" fn integer_dot(a: *const u16, b: *const u16, len: usize) -> u16 {
        // SAFETY: the caller passes `len` elements behind each pointer.
        let (a, b) = unsafe {
            (
                std::slice::from_raw_parts(a, len),
                std::slice::from_raw_parts(b, len),
            )
        };
        a.iter()
            .zip(b)
            .fold(0u16, |acc, (&x, &y)| acc.wrapping_add(x.wrapping_mul(y)))
    }

    #[test]
    fn the_option_turns_the_dot_product_on_and_off() {
        let mut d = CustomDatatype {
            name: "dottest".into(),
            code: 245,
            widths: vec![16],
            lowerings: Vec::new(),
            dot_product_option: Some("exact".into()),
        };
        let keys = d
            .float_casts(16)
            .into_iter()
            .chain([LoweringKey::DotProduct { bits: 16 }]);
        for (i, key) in keys.enumerate() {
            d.lowerings.push(DatatypeLowering {
                key,
                function: format!("f{i}"),
            });
        }
        let dot = integer_dot as unsafe extern "C" fn(*const u16, *const u16, usize) -> u16;
        register_datatypes("dp", &[d], |s| {
            Some(if s == "f2" { dot as usize } else { 1 })
        })
        .unwrap();
        let calls = DatatypeCalls::new("custom[dottest]16".parse::<DType>().unwrap()).unwrap();
        assert!(calls.dot_product().is_none(), "off by default");
        assert!(datatype_plugins().contains(&"dp".to_string()));

        let on = apply_datatype_options(&CompileOptions::new().with("dp.exact", "true")).unwrap();
        assert_eq!(
            on,
            [DotProductSetting {
                key: "dp.exact".into(),
                datatype: "dottest".into(),
                code: 245,
                widths: "16".into(),
            }]
        );
        let call = calls.dot_product().expect("on");
        assert_eq!(
            call.call(&[2, 3, 7], &[4, 5]),
            2 * 4 + 3 * 5,
            "the common length"
        );
        assert_eq!(call.call(&[], &[]), 0);

        let err = apply_datatype_options(&CompileOptions::new().with("dp.exact", "yes"))
            .unwrap_err()
            .to_string();
        assert_eq!(err, "option 'dp.exact=yes': expected true or false");
        apply_datatype_options(&CompileOptions::new().with("dp.exact", "false")).unwrap();
        assert!(calls.dot_product().is_none());
    }
}
