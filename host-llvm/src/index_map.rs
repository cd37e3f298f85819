//! Index maps of a fused group: which element of each value one output element reads.
//!
//! Every value of a group is addressed by its multi-index, and each component of that index
//! is an [`Affine`] function of the output's multi-index. Elementwise ops pass their index
//! on; broadcasting pins broadcast dimensions to 0; `transpose` permutes the components;
//! a reshape that merges dimensions combines them linearly (`i * extent + j`); `nn.bias_add`
//! reads its bias at the component along its axis, `strided_slice` reads component `d` at
//! `begin[d] + step[d] * i` (steps negative for negative strides). `concatenate` and constant `nn.pad` are
//! piecewise: which part (or the pad value) an element reads depends on one component, so the
//! output is cut into boxes ([`cuts`]) inside each of which every such choice is fixed, and
//! each box is a plain strided loop ([`crate::kernel::Piece`]). Maps that are not affine
//! (a reshape that splits a dimension the loop walks, a piecewise choice over a component that
//! mixes several output dimensions) are [`Unsupported`].

use std::collections::{BTreeSet, HashSet};

use byoc_ir::ExprId;

use crate::kernel::{unsupported, Unsupported};

/// One index component: `off + Σ coef[d] * out[d]` over the output's dimensions `d`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Affine {
    /// The constant term.
    pub off: i64,
    /// One coefficient per output dimension.
    pub coef: Vec<i64>,
}

/// The multi-index of a value, one component per dimension.
pub type Map = Vec<Affine>;

impl Affine {
    /// The constant `off` over `rank` output dimensions.
    pub fn constant(off: i64, rank: usize) -> Affine {
        Affine {
            off,
            coef: vec![0; rank],
        }
    }

    /// The identity map of an output of rank `rank`.
    pub fn identity(rank: usize) -> Map {
        (0..rank)
            .map(|d| {
                let mut a = Affine::constant(0, rank);
                a.coef[d] = 1;
                a
            })
            .collect()
    }

    /// This component times `k`.
    pub fn scaled(&self, k: i64) -> Affine {
        self.scaled_plus(k, &Affine::constant(0, self.coef.len()))
    }

    /// This component moved by `by`.
    pub fn shifted(&self, by: i64) -> Affine {
        Affine {
            off: self.off + by,
            coef: self.coef.clone(),
        }
    }

    /// This component with each dimension `d` it reads replaced by `inner[d]` (a map into
    /// the space `self` is over, from another space).
    pub fn compose(&self, inner: &[Affine]) -> Affine {
        let rank = inner.first().map_or(0, |a| a.coef.len());
        let mut out = Affine::constant(self.off, rank);
        for (&c, a) in self.coef.iter().zip(inner) {
            out = a.scaled_plus(c, &out);
        }
        out
    }

    /// `self * k + other`.
    fn scaled_plus(&self, k: i64, other: &Affine) -> Affine {
        Affine {
            off: self.off * k + other.off,
            coef: self
                .coef
                .iter()
                .zip(&other.coef)
                .map(|(a, b)| a * k + b)
                .collect(),
        }
    }

    /// The one output dimension this component varies along, with its coefficient; `None`
    /// for a constant; an error when it mixes several (a piecewise choice cannot be cut).
    pub fn single_dim(&self, op: &str) -> Result<Option<(usize, i64)>, Unsupported> {
        let mut found = None;
        for (d, &c) in self.coef.iter().enumerate() {
            if c != 0 {
                if found.is_some() {
                    return Err(unsupported(
                        op,
                        "its axis mixes several dimensions of the output",
                    ));
                }
                found = Some((d, c));
            }
        }
        Ok(found)
    }

    /// The smallest and largest value over the box `lo..hi` (non-empty, per output dimension).
    pub fn range(&self, lo: &[usize], hi: &[usize]) -> (i64, i64) {
        let (mut min, mut max) = (self.off, self.off);
        for ((&c, &l), &h) in self.coef.iter().zip(lo).zip(hi) {
            let (a, b) = (c * l as i64, c * (h as i64 - 1));
            min += a.min(b);
            max += a.max(b);
        }
        (min, max)
    }
}

