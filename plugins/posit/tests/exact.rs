//! Arithmetic and casts against the exact reference: every posit8 pair for `+ - * /`, every
//! posit16 value for `sqrt`, negation, `abs` and the casts, and sampled posit16 and posit32
//! pairs.

mod reference;

use byoc_plugin_posit::{Posit, Quire, P16, P32, P8};
use num_bigint::BigInt;
use reference::{Dyadic, Samples};

fn apply<const N: u32>(op: char, a: Posit<N>, b: Posit<N>) -> Posit<N> {
    match op {
        '+' => a + b,
        '-' => a - b,
        '*' => a * b,
        '/' => a / b,
        _ => unreachable!("ops are listed in the tests"),
    }
}

fn check_pair<const N: u32>(op: char, a: u32, b: u32) {
    let got = apply(op, Posit::<N>::from_bits(a), Posit::<N>::from_bits(b)).to_bits();
    let want = reference::binary(N, op, u64::from(a), u64::from(b)) as u32;
    assert_eq!(
        got, want,
        "posit{N} {a:#x} {op} {b:#x}: got {got:#x}, exact rounding is {want:#x}"
    );
}

#[test]
fn posit8_binary_ops_are_correctly_rounded_for_every_pair() {
    for op in ['+', '-', '*', '/'] {
        for a in 0..256 {
            for b in 0..256 {
                check_pair::<8>(op, a, b);
            }
        }
    }
}

/// Random patterns, with a share of pairs of close scales (where addition cancels) and the
/// special patterns.
fn sampled_pairs<const N: u32>(count: usize, seed: u64) -> Vec<(u32, u32)> {
    let mask = Posit::<N>::MASK;
    let mut rng = Samples::new(seed);
    let mut pairs = vec![
        (0, 0),
        (1 << (N - 1), 1),
        (1, mask),
        (mask >> 1, mask >> 1),
        (1, 1),
    ];
    while pairs.len() < count {
        let a = rng.next_u64() as u32 & mask;
        let b = if rng.next_u64().is_multiple_of(4) {
            // a neighbour of ±a
            let near = a.wrapping_add((rng.next_u64() % 64) as u32);
            if rng.next_u64().is_multiple_of(2) {
                near
            } else {
                near.wrapping_neg()
            }
        } else {
            rng.next_u64() as u32
        };
        pairs.push((a, b & mask));
    }
    pairs
}

#[test]
fn posit16_binary_ops_are_correctly_rounded_on_samples() {
    for op in ['+', '-', '*', '/'] {
        for (a, b) in sampled_pairs::<16>(100_000, 16) {
            check_pair::<16>(op, a, b);
        }
    }
}

#[test]
fn posit32_binary_ops_are_correctly_rounded_on_samples() {
    for op in ['+', '-', '*', '/'] {
        for (a, b) in sampled_pairs::<32>(30_000, 32) {
            check_pair::<32>(op, a, b);
        }
    }
}

fn check_sqrt<const N: u32>(a: u32) {
    let got = Posit::<N>::from_bits(a).sqrt().to_bits();
    let want = reference::sqrt(N, u64::from(a)) as u32;
    assert_eq!(
        got, want,
        "posit{N} sqrt({a:#x}): got {got:#x}, exact rounding is {want:#x}"
    );
}

#[test]
fn sqrt_is_correctly_rounded_for_every_posit8_and_posit16() {
    for a in 0..1 << 8 {
        check_sqrt::<8>(a);
    }
    for a in 0..1 << 16 {
        check_sqrt::<16>(a);
    }
}

#[test]
fn posit32_sqrt_is_correctly_rounded_on_samples() {
    let mut rng = Samples::new(5);
    for _ in 0..50_000 {
        check_sqrt::<32>(rng.next_u64() as u32);
    }
}

/// The exact value of a real pattern, from the reference decoder.
fn exact<const N: u32>(p: Posit<N>) -> Dyadic {
    reference::decode(N, u64::from(p.to_bits())).expect("a real pattern")
}

