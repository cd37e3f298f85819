//! Element arithmetic shared by the kernels, with C semantics for integers.
//!
//! Integer arithmetic wraps on overflow (two's complement, as C code on every target TVM
//! supports does for the quantized path). Integer division truncates toward zero (TVM's
//! `truncdiv`, C's `/`); division by zero gives 0 instead of trapping. Conversions between
//! dtypes go through [`Wide`] and follow Rust's `as`, which equals C's conversion wherever C
//! defines one: integer narrowing keeps the low bits, float to integer truncates toward zero and
//! saturates at the target's range (NaN becomes 0) where C leaves the result undefined.

use byoc_ir::tensor::Element;

/// A value in the widest type of its kind, the pivot of dtype conversions.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Wide {
    /// Any integer (every built-in integer dtype fits in `i64`).
    Int(i64),
    /// Any float.
    Float(f64),
}

/// An element type the arithmetic kernels compute on.
pub(crate) trait Scalar: Element + PartialOrd {
    /// Zero.
    const ZERO: Self;
    /// One.
    const ONE: Self;
    /// The smallest value (-inf for floats), the identity of `max`.
    const LOWEST: Self;
    /// The largest value (+inf for floats), the identity of `min`.
    const HIGHEST: Self;
    /// The value widened (exactly).
    fn to_wide(self) -> Wide;
    /// Converts like a C cast (see the module doc).
    fn from_wide(w: Wide) -> Self;
    /// `a + b` (wrapping for integers).
    fn add(self, o: Self) -> Self;
    /// `a - b` (wrapping for integers).
    fn sub(self, o: Self) -> Self;
    /// `a * b` (wrapping for integers).
    fn mul(self, o: Self) -> Self;
    /// `a / b` (truncating for integers; 0 when dividing an integer by zero).
    fn div(self, o: Self) -> Self;
    /// `a ** b` (integers: repeated wrapping multiplication, negative exponents truncate).
    fn pow(self, o: Self) -> Self;
    /// `-a` (wrapping for integers).
    fn neg(self) -> Self;
    /// `|a|` (wrapping for integers: `abs(MIN) == MIN`).
    fn abs(self) -> Self;
}

/// Floating-point element types.
pub(crate) trait Float: Scalar {
    /// Applies an `f64` function at this type's precision.
    fn exp(self) -> Self;
    /// Natural logarithm.
    fn ln(self) -> Self;
    /// Square root.
    fn sqrt(self) -> Self;
    /// Hyperbolic tangent.
    fn tanh(self) -> Self;
    /// The error function.
    fn erf(self) -> Self;
    /// Round down.
    fn floor(self) -> Self;
    /// Round up.
    fn ceil(self) -> Self;
    /// Round to nearest, ties to even.
    fn round_ties_even(self) -> Self;
}

/// Integer element types.
pub(crate) trait Int: Scalar {
    /// `a << n`; shifts by `n >= bits` give 0, negative `n` leaves `a` unchanged.
    fn shl(self, n: Self) -> Self;
    /// `a >> n` (arithmetic for signed types); shifts by `n >= bits` give the sign fill,
    /// negative `n` leaves `a` unchanged.
    fn shr(self, n: Self) -> Self;
}

