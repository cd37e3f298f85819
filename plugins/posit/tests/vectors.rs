//! The verified conversion vectors of the posit literature (f32 input to posit bits, produced
//! by an exact rational reference and matched by SoftPosit and fast-posit), the constants of
//! the 2022 standard, and its invariants as property tests.

use byoc_plugin_posit::{P16, P32, P8};
use proptest::prelude::*;

#[test]
fn conversion_vectors() {
    // (input, posit8 es2, posit16 es2, posit32 es2)
    let vectors: [(f32, u32, u32, u32); 13] = [
        (1.0, 0x40, 0x4000, 0x4000_0000),
        (-1.0, 0xC0, 0xC000, 0xC000_0000),
        (0.5, 0x38, 0x3800, 0x3800_0000),
        (std::f32::consts::PI, 0x4D, 0x4C91, 0x4C90_FDB0),
        (1e-9, 0x01, 0x0061, 0x0061_2E0C),
        (1e9, 0x7F, 0x7F9E, 0x7F9D_CD65),
        (100.0, 0x6A, 0x6A40, 0x6A40_0000),
        (0.1, 0x25, 0x24CD, 0x24CC_CCD0),
        (-0.1, 0xDB, 0xDB33, 0xDB33_3330),
        (65.0, 0x68, 0x6810, 0x6810_0000),
        (1.0 / 64.0, 0x18, 0x1800, 0x1800_0000),
        (0.0, 0x00, 0x0000, 0x0000_0000),
        (f32::NAN, 0x80, 0x8000, 0x8000_0000),
    ];
    for (x, p8, p16, p32) in vectors {
        assert_eq!(P8::from_f32(x).to_bits(), p8, "posit8 of {x}");
        assert_eq!(P16::from_f32(x).to_bits(), p16, "posit16 of {x}");
        assert_eq!(P32::from_f32(x).to_bits(), p32, "posit32 of {x}");
    }
    for infinity in [f32::INFINITY, f32::NEG_INFINITY] {
        assert!(P16::from_f32(infinity).is_nar());
    }
    // f64 pi keeps more bits in posit32 than f32 pi.
    assert_eq!(P32::from_f64(std::f64::consts::PI).to_bits(), 0x4C90_FDAA);
}

#[test]
fn sample_decodes_and_constants() {
    for (bits, value) in [
        (0x48, 2.0),
        (0x50, 4.0),
        (0x60, 16.0),
        (0x70, 256.0),
        (0x30, 0.25),
        (0x38, 0.5),
    ] {
        assert_eq!(P8::from_bits(bits).to_f64(), value, "{bits:#x}");
    }
    assert_eq!(P8::MAXPOS.to_f64(), 2f64.powi(24));
    assert_eq!(P8::MINPOS.to_f64(), 2f64.powi(-24));
    assert_eq!(P16::MAXPOS.to_f64(), 2f64.powi(56));
    assert_eq!(P16::MINPOS.to_f64(), 2f64.powi(-56));
    assert_eq!(P32::MAXPOS.to_f64(), 2f64.powi(120));
    assert_eq!(P32::MINPOS.to_f64(), 2f64.powi(-120));
    assert_eq!(P16::LOWEST.to_bits(), 0x8001);
    assert_eq!(P32::LOWEST.to_bits(), 0x8000_0001);
    assert_eq!(P32::LOWEST.to_f64(), -(2f64.powi(120)));
    // Never rounds to zero or NaR.
    assert_eq!(P16::from_f64(1e-300), P16::MINPOS);
    assert_eq!(P16::from_f64(-1e300), -P16::MAXPOS);
    assert_eq!(P8::MAXPOS * P8::MAXPOS, P8::MAXPOS);
    assert_eq!(P8::MINPOS * P8::MINPOS, P8::MINPOS);
    // Undefined operations.
    assert!((P16::ONE / P16::ZERO).is_nar());
    assert!((-P16::ONE).sqrt().is_nar());
    assert!(P16::ZERO.log().is_nar());
    assert!((P16::NAR + P16::ONE).is_nar());
}

fn posit16() -> impl Strategy<Value = P16> {
    any::<u16>().prop_map(|b| P16::from_bits(u32::from(b)))
}

fn posit32() -> impl Strategy<Value = P32> {
    any::<u32>().prop_map(P32::from_bits)
}