/// The map of operand `from` (shape `from`) of a value with shape `to` and map `map` under
/// numpy broadcasting: trailing dimensions align, broadcast ones read index 0.
pub fn broadcast(map: &[Affine], to: &[usize], from: &[usize], rank: usize) -> Map {
    let lead = to.len() - from.len().min(to.len());
    from.iter()
        .enumerate()
        .map(|(i, &extent)| {
            if extent == 1 {
                Affine::constant(0, rank)
            } else {
                map[lead + i].clone()
            }
        })
        .collect()
}

/// Why [`reshape`] has no map.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReshapeError {
    /// The reshape splits iteration dimension `dim` into `factors`: iterate over those
    /// instead (the output's memory order is the same) and try again.
    Refine {
        /// The iteration dimension.
        dim: usize,
        /// Its new extents, outermost first.
        factors: Vec<usize>,
    },
    /// Not affine.
    Unsupported(Unsupported),
}

/// The map of the operand (shape `from`) of a reshape to `to` whose result has map `map`,
/// over an iteration space of extents `space`. Dimensions of extent 1 read index 0; the
/// others pair up in blocks of equal products. A block of one operand dimension merges its
/// result dimensions (`i * extent + j`); a block that splits into several operand dimensions
/// reads them as the mixed-radix digits of its index, which is affine where each term of the
/// index is one digit (an iteration dimension with that digit's place value, no longer than
/// the digit) or where the index is constant. An index that is one whole iteration dimension
/// asks for that dimension to be split ([`ReshapeError::Refine`]).
pub fn reshape(
    map: &[Affine],
    to: &[usize],
    from: &[usize],
    space: &[usize],
    op: &str,
) -> Result<Map, ReshapeError> {
    let rank = space.len();
    let fail = |reason: &str| ReshapeError::Unsupported(unsupported(op, reason));
    let kept_to: Vec<usize> = (0..to.len()).filter(|&i| to[i] != 1).collect();
    let kept_from: Vec<usize> = (0..from.len()).filter(|&k| from[k] != 1).collect();
    let mut out = vec![Affine::constant(0, rank); from.len()];
    let (mut i, mut k) = (0, 0);
    while i < kept_to.len() || k < kept_from.len() {
        // One block: result dims kept_to[i..i2] against operand dims kept_from[k..k2], the
        // shortest runs with equal products (kept extents are at least 2).
        let (mut i2, mut k2) = (i, k);
        let (mut pt, mut pf) = (1usize, 1usize);
        loop {
            if pt <= pf && i2 < kept_to.len() && (pt < pf || i2 == i) {
                pt = pt.saturating_mul(to[kept_to[i2]]);
                i2 += 1;
            } else if k2 < kept_from.len() && (pf < pt || (pf == 1 && k2 == k)) {
                pf = pf.saturating_mul(from[kept_from[k2]]);
                k2 += 1;
            } else if pt == pf {
                break;
            } else {
                return Err(fail("its shapes do not match"));
            }
        }
        // The block's linear index, as an affine function.
        let mut linear = Affine::constant(0, rank);
        for &d in &kept_to[i..i2] {
            linear = linear.scaled_plus(to[d] as i64, &map[d]);
        }
        let block = &kept_from[k..k2];
        if block.len() == 1 {
            out[block[0]] = linear;
        } else if linear.coef.iter().all(|&c| c == 0) {
            let mut rest = linear.off;
            for &d in block.iter().rev() {
                let e = from[d] as i64;
                out[d] = Affine::constant(rest % e, rank);
                rest /= e;
            }
        } else {
            let extents: Vec<usize> = block.iter().map(|&d| from[d]).collect();
            if let Some(whole) = whole_dim(&linear, space, pt) {
                return Err(ReshapeError::Refine {
                    dim: whole,
                    factors: extents,
                });
            }
            let digits = digits(&linear, space, &extents).ok_or_else(|| {
                fail("it splits a dimension the fused loop walks (not an affine index map)")
            })?;
            for (&d, digit) in block.iter().zip(digits) {
                out[d] = digit;
            }
        }
        (i, k) = (i2, k2);
    }
    Ok(out)
}

