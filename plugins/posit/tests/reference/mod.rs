//! An exact reference for `posit<n, 2>`, written from the standard and independent of the
//! library: a bit-walking decoder to exact dyadic rationals, and rounding by search over the
//! posit value set, where the boundary between neighbours `p` and `p + 1` is the value of the
//! `(n + 1)`-bit posit `2p + 1` (the bit-string midpoint) and ties go to the even pattern.

#![allow(
    dead_code,
    reason = "each test file uses a different part of the reference"
)]

use std::cmp::Ordering;

use num_bigint::{BigInt, Sign};

/// The exact value `m × 2^e`.
#[derive(Clone, Debug)]
pub struct Dyadic {
    pub m: BigInt,
    pub e: i64,
}

impl Dyadic {
    pub fn zero() -> Self {
        Dyadic {
            m: BigInt::from(0),
            e: 0,
        }
    }

    pub fn new(m: impl Into<BigInt>, e: i64) -> Self {
        Dyadic { m: m.into(), e }
    }

    /// The exact value of a finite `f64`.
    pub fn from_f64(x: f64) -> Self {
        assert!(x.is_finite());
        let bits = x.to_bits();
        let biased = ((bits >> 52) & 0x7FF) as i64;
        let fraction = bits & ((1 << 52) - 1);
        let (m, e) = if biased == 0 {
            (fraction, -1074)
        } else {
            (fraction | (1 << 52), biased - 1075)
        };
        let m = BigInt::from(m);
        Dyadic::new(if x < 0.0 { -m } else { m }, e)
    }

    pub fn is_zero(&self) -> bool {
        self.m.sign() == Sign::NoSign
    }

    pub fn is_negative(&self) -> bool {
        self.m.sign() == Sign::Minus
    }

    pub fn abs(&self) -> Self {
        Dyadic::new(self.m.magnitude().clone(), self.e)
    }

    pub fn neg(&self) -> Self {
        Dyadic::new(-self.m.clone(), self.e)
    }

    /// Both mantissas at the smaller exponent.
    fn aligned(&self, other: &Self) -> (BigInt, BigInt, i64) {
        let e = self.e.min(other.e);
        (
            self.m.clone() << (self.e - e) as usize,
            other.m.clone() << (other.e - e) as usize,
            e,
        )
    }

    pub fn add(&self, other: &Self) -> Self {
        let (a, b, e) = self.aligned(other);
        Dyadic::new(a + b, e)
    }

    pub fn sub(&self, other: &Self) -> Self {
        self.add(&other.neg())
    }

    pub fn mul(&self, other: &Self) -> Self {
        Dyadic::new(&self.m * &other.m, self.e + other.e)
    }

    pub fn cmp(&self, other: &Self) -> Ordering {
        let (a, b, _) = self.aligned(other);
        a.cmp(&b)
    }

    /// The integer `floor(self × 2^bits)`.
    pub fn to_fixed(&self, bits: i64) -> BigInt {
        let shift = self.e + bits;
        if shift >= 0 {
            self.m.clone() << shift as usize
        } else {
            // BigInt's >> rounds toward negative infinity.
            self.m.clone() >> (-shift) as usize
        }
    }
}

/// The value of an `n`-bit posit (es = 2) pattern, `None` for NaR, by walking its bits.
pub fn decode(n: u32, pattern: u64) -> Option<Dyadic> {
    let mask = (1u64 << n) - 1;
    let pattern = pattern & mask;
    if pattern == 0 {
        return Some(Dyadic::zero());
    }
    if pattern == 1 << (n - 1) {
        return None;
    }
    let negative = pattern >> (n - 1) == 1;
    let magnitude = if negative {
        (pattern ^ mask) + 1
    } else {
        pattern
    };
    let bits: Vec<bool> = (0..n - 1)
        .rev()
        .map(|i| (magnitude >> i) & 1 == 1)
        .collect();
    let first = bits[0];
    let run = bits.iter().take_while(|&&b| b == first).count();
    let k = if first { run as i64 - 1 } else { -(run as i64) };
    let rest: &[bool] = bits.get(run + 1..).unwrap_or(&[]);
    let mut e = 0i64;
    for i in 0..2 {
        e = 2 * e + i64::from(rest.get(i).copied().unwrap_or(false));
    }
    let fraction: &[bool] = rest.get(2..).unwrap_or(&[]);
    let mut m = BigInt::from(1);
    for &b in fraction {
        m = m * 2 + u32::from(b);
    }
    let value = Dyadic::new(m, 4 * k + e - fraction.len() as i64);
    Some(if negative { value.neg() } else { value })
}

