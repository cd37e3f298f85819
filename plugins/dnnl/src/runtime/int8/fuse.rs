//! The integer epilogue as oneDNN post-ops, where that is provably exact.
//!
//! oneDNN computes post-ops in float32 on the int32 accumulator converted to float. Float32
//! holds every integer of magnitude up to 2^24 and every half-integer up to 2^23, and a
//! sum, a product by a power of two, a `max` and a `min` of such values is exact when its
//! result is such a value (a correctly rounded operation returns a representable result
//! unchanged; an FMA rounds once, too). So the realized form's epilogue runs as post-ops
//! without a single rounding when every intermediate value stays within those bounds:
//!
//! | stage | post-op |
//! |---|---|
//! | `add` of one value per channel (first stage) | the primitive's `s32` bias |
//! | `left_shift(x, k)` (after the bias) | the output scale `2^k` (`0` for `k >= 32`) |
//! | `add` of a residual of the result's shape | `binary_add` with an `s32` operand |
//! | `nn.relu` | `eltwise_relu` |
//! | `cast(clip(right_shift(add(x, r), s)))` | `eltwise_linear(2^-s, (r - 2^(s-1) + 1/2) 2^-s)`, `eltwise_clip(-127, 127)`, conversion to `s8` |
//!
//! The requantization: `(x + r) >> s` is `floor((x + r) / 2^s)`, while oneDNN's conversion
//! to `s8` rounds to nearest. For integer `m = x + r`, `(m - 2^(s-1) + 1/2) / 2^s` lies
//! strictly between `floor(m / 2^s) - 1/2` and `floor(m / 2^s) + 1/2` (its distance to the
//! floor is `(m mod 2^s + 1/2) / 2^s - 1/2`, never a half), so rounding it to nearest, in
//! any tie rule, gives the floor; clipping to the integer bounds before rounding equals
//! clipping after. A negative shift amount (which leaves the value) is `eltwise_linear(1,
//! r)`.
//!
//! Whether the bounds hold is decided when the module is built, by interval arithmetic
//! ([`IntRange`]): int8 data lies in `[-128, 127]`, or in the range its producer proved
//! (`[0, 127]` after a relu and a requantization); with constant weights each output
//! channel's accumulator lies in `[Σ w⁺ lo + Σ w⁻ hi, Σ w⁺ hi + Σ w⁻ lo]` (padding adds
//! zeros, inside every such range); each stage maps the range; a residual's range is its
//! producer's. A node whose ranges leave the bounds, or that may wrap int32 (the host's
//! arithmetic wraps, float32 does not), keeps the separate integer pass.

use super::{Addend, Requant, Stage, CLIP, EXACT};
use crate::dnnl::{ffi, DataType, PostOp};
use crate::runtime::OpError;

/// A closed interval of integers that a value is proven to lie in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct IntRange {
    /// The least value.
    pub lo: i64,
    /// The greatest value.
    pub hi: i64,
}

impl IntRange {
    /// Any int8.
    pub const I8: IntRange = IntRange { lo: -128, hi: 127 };
    /// Any int32.
    pub const I32: IntRange = IntRange {
        lo: i32::MIN as i64,
        hi: i32::MAX as i64,
    };
    /// A requantization's or quantization's result.
    pub const CLIPPED: IntRange = IntRange {
        lo: CLIP.0 as i64,
        hi: CLIP.1 as i64,
    };

    /// The one value `v`.
    pub fn point(v: i64) -> Self {
        IntRange { lo: v, hi: v }
    }

    /// The range of the values in `values` (`[0, 0]` for none).
    pub fn of(values: impl IntoIterator<Item = i64>) -> Self {
        values
            .into_iter()
            .map(Self::point)
            .reduce(Self::hull)
            .unwrap_or(Self::point(0))
    }

    /// The smallest range containing both.
    pub fn hull(self, other: Self) -> Self {
        IntRange {
            lo: self.lo.min(other.lo),
            hi: self.hi.max(other.hi),
        }
    }

    fn add(self, other: Self) -> Self {
        IntRange {
            lo: self.lo.saturating_add(other.lo),
            hi: self.hi.saturating_add(other.hi),
        }
    }

    fn scale(self, k: u32) -> Self {
        let f = 1i64 << k;
        IntRange {
            lo: self.lo.saturating_mul(f),
            hi: self.hi.saturating_mul(f),
        }
    }

    fn relu(self) -> Self {
        IntRange {
            lo: self.lo.max(0),
            hi: self.hi.max(0),
        }
    }