/// The iteration dimension `a` is, when `a` is exactly one whole dimension of extent `n`.
fn whole_dim(a: &Affine, space: &[usize], n: usize) -> Option<usize> {
    let (d, _) = a.coef.iter().enumerate().find(|(_, &c)| c != 0)?;
    let only = a.coef.iter().filter(|&&c| c != 0).count() == 1;
    (only && a.off == 0 && a.coef[d] == 1 && space[d] == n).then_some(d)
}

/// The mixed-radix digits (extents `extents`, outermost first) of `a`, when each term of `a`
/// is one digit (coefficient equal to that digit's place value) and no digit carries over
/// `a`'s range: the constant's digits plus each term's largest value stay within extents.
fn digits(a: &Affine, space: &[usize], extents: &[usize]) -> Option<Vec<Affine>> {
    let rank = space.len();
    let mut place = vec![1i64; extents.len()];
    for j in (0..extents.len().saturating_sub(1)).rev() {
        place[j] = place[j + 1] * extents[j + 1] as i64;
    }
    if a.off < 0 || a.off >= place[0] * extents[0] as i64 {
        return None;
    }
    let mut out: Vec<Affine> = place
        .iter()
        .zip(extents)
        .map(|(&p, &e)| Affine::constant(a.off / p % e as i64, rank))
        .collect();
    let mut taken = vec![false; extents.len()];
    for (d, &c) in a.coef.iter().enumerate() {
        if c == 0 {
            continue;
        }
        let j = (0..extents.len()).find(|&j| {
            !taken[j] && place[j] == c && out[j].off + space[d] as i64 <= extents[j] as i64
        })?;
        taken[j] = true;
        out[j].coef[d] = 1;
    }
    Some(out)
}

/// The cut points of one output dimension `d` where a component `a` crosses `bound`
/// (`a` varies along `d` with a positive coefficient).
fn cut_at(a: &Affine, d: usize, c: i64, bound: i64, cuts: &mut [BTreeSet<usize>]) {
    // The first x with off + c * x >= bound.
    let x = (bound - a.off).div_euclid(c) + i64::from((bound - a.off).rem_euclid(c) != 0);
    if let Ok(x) = usize::try_from(x) {
        cuts[d].insert(x);
    }
}

/// Collects the cut points per dimension of the iteration space `space` where any piecewise
/// choice of the group changes, walking from `root` with `map`: `visit(id, map)` returns the operands with their
/// maps and the piecewise choice of `id`, if any. Stops with an error past `budget` visits.
pub fn cuts<F>(
    root: ExprId,
    map: Map,
    space: &[usize],
    budget: usize,
    mut visit: F,
) -> Result<Vec<BTreeSet<usize>>, Unsupported>
where
    F: FnMut(ExprId, &Map) -> Result<Visit, Unsupported>,
{
    let mut cuts = vec![BTreeSet::new(); space.len()];
    let zeros = vec![0; space.len()];
    let mut seen: HashSet<(ExprId, Map)> = HashSet::new();
    let mut stack = vec![(root, map)];
    while let Some((id, map)) = stack.pop() {
        if !seen.insert((id, map.clone())) {
            continue;
        }
        if seen.len() > budget {
            return Err(unsupported(
                "the function",
                "too many distinct index maps to fuse",
            ));
        }
        let v = visit(id, &map)?;
        for (axis, bounds) in &v.piecewise {
            let (min, max) = map[*axis].range(&zeros, space);
            if bounds.iter().all(|&b| b <= min || b > max) {
                // One choice over the whole space.
                continue;
            }
            if let Some((d, c)) = map[*axis].single_dim(&v.op)? {
                if c < 0 {
                    return Err(unsupported(&v.op, "its axis runs backwards"));
                }
                for &b in bounds {
                    cut_at(&map[*axis], d, c, b, &mut cuts);
                }
            }
        }
        stack.extend(v.operands);
    }
    Ok(cuts)
}

