//! The hardware configuration: TVM's `vta_config.json` keys, validated, and the parameters
//! derived from them (block sizes, buffer depths, instruction field widths).
//!
//! The default is VTA's own (`plugins/vta/vta_config.json`: a 1x16x16 int8 GEMM core with
//! int32 accumulators, 32 KiB uop / 32 KiB input / 256 KiB weight / 128 KiB accumulator
//! SRAM). Any other configuration in the same keys is accepted when the simulator and the
//! compiler can follow it: int8 inputs and weights, int32 accumulators, batch 1, and buffer
//! depths whose index fields fit the 128-bit instruction and the 32-bit micro-op (as the C
//! bit-fields of `hw_spec.h` lay them out: no field straddles a 64-bit word).
//!
//! Invariant: a [`VtaConfig`] that exists has passed [`VtaConfig::validate`]; every depth and
//! width below is then small enough for `u32` index arithmetic.

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// The default configuration file, as TVM ships it.
pub const DEFAULT_CONFIG_JSON: &str = include_str!("../vta_config.json");

/// Bits of the loop iteration fields of GEMM and ALU instructions.
pub const LOOP_ITER_WIDTH: u32 = 14;
/// Bits of the ALU immediate.
pub const ALU_IMM_WIDTH: u32 = 16;

/// A configuration that the simulator or the compiler cannot follow.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file is not the expected JSON.
    #[error("vta config: {0}")]
    Json(String),
    /// A key has a value outside what is supported.
    #[error("vta config: {key} = {value}: {reason}")]
    Value {
        /// The JSON key.
        key: &'static str,
        /// The value given.
        value: i64,
        /// Why it is refused.
        reason: String,
    },
    /// The derived instruction layout does not fit.
    #[error("vta config: {0}")]
    Layout(String),
}

/// The JSON keys of TVM's `vta_config.json` (`HW_FREQ` and `HW_CLK_TARGET` of older files
/// are accepted and ignored), plus `LOG_BUS_WIDTH`, this simulator's DRAM bus width for the
/// cycle model (default 6: a 64-bit AXI bus, as on the Pynq board).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(non_snake_case, reason = "the keys are TVM's vta_config.json keys")]
struct ConfigFile {
    TARGET: Option<String>,
    HW_VER: Option<String>,
    HW_FREQ: Option<i64>,
    HW_CLK_TARGET: Option<i64>,
    LOG_INP_WIDTH: i64,
    LOG_WGT_WIDTH: i64,
    LOG_ACC_WIDTH: i64,
    LOG_BATCH: i64,
    LOG_BLOCK: i64,
    LOG_UOP_BUFF_SIZE: i64,
    LOG_INP_BUFF_SIZE: i64,
    LOG_WGT_BUFF_SIZE: i64,
    LOG_ACC_BUFF_SIZE: i64,
    LOG_BUS_WIDTH: Option<i64>,
}

/// A validated hardware configuration (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VtaConfig {
    /// log2 of the GEMM block (BLOCK_IN = BLOCK_OUT lanes).
    pub log_block: u32,
    /// log2 of the uop buffer size in bytes.
    pub log_uop_buff_size: u32,
    /// log2 of the input buffer size in bytes.
    pub log_inp_buff_size: u32,
    /// log2 of the weight buffer size in bytes.
    pub log_wgt_buff_size: u32,
    /// log2 of the accumulator buffer size in bytes.
    pub log_acc_buff_size: u32,
    /// log2 of the DRAM bus width in bits (cycle model only).
    pub log_bus_width: u32,
}

impl Default for VtaConfig {
    fn default() -> Self {
        VtaConfig::from_json(DEFAULT_CONFIG_JSON).expect("the shipped vta_config.json is valid")
    }
}

fn value_err(key: &'static str, value: i64, reason: impl Into<String>) -> ConfigError {
    ConfigError::Value {
        key,
        value,
        reason: reason.into(),
    }
}

/// Checks `value` lies in `lo..=hi` and returns it as `u32`.
fn in_range(key: &'static str, value: i64, lo: i64, hi: i64) -> Result<u32, ConfigError> {
    if !(lo..=hi).contains(&value) {
        return Err(value_err(key, value, format!("expected {lo}..={hi}")));
    }
    Ok(value as u32)
}

impl VtaConfig {
    /// Reads and validates a configuration in `vta_config.json` form.
    pub fn from_json(text: &str) -> Result<Self, ConfigError> {
        let f: ConfigFile =
            serde_json::from_str(text).map_err(|e| ConfigError::Json(e.to_string()))?;
        let fixed = [
            ("LOG_INP_WIDTH", f.LOG_INP_WIDTH, 3, "inputs are int8 (3)"),
            ("LOG_WGT_WIDTH", f.LOG_WGT_WIDTH, 3, "weights are int8 (3)"),
            (
                "LOG_ACC_WIDTH",
                f.LOG_ACC_WIDTH,
                5,
                "accumulators are int32 (5)",
            ),
            ("LOG_BATCH", f.LOG_BATCH, 0, "only batch 1 (0) is supported"),
        ];
        for (key, value, want, what) in fixed {
            if value != want {
                return Err(value_err(key, value, format!("unsupported: {what}")));
            }
        }
        let config = VtaConfig {
            log_block: in_range("LOG_BLOCK", f.LOG_BLOCK, 1, 6)?,
            log_uop_buff_size: in_range("LOG_UOP_BUFF_SIZE", f.LOG_UOP_BUFF_SIZE, 2, 30)?,
            log_inp_buff_size: in_range("LOG_INP_BUFF_SIZE", f.LOG_INP_BUFF_SIZE, 0, 30)?,
            log_wgt_buff_size: in_range("LOG_WGT_BUFF_SIZE", f.LOG_WGT_BUFF_SIZE, 0, 30)?,
            log_acc_buff_size: in_range("LOG_ACC_BUFF_SIZE", f.LOG_ACC_BUFF_SIZE, 0, 30)?,
            log_bus_width: in_range("LOG_BUS_WIDTH", f.LOG_BUS_WIDTH.unwrap_or(6), 3, 10)?,
        };
        config.validate()?;
        Ok(config)
    }

