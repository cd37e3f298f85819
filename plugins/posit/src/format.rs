//! The posit encoding: decoding a bit pattern into sign, scale and significand, and the one
//! correctly rounded encoder every operation ends in.
//!
//! An `N`-bit posit with `es = 2` is: a sign bit; a regime, a run of `m` equal bits ended by
//! the opposite bit or the end of the word (`k = m - 1` for a run of ones, `k = -m` for zeros);
//! up to two exponent bits `e` (bits past the end of the word are zero); the fraction `f` with a
//! hidden one. Its value is `±2^(4k + e) × 1.f`; negative posits are the two's complement of
//! their magnitude. `0…0` is zero and `10…0` is NaR, "not a real".
//!
//! Rounding ([`Posit::round`]) writes the exact value's infinite bit string, keeps the first
//! `N - 1` bits after the sign, and rounds to nearest, ties to even on that string. Values at or
//! above `maxpos` give `maxpos`, nonzero values at or below `minpos` give `minpos`: a posit never
//! rounds to zero or NaR.

use std::cmp::Ordering;
use std::fmt;

/// A posit with `N` bits (8, 16 or 32) and two exponent bits, stored in the low `N` bits.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Posit<const N: u32> {
    bits: u32,
}

/// A nonzero real value before rounding: `(-1)^neg × 2^scale × sig / 2^63`, with the top bit
/// of `sig` set (`sig / 2^63` is in `[1, 2)`) and `sticky` set when nonzero bits below `sig`
/// were dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unrounded {
    /// The sign.
    pub neg: bool,
    /// The power of two of the leading bit.
    pub scale: i32,
    /// The significand, leading one at bit 63.
    pub sig: u64,
    /// Whether nonzero bits below `sig` were dropped.
    pub sticky: bool,
}

impl Unrounded {
    /// The value `(-1)^neg × m × 2^exp` of a nonzero integer `m` held in 128 bits, rounding
    /// bits that do not fit the significand into `sticky`.
    pub fn from_u128(neg: bool, m: u128, exp: i32) -> Unrounded {
        debug_assert!(m != 0);
        let top = 127 - m.leading_zeros() as i32;
        let (sig, sticky) = if top >= 63 {
            let drop = (top - 63) as u32;
            (
                (m >> drop) as u64,
                drop > 0 && m & ((1u128 << drop) - 1) != 0,
            )
        } else {
            ((m << (63 - top)) as u64, false)
        };
        Unrounded {
            neg,
            scale: exp + top,
            sig,
            sticky,
        }
    }
}

/// What a bit pattern stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// The pattern `0…0`.
    Zero,
    /// The pattern `10…0`.
    NaR,
    /// Any other pattern, decoded exactly (`sticky` is false).
    Real(Unrounded),
}

impl<const N: u32> Posit<N> {
    const VALID_WIDTH: () = assert!(N == 8 || N == 16 || N == 32, "posits have 8, 16 or 32 bits");
    /// The mask of the `N` storage bits.
    pub const MASK: u32 = u32::MAX >> (32 - N);
    /// Zero.
    pub const ZERO: Self = Self { bits: 0 };
    /// Not a real: the result of undefined operations.
    pub const NAR: Self = Self { bits: 1 << (N - 1) };
    /// One.
    pub const ONE: Self = Self { bits: 1 << (N - 2) };
    /// The largest posit, `2^(4(N - 2))`.
    pub const MAXPOS: Self = Self {
        bits: (1 << (N - 1)) - 1,
    };
    /// The smallest positive posit, `2^(-4(N - 2))`.
    pub const MINPOS: Self = Self { bits: 1 };
    /// The most negative real posit, `-maxpos`: the initial value of a max reduction
    /// (TVM's min-value function).
    pub const LOWEST: Self = Self {
        bits: (1 << (N - 1)) + 1,
    };
    /// The scale of `maxpos`; `minpos` has the negated scale.
    pub const MAX_SCALE: i32 = 4 * (N as i32 - 2);

    /// The posit with this encoding (bits above `N` are ignored).
    pub const fn from_bits(bits: u32) -> Self {
        let () = Self::VALID_WIDTH;
        Self {
            bits: bits & Self::MASK,
        }
    }

    /// The encoding, in the low `N` bits.
    pub const fn to_bits(self) -> u32 {
        self.bits
    }

    /// The encoding as a signed integer: the order of posits is the order of these.
    pub const fn to_signed(self) -> i32 {
        ((self.bits << (32 - N)) as i32) >> (32 - N)
    }

