//! int8 × int8 → int32 matrix multiply for the quantized host kernels: packed panels and a
//! register-blocked SIMD microkernel, exact (wrapping int32 accumulation like TVM's).
//!
//! Paths, chosen at run time ([`Isa::selected`]):
//! - [`Isa::Vnni`]: AVX512-VNNI `vpdpbusd`, which multiplies unsigned by signed bytes and adds
//!   groups of four products into int32 lanes without saturating. Operands of the other
//!   signedness are shifted by 128 when packed (`a' = a + 128` for a signed left operand,
//!   `b' = b − 128` for an unsigned right one: in both cases the byte's top bit flipped) and
//!   the result corrected exactly: `Σ a·b = Σ a'·b' + ob·Σa − oa·Σb + k·oa·ob` with offsets
//!   `oa`, `ob` ∈ {0, 128}, from the row sums of `a` and column sums of `b`.
//! - [`Isa::Avx2`]: operands sign- or zero-extended to int16 and multiplied with
//!   `vpmaddwd` (`_mm256_madd_epi16`), whose pair sums cannot overflow for 8-bit values. (The
//!   byte form `vpmaddubsw` would saturate its int16 pair sums, so it is not used.)
//! - [`Isa::Portable`]: the widening int32 loop of [`super::gemm`], on any CPU.
//!
//! Both SIMD paths share one driver: each operand is packed once into panels (`MR` rows of the
//! left operand, `NR` columns of the right one) of 32-bit words, one word per row or column and
//! group of `KU` consecutive `k` values, so one broadcast left word meets one vector of right
//! words; panels and groups are zero-padded. The `k` axis is cut into blocks so a right panel's
//! block stays in L1 while the left panels of the block stream from L2. Rows (or, for short
//! matrices, columns) are split over the executor's threads.
//!
//! `BYOC_INT8_GEMM=vnni|avx2|portable` forces a path (one the CPU lacks falls back to the best
//! available, with a warning), e.g. to compare paths on one machine.

#[cfg(target_arch = "x86_64")]
mod x86;

use std::sync::OnceLock;

use rayon::prelude::*;

use super::gemm::MatMut;

/// An 8-bit integer matrix: element `(i, j)` is `data[i * rs + j * cs]`, read as `i8` when
/// `signed`, `u8` otherwise.
#[derive(Clone, Copy)]
pub(crate) struct ByteMat<'a> {
    pub data: &'a [u8],
    pub rs: usize,
    pub cs: usize,
    pub signed: bool,
}

impl ByteMat<'_> {
    /// The transpose (rows become columns).
    fn t(self) -> Self {
        ByteMat {
            rs: self.cs,
            cs: self.rs,
            ..self
        }
    }
}

/// An implementation of the int8 GEMM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Isa {
    /// AVX512-VNNI `vpdpbusd` (needs AVX-512 F and BW too).
    Vnni,
    /// AVX2 `vpmaddwd` on int16-extended operands.
    Avx2,
    /// The plain widening int32 loop.
    Portable,
}

impl Isa {
    /// All paths, fastest first.
    pub const ALL: [Isa; 3] = [Isa::Vnni, Isa::Avx2, Isa::Portable];

    /// The name `BYOC_INT8_GEMM` uses.
    pub fn name(self) -> &'static str {
        match self {
            Isa::Vnni => "vnni",
            Isa::Avx2 => "avx2",
            Isa::Portable => "portable",
        }
    }

    /// True when this CPU can run the path.
    pub fn available(self) -> bool {
        match self {
            #[cfg(target_arch = "x86_64")]
            Isa::Vnni => {
                is_x86_feature_detected!("avx512f")
                    && is_x86_feature_detected!("avx512bw")
                    && is_x86_feature_detected!("avx512vnni")
            }
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => is_x86_feature_detected!("avx2"),
            Isa::Portable => true,
            #[cfg(not(target_arch = "x86_64"))]
            _ => false,
        }
    }

    /// The path the host kernels use: `BYOC_INT8_GEMM` when set and available, otherwise
    /// the fastest path this CPU has. Decided once per process.
    pub fn selected() -> Isa {
        #[cfg(test)]
        if let Some(isa) = tests::forced() {
            return isa;
        }
        static SELECTED: OnceLock<Isa> = OnceLock::new();
        *SELECTED.get_or_init(|| {
            super::isa::choose("BYOC_INT8_GEMM", &Isa::ALL, Isa::name, Isa::available)
        })
    }
}

