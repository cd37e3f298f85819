//! Posit arithmetic throughput: this crate's posit16 and posit32 (es = 2) `+`, `×`, `÷`
//! against the `softposit` crate's `P16E1` and `P32E2` (SoftPosit's formats), in one run on
//! the same real operands.
//!
//! ```sh
//! cargo bench -p byoc-plugin-posit --bench throughput
//! ```
//!
//! Prints one line per width and operation: millions of operations per second for each
//! library (best of several passes over 16,384 operand pairs) and their ratio.

use std::hint::black_box;
use std::time::Instant;

use byoc_plugin_posit::{P16, P32};
use softposit::{P16E1, P32E2};

/// Operand pairs per pass.
const PAIRS: usize = 1 << 14;
/// Passes per timing; the best of `REPEATS` timings counts.
const PASSES: usize = 32;
const REPEATS: usize = 5;

/// Operands spread over several binades, both signs (splitmix64).
fn operands(seed: u64) -> Vec<f64> {
    let mut state = seed;
    (0..PAIRS)
        .map(|_| {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            let unit = (z >> 11) as f64 / (1u64 << 53) as f64;
            let sign = if z & 1 == 0 { 1.0 } else { -1.0 };
            sign * (unit * 16.0 - 8.0).exp2()
        })
        .collect()
}

/// Millions of `f(a[i], b[i])` per second, best of the repeats.
fn mops<T: Copy>(a: &[T], b: &[T], f: impl Fn(T, T) -> T) -> f64 {
    let mut best = f64::INFINITY;
    for _ in 0..REPEATS {
        let start = Instant::now();
        for _ in 0..PASSES {
            for (&x, &y) in a.iter().zip(b) {
                black_box(f(black_box(x), black_box(y)));
            }
        }
        best = best.min(start.elapsed().as_secs_f64());
    }
    (PASSES * PAIRS) as f64 / best / 1e6
}

fn report(width: &str, op: &str, ours: f64, theirs: f64, peer: &str) {
    println!(
        "posit{width} {op}: byoc-plugin-posit {ours:8.1} Mop/s, softposit {peer} {theirs:8.1} Mop/s, ratio {:.2}",
        ours / theirs
    );
}

macro_rules! compare {
    ($width:literal, $ours:ty, $theirs:ty, $peer:literal, $x:expr, $y:expr) => {{
        let (a, b): (Vec<$ours>, Vec<$ours>) = (
            $x.iter().map(|&v| <$ours>::from_f64(v)).collect(),
            $y.iter().map(|&v| <$ours>::from_f64(v)).collect(),
        );
        let (c, d): (Vec<$theirs>, Vec<$theirs>) = (
            $x.iter().map(|&v| <$theirs>::from(v)).collect(),
            $y.iter().map(|&v| <$theirs>::from(v)).collect(),
        );
        report(
            $width,
            "add",
            mops(&a, &b, |x, y| x + y),
            mops(&c, &d, |x, y| x + y),
            $peer,
        );
        report(
            $width,
            "mul",
            mops(&a, &b, |x, y| x * y),
            mops(&c, &d, |x, y| x * y),
            $peer,
        );
        report(
            $width,
            "div",
            mops(&a, &b, |x, y| x / y),
            mops(&c, &d, |x, y| x / y),
            $peer,
        );
    }};
}

fn main() {
    let (x, y) = (operands(1), operands(2));
    compare!("16", P16, P16E1, "P16E1", x, y);
    compare!("32", P32, P32E2, "P32E2", x, y);
}