    /// The largest magnitude.
    fn magnitude(self) -> i64 {
        self.lo.saturating_abs().max(self.hi.saturating_abs())
    }

    fn within(self, outer: Self) -> bool {
        outer.lo <= self.lo && self.hi <= outer.hi
    }

    /// The range of `Σ w · x` over one output channel's weights `w`, for `x` in `self`.
    pub fn dot(self, weights: &[i8]) -> Self {
        let (mut lo, mut hi) = (0i64, 0i64);
        for &w in weights {
            let w = i64::from(w);
            let (a, b) = (w * self.lo, w * self.hi);
            lo += a.min(b);
            hi += a.max(b);
        }
        IntRange { lo, hi }
    }
}

/// The bound within which float32 holds integers exactly.
const F32_INTEGERS: IntRange = IntRange {
    lo: -EXACT,
    hi: EXACT,
};

/// What interval arithmetic proves about an epilogue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Proof {
    /// The range of the result (the type's range where int32 may wrap).
    pub result: IntRange,
    /// Whether float32 post-ops compute it exactly (see the module doc).
    pub exact: bool,
}

/// Runs the epilogue over ranges: `acc` per output channel, `residuals` one per
/// [`Addend::Full`] stage in order.
pub(crate) fn prove(
    acc: &[IntRange],
    stages: &[Stage],
    residuals: &[IntRange],
    requant: Option<Requant>,
) -> Proof {
    let mut exact = true;
    let mut wraps = false;
    let mut result: Option<IntRange> = None;
    // Every intermediate: within int32 (else the host's arithmetic wraps); `in_float`:
    // computed in float32 as it is, so within 2^24; `fits`: the stage's own condition.
    let mut visit = |r: IntRange, in_float: bool, fits: bool| {
        exact &= fits && (!in_float || r.within(F32_INTEGERS));
        wraps |= !r.within(IntRange::I32);
    };
    for (c, &a) in acc.iter().enumerate() {
        let mut r = a;
        visit(r, true, true);
        let mut full = residuals.iter();
        for stage in stages {
            r = match stage {
                Stage::Add(Addend::PerChannel(bias)) => match bias.get(c) {
                    Some(&b) => r.add(IntRange::point(i64::from(b))),
                    // Not one value per channel after all: prove nothing.
                    None => IntRange {
                        lo: i64::MIN,
                        hi: i64::MAX,
                    },
                },
                Stage::Add(Addend::Full) => r.add(*full.next().unwrap_or(&IntRange::I32)),
                Stage::LeftShift(Some(k)) => r.scale(*k),
                Stage::LeftShift(None) => IntRange::point(0),
                Stage::Relu => r.relu(),
            };
            visit(r, true, true);
        }
        if let Some(q) = requant {
            let round = i64::from(q.round);
            // The host adds the round constant in int32.
            let sum = r.add(IntRange::point(round));
            let s = match q.shift {
                // Twice the value before rounding, 2x + 2r - 2^s + 1, an odd integer, must
                // be below 2^24 (half-integers below 2^23); the sum itself is never formed.
                Some(s) => {
                    let twice = r.scale(1).add(IntRange::point(2 * round - (1i64 << s) + 1));
                    visit(sum, false, twice.magnitude() < EXACT);
                    s
                }
                // `x + r` in float32, `r` the linear post-op's beta.
                None => {
                    visit(sum, true, round.abs() <= EXACT);
                    0
                }
            };
            // `>>` of i64 floors, as the host's arithmetic shift of int32.
            r = IntRange {
                lo: (sum.lo >> s).clamp(IntRange::CLIPPED.lo, IntRange::CLIPPED.hi),
                hi: (sum.hi >> s).clamp(IntRange::CLIPPED.lo, IntRange::CLIPPED.hi),
            };
        }
        result = Some(result.map_or(r, |s| s.hull(r)));
    }
    let result = match (wraps, requant) {
        (false, _) => result.unwrap_or(IntRange::point(0)),
        (true, Some(_)) => IntRange::CLIPPED,
        (true, None) => IntRange::I32,
    };
    Proof {
        result,
        exact: exact && !wraps,
    }
}

/// The post-op form of an epilogue whose [`Proof`] is exact.
pub(crate) struct Fused {
    /// The first stage's per-channel addend, as the primitive's `s32` bias.
    pub bias: Option<Vec<i32>>,
    /// A left shift right after the bias, as the primitive's output scale (`2^k`).
    pub scale: Option<f32>,
    /// The rest, in order; each [`PostOp::Binary`] reads the next residual.
    pub post_ops: Vec<PostOp>,
}