/// A register-blocked microkernel and the packed form it reads: one 32-bit word per row (of a
/// left panel) or column (of a right panel) and group of `KU` consecutive `k` values.
trait Kernel {
    /// Rows of a left panel.
    const MR: usize;
    /// Columns of a right panel.
    const NR: usize;
    /// Consecutive `k` values in one word, multiplied and summed into one int32 lane.
    const KU: usize;
    /// `k` groups per cache block.
    const KC_GROUPS: usize;

    /// The offsets `(oa, ob)` the packed words add to the left and subtract from the right
    /// operand's values, for operands of this signedness.
    fn offsets(lhs_signed: bool, rhs_signed: bool) -> (i32, i32);

    /// The packed word of `valid` (at most `KU`) 8-bit values, the first in the low byte of
    /// `bytes` (the others zero), of a `SIGNED` operand on the `LEFT` side; missing values
    /// pack as zeros.
    fn word<const SIGNED: bool, const LEFT: bool>(bytes: u32, valid: usize) -> u32;

    /// `tile[MR × NR] = a · b` over `groups` groups of a left and a right panel.
    ///
    /// # Safety
    /// The CPU has the path's instructions; `a` holds `groups · MR` and `b` `groups · NR`
    /// words, `tile` `MR · NR` values.
    unsafe fn tile(groups: usize, a: &[u32], b: &[u32], tile: &mut [i32]);
}

/// `dst[m×n] = lhs[m×k] × rhs[k×n]` on path `isa`, using up to `threads` threads; returns
/// false, leaving `dst` alone, when this build or CPU lacks the path (always for
/// [`Isa::Portable`], the widening loop its caller runs itself). The caller has checked that
/// the slices cover the shapes and that `m`, `n`, `k` are positive.
#[allow(
    clippy::too_many_arguments,
    reason = "the GEMM's shape, operands and threads"
)]
pub(crate) fn gemm(
    isa: Isa,
    m: usize,
    n: usize,
    k: usize,
    lhs: ByteMat<'_>,
    rhs: ByteMat<'_>,
    dst: MatMut<'_, i32>,
    threads: usize,
) -> bool {
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Vnni if isa.available() => run::<x86::Vnni>(m, n, k, lhs, rhs, dst, threads),
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 if isa.available() => run::<x86::Avx2>(m, n, k, lhs, rhs, dst, threads),
        _ => return false,
    }
    true
}

/// A matrix packed into panels of words for a kernel.
struct Packed {
    data: Vec<u32>,
    /// Words per panel (`groups · rows-per-panel`).
    panel: usize,
}

/// The value of byte `b` of an operand.
fn value(b: u8, signed: bool) -> i32 {
    if signed {
        i32::from(b as i8)
    } else {
        i32::from(b)
    }
}

/// The sums over `k` of each of the `rows` rows of `src` (wrapping).
fn row_sums(src: ByteMat<'_>, rows: usize, k: usize) -> Vec<i32> {
    let mut sums = vec![0i32; rows];
    if src.cs == 1 {
        for (r, s) in sums.iter_mut().enumerate() {
            let row = &src.data[r * src.rs..][..k];
            *s = row
                .iter()
                .fold(0, |a, &b| a.wrapping_add(value(b, src.signed)));
        }
    } else {
        for q in 0..k {
            for (r, s) in sums.iter_mut().enumerate() {
                *s = s.wrapping_add(value(src.data[r * src.rs + q * src.cs], src.signed));
            }
        }
    }
    sums
}

/// Packs the `rows × k` matrix `src` into panels of `pr` rows for kernel `K`, as the left
/// operand when `left`; padding rows and groups are zero words.
fn pack<K: Kernel>(src: ByteMat<'_>, rows: usize, k: usize, pr: usize, left: bool) -> Packed {
    match (src.signed, left) {
        (true, true) => pack_as::<K, true, true>(src, rows, k, pr),
        (true, false) => pack_as::<K, true, false>(src, rows, k, pr),
        (false, true) => pack_as::<K, false, true>(src, rows, k, pr),
        (false, false) => pack_as::<K, false, false>(src, rows, k, pr),
    }
}