fn check_unary_ops<const N: u32>(bits: u32) {
    let p = Posit::<N>::from_bits(bits);
    let Some(value) = reference::decode(N, u64::from(bits)) else {
        assert!(p.is_nar() && p.to_f64().is_nan() && p.to_f32().is_nan());
        assert_eq!(p.to_i64(), i64::MIN);
        assert!((-p).is_nar() && p.abs().is_nar());
        return;
    };
    // Casts to floats: f64 exact, f32 rounded once from the exact value.
    let as_f64 = p.to_f64();
    assert_eq!(
        Dyadic::from_f64(as_f64).cmp(&value),
        std::cmp::Ordering::Equal,
        "{p:?} to f64"
    );
    let as_f32 = p.to_f32();
    let f32_error = Dyadic::from_f64(f64::from(as_f32)).sub(&value).abs();
    for neighbour in [
        f32::from_bits(as_f32.to_bits() + 1),
        f32::from_bits(as_f32.to_bits().wrapping_sub(1)),
    ] {
        if neighbour.is_finite() {
            let other = Dyadic::from_f64(f64::from(neighbour)).sub(&value).abs();
            assert_ne!(
                other.cmp(&f32_error),
                std::cmp::Ordering::Less,
                "{p:?} to f32 {as_f32}"
            );
        }
    }
    // Casts from floats round exactly.
    assert_eq!(Posit::<N>::from_f64(as_f64), p);
    // Negation and abs are exact.
    assert_eq!(
        Dyadic::from_f64((-p).to_f64()).cmp(&value.neg()),
        std::cmp::Ordering::Equal
    );
    assert_eq!(
        Dyadic::from_f64(p.abs().to_f64()).cmp(&value.abs()),
        std::cmp::Ordering::Equal
    );
    // To integers: nearest, ties to even.
    let i = p.to_i64();
    let error = Dyadic::new(i, 0).sub(&value).abs();
    let half = Dyadic::new(1, -1);
    match error.cmp(&half) {
        std::cmp::Ordering::Less => {}
        std::cmp::Ordering::Equal => assert_eq!(i % 2, 0, "{p:?} ties to even, got {i}"),
        std::cmp::Ordering::Greater => {
            // Only saturation may be further away.
            assert!(i == i64::MAX || i == i64::MIN, "{p:?} to int {i}")
        }
    }
}

#[test]
fn unary_ops_and_float_casts_are_exact_for_every_posit8_and_posit16() {
    for a in 0..1 << 8 {
        check_unary_ops::<8>(a);
    }
    for a in 0..1 << 16 {
        check_unary_ops::<16>(a);
    }
}

#[test]
fn posit32_unary_ops_and_float_casts_are_exact_on_samples() {
    let mut rng = Samples::new(7);
    for _ in 0..50_000 {
        check_unary_ops::<32>(rng.next_u64() as u32);
    }
}

fn check_from_f64<const N: u32>(x: f64) {
    let got = Posit::<N>::from_f64(x).to_bits();
    let want = if x.is_finite() {
        reference::round_exact(N, &Dyadic::from_f64(x)) as u32
    } else {
        reference::nar(N) as u32
    };
    assert_eq!(got, want, "posit{N} from {x:e} ({:#x})", x.to_bits());
}

#[test]
fn casts_from_floats_are_correctly_rounded_on_samples() {
    let mut rng = Samples::new(11);
    for _ in 0..20_000 {
        // Every f32 bit pattern class (NaN, infinities, subnormals, huge and tiny values) and
        // f64 values with exponents inside and just outside the posit range.
        let f = f64::from(f32::from_bits(rng.next_u64() as u32));
        let scale = (rng.next_u64() % 300) as i32 - 150;
        let d = (1.0 + (rng.next_u64() >> 12) as f64 / (1u64 << 52) as f64) * 2f64.powi(scale);
        for x in [f, d, -d] {
            check_from_f64::<8>(x);
            check_from_f64::<16>(x);
            check_from_f64::<32>(x);
        }
    }
}

