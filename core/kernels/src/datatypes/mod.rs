//! The calls of custom datatypes: the function tables of the datatype libraries plugins
//! register ([`libraries`]), the typed calls host kernels make through them ([`calls`]), and
//! the per-datatype options such as the quire dot product ([`options`]).

mod calls;
mod libraries;
mod options;

pub use calls::{
    convert_tensor, read_bits, write_bits, BinaryCall, CastCall, CompareCall, DatatypeCallError,
    DatatypeCalls, DotProductCall, UnaryCall,
};
pub use libraries::{
    datatype_libraries, datatype_library, register_datatypes, DatatypeLibrary,
    DatatypeRegistrationError, LibraryFunction,
};
pub use options::{apply_datatype_options, datatype_plugins, uses_dot_product, DotProductSetting};
