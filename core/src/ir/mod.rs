//! The dataflow IR: modules of global functions over an arena of expressions.
//!
//! - [`Module`]: named global functions, `@main` among them.
//! - [`Function`]: parameters, body, attributes, and the arena of [`Node`]s addressed by
//!   [`ExprId`]; operands precede users, so arena order is topological.
//! - [`Expr`]: variables, constants, calls (of ops, globals, local function literals),
//!   tuples, tuple-get-item, local function literals.
//! - [`Type`], [`DType`], [`Attrs`]: types, element types, attribute values.

mod attrs;
mod dtype;
mod error;
mod expr;
mod function;
mod module;
pub mod rewrite;
mod structural_eq;
mod ty;
mod verify;

pub use attrs::{escape, AttrValue, Attrs};
pub use dtype::{
    custom_dtype_by_code, custom_dtype_by_name, custom_dtypes, register_custom_dtype, CustomDType,
    DType, DTypeError,
};
pub use error::IrError;
pub use expr::{Call, Callee, Expr, ExprId, LocalFunction, Node, Operands, Span, Var};
pub use function::{Function, FunctionBuilder};
pub use module::Module;
pub use structural_eq::{structural_eq_function, structural_eq_module, Mismatch};
pub use ty::{FuncType, TensorType, Type};
pub use verify::verify_function;
