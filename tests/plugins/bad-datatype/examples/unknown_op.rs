//! The `bad-datatype` test plugin with the [`Malformation::UnknownOp`] declaration.

use byoc_testplugin_bad_datatype::{BadDatatype, Malformation};

byoc_sdk::export_plugin!(BadDatatype, BadDatatype(Malformation::UnknownOp));