proptest! {
    #[test]
    fn negation_is_twos_complement(p in posit32()) {
        prop_assert_eq!((-p).to_bits(), p.to_bits().wrapping_neg());
        prop_assert_eq!(-(-p), p);
    }

    #[test]
    fn order_is_signed_integer_order(a in posit32(), b in posit32()) {
        prop_assume!(!a.is_nar() && !b.is_nar());
        prop_assert_eq!(a.to_f64().partial_cmp(&b.to_f64()), Some(a.cmp(&b)));
        prop_assert_eq!(a < b, a.to_signed() < b.to_signed());
        prop_assert_eq!(a.max(b).to_f64(), a.to_f64().max(b.to_f64()));
        prop_assert_eq!(a.min(b).to_f64(), a.to_f64().min(b.to_f64()));
    }

    #[test]
    fn decode_encode_round_trips(p in posit32()) {
        prop_assume!(!p.is_nar());
        prop_assert_eq!(P32::from_f64(p.to_f64()), p);
    }

    #[test]
    fn addition_and_multiplication_commute(a in posit16(), b in posit16()) {
        prop_assert_eq!(a + b, b + a);
        prop_assert_eq!(a * b, b * a);
    }

    #[test]
    fn identities_hold(p in posit32()) {
        prop_assume!(!p.is_nar());
        prop_assert_eq!(p * P32::ONE, p);
        prop_assert_eq!(p + P32::ZERO, p);
        prop_assert_eq!(p - p, P32::ZERO);
        prop_assert_eq!(p / P32::ONE, p);
    }

    #[test]
    fn rounding_is_monotonic(x in -1e40f64..1e40, y in -1e40f64..1e40) {
        let (lo, hi) = if x <= y { (x, y) } else { (y, x) };
        prop_assert!(P32::from_f64(lo) <= P32::from_f64(hi));
        prop_assert!(P16::from_f64(lo) <= P16::from_f64(hi));
        prop_assert!(P8::from_f64(lo) <= P8::from_f64(hi));
    }

    #[test]
    fn nar_propagates(p in posit16()) {
        let nar = P16::NAR;
        for r in [nar + p, p + nar, nar - p, nar * p, p / nar, nar.sqrt(), nar.exp(), nar.log()] {
            prop_assert!(r.is_nar());
        }
    }
}

#[test]
fn c_library_functions_use_tvm_names_and_widths() {
    use byoc_plugin_posit::cabi::*;
    assert_eq!(FloatToPosit16es2(1.0), 0x4000);
    assert_eq!(Posit16es2Add(0x4000, 0x4000), 0x4800); // 1 + 1 = 2
    assert_eq!(Posit8es2Mul(0x48, 0x48), 0x50); // 2 × 2 = 4
    assert_eq!(Posit32es2Div(0x4000_0000, 0x4800_0000), 0x3800_0000); // 1 / 2
    assert_eq!(Posit16es2Sqrt(0x5000), 0x4800); // sqrt 4 = 2
    assert_eq!(Posit8es2ToFloat(0x30), 0.25);
    assert_eq!(
        Posit32es2ToDouble(DoubleToPosit32es2(0.1)),
        P32::from_f64(0.1).to_f64()
    );
    assert_eq!(IntToPosit16es2(-3), P16::from_f64(-3.0).to_bits() as u16);
    assert_eq!(Posit16es2ToInt(FloatToPosit16es2(2.5)), 2);
    assert_eq!(MinPosit8es2(), 0x81);
    assert_eq!(MinPosit16es2(), 0x8001);
    assert_eq!(MinPosit32es2(), 0x8000_0001);
    assert_eq!(Posit16es2LT(0xC000, 0x4000), 1); // -1 < 1
    assert_eq!(Posit16es2GE(0xC000, 0x4000), 0);
    assert_eq!(Posit16es2Max(0xC000, 0x4000), 0x4000);
    let (a, b) = ([0x4000u16, 0x4800], [0x4800u16, 0xC000]);
    // 1 × 2 + 2 × (-1) = 0
    // SAFETY: both arrays hold two elements.
    assert_eq!(unsafe { Posit16es2QuireDot(a.as_ptr(), b.as_ptr(), 2) }, 0);
    // SAFETY: a zero length reads nothing.
    assert_eq!(
        unsafe { Posit16es2QuireDot(std::ptr::null(), std::ptr::null(), 0) },
        0
    );
}
