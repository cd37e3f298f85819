//! Casts between posits and `f32`, `f64` and integers.
//!
//! From IEEE floats and integers: one correct rounding ([`Posit::round`]); zero gives zero,
//! NaN and infinities give NaR. To `f64`: exact (a posit of up to 32 bits has at most 28
//! significant bits and a scale within ±120). To `f32`: the exact value rounded once to
//! nearest-even by the `f64` to `f32` conversion. To integers: rounded to nearest, ties to
//! even, saturating at the integer range; NaR gives the most negative integer, the standard's
//! integer NaN.

use crate::format::{Class, Posit, Unrounded};

impl<const N: u32> Posit<N> {
    /// The correctly rounded posit of an `f64`.
    pub fn from_f64(x: f64) -> Self {
        if x == 0.0 {
            return Self::ZERO;
        }
        if !x.is_finite() {
            return Self::NAR;
        }
        let bits = x.to_bits();
        let neg = bits >> 63 == 1;
        let biased = ((bits >> 52) & 0x7FF) as i32;
        let fraction = bits & ((1 << 52) - 1);
        let (m, exp) = if biased == 0 {
            (fraction, -1074) // subnormal: no hidden bit
        } else {
            (fraction | (1 << 52), biased - 1075)
        };
        Self::round(Unrounded::from_u128(neg, u128::from(m), exp))
    }

    /// The correctly rounded posit of an `f32`.
    pub fn from_f32(x: f32) -> Self {
        Self::from_f64(f64::from(x))
    }

    /// The correctly rounded posit of an integer.
    pub fn from_i64(x: i64) -> Self {
        if x == 0 {
            return Self::ZERO;
        }
        Self::round(Unrounded::from_u128(x < 0, u128::from(x.unsigned_abs()), 0))
    }

    /// The correctly rounded posit of an unsigned integer.
    pub fn from_u64(x: u64) -> Self {
        if x == 0 {
            return Self::ZERO;
        }
        Self::round(Unrounded::from_u128(false, u128::from(x), 0))
    }

    /// The exact value as an `f64` (NaR is NaN).
    pub fn to_f64(self) -> f64 {
        match self.class() {
            Class::Zero => 0.0,
            Class::NaR => f64::NAN,
            Class::Real(u) => {
                // |scale| <= 120: a normal f64. The significand's 63 bits below the hidden one
                // hold at most 27 nonzero bits, all within f64's 52.
                let bits = (u64::from(u.neg) << 63)
                    | (((u.scale + 1023) as u64) << 52)
                    | ((u.sig << 1) >> 12);
                f64::from_bits(bits)
            }
        }
    }

    /// The value rounded to the nearest `f32` (NaR is NaN).
    pub fn to_f32(self) -> f32 {
        self.to_f64() as f32
    }

    /// The value rounded to the nearest integer, ties to even, saturating; NaR is `i64::MIN`.
    pub fn to_i64(self) -> i64 {
        let u = match self.class() {
            Class::Zero => return 0,
            Class::NaR => return i64::MIN,
            Class::Real(u) => u,
        };
        if u.scale >= 63 {
            return if u.neg { i64::MIN } else { i64::MAX };
        }
        if u.scale < -1 {
            return 0; // below one half
        }
        // The value in fixed point with 64 fraction bits.
        let fixed = u128::from(u.sig) << (u.scale + 1);
        let whole = fixed >> 64;
        let fraction = fixed as u64;
        let half = 1u64 << 63;
        let rounded = if fraction > half || (fraction == half && whole & 1 == 1) {
            whole + 1
        } else {
            whole
        };
        // rounded <= 2^63 since scale <= 62.
        if u.neg {
            0i64.wrapping_sub(rounded as i64)
        } else {
            i64::try_from(rounded).unwrap_or(i64::MAX)
        }
    }

    /// The value rounded to the nearest `i32`, ties to even, saturating; NaR is `i32::MIN`.
    pub fn to_i32(self) -> i32 {
        if self.is_nar() {
            return i32::MIN;
        }
        let wide = self.to_i64();
        i32::try_from(wide).unwrap_or(if wide < 0 { i32::MIN } else { i32::MAX })
    }
}

impl<const N: u32> From<f32> for Posit<N> {
    fn from(x: f32) -> Self {
        Self::from_f32(x)
    }
}

impl<const N: u32> From<f64> for Posit<N> {
    fn from(x: f64) -> Self {
        Self::from_f64(x)
    }
}

impl<const N: u32> From<i32> for Posit<N> {
    fn from(x: i32) -> Self {
        Self::from_i64(i64::from(x))
    }
}

impl<const N: u32> From<Posit<N>> for f64 {
    fn from(p: Posit<N>) -> f64 {
        p.to_f64()
    }
}