    /// Checks that every buffer holds at least one element and that the instruction fields
    /// fit (see the module docs).
    pub fn validate(&self) -> Result<(), ConfigError> {
        in_range("LOG_BLOCK", self.log_block.into(), 1, 6)?;
        in_range("LOG_BUS_WIDTH", self.log_bus_width.into(), 3, 10)?;
        for (key, v) in [
            ("LOG_UOP_BUFF_SIZE", self.log_uop_buff_size),
            ("LOG_INP_BUFF_SIZE", self.log_inp_buff_size),
            ("LOG_WGT_BUFF_SIZE", self.log_wgt_buff_size),
            ("LOG_ACC_BUFF_SIZE", self.log_acc_buff_size),
        ] {
            in_range(key, v.into(), 0, 30)?;
        }
        let depths = [
            ("LOG_UOP_BUFF_SIZE", self.log_uop_buff_size, 2),
            ("LOG_INP_BUFF_SIZE", self.log_inp_buff_size, self.log_block),
            (
                "LOG_WGT_BUFF_SIZE",
                self.log_wgt_buff_size,
                2 * self.log_block,
            ),
            (
                "LOG_ACC_BUFF_SIZE",
                self.log_acc_buff_size,
                self.log_block + 2,
            ),
        ];
        for (key, size, elem) in depths {
            if size < elem {
                return Err(value_err(
                    key,
                    i64::from(size),
                    format!("the buffer is smaller than one element (2^{elem} bytes)"),
                ));
            }
        }
        let (u, i, w, a) = (
            self.log_uop_depth(),
            self.log_inp_depth(),
            self.log_wgt_depth(),
            self.log_acc_depth(),
        );
        let lo = 7 + 1 + u + (u + 1) + 2 * LOOP_ITER_WIDTH;
        let gemm_hi = 2 * a + 2 * i + 2 * w;
        let alu_hi = 4 * a + 3 + 1 + ALU_IMM_WIDTH;
        let uop = a + a.max(i) + w;
        let checks = [
            (lo, 64, "GEMM/ALU loop fields (uop depth too large)"),
            (gemm_hi, 64, "GEMM index factors (buffers too deep)"),
            (alu_hi, 64, "ALU index factors (accumulator too deep)"),
            (uop, 32, "micro-op fields (buffers too deep)"),
        ];
        for (bits, limit, what) in checks {
            if bits > limit {
                return Err(ConfigError::Layout(format!(
                    "the {what} need {bits} bits, more than the {limit} available"
                )));
            }
        }
        if self.uop_depth() > 1 << 16 || self.acc_depth() > 1 << 16 {
            return Err(ConfigError::Layout(
                "an SRAM index does not fit the 16-bit sram_base field".to_string(),
            ));
        }
        Ok(())
    }

    /// Lanes of the GEMM block (BLOCK_IN = BLOCK_OUT).
    pub fn block(&self) -> usize {
        1 << self.log_block
    }

    /// log2 of the uop buffer depth (4-byte micro-ops).
    pub fn log_uop_depth(&self) -> u32 {
        self.log_uop_buff_size - 2
    }

    /// log2 of the input buffer depth (BLOCK int8 lanes per element).
    pub fn log_inp_depth(&self) -> u32 {
        self.log_inp_buff_size - self.log_block
    }

    /// log2 of the weight buffer depth (BLOCK x BLOCK int8 per element).
    pub fn log_wgt_depth(&self) -> u32 {
        self.log_wgt_buff_size - 2 * self.log_block
    }

    /// log2 of the accumulator buffer depth (BLOCK int32 lanes per element).
    pub fn log_acc_depth(&self) -> u32 {
        self.log_acc_buff_size - self.log_block - 2
    }

    /// Micro-ops the uop buffer holds.
    pub fn uop_depth(&self) -> usize {
        1 << self.log_uop_depth()
    }

    /// Elements the input buffer holds.
    pub fn inp_depth(&self) -> usize {
        1 << self.log_inp_depth()
    }

    /// Elements the weight buffer holds.
    pub fn wgt_depth(&self) -> usize {
        1 << self.log_wgt_depth()
    }

    /// Elements the accumulator buffer holds.
    pub fn acc_depth(&self) -> usize {
        1 << self.log_acc_depth()
    }

    /// Bytes of one element of `mem` in DRAM.
    pub fn elem_bytes(&self, mem: crate::isa::MemType) -> usize {
        use crate::isa::MemType;
        let b = self.block();
        match mem {
            MemType::Uop => 4,
            MemType::Inp | MemType::Out | MemType::Acc8 => b,
            MemType::Wgt => b * b,
            MemType::Acc => 4 * b,
        }
    }

    /// Bytes the DRAM bus moves per cycle.
    pub fn bus_bytes(&self) -> usize {
        (1usize << self.log_bus_width) / 8
    }

    /// The bitstream name TVM derives (`1x16_i8w8a32_15_15_18_17`).
    pub fn name(&self) -> String {
        format!(
            "1x{}_i8w8a32_{}_{}_{}_{}",
            self.block(),
            self.log_uop_buff_size,
            self.log_inp_buff_size,
            self.log_wgt_buff_size,
            self.log_acc_buff_size
        )
    }
}