    /// Whether this is NaR.
    pub const fn is_nar(self) -> bool {
        self.bits == Self::NAR.bits
    }

    /// Whether this is zero.
    pub const fn is_zero(self) -> bool {
        self.bits == 0
    }

    /// Whether this is a real below zero.
    pub const fn is_negative(self) -> bool {
        self.to_signed() < 0 && !self.is_nar()
    }

    /// Decodes the pattern exactly.
    pub fn class(self) -> Class {
        if self.is_zero() {
            return Class::Zero;
        }
        if self.is_nar() {
            return Class::NaR;
        }
        let neg = self.is_negative();
        let magnitude = if neg {
            self.bits.wrapping_neg() & Self::MASK
        } else {
            self.bits
        };
        // The bits after the sign, left-aligned in 64 bits.
        let body = u64::from(magnitude) << (65 - N);
        let (run, k) = if body >> 63 == 1 {
            let m = body.leading_ones();
            (m, m as i32 - 1)
        } else {
            let m = body.leading_zeros();
            (m, -(m as i32))
        };
        // The run is at most N - 1 < 63 bits, so the shift stays in range.
        let rest = body << (run + 1);
        let e = (rest >> 62) as i32;
        let fraction = rest << 2;
        Class::Real(Unrounded {
            neg,
            scale: 4 * k + e,
            sig: (1 << 63) | (fraction >> 1),
            sticky: false,
        })
    }

    /// The correctly rounded posit of an unrounded value.
    pub fn round(u: Unrounded) -> Self {
        let magnitude = if u.scale >= Self::MAX_SCALE {
            Self::MAXPOS.bits
        } else if u.scale < -Self::MAX_SCALE {
            Self::MINPOS.bits
        } else {
            Self::round_magnitude(u)
        };
        let bits = if u.neg {
            magnitude.wrapping_neg()
        } else {
            magnitude
        };
        Self::from_bits(bits)
    }

    /// Rounds a positive value with `-MAX_SCALE <= scale < MAX_SCALE` on its bit string.
    fn round_magnitude(u: Unrounded) -> u32 {
        let k = u.scale >> 2;
        let e = (u.scale & 3) as u128;
        // Regime bits and their count: k + 1 ones and a zero, or -k zeros and a one.
        let (regime, regime_len) = if k >= 0 {
            (((1u128 << (k + 1)) - 1) << 1, k + 2)
        } else {
            (1u128, 1 - k)
        };
        let fraction = u128::from(u.sig & !(1 << 63));
        let body = (regime << 65) | (e << 63) | fraction;
        let len = regime_len as u32 + 65;
        let shift = len - (N - 1);
        let kept = (body >> shift) as u32;
        let guard = (body >> (shift - 1)) & 1 == 1;
        let sticky = u.sticky || body & ((1u128 << (shift - 1)) - 1) != 0;
        let rounded = if guard && (sticky || kept & 1 == 1) {
            kept + 1
        } else {
            kept
        };
        rounded.clamp(Self::MINPOS.bits, Self::MAXPOS.bits)
    }

    /// The negation: two's complement of the encoding (exact; NaR and zero stay).
    pub const fn neg(self) -> Self {
        Self::from_bits(self.bits.wrapping_neg())
    }

    /// The absolute value (NaR stays NaR).
    pub const fn abs(self) -> Self {
        if self.is_negative() {
            self.neg()
        } else {
            self
        }
    }

    /// The smaller by the posit order (NaR is below every real).
    pub fn min(self, other: Self) -> Self {
        std::cmp::min(self, other)
    }

    /// The larger by the posit order (NaR is below every real).
    pub fn max(self, other: Self) -> Self {
        std::cmp::max(self, other)
    }
}

impl<const N: u32> Ord for Posit<N> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.to_signed().cmp(&other.to_signed())
    }
}

impl<const N: u32> PartialOrd for Posit<N> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<const N: u32> std::ops::Neg for Posit<N> {
    type Output = Self;
    fn neg(self) -> Self {
        Posit::neg(self)
    }
}

impl<const N: u32> fmt::Debug for Posit<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let width = N as usize / 4 + 2;
        write!(f, "p{N}({:#0width$x} = {})", self.bits, self.to_f64())
    }
}

impl<const N: u32> fmt::Display for Posit<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_nar() {
            f.write_str("NaR")
        } else {
            write!(f, "{}", self.to_f64())
        }
    }
}