macro_rules! float_scalar {
    ($($t:ident, $erf:path);*) => {$(
        impl Scalar for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            const LOWEST: Self = $t::NEG_INFINITY;
            const HIGHEST: Self = $t::INFINITY;
            fn to_wide(self) -> Wide {
                Wide::Float(f64::from(self))
            }
            #[allow(clippy::cast_possible_truncation, reason = "C conversion semantics")]
            fn from_wide(w: Wide) -> Self {
                match w {
                    Wide::Int(v) => v as $t,
                    Wide::Float(v) => v as $t,
                }
            }
            fn add(self, o: Self) -> Self { self + o }
            fn sub(self, o: Self) -> Self { self - o }
            fn mul(self, o: Self) -> Self { self * o }
            fn div(self, o: Self) -> Self { self / o }
            fn pow(self, o: Self) -> Self { self.powf(o) }
            fn neg(self) -> Self { -self }
            fn abs(self) -> Self { $t::abs(self) }
        }

        impl Float for $t {
            fn exp(self) -> Self { $t::exp(self) }
            fn ln(self) -> Self { $t::ln(self) }
            fn sqrt(self) -> Self { $t::sqrt(self) }
            fn tanh(self) -> Self { $t::tanh(self) }
            fn erf(self) -> Self { $erf(self) }
            fn floor(self) -> Self { $t::floor(self) }
            fn ceil(self) -> Self { $t::ceil(self) }
            fn round_ties_even(self) -> Self { $t::round_ties_even(self) }
        }
    )*};
}

float_scalar!(f32, c_erf::erff; f64, c_erf::erf);

/// The C library's error functions, which compiled host code (`byoc-host-llvm`) calls too, so
/// the reference kernels and compiled code agree bit for bit, as they do for `exp` and `tanh`
/// (Rust's `f32::exp` is the C library's `expf`).
mod c_erf {
    mod ffi {
        extern "C" {
            pub fn erff(x: f32) -> f32;
            pub fn erf(x: f64) -> f64;
        }
    }

    /// `erff(x)`.
    pub fn erff(x: f32) -> f32 {
        // SAFETY: a pure C math function, defined for every float (NaN included).
        unsafe { ffi::erff(x) }
    }

    /// `erf(x)`.
    pub fn erf(x: f64) -> f64 {
        // SAFETY: a pure C math function, defined for every double (NaN included).
        unsafe { ffi::erf(x) }
    }
}

macro_rules! int_scalar {
    ($($t:ident),*) => {$(
        impl Scalar for $t {
            const ZERO: Self = 0;
            const ONE: Self = 1;
            const LOWEST: Self = $t::MIN;
            const HIGHEST: Self = $t::MAX;
            fn to_wide(self) -> Wide {
                Wide::Int(i64::from(self))
            }
            fn from_wide(w: Wide) -> Self {
                match w {
                    Wide::Int(v) => v as $t,
                    Wide::Float(v) => v as $t,
                }
            }
            fn add(self, o: Self) -> Self { self.wrapping_add(o) }
            fn sub(self, o: Self) -> Self { self.wrapping_sub(o) }
            fn mul(self, o: Self) -> Self { self.wrapping_mul(o) }
            fn div(self, o: Self) -> Self {
                if o == 0 { 0 } else { self.wrapping_div(o) }
            }
            fn pow(self, o: Self) -> Self {
                if i64::from(o) >= 0 {
                    // Only int64 exponents can exceed u32::MAX; they are clamped to it.
                    let e = u32::try_from(i64::from(o)).unwrap_or(u32::MAX);
                    self.wrapping_pow(e)
                } else {
                    // x ** -n truncates toward zero: only 1 and -1 give nonzero results.
                    match i64::from(self) {
                        1 => 1,
                        -1 => if i64::from(o) % 2 == 0 { 1 } else { self },
                        _ => 0,
                    }
                }
            }
            fn neg(self) -> Self { self.wrapping_neg() }
            #[allow(unused_comparisons, reason = "shared by signed and unsigned types")]
            fn abs(self) -> Self {
                if self < 0 { self.wrapping_neg() } else { self }
            }
        }

        impl Int for $t {
            fn shl(self, n: Self) -> Self {
                match u32::try_from(i64::from(n)) {
                    Ok(k) if k < $t::BITS => self << k,
                    Ok(_) => 0,
                    Err(_) => self,
                }
            }
            fn shr(self, n: Self) -> Self {
                match u32::try_from(i64::from(n)) {
                    Ok(k) => self >> k.min($t::BITS - 1),
                    Err(_) => self,
                }
            }
        }
    )*};
}

int_scalar!(i8, i16, i32, i64, u8);
