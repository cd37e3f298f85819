//! Posits of the 2022 Posit Standard: `posit<8|16|32, es=2>`, TVM's `posites2`.
//!
//! [`Posit<N>`](Posit) holds the `N`-bit encoding. Every operation is correctly rounded: the
//! result is the exact real result rounded once, to nearest with ties to even on the encoding
//! (the standard's rule; where exponent bits are cut off the midpoint is geometric), never to
//! zero or NaR. Division by zero, the square root or logarithm of a negative number, and any
//! NaR operand give NaR. Posits are ordered like two's-complement integers, so comparison,
//! `min`, `max`, negation and `abs` are integer operations on the encoding.
//!
//! - [`format`]: the encoding (decode to sign, scale and significand; correctly rounded encode).
//! - [`arith`]: `+ - * /` and `sqrt`.
//! - [`convert`]: casts from and to `f32`, `f64` and integers.
//! - [`elementary`]: `exp`, `log`, `tanh`, `sigmoid`.
//! - [`quire`]: the `16n`-bit exact accumulator for dot products.
//! - [`cabi`]: the C-ABI library functions with TVM's names (`Posit16es2Add`, ...).
//! - [`plugin`]: the byoc plugin that registers `posites2` (`custom[posites2]8|16|32`) with
//!   its lowering table, exported from the `cdylib`.

pub mod arith;
pub mod cabi;
pub mod convert;
pub mod elementary;
pub mod format;
pub mod plugin;
pub mod quire;

pub use format::Posit;
pub use plugin::{PositPlugin, DATATYPE_CODE, DATATYPE_NAME};
pub use quire::Quire;

/// `posit<8, 2>`.
pub type P8 = Posit<8>;
/// `posit<16, 2>`.
pub type P16 = Posit<16>;
/// `posit<32, 2>`.
pub type P32 = Posit<32>;

byoc_sdk::export_plugin!(PositPlugin, PositPlugin);