#[test]
fn casts_from_integers_are_correctly_rounded() {
    let mut rng = Samples::new(13);
    let mut values = vec![
        0i64,
        1,
        -1,
        2,
        3,
        255,
        256,
        i64::MAX,
        i64::MIN,
        i64::from(i32::MIN),
    ];
    for _ in 0..5_000 {
        values.push((rng.next_u64() as i64) >> (rng.next_u64() % 64));
    }
    for x in values {
        let exact_value = Dyadic::new(x, 0);
        assert_eq!(
            u64::from(P8::from_i64(x).to_bits()),
            reference::round_exact(8, &exact_value),
            "{x}"
        );
        assert_eq!(
            u64::from(P16::from_i64(x).to_bits()),
            reference::round_exact(16, &exact_value),
            "{x}"
        );
        assert_eq!(
            u64::from(P32::from_i64(x).to_bits()),
            reference::round_exact(32, &exact_value),
            "{x}"
        );
    }
}

fn check_quire<const N: u32>(rng: &mut Samples, terms: usize) {
    let mask = Posit::<N>::MASK;
    let mut quire = Quire::<N>::new();
    let mut sum = Dyadic::zero();
    for _ in 0..terms {
        let real = |bits: u64| {
            let p = Posit::<N>::from_bits(bits as u32 & mask);
            if p.is_nar() {
                Posit::<N>::ONE
            } else {
                p
            }
        };
        let (a, b) = (real(rng.next_u64()), real(rng.next_u64()));
        let subtract = rng.next_u64().is_multiple_of(2);
        let product = exact(a).mul(&exact(b));
        if subtract {
            quire.sub_product(a, b);
            sum = sum.sub(&product);
        } else {
            quire.add_product(a, b);
            sum = sum.add(&product);
        }
    }
    let want = reference::round_exact(N, &sum) as u32;
    assert_eq!(
        quire.to_posit().to_bits(),
        want,
        "posit{N} quire of {terms} products"
    );
}

#[test]
fn quire_dot_products_round_once() {
    let mut rng = Samples::new(17);
    for terms in [1, 2, 3, 10, 100] {
        for _ in 0..200 {
            check_quire::<8>(&mut rng, terms);
            check_quire::<16>(&mut rng, terms);
            check_quire::<32>(&mut rng, terms);
        }
    }
}

#[test]
fn quire_cancels_exactly_where_sequential_sums_do_not() {
    // 3.2e7 × 4e8 + 1 + 1 − 8e7 × 1.6e8 = 2 exactly (fast-posit's README example).
    let p = P32::from_f64;
    let mut quire = Quire::<32>::new();
    quire.add_product(p(3.2e7), p(4e8));
    quire.add_posit(P32::ONE);
    quire.add_posit(P32::ONE);
    quire.sub_product(p(8e7), p(1.6e8));
    let exact_sum = exact(p(3.2e7))
        .mul(&exact(p(4e8)))
        .add(&Dyadic::new(2, 0))
        .sub(&exact(p(8e7)).mul(&exact(p(1.6e8))));
    assert_eq!(
        exact_sum.cmp(&Dyadic::new(BigInt::from(2), 0)),
        std::cmp::Ordering::Equal
    );
    assert_eq!(quire.to_posit(), p(2.0));
    let sequential = p(3.2e7) * p(4e8) + P32::ONE + P32::ONE - p(8e7) * p(1.6e8);
    assert_ne!(sequential, p(2.0));
}

#[test]
fn quire_nar_and_overflow_give_nar() {
    let mut quire = Quire::<8>::new();
    quire.add_product(P8::NAR, P8::ONE);
    assert!(quire.is_nar() && quire.to_posit().is_nar());
    let mut quire = Quire::<8>::new();
    for _ in 0..1u64 << 10 {
        quire.add_product(P8::MAXPOS, P8::MAXPOS);
    }
    // 2^10 × 2^48 fits 128 bits with 48 fraction bits; the posit saturates at maxpos.
    assert!(!quire.is_nar());
    assert_eq!(quire.to_posit(), P8::MAXPOS);
    assert!(Quire::<16>::new().to_posit().is_zero());
}
