//! The C-ABI library functions a host calls per element, with TVM's names.
//!
//! For each width `N` in 8, 16, 32 the encodings travel as `uint8_t`, `uint16_t`, `uint32_t`:
//!
//! | function | signature |
//! |---|---|
//! | `PositNes2Add`, `Sub`, `Mul`, `Div`, `Max`, `Min` | `(uN, uN) -> uN` |
//! | `PositNes2Sqrt`, `Exp`, `Log`, `Tanh`, `Sigmoid`, `Neg`, `Abs` | `(uN) -> uN` |
//! | `PositNes2EQ`, `NE`, `LT`, `LE`, `GT`, `GE` | `(uN, uN) -> u8` (0 or 1, by the posit order) |
//! | `FloatToPositNes2`, `DoubleToPositNes2`, `IntToPositNes2` | `(f32 / f64 / i32) -> uN` |
//! | `PositNes2ToFloat`, `PositNes2ToDouble`, `PositNes2ToInt` | `(uN) -> f32 / f64 / i32` |
//! | `MinPositNes2` | `() -> uN`: `-maxpos`, the initial value of a max reduction |
//! | `PositNes2QuireDot` | `(*const uN, *const uN, len) -> uN`: `Σ a[i]·b[i]` rounded once |
//!
//! `MinPositNes2` returns the width's own `-maxpos` (`0x81`, `0x8001`, `0x80000001`): TVM's
//! wrapper truncates the 16- and 32-bit ones to `+minpos`, which breaks max pooling over
//! all-negative windows.

use crate::format::Posit;
use crate::quire::Quire;

macro_rules! posit_library {
    ($n:literal, $bits:ty) => {
        paste::paste! {
            posit_library!(@binary $n, $bits, [<Posit $n es2Add>], sum);
            posit_library!(@binary $n, $bits, [<Posit $n es2Sub>], difference);
            posit_library!(@binary $n, $bits, [<Posit $n es2Mul>], product);
            posit_library!(@binary $n, $bits, [<Posit $n es2Div>], quotient);
            posit_library!(@binary $n, $bits, [<Posit $n es2Max>], max);
            posit_library!(@binary $n, $bits, [<Posit $n es2Min>], min);
            posit_library!(@unary $n, $bits, [<Posit $n es2Sqrt>], sqrt);
            posit_library!(@unary $n, $bits, [<Posit $n es2Exp>], exp);
            posit_library!(@unary $n, $bits, [<Posit $n es2Log>], log);
            posit_library!(@unary $n, $bits, [<Posit $n es2Tanh>], tanh);
            posit_library!(@unary $n, $bits, [<Posit $n es2Sigmoid>], sigmoid);
            posit_library!(@unary $n, $bits, [<Posit $n es2Neg>], neg);
            posit_library!(@unary $n, $bits, [<Posit $n es2Abs>], abs);
            posit_library!(@compare $n, $bits, [<Posit $n es2EQ>], eq);
            posit_library!(@compare $n, $bits, [<Posit $n es2NE>], ne);
            posit_library!(@compare $n, $bits, [<Posit $n es2LT>], lt);
            posit_library!(@compare $n, $bits, [<Posit $n es2LE>], le);
            posit_library!(@compare $n, $bits, [<Posit $n es2GT>], gt);
            posit_library!(@compare $n, $bits, [<Posit $n es2GE>], ge);

            #[doc = concat!("`float` to posit", $n, ".")]
            #[no_mangle]
            pub extern "C" fn [<FloatToPosit $n es2>](x: f32) -> $bits {
                Posit::<$n>::from_f32(x).to_bits() as $bits
            }

            #[doc = concat!("`double` to posit", $n, ".")]
            #[no_mangle]
            pub extern "C" fn [<DoubleToPosit $n es2>](x: f64) -> $bits {
                Posit::<$n>::from_f64(x).to_bits() as $bits
            }

            #[doc = concat!("`int32_t` to posit", $n, ".")]
            #[no_mangle]
            pub extern "C" fn [<IntToPosit $n es2>](x: i32) -> $bits {
                Posit::<$n>::from_i64(i64::from(x)).to_bits() as $bits
            }

            #[doc = concat!("posit", $n, " to `float`.")]
            #[no_mangle]
            pub extern "C" fn [<Posit $n es2ToFloat>](x: $bits) -> f32 {
                Posit::<$n>::from_bits(u32::from(x)).to_f32()
            }

            #[doc = concat!("posit", $n, " to `double`.")]
            #[no_mangle]
            pub extern "C" fn [<Posit $n es2ToDouble>](x: $bits) -> f64 {
                Posit::<$n>::from_bits(u32::from(x)).to_f64()
            }

            #[doc = concat!("posit", $n, " to `int32_t`.")]
            #[no_mangle]
            pub extern "C" fn [<Posit $n es2ToInt>](x: $bits) -> i32 {
                Posit::<$n>::from_bits(u32::from(x)).to_i32()
            }

            #[doc = concat!("`-maxpos` of posit", $n, ".")]
            #[no_mangle]
            pub extern "C" fn [<MinPosit $n es2>]() -> $bits {
                Posit::<$n>::LOWEST.to_bits() as $bits
            }

            #[doc = concat!("The dot product of two posit", $n, " arrays accumulated in the quire.")]
            ///
            /// # Safety
            /// `a` and `b` must each point to `len` readable elements (or `len` be 0).
            #[no_mangle]
            pub unsafe extern "C" fn [<Posit $n es2QuireDot>](
                a: *const $bits,
                b: *const $bits,
                len: usize,
            ) -> $bits {
                if len == 0 || a.is_null() || b.is_null() {
                    return 0;
                }
                // SAFETY: the caller guarantees `len` readable elements behind each pointer.
                let (a, b) = unsafe {
                    (std::slice::from_raw_parts(a, len), std::slice::from_raw_parts(b, len))
                };
                let mut quire = Quire::<$n>::new();
                for (&x, &y) in a.iter().zip(b) {
                    quire.add_product(
                        Posit::from_bits(u32::from(x)),
                        Posit::from_bits(u32::from(y)),
                    );
                }
                quire.to_posit().to_bits() as $bits
            }
        }
    };
    (@binary $n:literal, $bits:ty, $name:ident, $method:ident) => {
        #[doc = concat!("posit", $n, " `", stringify!($method), "`.")]
        #[no_mangle]
        pub extern "C" fn $name(a: $bits, b: $bits) -> $bits {
            let (a, b) = (Posit::<$n>::from_bits(u32::from(a)), Posit::<$n>::from_bits(u32::from(b)));
            a.$method(b).to_bits() as $bits
        }
    };
    (@unary $n:literal, $bits:ty, $name:ident, $method:ident) => {
        #[doc = concat!("posit", $n, " `", stringify!($method), "`.")]
        #[no_mangle]
        pub extern "C" fn $name(a: $bits) -> $bits {
            Posit::<$n>::from_bits(u32::from(a)).$method().to_bits() as $bits
        }
    };
    (@compare $n:literal, $bits:ty, $name:ident, $method:ident) => {
        #[doc = concat!("posit", $n, " `", stringify!($method), "` by the posit order.")]
        #[no_mangle]
        pub extern "C" fn $name(a: $bits, b: $bits) -> u8 {
            let (a, b) = (Posit::<$n>::from_bits(u32::from(a)), Posit::<$n>::from_bits(u32::from(b)));
            u8::from(a.$method(&b))
        }
    };
}

posit_library!(8, u8);
posit_library!(16, u16);
posit_library!(32, u32);
