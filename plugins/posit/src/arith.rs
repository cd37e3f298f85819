//! Correctly rounded `+ - * /` and square root.
//!
//! Every operation computes the exact result, or enough of it plus a sticky bit, in 128-bit
//! integers and rounds once with [`Posit::round`]. Significands of posits up to 32 bits have at
//! most 28 significant bits, so products are exact in 128 bits; an addend shifted out of the
//! 126-bit window is folded into a sticky bit ("jamming"), which keeps the rounding exact
//! because the result's rounding position lies far above that bit.

use std::ops::{Add, Div, Mul, Sub};

use crate::format::{Class, Posit, Unrounded};

impl<const N: u32> Posit<N> {
    /// The correctly rounded sum.
    pub fn sum(self, other: Self) -> Self {
        let (a, b) = match (self.class(), other.class()) {
            (Class::NaR, _) | (_, Class::NaR) => return Self::NAR,
            (Class::Zero, _) => return other,
            (_, Class::Zero) => return self,
            (Class::Real(a), Class::Real(b)) => (a, b),
        };
        // `big` has the larger magnitude; the result takes its sign.
        let (big, small) = if (a.scale, a.sig) >= (b.scale, b.sig) {
            (a, b)
        } else {
            (b, a)
        };
        let d = (big.scale - small.scale) as u32;
        // Leading bits at 125, leaving room for the carry.
        let x = u128::from(big.sig) << 62;
        let y = u128::from(small.sig) << 62;
        let y = if d >= 126 {
            1 // only the sticky bit is left
        } else {
            let lost = y & ((1u128 << d) - 1) != 0;
            (y >> d) | u128::from(lost)
        };
        let sum = if big.neg == small.neg { x + y } else { x - y };
        if sum == 0 {
            return Self::ZERO;
        }
        Self::round(Unrounded::from_u128(big.neg, sum, big.scale - 125))
    }

    /// The correctly rounded difference.
    pub fn difference(self, other: Self) -> Self {
        self.sum(other.neg())
    }

    /// The correctly rounded product.
    pub fn product(self, other: Self) -> Self {
        match (self.class(), other.class()) {
            (Class::NaR, _) | (_, Class::NaR) => Self::NAR,
            (Class::Zero, _) | (_, Class::Zero) => Self::ZERO,
            (Class::Real(a), Class::Real(b)) => {
                let product = u128::from(a.sig) * u128::from(b.sig);
                Self::round(Unrounded::from_u128(
                    a.neg != b.neg,
                    product,
                    a.scale + b.scale - 126,
                ))
            }
        }
    }

    /// The correctly rounded quotient; division by zero is NaR.
    pub fn quotient(self, other: Self) -> Self {
        match (self.class(), other.class()) {
            (Class::NaR, _) | (_, Class::NaR) | (_, Class::Zero) => Self::NAR,
            (Class::Zero, _) => Self::ZERO,
            (Class::Real(a), Class::Real(b)) => {
                let dividend = u128::from(a.sig) << 64;
                let divisor = u128::from(b.sig);
                let quotient = dividend / divisor;
                let inexact = dividend % divisor != 0;
                // The quotient has 64 or 65 significant bits: one dropped bit at most, and
                // the remainder is below the quotient's last bit.
                let mut u = Unrounded::from_u128(a.neg != b.neg, quotient, a.scale - b.scale - 64);
                u.sticky |= inexact;
                Self::round(u)
            }
        }
    }

    /// The correctly rounded square root; negative inputs give NaR.
    pub fn sqrt(self) -> Self {
        match self.class() {
            Class::NaR => Self::NAR,
            Class::Zero => Self::ZERO,
            Class::Real(a) if a.neg => Self::NAR,
            Class::Real(a) => {
                // value = sig/2^63 × 2^scale; make the scale even, then
                // sqrt(sig × 2^63 [× 2]) = sqrt(value's significand) × 2^63.
                let odd = a.scale & 1 != 0;
                let radicand = u128::from(a.sig) << if odd { 64 } else { 63 };
                let root = isqrt(radicand);
                let exact = root * root == radicand;
                let scale = (a.scale - i32::from(odd)) / 2;
                Self::round(Unrounded {
                    neg: false,
                    scale,
                    sig: root as u64,
                    sticky: !exact,
                })
            }
        }
    }
}

/// The integer square root `floor(sqrt(n))` of `n < 2^128`.
fn isqrt(n: u128) -> u128 {
    if n == 0 {
        return 0;
    }
    // One Newton step from any positive estimate lands at or above the root; from there the
    // iteration decreases monotonically to it.
    let estimate = ((n as f64).sqrt() as u128).max(1);
    let mut x = (estimate + n / estimate) / 2 + 1;
    loop {
        let next = (x + n / x) / 2;
        if next >= x {
            break;
        }
        x = next;
    }
    while x.checked_mul(x).is_none_or(|sq| sq > n) {
        x -= 1;
    }
    x
}

macro_rules! binary_operator {
    ($trait:ident, $method:ident, $inherent:ident) => {
        impl<const N: u32> $trait for Posit<N> {
            type Output = Self;
            fn $method(self, other: Self) -> Self {
                Posit::$inherent(self, other)
            }
        }
    };
}

binary_operator!(Add, add, sum);
binary_operator!(Sub, sub, difference);
binary_operator!(Mul, mul, product);
binary_operator!(Div, div, quotient);

#[cfg(test)]
mod tests {
    use super::isqrt;

    #[test]
    fn isqrt_is_the_floor_of_the_root() {
        for n in [
            1u128,
            2,
            3,
            4,
            15,
            16,
            17,
            u128::from(u64::MAX),
            u128::MAX,
            (1 << 127) + 5,
        ] {
            let r = isqrt(n);
            assert!(r * r <= n, "{n}");
            assert!((r + 1).checked_mul(r + 1).is_none_or(|sq| sq > n), "{n}");
        }
    }
}
