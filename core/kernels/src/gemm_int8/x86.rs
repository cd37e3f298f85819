//! The x86-64 microkernels of the int8 GEMM: AVX512-VNNI (8 × 32 tile, words of 4 bytes) and
//! AVX2 (6 × 16 tile, words of 2 int16). Each keeps its whole tile in registers and streams one
//! left and one right panel.

use std::arch::x86_64::*;

use super::Kernel;

/// `vpdpbusd`: unsigned left bytes times signed right bytes, four products per int32 lane.
pub(super) struct Vnni;

impl Kernel for Vnni {
    const MR: usize = 8;
    const NR: usize = 32;
    const KU: usize = 4;
    const KC_GROUPS: usize = 128;

    fn offsets(lhs_signed: bool, rhs_signed: bool) -> (i32, i32) {
        (
            if lhs_signed { 128 } else { 0 },
            if rhs_signed { 0 } else { 128 },
        )
    }

    fn word<const SIGNED: bool, const LEFT: bool>(bytes: u32, valid: usize) -> u32 {
        // A signed left byte becomes a + 128 and an unsigned right byte b − 128 (as i8 bits):
        // both are the byte with its top bit flipped. Padding stays zero.
        if SIGNED == LEFT {
            let mask = if valid >= 4 {
                u32::MAX
            } else {
                (1u32 << (8 * valid)) - 1
            };
            bytes ^ (0x8080_8080 & mask)
        } else {
            bytes
        }
    }

    unsafe fn tile(groups: usize, a: &[u32], b: &[u32], tile: &mut [i32]) {
        debug_assert!(a.len() >= groups * 8 && b.len() >= groups * 32 && tile.len() >= 256);
        // SAFETY: the caller guarantees the CPU features and the slice lengths.
        unsafe { vnni_tile(groups, a.as_ptr(), b.as_ptr(), tile.as_mut_ptr()) }
    }
}

/// `tile[8 × 32] = a · b` over `groups` groups: `a` holds 8 row words per group, `b` 32 column
/// words per group (4 bytes each).
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
unsafe fn vnni_tile(groups: usize, a: *const u32, b: *const u32, tile: *mut i32) {
    let mut acc = [_mm512_setzero_si512(); 16];
    for g in 0..groups {
        // SAFETY: group `g` of each panel lies inside it (see `Kernel::tile`).
        let (b0, b1, ag) = unsafe {
            let bg = b.add(g * 32);
            (
                _mm512_loadu_si512(bg.cast()),
                _mm512_loadu_si512(bg.add(16).cast()),
                a.add(g * 8),
            )
        };
        for r in 0..8 {
            // SAFETY: as above.
            let x = _mm512_set1_epi32(unsafe { *ag.add(r) } as i32);
            acc[2 * r] = _mm512_dpbusd_epi32(acc[2 * r], x, b0);
            acc[2 * r + 1] = _mm512_dpbusd_epi32(acc[2 * r + 1], x, b1);
        }
    }
    for (i, v) in acc.iter().enumerate() {
        // SAFETY: the tile holds 16 vectors of 16 int32.
        unsafe { _mm512_storeu_si512(tile.add(i * 16).cast(), *v) };
    }
}

/// `vpmaddwd`: int16 pairs multiplied and summed into int32 lanes.
pub(super) struct Avx2;

impl Kernel for Avx2 {
    const MR: usize = 6;
    const NR: usize = 16;
    const KU: usize = 2;
    const KC_GROUPS: usize = 256;

    fn offsets(_: bool, _: bool) -> (i32, i32) {
        (0, 0)
    }

    fn word<const SIGNED: bool, const LEFT: bool>(bytes: u32, _valid: usize) -> u32 {
        // Two values extended to int16 (exact for 8-bit values of either signedness).
        let extend = |b: u32| {
            if SIGNED {
                u32::from(b as u8 as i8 as i16 as u16)
            } else {
                b & 0xff
            }
        };
        extend(bytes & 0xff) | (extend((bytes >> 8) & 0xff) << 16)
    }

    unsafe fn tile(groups: usize, a: &[u32], b: &[u32], tile: &mut [i32]) {
        debug_assert!(a.len() >= groups * 6 && b.len() >= groups * 16 && tile.len() >= 96);
        // SAFETY: the caller guarantees the CPU features and the slice lengths.
        unsafe { avx2_tile(groups, a.as_ptr(), b.as_ptr(), tile.as_mut_ptr()) }
    }
}

/// `tile[6 × 16] = a · b` over `groups` groups: `a` holds 6 row words per group, `b` 16 column
/// words per group (2 int16 each).
#[target_feature(enable = "avx2")]
unsafe fn avx2_tile(groups: usize, a: *const u32, b: *const u32, tile: *mut i32) {
    let mut acc = [_mm256_setzero_si256(); 12];
    for g in 0..groups {
        // SAFETY: group `g` of each panel lies inside it (see `Kernel::tile`).
        let (b0, b1, ag) = unsafe {
            let bg = b.add(g * 16);
            (
                _mm256_loadu_si256(bg.cast()),
                _mm256_loadu_si256(bg.add(8).cast()),
                a.add(g * 6),
            )
        };
        for r in 0..6 {
            // SAFETY: as above.
            let x = _mm256_set1_epi32(unsafe { *ag.add(r) } as i32);
            acc[2 * r] = _mm256_add_epi32(acc[2 * r], _mm256_madd_epi16(x, b0));
            acc[2 * r + 1] = _mm256_add_epi32(acc[2 * r + 1], _mm256_madd_epi16(x, b1));
        }
    }
    for (i, v) in acc.iter().enumerate() {
        // SAFETY: the tile holds 12 vectors of 8 int32.
        unsafe { _mm256_storeu_si256(tile.add(i * 8).cast(), *v) };
    }
}
