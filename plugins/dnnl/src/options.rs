//! The plugin's options, read from the compile (or load) options in this one place:
//!
//! - `threads=N`: the OpenMP thread count of builds and runs (`0` or absent: OpenMP's
//!   default);
//! - `dnnl.fpmath=strict|bf16`: the float math mode ([`FpMath`]). `bf16` is refused on a CPU
//!   without AMX or AVX512-BF16 ([`Bf16Support`]); the probe is a parameter of
//!   [`runtime_options`], so the refusal is testable on any machine;
//! - `dnnl.int8_epilogue=postops|pass`: where the exact integer epilogue of int8
//!   convolutions and inner products runs ([`Int8Epilogue`]).
//!
//! Other `dnnl.*` keys are refused by the SDK's option schema (a misspelt option must not
//! silently run float32).

use byoc_sdk::prelude::*;

use crate::dnnl::{effective_cpu_isa, ffi, isa_name};
use crate::runtime::{FpMath, Int8Epilogue, RuntimeOptions};

/// The option naming the float math mode: `dnnl.fpmath=strict` (float32, the default) or
/// `dnnl.fpmath=bf16`.
pub const FPMATH_OPTION: &str = "dnnl.fpmath";

/// The option choosing where int8 epilogues run: `dnnl.int8_epilogue=postops` (oneDNN
/// post-ops where provably exact, the default) or `dnnl.int8_epilogue=pass` (always a
/// separate integer pass).
pub const INT8_EPILOGUE_OPTION: &str = "dnnl.int8_epilogue";

/// The environment variable that lets `dnnl.fpmath=bf16` run on an AVX-512 CPU without bf16
/// instructions (`1`): oneDNN then runs its `avx512_core` bf16 kernels, which emulate the
/// bf16 dot products with float32 instructions: slow, but numerically the bf16 mode, for
/// accuracy checks on such machines.
pub const BF16_EMULATION_ENV: &str = "BYOC_DNNL_BF16_EMULATION";

/// What this CPU offers oneDNN for bf16 math.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bf16Support {
    /// AMX tiles (`avx512_core_amx`): bf16 convolutions and matmuls on the tile unit.
    Amx,
    /// AVX512-BF16 (`avx512_core_bf16`): bf16 dot-product instructions.
    Avx512Bf16,
    /// Neither, but AVX-512 and [`BF16_EMULATION_ENV`] set: oneDNN's emulated bf16 kernels.
    Emulated,
    /// Neither: bf16 is refused. `isa` names what oneDNN dispatches to instead.
    Missing {
        /// oneDNN's ISA on this CPU (`avx512_core_vnni`, ...).
        isa: &'static str,
    },
}

impl Bf16Support {
    /// This CPU, as oneDNN's dispatcher sees it (`dnnl_get_effective_cpu_isa`, which also
    /// honours `ONEDNN_MAX_CPU_ISA`), with [`BF16_EMULATION_ENV`].
    pub fn probe() -> Self {
        let emulation = std::env::var(BF16_EMULATION_ENV).is_ok_and(|v| v == "1");
        Self::of_isa(effective_cpu_isa(), emulation)
    }

    /// The support an ISA bit set (`dnnl_cpu_isa_t`) gives, `emulation` allowed or not.
    pub fn of_isa(isa: ffi::dnnl_cpu_isa_t, emulation: bool) -> Self {
        let has = |set: ffi::dnnl_cpu_isa_t| isa & set == set;
        if has(ffi::dnnl_cpu_isa_avx512_core_amx) {
            Bf16Support::Amx
        } else if has(ffi::dnnl_cpu_isa_avx512_core_bf16) {
            Bf16Support::Avx512Bf16
        } else if emulation && has(ffi::dnnl_cpu_isa_avx512_core) {
            Bf16Support::Emulated
        } else {
            Bf16Support::Missing { isa: isa_name(isa) }
        }
    }
}

/// The float math mode of `dnnl.fpmath`, checked against the CPU's `bf16` support.
fn fpmath(value: Option<&str>, bf16: impl FnOnce() -> Bf16Support) -> Result<FpMath, PluginError> {
    let mode = match value {
        None | Some("strict") => return Ok(FpMath::Strict),
        Some("bf16") => FpMath::Bf16,
        Some(v) => {
            return Err(PluginError::new(format!(
                "option {FPMATH_OPTION}='{v}' is not a float math mode \
                 (strict: float32, the default; bf16: convolutions and matmuls in bfloat16)"
            )))
        }
    };
    match bf16() {
        Bf16Support::Amx | Bf16Support::Avx512Bf16 | Bf16Support::Emulated => Ok(mode),
        Bf16Support::Missing { isa } => Err(PluginError::new(format!(
            "option {FPMATH_OPTION}=bf16 needs a CPU with AMX (avx512_core_amx) or AVX512-BF16 \
             (avx512_core_bf16), and oneDNN finds {isa} on this one; leave {FPMATH_OPTION} \
             unset (float32) here, or set {BF16_EMULATION_ENV}=1 on an AVX-512 CPU to run \
             oneDNN's emulated bf16 kernels (slow; for accuracy checks)"
        ))),
    }
}

