//! The quire: the standard's `16N`-bit fixed-point accumulator for exact dot products.
//!
//! A quire of `posit<N>` holds any sum of products of posits exactly: its least significant bit
//! is `minpos^2` and it has `8(N - 2)` integer bits above the binary point for `maxpos^2`, a
//! sign bit and 31 carry-guard bits (`16N` bits in all: 128 for posit8, 256 for posit16, 512
//! for posit32). Adding products never rounds; [`Quire::to_posit`] rounds once. A NaR operand
//! makes the quire NaR, and so does a sum outside the `16N`-bit range (more than `2^31`
//! products of `maxpos^2`), instead of wrapping around.

use crate::format::{Class, Posit, Unrounded};

/// 64-bit limbs of the widest quire (posit32: 512 bits).
const LIMBS: usize = 8;

/// An exact accumulator of posit products.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Quire<const N: u32> {
    /// Two's complement, least significant limb first; the value is this integer times
    /// `minpos^2`. Limbs above `16N` bits repeat the sign.
    limbs: [u64; LIMBS],
    nar: bool,
}

impl<const N: u32> Default for Quire<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: u32> Quire<N> {
    /// The quire's width in bits.
    pub const BITS: u32 = 16 * N;
    /// Bits below the binary point.
    const FRACTION_BITS: i32 = 2 * Posit::<N>::MAX_SCALE;

    /// A quire holding zero.
    pub const fn new() -> Self {
        Quire {
            limbs: [0; LIMBS],
            nar: false,
        }
    }

    /// Whether a NaR operand or an overflow made the quire NaR.
    pub const fn is_nar(&self) -> bool {
        self.nar
    }

    /// Adds `a × b` exactly.
    pub fn add_product(&mut self, a: Posit<N>, b: Posit<N>) {
        self.accumulate(a, b, false);
    }

    /// Subtracts `a × b` exactly.
    pub fn sub_product(&mut self, a: Posit<N>, b: Posit<N>) {
        self.accumulate(a, b, true);
    }

    /// Adds `x` exactly.
    pub fn add_posit(&mut self, x: Posit<N>) {
        self.accumulate(x, Posit::ONE, false);
    }

    fn accumulate(&mut self, a: Posit<N>, b: Posit<N>, subtract: bool) {
        if self.nar {
            return;
        }
        let (a, b) = match (a.class(), b.class()) {
            (Class::NaR, _) | (_, Class::NaR) => {
                self.nar = true;
                return;
            }
            (Class::Zero, _) | (_, Class::Zero) => return,
            (Class::Real(a), Class::Real(b)) => (a, b),
        };
        let product = u128::from(a.sig) * u128::from(b.sig);
        // product × 2^(scale_a + scale_b - 126) in units of minpos^2. Every posit is a whole
        // multiple of minpos, so the right shift drops only zero bits.
        let shift = a.scale + b.scale - 126 + Self::FRACTION_BITS;
        let mut term = [0u64; LIMBS];
        if shift >= 0 {
            let limb = shift as usize / 64;
            let bit = shift as u32 % 64;
            let parts = [
                (product << bit) as u64,
                ((product << bit) >> 64) as u64,
                if bit == 0 {
                    0
                } else {
                    (product >> (128 - bit)) as u64
                },
            ];
            for (i, part) in parts.into_iter().enumerate() {
                if let Some(slot) = term.get_mut(limb + i) {
                    *slot = part;
                }
            }
        } else {
            let value = product >> shift.unsigned_abs();
            term[0] = value as u64;
            term[1] = (value >> 64) as u64;
        }
        if (a.neg != b.neg) != subtract {
            negate(&mut term);
        }
        add_into(&mut self.limbs, &term);
        if !self.fits() {
            self.nar = true;
        }
    }

    /// Whether the value fits `16N` signed bits: every bit from bit `16N - 1` up equals the sign.
    fn fits(&self) -> bool {
        let sign = self.limbs[LIMBS - 1] >> 63;
        let fill = 0u64.wrapping_sub(sign);
        (Self::BITS as usize - 1..LIMBS * 64)
            .all(|i| (self.limbs[i / 64] >> (i % 64)) & 1 == fill & 1)
    }

    /// The sum rounded once to a posit.
    pub fn to_posit(&self) -> Posit<N> {
        if self.nar {
            return Posit::NAR;
        }
        let neg = self.limbs[LIMBS - 1] >> 63 == 1;
        let mut magnitude = self.limbs;
        if neg {
            negate(&mut magnitude);
        }
        let Some(top_limb) = magnitude.iter().rposition(|&l| l != 0) else {
            return Posit::ZERO;
        };
        // The 128 bits ending with the top limb, and whether anything below them is set.
        let high = u128::from(magnitude[top_limb]) << 64
            | top_limb
                .checked_sub(1)
                .map_or(0, |i| u128::from(magnitude[i]));
        let below = top_limb >= 2 && magnitude[..top_limb - 1].iter().any(|&l| l != 0);
        let exp = (top_limb as i32 - 1) * 64 - Self::FRACTION_BITS;
        let mut u = Unrounded::from_u128(neg, high, exp);
        u.sticky |= below;
        Posit::round(u)
    }
}

/// Two's complement negation in place.
fn negate(limbs: &mut [u64; LIMBS]) {
    let mut carry = true;
    for limb in limbs.iter_mut() {
        let (v, c) = (!*limb).overflowing_add(u64::from(carry));
        *limb = v;
        carry = c;
    }
}

/// `acc += term`, modulo `2^(64 × LIMBS)`.
fn add_into(acc: &mut [u64; LIMBS], term: &[u64; LIMBS]) {
    let mut carry = false;
    for (a, &t) in acc.iter_mut().zip(term) {
        let (s1, c1) = a.overflowing_add(t);
        let (s2, c2) = s1.overflowing_add(u64::from(carry));
        *a = s2;
        carry = c1 || c2;
    }
}