/// The epilogue as post-ops on a result of dims `y` (`None` where a stage has no post-op
/// form: a per-channel addend after the first stage).
pub(crate) fn post_ops(
    stages: &[Stage],
    requant: Option<Requant>,
    y: &[i64],
) -> Result<Option<Fused>, OpError> {
    let mut bias = None;
    let mut scale = None;
    let mut post_ops = Vec::new();
    for (i, stage) in stages.iter().enumerate() {
        match stage {
            Stage::Add(Addend::PerChannel(b)) if i == 0 => bias = Some(b.clone()),
            Stage::Add(Addend::PerChannel(_)) => return Ok(None),
            Stage::Add(Addend::Full) => post_ops.push(PostOp::Binary {
                alg: ffi::dnnl_binary_add,
                src1: Box::new(super::int_layout(y, DataType::S32)?),
            }),
            // The realized form shifts right after the bias (or first): the output scale,
            // which oneDNN applies to the accumulator plus bias, before the post-ops.
            // (oneDNN 2.6's `jit_int8` kernels miscompute a scaling `eltwise_linear` ahead
            // of the requantization's, so the shift is not one.)
            Stage::LeftShift(k) if post_ops.is_empty() && scale.is_none() => {
                scale = Some(k.map_or(0.0, |k| f64::from(1u32 << k) as f32));
            }
            Stage::LeftShift(_) => return Ok(None),
            Stage::Relu => post_ops.push(PostOp::Eltwise {
                alg: ffi::dnnl_eltwise_relu,
                alpha: 0.0,
                beta: 0.0,
            }),
        }
    }
    if let Some(q) = requant {
        let round = f64::from(q.round);
        let (alpha, beta) = match q.shift {
            Some(s) => {
                let step = (-f64::from(s)).exp2();
                (step, (round - f64::from(s).exp2() / 2.0 + 0.5) * step)
            }
            None => (1.0, round),
        };
        post_ops.push(PostOp::Eltwise {
            alg: ffi::dnnl_eltwise_linear,
            alpha: alpha as f32,
            beta: beta as f32,
        });
        post_ops.push(PostOp::Eltwise {
            alg: ffi::dnnl_eltwise_clip,
            alpha: CLIP.0 as f32,
            beta: CLIP.1 as f32,
        });
    }
    Ok(Some(Fused {
        bias,
        scale,
        post_ops,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn requant(round: i32, shift: Option<u32>) -> Requant {
        Requant { round, shift }
    }

    #[test]
    fn dot_ranges_follow_the_weights_signs() {
        let r = IntRange { lo: 0, hi: 127 }.dot(&[2, -3, 0]);
        assert_eq!(r, IntRange { lo: -381, hi: 254 });
        assert_eq!(IntRange::I8.dot(&[1, -1]), IntRange { lo: -255, hi: 255 });
    }

    #[test]
    fn small_epilogues_are_exact_and_give_their_result_range() {
        let p = prove(
            &[IntRange {
                lo: -1000,
                hi: 5000,
            }],
            &[Stage::Add(Addend::PerChannel(vec![100])), Stage::Relu],
            &[],
            Some(requant(8, Some(4))),
        );
        assert!(p.exact);
        // relu: [0, 5100]; (x + 8) >> 4: [0, 319] clipped to [0, 127].
        assert_eq!(p.result, IntRange { lo: 0, hi: 127 });
    }

    #[test]
    fn large_or_wrapping_ranges_are_not_exact() {
        let big = IntRange {
            lo: -(1 << 23),
            hi: 1 << 23,
        };
        // Twice the requantized value's range reaches 2^24.
        assert!(!prove(&[big], &[], &[], Some(requant(0, Some(1)))).exact);
        assert!(prove(&[big], &[], &[], None).exact);
        let p = prove(&[big], &[Stage::LeftShift(Some(10))], &[], None);
        assert!(!p.exact);
        // 2^33 wraps int32: the result may be any int32.
        assert_eq!(p.result, IntRange::I32);
    }

    #[test]
    fn an_unknown_residual_prevents_fusion() {
        let p = prove(
            &[IntRange::point(1)],
            &[Stage::Add(Addend::Full)],
            &[IntRange::I32],
            None,
        );
        assert!(!p.exact);
    }
}