/// What [`cuts`] learns about one value.
pub struct Visit {
    /// The op, for errors.
    pub op: String,
    /// Its operands with their maps (every one that some output element may read).
    pub operands: Vec<(ExprId, Map)>,
    /// Piecewise axes of the value and their bounds.
    pub piecewise: Vec<(usize, Vec<i64>)>,
}

/// A box of an iteration space: its start and end per dimension.
pub type Region = (Vec<usize>, Vec<usize>);

/// The boxes of an output of shape `shape` cut at `cuts`: per box, its start and end per
/// dimension. Errors past `limit` boxes.
pub fn boxes(
    shape: &[usize],
    cuts: &[BTreeSet<usize>],
    limit: usize,
) -> Result<Vec<Region>, Unsupported> {
    let mut out: Vec<Region> = vec![(Vec::new(), Vec::new())];
    for (d, &extent) in shape.iter().enumerate() {
        let mut points: Vec<usize> = vec![0];
        points.extend(cuts[d].iter().copied().filter(|&x| x > 0 && x < extent));
        points.push(extent);
        let intervals: Vec<(usize, usize)> = points
            .windows(2)
            .map(|w| (w[0], w[1]))
            .filter(|(a, b)| a < b)
            .collect();
        if out.len().saturating_mul(intervals.len()) > limit {
            return Err(unsupported(
                "the function",
                format!("its piecewise ops cut the output into more than {limit} boxes"),
            ));
        }
        out = out
            .into_iter()
            .flat_map(|(lo, hi)| {
                intervals.iter().map(move |&(a, b)| {
                    let (mut lo, mut hi) = (lo.clone(), hi.clone());
                    lo.push(a);
                    hi.push(b);
                    (lo, hi)
                })
            })
            .collect();
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merging_reshapes_are_affine_and_splitting_ones_are_not() {
        // [2, 3] read as [6]: the operand index is 3 * i + j.
        let map = Affine::identity(2);
        let m = reshape(&map, &[2, 3], &[6], &[2, 3], "reshape").unwrap();
        assert_eq!(
            m,
            [Affine {
                off: 0,
                coef: vec![3, 1]
            }]
        );
        // Extent-1 dimensions on either side read index 0.
        let m = reshape(&map, &[2, 3], &[1, 2, 1, 3], &[2, 3], "reshape").unwrap();
        assert_eq!(m[0], Affine::constant(0, 2));
        assert_eq!(m[1], map[0]);
        assert_eq!(m[3], map[1]);
        // [6] read as [2, 3] splits the walked dimension: iterate over [2, 3] instead...
        assert_eq!(
            reshape(&Affine::identity(1), &[6], &[2, 3], &[6], "reshape"),
            Err(ReshapeError::Refine {
                dim: 0,
                factors: vec![2, 3]
            })
        );
        // ...after which the index 3 * i + j splits into its digits.
        let merged = reshape(&map, &[2, 3], &[6], &[2, 3], "reshape").unwrap();
        assert_eq!(
            reshape(&merged, &[6], &[2, 3], &[2, 3], "reshape").unwrap(),
            map
        );
        // An index with a stride that is no digit's place value is not affine in the digits.
        let odd = [Affine {
            off: 0,
            coef: vec![2],
        }];
        assert!(matches!(
            reshape(&odd, &[6], &[2, 3], &[3], "reshape"),
            Err(ReshapeError::Unsupported(_))
        ));
        // A constant index splits.
        let m = reshape(&[Affine::constant(4, 1)], &[6], &[2, 3], &[6], "reshape").unwrap();
        assert_eq!(m, [Affine::constant(1, 1), Affine::constant(1, 1)]);
    }

    #[test]
    fn boxes_cover_the_output_once() {
        let mut cuts = vec![BTreeSet::new(); 2];
        cuts[1].extend([0, 2, 5, 9]);
        let b = boxes(&[3, 5], &cuts, 16).unwrap();
        assert_eq!(
            b,
            [(vec![0, 0], vec![3, 2]), (vec![0, 2], vec![3, 5])],
            "cuts at 0 and past the end are dropped"
        );
        assert!(boxes(&[3, 5], &cuts, 1).is_err());
    }
}