/// The int8 epilogue placement of `dnnl.int8_epilogue`.
fn int8_epilogue(value: Option<&str>) -> Result<Int8Epilogue, PluginError> {
    match value {
        None | Some("postops") => Ok(Int8Epilogue::PostOps),
        Some("pass") => Ok(Int8Epilogue::Pass),
        Some(v) => Err(PluginError::new(format!(
            "option {INT8_EPILOGUE_OPTION}='{v}' is not an epilogue placement (postops: \
             oneDNN post-ops where provably exact, the default; pass: a separate integer pass)"
        ))),
    }
}

/// The plugin's declared options ([`FPMATH_OPTION`], [`INT8_EPILOGUE_OPTION`]; `threads` is
/// shared by every plugin).
pub fn schema() -> OptionSchema {
    OptionSchema::new(crate::support::TARGET)
        .text(
            "fpmath",
            Some("strict"),
            "float math mode: strict (float32) or bf16 (convolutions and matmuls in bfloat16, \
             on AMX or AVX512-BF16)",
        )
        .text(
            "int8_epilogue",
            Some("postops"),
            "where the integer epilogue of int8 convolutions and inner products runs: postops \
             (oneDNN post-ops where provably exact, else a separate pass) or pass (always a \
             separate integer pass)",
        )
}

/// The runtime options of a compile or load: `threads`, `dnnl.fpmath` and
/// `dnnl.int8_epilogue`, with `bf16` the
/// CPU's bf16 support ([`Bf16Support::probe`] in the plugin; asked only when bf16 is
/// requested). Undeclared `dnnl.*` options and bad values are errors naming the option.
pub fn runtime_options(
    options: &CompileOptions,
    bf16: impl FnOnce() -> Bf16Support,
) -> Result<RuntimeOptions, PluginError> {
    let parsed = schema().parse(options)?;
    Ok(RuntimeOptions {
        threads: parsed.threads(),
        fpmath: fpmath(parsed.text("fpmath"), bf16)?,
        int8_epilogue: int8_epilogue(parsed.text("int8_epilogue"))?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dnnl::inexact_int8_isa;

    #[test]
    fn isa_bit_sets_map_to_bf16_support() {
        assert_eq!(
            Bf16Support::of_isa(ffi::dnnl_cpu_isa_avx512_core_amx, false),
            Bf16Support::Amx
        );
        assert_eq!(
            Bf16Support::of_isa(ffi::dnnl_cpu_isa_avx512_core_bf16, false),
            Bf16Support::Avx512Bf16
        );
        assert_eq!(
            Bf16Support::of_isa(ffi::dnnl_cpu_isa_avx512_core_vnni, false),
            Bf16Support::Missing {
                isa: "avx512_core_vnni"
            }
        );
        assert_eq!(
            Bf16Support::of_isa(ffi::dnnl_cpu_isa_avx512_core_vnni, true),
            Bf16Support::Emulated
        );
        // avx2_vnni (0x407) is numerically above AMX but has no bf16 bits.
        assert_eq!(
            Bf16Support::of_isa(ffi::dnnl_cpu_isa_avx2_vnni, true),
            Bf16Support::Missing { isa: "avx2_vnni" }
        );
    }

    #[test]
    fn int8_is_exact_from_vnni_on() {
        for isa in [
            ffi::dnnl_cpu_isa_avx512_core_amx,
            ffi::dnnl_cpu_isa_avx512_core_bf16,
            ffi::dnnl_cpu_isa_avx512_core_vnni,
            ffi::dnnl_cpu_isa_avx2_vnni,
        ] {
            assert_eq!(inexact_int8_isa(isa), None, "{isa:#x}");
        }
        assert_eq!(
            inexact_int8_isa(ffi::dnnl_cpu_isa_avx512_core),
            Some("avx512_core")
        );
        assert_eq!(inexact_int8_isa(ffi::dnnl_cpu_isa_avx2), Some("avx2"));
        assert_eq!(inexact_int8_isa(0x3), Some("an ISA below avx2"));
    }
}
