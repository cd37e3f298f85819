//! `exp`, `log`, `tanh` and `sigmoid`.
//!
//! Each is evaluated in `f64` and rounded once to the posit. The `f64` result carries 53
//! significant bits against at most 13 for posit8 and posit16 (12 fraction bits and the
//! rounding bit), so its error (below one `f64` unit in the last place) can only change the
//! rounding when the exact result lies within about `2^-50` relative of a rounding boundary;
//! the exhaustive tests against a 300-bit reference show that no posit8 or posit16 input does,
//! so these functions are correctly rounded for them. For posit32 (up to 28 significant bits)
//! the result is within one posit step of the exact one.
//!
//! Results that are positive by nature (`exp`, `sigmoid`) never round to zero: an `f64`
//! underflow gives `minpos` and an overflow `maxpos`, as the posit rounding rule does. `log`
//! of zero or a negative number is NaR.

use crate::format::Posit;

impl<const N: u32> Posit<N> {
    /// The posit of a positive real computed in `f64`, where `f64` may have under- or
    /// overflowed.
    fn from_positive_f64(y: f64) -> Self {
        if y == 0.0 {
            Self::MINPOS
        } else if y == f64::INFINITY {
            Self::MAXPOS
        } else {
            Self::from_f64(y)
        }
    }

    /// `e^x`.
    pub fn exp(self) -> Self {
        if self.is_nar() {
            return Self::NAR;
        }
        Self::from_positive_f64(self.to_f64().exp())
    }

    /// The natural logarithm; zero and negative inputs give NaR.
    pub fn log(self) -> Self {
        if self.is_nar() || self.is_zero() || self.is_negative() {
            return Self::NAR;
        }
        Self::from_f64(self.to_f64().ln())
    }

    /// The hyperbolic tangent.
    pub fn tanh(self) -> Self {
        if self.is_nar() {
            return Self::NAR;
        }
        Self::from_f64(self.to_f64().tanh())
    }

    /// The logistic function `1 / (1 + e^-x)`.
    pub fn sigmoid(self) -> Self {
        if self.is_nar() {
            return Self::NAR;
        }
        let x = self.to_f64();
        // Each branch divides by a sum >= 1, so neither cancels nor loses relative precision.
        let y = if x >= 0.0 {
            1.0 / (1.0 + (-x).exp())
        } else {
            let e = x.exp();
            e / (1.0 + e)
        };
        Self::from_positive_f64(y)
    }
}
