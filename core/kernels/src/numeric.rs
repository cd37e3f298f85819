//! Element traits shared by the numeric kernels.
//!
//! [`Acc`] is a type products are accumulated in (f32, f64, or i32 for the quantized path, where
//! arithmetic wraps like TVM's int32 accumulation); [`Widen`] converts an input element to its
//! accumulation type exactly (int8/uint8 to int32, floats to themselves) and says which inputs
//! are bytes the int8 GEMM reads as they are; [`Real`] is the
//! floating-point math the normalization, pooling and resize kernels need.

use std::any::TypeId;
use std::borrow::Cow;

use byoc_ir::tensor::Element;

/// A type GEMM-like kernels accumulate in.
pub(crate) trait Acc: Element + Default + PartialEq {
    /// `self + a * b` (wrapping for integers).
    fn mul_add(self, a: Self, b: Self) -> Self;
    /// `self + a` (wrapping for integers).
    fn add(self, a: Self) -> Self;
}

macro_rules! acc_float {
    ($($t:ty),*) => {$(
        impl Acc for $t {
            #[inline(always)]
            fn mul_add(self, a: Self, b: Self) -> Self {
                self + a * b
            }
            #[inline(always)]
            fn add(self, a: Self) -> Self {
                self + a
            }
        }
    )*};
}
acc_float!(f32, f64);

impl Acc for i32 {
    #[inline(always)]
    fn mul_add(self, a: Self, b: Self) -> Self {
        self.wrapping_add(a.wrapping_mul(b))
    }
    #[inline(always)]
    fn add(self, a: Self) -> Self {
        self.wrapping_add(a)
    }
}

/// An input element that converts exactly into the accumulation type `T`.
pub(crate) trait Widen<T>: Element {
    /// For 8-bit integers, whether they are signed (`i8`) or not (`u8`): the int8 GEMM reads
    /// such operands as bytes instead of widening them.
    const SIGNED_BYTE: Option<bool> = None;
    /// The value as a `T`.
    fn widen(self) -> T;
}

macro_rules! widen {
    ($($from:ty => $to:ty $(, $signed:expr)?);*) => {$(
        impl Widen<$to> for $from {
            $(const SIGNED_BYTE: Option<bool> = Some($signed);)?
            #[inline(always)]
            fn widen(self) -> $to {
                <$to>::from(self)
            }
        }
    )*};
}
widen!(f32 => f32; f64 => f64; i8 => i32, true; u8 => i32, false; i32 => i32);

/// `x` as a slice of `T`: borrowed when `A` is `T`, converted otherwise.
pub(crate) fn widen_slice<A: Widen<T>, T: Element>(x: &[A]) -> Cow<'_, [T]> {
    if TypeId::of::<A>() == TypeId::of::<T>() {
        Cow::Borrowed(bytemuck::cast_slice(x))
    } else {
        Cow::Owned(x.iter().map(|&v| v.widen()).collect())
    }
}

/// Floating-point element math.
pub(crate) trait Real:
    Element
    + Default
    + PartialOrd
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
{
    /// Negative infinity (the identity of max).
    const NEG_INFINITY: Self;
    /// The lowest finite value.
    const MIN: Self;
    /// Zero.
    const ZERO: Self;
    /// One.
    const ONE: Self;
    /// The nearest value of this type to `v`.
    fn from_f64(v: f64) -> Self;
    /// The value as f64.
    fn to_f64(self) -> f64;
    /// e^self.
    fn exp(self) -> Self;
    /// Natural logarithm.
    fn ln(self) -> Self;
    /// Square root.
    fn sqrt(self) -> Self;
    /// self^e.
    fn powf(self, e: Self) -> Self;
    /// The larger of the two (NaN-propagating is not required).
    fn max(self, other: Self) -> Self;
}

macro_rules! real {
    ($($t:ident),*) => {$(
        impl Real for $t {
            const NEG_INFINITY: Self = $t::NEG_INFINITY;
            const MIN: Self = $t::MIN;
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                f64::from(self)
            }
            #[inline(always)]
            fn exp(self) -> Self {
                $t::exp(self)
            }
            #[inline(always)]
            fn ln(self) -> Self {
                $t::ln(self)
            }
            #[inline(always)]
            fn sqrt(self) -> Self {
                $t::sqrt(self)
            }
            #[inline(always)]
            fn powf(self, e: Self) -> Self {
                $t::powf(self, e)
            }
            #[inline(always)]
            fn max(self, other: Self) -> Self {
                $t::max(self, other)
            }
        }
    )*};
}
real!(f32, f64);