fn pack_as<K: Kernel, const SIGNED: bool, const LEFT: bool>(
    src: ByteMat<'_>,
    rows: usize,
    k: usize,
    pr: usize,
) -> Packed {
    let groups = k.div_ceil(K::KU);
    let panel = groups * pr;
    let mut data = vec![0u32; rows.div_ceil(pr) * panel];
    let full = k / K::KU;
    for (p, out) in data.chunks_mut(panel).enumerate() {
        let r0 = p * pr;
        let nr = pr.min(rows - r0);
        if src.cs == 1 {
            // Each row's k values are contiguous: read a group's bytes at once.
            for r in 0..nr {
                let row = &src.data[(r0 + r) * src.rs..][..k];
                for (g, chunk) in row.chunks_exact(K::KU).enumerate() {
                    let bytes = chunk
                        .iter()
                        .rev()
                        .fold(0u32, |w, &b| (w << 8) | u32::from(b));
                    out[g * pr + r] = K::word::<SIGNED, LEFT>(bytes, K::KU);
                }
            }
        } else {
            // Row-contiguous (or general) layout: build a group's words from KU rows of k.
            let fill = |rs: usize, out: &mut [u32]| {
                for g in 0..full {
                    let words = &mut out[g * pr..][..nr];
                    for (r, w) in words.iter_mut().enumerate() {
                        let base = (r0 + r) * rs + g * K::KU * src.cs;
                        let bytes = (0..K::KU).rev().fold(0u32, |w, t| {
                            (w << 8) | u32::from(src.data[base + t * src.cs])
                        });
                        *w = K::word::<SIGNED, LEFT>(bytes, K::KU);
                    }
                }
            };
            if src.rs == 1 {
                fill(1, out);
            } else {
                fill(src.rs, out);
            }
        }
        if full < groups {
            // The last, partial group.
            let valid = k - full * K::KU;
            for r in 0..nr {
                let bytes = (0..valid).rev().fold(0u32, |w, t| {
                    let q = full * K::KU + t;
                    (w << 8) | u32::from(src.data[(r0 + r) * src.rs + q * src.cs])
                });
                out[full * pr + r] = K::word::<SIGNED, LEFT>(bytes, valid);
            }
        }
    }
    Packed { data, panel }
}

/// Runs the packed GEMM with kernel `K`.
fn run<K: Kernel>(
    m: usize,
    n: usize,
    k: usize,
    lhs: ByteMat<'_>,
    rhs: ByteMat<'_>,
    dst: MatMut<'_, i32>,
    threads: usize,
) {
    let (oa, ob) = K::offsets(lhs.signed, rhs.signed);
    let a = pack::<K>(lhs, m, k, K::MR, true);
    let b = pack::<K>(rhs.t(), n, k, K::NR, false);
    // Σ a·b = Σ a'·b' + ob·Σa − oa·Σb + k·oa·ob, all wrapping like the accumulation; a sum is
    // only needed when the other operand is shifted.
    let sums_a = if ob != 0 {
        row_sums(lhs, m, k)
    } else {
        vec![0; m]
    };
    let sums_b = if oa != 0 {
        row_sums(rhs.t(), n, k)
    } else {
        vec![0; n]
    };
    let base = (k as i32).wrapping_mul(oa).wrapping_mul(ob);
    let init = |i: usize, j: usize| {
        base.wrapping_add(ob.wrapping_mul(sums_a[i]))
            .wrapping_sub(oa.wrapping_mul(sums_b[j]))
    };
    let block =
        |rows: std::ops::Range<usize>, cols: std::ops::Range<usize>, out: &mut [i32], rs: usize| {
            for (r, row) in out.chunks_mut(rs).take(rows.len()).enumerate() {
                for (c, v) in row[..cols.len()].iter_mut().enumerate() {
                    *v = init(rows.start + r, cols.start + c);
                }
            }
            multiply::<K>(k, &a, &b, rows, cols, out, rs);
        };
    let MatMut { data, rs } = dst;
    let row_block = m.div_ceil(threads.max(1)).next_multiple_of(K::MR);
    if threads <= 1 || (row_block >= m && n <= K::NR) {
        block(0..m, 0..n, data, rs);
    } else if m >= threads * K::MR {
        data.par_chunks_mut(row_block * rs)
            .enumerate()
            .for_each(|(t, out)| {
                let rows = t * row_block..(m.min((t + 1) * row_block));
                if !rows.is_empty() {
                    block(rows, 0..n, out, rs);
                }
            });
    } else {
        // Few rows: split the columns, each thread into its own buffer.
        let col_block = n.div_ceil(threads).next_multiple_of(K::NR);
        let parts: Vec<Vec<i32>> = (0..n.div_ceil(col_block))
            .into_par_iter()
            .map(|t| {
                let cols = t * col_block..n.min((t + 1) * col_block);
                let mut out = vec![0; m * cols.len()];
                block(0..m, cols.clone(), &mut out, cols.len());
                out
            })
            .collect();
        for (t, part) in parts.iter().enumerate() {
            let c0 = t * col_block;
            let w = part.len() / m;
            for (row, src) in data.chunks_mut(rs).zip(part.chunks(w)) {
                row[c0..c0 + w].copy_from_slice(src);
            }
        }
    }
}