/// What the rounding search compares a value with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Probe {
    /// A posit value: being on either side of it changes only which boundary decides.
    Posit,
    /// A rounding boundary: the side decides the result.
    Boundary,
}

/// The `n`-bit pattern of the correctly rounded posit of a nonzero real `v`, given its sign and
/// an oracle `cmp(c, probe) = (|v|).cmp(c)` for dyadic `c > 0`.
pub fn round(n: u32, negative: bool, cmp: impl Fn(&Dyadic, Probe) -> Ordering) -> u64 {
    let cmp_posit = |c: &Dyadic| cmp(c, Probe::Posit);
    let maxpos = (1u64 << (n - 1)) - 1;
    let value = |p: u64| decode(n, p).expect("positive patterns are real");
    // The largest positive pattern whose value is <= |v|.
    let magnitude = if cmp_posit(&value(1)) == Ordering::Less {
        1 // below minpos: never rounds to zero
    } else {
        let (mut lo, mut hi) = (1u64, maxpos);
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            if cmp_posit(&value(mid)) == Ordering::Less {
                hi = mid - 1;
            } else {
                lo = mid;
            }
        }
        let p = lo;
        if p == maxpos || cmp_posit(&value(p)) == Ordering::Equal {
            p
        } else {
            let midpoint = decode(n + 1, (p << 1) | 1).expect("positive patterns are real");
            match cmp(&midpoint, Probe::Boundary) {
                Ordering::Greater => p + 1,
                Ordering::Less => p,
                Ordering::Equal => p + (p & 1),
            }
        }
    };
    if negative {
        ((1u64 << n) - magnitude) & ((1u64 << n) - 1)
    } else {
        magnitude
    }
}

/// The correctly rounded posit of an exact dyadic value (zero is zero).
pub fn round_exact(n: u32, v: &Dyadic) -> u64 {
    if v.is_zero() {
        return 0;
    }
    let magnitude = v.abs();
    round(n, v.is_negative(), |c, _| magnitude.cmp(c))
}

/// NaR's pattern.
pub fn nar(n: u32) -> u64 {
    1 << (n - 1)
}

/// The reference result of `a op b` on `n`-bit patterns for op in `+ - * /`.
pub fn binary(n: u32, op: char, a: u64, b: u64) -> u64 {
    let (Some(x), Some(y)) = (decode(n, a), decode(n, b)) else {
        return nar(n);
    };
    match op {
        '+' => round_exact(n, &x.add(&y)),
        '-' => round_exact(n, &x.sub(&y)),
        '*' => round_exact(n, &x.mul(&y)),
        '/' => {
            if y.is_zero() {
                return nar(n);
            }
            if x.is_zero() {
                return 0;
            }
            let (xa, ya) = (x.abs(), y.abs());
            // |x / y| vs c  <=>  |x| vs c × |y|
            round(n, x.is_negative() != y.is_negative(), |c, _| {
                xa.cmp(&c.mul(&ya))
            })
        }
        _ => panic!("unknown op {op}"),
    }
}

/// The reference square root of an `n`-bit pattern.
pub fn sqrt(n: u32, a: u64) -> u64 {
    let Some(x) = decode(n, a) else {
        return nar(n);
    };
    if x.is_negative() {
        return nar(n);
    }
    if x.is_zero() {
        return 0;
    }
    // sqrt(x) vs c  <=>  x vs c^2 (c > 0)
    round(n, false, |c, _| x.cmp(&c.mul(c)))
}

/// A deterministic generator for sampled tests (splitmix64).
pub struct Samples(u64);

impl Samples {
    pub fn new(seed: u64) -> Self {
        Samples(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}
