//! The host's registry of custom datatype libraries: for every datatype a loaded plugin
//! brings, its lowering table with each function resolved to an address in the plugin's
//! library.
//!
//! [`register_datatypes`] runs at load, after the plugin's description is read: it validates
//! each declaration ([`CustomDatatype::validate`]), resolves every function of the table
//! (a missing symbol refuses the plugin), registers the name, code and widths with the dtype
//! table (so `custom[name]bits` parses), and keeps the resolved table for the executors and
//! code generators that run ops on the datatype ([`datatype_library`]). Libraries are never
//! unloaded, so the addresses stay valid for the life of the process.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock, RwLock};

use thiserror::Error;

use byoc_ir::{register_custom_dtype, DTypeError};
use byoc_sdk::{CustomDatatype, DatatypeError, LoweringKey};

/// A resolved library function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LibraryFunction {
    /// The exported symbol.
    pub symbol: String,
    /// Its address in the loaded library. The C signature follows from the lowering key (see
    /// [`byoc_sdk::LoweringKey`]).
    pub address: usize,
}

/// A registered custom datatype with its resolved lowering table.
#[derive(Clone, Debug)]
pub struct DatatypeLibrary {
    /// The declaration as the plugin gave it.
    pub datatype: CustomDatatype,
    /// The plugin that brings it.
    pub plugin: String,
    /// The resolved functions by key.
    pub functions: BTreeMap<LoweringKey, LibraryFunction>,
}

impl DatatypeLibrary {
    /// The function of a key, if the table has one.
    pub fn function(&self, key: &LoweringKey) -> Option<&LibraryFunction> {
        self.functions.get(key)
    }
}

/// Why a plugin's datatypes cannot be registered.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DatatypeRegistrationError {
    /// The declaration is malformed.
    #[error(transparent)]
    Declaration(#[from] DatatypeError),
    /// The library does not export a function of the table.
    #[error(
        "datatype '{datatype}': lowering {key} names '{symbol}', which the library does not export"
    )]
    MissingSymbol {
        /// The datatype.
        datatype: String,
        /// The lowering, as TVM names it.
        key: String,
        /// The symbol.
        symbol: String,
    },
    /// The name or code is taken.
    #[error(transparent)]
    Taken(#[from] Box<DTypeError>),
}

fn libraries() -> &'static RwLock<Vec<Arc<DatatypeLibrary>>> {
    static TABLE: OnceLock<RwLock<Vec<Arc<DatatypeLibrary>>>> = OnceLock::new();
    TABLE.get_or_init(|| RwLock::new(Vec::new()))
}

/// Validates, resolves and registers the datatypes of one plugin. `lookup` gives the address
/// of an exported symbol. Nothing is registered unless every datatype is valid and resolves.
pub fn register_datatypes(
    plugin: &str,
    datatypes: &[CustomDatatype],
    lookup: impl Fn(&str) -> Option<usize>,
) -> Result<(), DatatypeRegistrationError> {
    let mut resolved = Vec::with_capacity(datatypes.len());
    for d in datatypes {
        d.validate()?;
        let mut functions = BTreeMap::new();
        for l in &d.lowerings {
            let address =
                lookup(&l.function).ok_or_else(|| DatatypeRegistrationError::MissingSymbol {
                    datatype: d.name.clone(),
                    key: l.key.to_string(),
                    symbol: l.function.clone(),
                })?;
            functions.insert(
                l.key.clone(),
                LibraryFunction {
                    symbol: l.function.clone(),
                    address,
                },
            );
        }
        resolved.push(DatatypeLibrary {
            datatype: d.clone(),
            plugin: plugin.to_string(),
            functions,
        });
    }
    let mut table = libraries().write().unwrap_or_else(|e| e.into_inner());
    for library in resolved {
        let d = &library.datatype;
        register_custom_dtype(&d.name, d.code, &d.widths).map_err(Box::new)?;
        // The same plugin loaded again (another path to the same library) keeps the first.
        if !table.iter().any(|l| l.datatype.code == d.code) {
            table.push(Arc::new(library));
        }
    }
    Ok(())
}

/// Every registered datatype library, in the order of registration.
pub fn datatype_libraries() -> Vec<Arc<DatatypeLibrary>> {
    libraries()
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
}

/// The library of a registered datatype code.
pub fn datatype_library(code: u8) -> Option<Arc<DatatypeLibrary>> {
    let table = libraries().read().unwrap_or_else(|e| e.into_inner());
    table.iter().find(|l| l.datatype.code == code).cloned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use byoc_ir::DType;
    use byoc_sdk::DatatypeLowering;

    fn declaration(name: &str, code: u8) -> CustomDatatype {
        let mut d = CustomDatatype {
            name: name.into(),
            code,
            widths: vec![16],
            lowerings: Vec::new(),
            dot_product_option: None,
        };
        for (i, key) in d.float_casts(16).into_iter().enumerate() {
            d.lowerings.push(DatatypeLowering {
                key,
                function: format!("{name}_cast{i}"),
            });
        }
        d
    }

    #[test]
    fn registered_datatypes_parse_and_resolve() {
        let d = declaration("regtest", 240);
        register_datatypes("p", std::slice::from_ref(&d), |s| Some(s.len())).unwrap();
        let dtype: DType = "custom[regtest]16".parse().unwrap();
        let DType::Custom { code, .. } = dtype else {
            panic!("{dtype:?}")
        };
        let library = datatype_library(code).unwrap();
        assert_eq!(library.plugin, "p");
        let cast = library.function(&d.float_casts(16)[0]).unwrap();
        assert_eq!(cast.symbol, "regtest_cast0");
        // Loading the same plugin again is not a conflict.
        register_datatypes("p", &[d], |s| Some(s.len())).unwrap();
    }

    #[test]
    fn missing_symbols_taken_codes_and_bad_tables_are_refused() {
        let d = declaration("symtest", 241);
        let err = register_datatypes("p", std::slice::from_ref(&d), |s| {
            (s != "symtest_cast1").then_some(1)
        })
        .unwrap_err();
        assert!(
            err.to_string()
                .contains("names 'symtest_cast1', which the library does not export"),
            "{err}"
        );
        assert!(datatype_library(241).is_none());
        assert!("custom[symtest]16".parse::<DType>().is_err());

        register_datatypes("p", &[declaration("owner", 242)], |_| Some(1)).unwrap();
        let err = register_datatypes("q", &[declaration("thief", 242)], |_| Some(1)).unwrap_err();
        assert!(
            err.to_string()
                .contains("conflicts with the registered custom[owner]16 (code 242)"),
            "{err}"
        );

        let mut bad = declaration("badtable", 243);
        bad.lowerings.pop();
        let err = register_datatypes("p", &[bad], |_| Some(1)).unwrap_err();
        assert!(
            err.to_string()
                .contains("has no Cast.float.badtable (16, 32)"),
            "{err}"
        );
    }
}