/// Adds `a[rows] · b[cols]` into `out` (row-major, row stride `rs`, element `(0, 0)` being
/// `(rows.start, cols.start)`). `rows.start` is a multiple of `MR`, `cols.start` of `NR`.
fn multiply<K: Kernel>(
    k: usize,
    a: &Packed,
    b: &Packed,
    rows: std::ops::Range<usize>,
    cols: std::ops::Range<usize>,
    out: &mut [i32],
    rs: usize,
) {
    let groups = k.div_ceil(K::KU);
    let mut tile = vec![0i32; K::MR * K::NR];
    for g0 in (0..groups).step_by(K::KC_GROUPS) {
        let gn = K::KC_GROUPS.min(groups - g0);
        for j0 in cols.clone().step_by(K::NR) {
            let bp = &b.data[j0 / K::NR * b.panel..][..b.panel];
            let bp = &bp[g0 * K::NR..][..gn * K::NR];
            let nc = K::NR.min(cols.end - j0);
            for i0 in rows.clone().step_by(K::MR) {
                let ap = &a.data[i0 / K::MR * a.panel..][..a.panel];
                let ap = &ap[g0 * K::MR..][..gn * K::MR];
                // SAFETY: `run` only instantiates `K` for an available path; the panel slices
                // hold exactly `gn` groups.
                unsafe { K::tile(gn, ap, bp, &mut tile) };
                let mr = K::MR.min(rows.end - i0);
                for (r, t) in tile.chunks(K::NR).take(mr).enumerate() {
                    let o = &mut out[(i0 - rows.start + r) * rs + (j0 - cols.start)..][..nc];
                    for (v, &x) in o.iter_mut().zip(t) {
                        *v = v.wrapping_add(x);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::gemm::{Gemm, MatRef};
    use crate::isa::{Forced, Forcing};

    /// The path a test forced, as an index into [`Isa::ALL`].
    static FORCED: Forcing = Forcing::new();

    pub(super) fn forced() -> Option<Isa> {
        FORCED.get().map(|i| Isa::ALL[i])
    }

    /// Forces `isa` for every int8 GEMM in this process until dropped.
    pub(crate) struct Force(#[allow(dead_code, reason = "held for its drop")] Forced);

    impl Force {
        pub(crate) fn new(isa: Isa) -> Force {
            let i = Isa::ALL.iter().position(|&x| x == isa).unwrap_or(2);
            Force(FORCED.force(i))
        }
    }

    /// The paths this CPU has, each to be tested.
    pub(crate) fn paths() -> Vec<Isa> {
        let paths: Vec<Isa> = Isa::ALL.into_iter().filter(|i| i.available()).collect();
        #[cfg(target_arch = "x86_64")]
        assert!(
            paths.contains(&Isa::Avx2),
            "an x86-64 test machine without AVX2 cannot test the SIMD paths"
        );
        paths
    }

    /// A seeded xorshift stream of bytes, mixing in the extremes 0, 127, 128, 255.
    pub(crate) fn bytes(n: usize, seed: u64) -> Vec<u8> {
        let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..n)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                match s % 8 {
                    0 => 0,
                    1 => 127,
                    2 => 128,
                    3 => 255,
                    _ => (s >> 32) as u8,
                }
            })
            .collect()
    }

    /// The definition in i64, wrapped to i32 at the end.
    fn reference(m: usize, n: usize, k: usize, a: ByteMat<'_>, b: ByteMat<'_>) -> Vec<i32> {
        let v = |x: &ByteMat<'_>, i: usize| {
            if x.signed {
                i64::from(x.data[i] as i8)
            } else {
                i64::from(x.data[i])
            }
        };
        let mut out = vec![0; m * n];
        for i in 0..m {
            for j in 0..n {
                let s: i64 = (0..k)
                    .map(|p| v(&a, i * a.rs + p * a.cs) * v(&b, p * b.rs + j * b.cs))
                    .sum();
                out[i * n + j] = s as i32;
            }
        }
        out
    }

    /// The forced path of `Gemm for i32` on `i8`/`u8` slices.
    fn through_gemm(
        isa: Isa,
        (m, n, k): (usize, usize, usize),
        a: ByteMat<'_>,
        b: ByteMat<'_>,
        threads: usize,
    ) -> Vec<i32> {
        fn typed<L: crate::numeric::Widen<i32>, R: crate::numeric::Widen<i32>>(
            (m, n, k): (usize, usize, usize),
            a: ByteMat<'_>,
            b: ByteMat<'_>,
            threads: usize,
        ) -> Vec<i32> {
            let mut out = vec![-7; m * n];
            let lhs = MatRef::<L> {
                data: bytemuck::cast_slice(a.data),
                rs: a.rs,
                cs: a.cs,
            };
            let rhs = MatRef::<R> {
                data: bytemuck::cast_slice(b.data),
                rs: b.rs,
                cs: b.cs,
            };
            i32::gemm(
                m,
                n,
                k,
                lhs,
                rhs,
                MatMut {
                    data: &mut out,
                    rs: n,
                },
                threads,
            );
            out
        }
        let _force = Force::new(isa);
        match (a.signed, b.signed) {
            (true, true) => typed::<i8, i8>((m, n, k), a, b, threads),
            (true, false) => typed::<i8, u8>((m, n, k), a, b, threads),
            (false, true) => typed::<u8, i8>((m, n, k), a, b, threads),
            (false, false) => typed::<u8, u8>((m, n, k), a, b, threads),
        }
    }

    /// Every path, every signedness pair, row- and column-major operands, odd shapes (tails
    /// in m, n and k; k not a multiple of 4 and longer than a cache block), extreme values,
    /// 1 and 3 threads: equal to the i64 definition.
    #[test]
    fn every_path_matches_the_definition() {
        let shapes = [
            (1, 1, 1),
            (3, 5, 7),
            (8, 32, 4),
            (9, 33, 5),
            (17, 70, 300),
            (2, 100, 1030),
            (40, 3, 13),
            (64, 48, 576),
        ];
        for isa in paths() {
            for (s, &(m, n, k)) in shapes.iter().enumerate() {
                for signs in [(true, true), (false, true), (true, false), (false, false)] {
                    for transposed in [false, true] {
                        let ad = bytes(m * k, 2 * s as u64 + 1);
                        let bd = bytes(k * n, 2 * s as u64 + 2);
                        let a = ByteMat {
                            data: &ad,
                            rs: k,
                            cs: 1,
                            signed: signs.0,
                        };
                        let b = if transposed {
                            ByteMat {
                                data: &bd,
                                rs: 1,
                                cs: k,
                                signed: signs.1,
                            }
                        } else {
                            ByteMat {
                                data: &bd,
                                rs: n,
                                cs: 1,
                                signed: signs.1,
                            }
                        };
                        let want = reference(m, n, k, a, b);
                        for threads in [1, 3] {
                            let got = through_gemm(isa, (m, n, k), a, b, threads);
                            assert_eq!(
                                got, want,
                                "{isa:?} {m}x{n}x{k} signed {signs:?} transposed {transposed} threads {threads}"
                            );
                        }
                    }
                }
            }
        }
    }

    /// All-extreme operands (every product ±128·127, 255·255, ...) over a long k make int32
    /// sums near 2^31; each path agrees with the definition wrapped to int32.
    #[test]
    fn extreme_values_wrap_like_the_definition() {
        let (m, n, k) = (9, 35, 40_000);
        for isa in paths() {
            for (av, bv) in [(128u8, 128u8), (255, 255), (127, 128), (128, 255)] {
                for signs in [(true, true), (false, false), (true, false), (false, true)] {
                    let ad = vec![av; m * k];
                    let bd = vec![bv; k * n];
                    let a = ByteMat {
                        data: &ad,
                        rs: k,
                        cs: 1,
                        signed: signs.0,
                    };
                    let b = ByteMat {
                        data: &bd,
                        rs: n,
                        cs: 1,
                        signed: signs.1,
                    };
                    let want = reference(m, n, k, a, b);
                    let got = through_gemm(isa, (m, n, k), a, b, 2);
                    assert_eq!(got, want, "{isa:?} {av}x{bv} signed {signs:?}");
                }
            }
        }
    }
}
