//! The vector instruction set the float32 host kernels use, chosen once per process: AVX-512
//! where the CPU has it, else portable code (the baseline the crate is compiled for).
//!
//! The kernels that take it compile one loop twice, once with AVX-512 enabled (wider vectors,
//! the same operations in the same order, so the same results bit for bit unless the kernel
//! says otherwise) and once for the baseline. `BYOC_HOST_SIMD=avx512|portable` forces a level
//! (one the CPU lacks falls back to the best available, with a warning), e.g. to compare them
//! on one machine.

use std::sync::OnceLock;

/// A vector instruction set of the float host kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Simd {
    /// AVX-512 F.
    Avx512,
    /// The compilation target's baseline.
    Portable,
}

impl Simd {
    /// All levels, fastest first.
    pub const ALL: [Simd; 2] = [Simd::Avx512, Simd::Portable];

    /// The name `BYOC_HOST_SIMD` uses.
    pub fn name(self) -> &'static str {
        match self {
            Simd::Avx512 => "avx512",
            Simd::Portable => "portable",
        }
    }

    /// True when this CPU can run the level.
    pub fn available(self) -> bool {
        match self {
            #[cfg(target_arch = "x86_64")]
            Simd::Avx512 => is_x86_feature_detected!("avx512f"),
            Simd::Portable => true,
            #[cfg(not(target_arch = "x86_64"))]
            _ => false,
        }
    }

    /// The level the host kernels use: `BYOC_HOST_SIMD` when set and available, otherwise
    /// the fastest level this CPU has. Decided once per process.
    pub fn selected() -> Simd {
        #[cfg(test)]
        if let Some(i) = tests::FORCED.get() {
            return Simd::ALL[i];
        }
        static SELECTED: OnceLock<Simd> = OnceLock::new();
        *SELECTED.get_or_init(|| {
            super::isa::choose("BYOC_HOST_SIMD", &Simd::ALL, Simd::name, Simd::available)
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::isa::{Forced, Forcing};

    /// The level a test forced, as an index into [`Simd::ALL`].
    pub(super) static FORCED: Forcing = Forcing::new();

    /// Forces `simd` for every float host kernel in this process until dropped.
    pub(crate) struct Force(#[allow(dead_code, reason = "held for its drop")] Forced);

    impl Force {
        pub(crate) fn new(simd: Simd) -> Force {
            let i = Simd::ALL.iter().position(|&s| s == simd).unwrap_or(1);
            Force(FORCED.force(i))
        }
    }

    /// The levels this CPU has, each to be tested.
    pub(crate) fn levels() -> Vec<Simd> {
        Simd::ALL.into_iter().filter(|s| s.available()).collect()
    }
}
