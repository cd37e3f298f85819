//! The dataflow IR: modules of global functions over an arena of expressions.
//!
//! - [`Module`]: named global functions, `@main` among them.
//! - [`Function`]: parameters, body, attributes, and the arena of [`Node`]s addressed by
//!   [`ExprId`]; operands precede users, so arena order is topological.
//! - [`Expr`]: variables, constants, calls (of ops, globals, local function literals),
//!   tuples, tuple-get-item, local function literals.
//! - [`Type`], [`DType`], [`Attrs`]: types, element types, attribute values.

pub mod analysis;
mod attrs;
pub mod dims;
mod dtype;
mod error;
mod expr;
mod function;
mod infer_type;
pub mod memory;
mod module;
pub mod op;
pub mod ops;
pub mod partition;
pub mod rewrite;
pub mod stages;
mod structural_eq;
pub mod target;
pub mod tensor;
pub mod text;
mod ty;
mod verify;

pub use attrs::{escape, AttrValue, Attrs};
pub use dtype::{
    custom_dtype_by_code, custom_dtype_by_name, custom_dtypes, register_custom_dtype, CustomDType,
    DType, DTypeError,
};
pub use error::{IrError, VerifyError};
pub use expr::{Call, Callee, Expr, ExprId, LocalFunction, Node, Operands, Span, Var};
pub use function::{Function, FunctionBuilder};
pub use infer_type::{infer_function, infer_missing_types, infer_types, TypeInferError};
pub use module::Module;
pub use structural_eq::{structural_eq_function, structural_eq_module, Mismatch};
pub use tensor::Tensor;
pub use ty::{FuncType, TensorType, Type};
pub use verify::verify_function;
