//! The cycle model: how long each instruction keeps its module busy.
//!
//! Assumptions (from the HLS design, `vta.cc`, and its hardware guide; not a measurement):
//! - DMA (LOAD/STORE): [`DMA_LATENCY`] cycles to open a transfer, then each row moves
//!   `ceil(row bytes / bus bytes)` cycles (bus from `LOG_BUS_WIDTH`, 64 bits by default), and
//!   each zero-padding element takes one cycle to write. An instruction with `x_size == 0`
//!   only moves tokens: one cycle.
//! - GEMM: one micro-op per cycle (initiation interval 1) plus [`PIPELINE_DEPTH`] cycles to
//!   drain; a micro-op that writes the accumulator the previous one wrote waits
//!   [`PIPELINE_DEPTH`] cycles for it (the hardware has no forwarding; the compiler orders
//!   micro-ops so that this never happens when a tile has two or more accumulators).
//! - ALU: one micro-op every [`ALU_II`] cycles (one accumulator read port) plus the drain.
//! - FINISH: one cycle.

use crate::config::VtaConfig;
use crate::isa::{LoopNest, MemInsn, Uop};

/// Cycles before the first beat of a DRAM transfer.
pub const DMA_LATENCY: u64 = 32;
/// Cycles to drain the GEMM and ALU pipelines.
pub const PIPELINE_DEPTH: u64 = 4;
/// Cycles between ALU micro-ops.
pub const ALU_II: u64 = 2;

/// Cycles of a LOAD.
pub fn load(c: &VtaConfig, m: &MemInsn) -> u64 {
    if m.x_size == 0 {
        return 1;
    }
    let row =
        (u64::from(m.x_size) * c.elem_bytes(m.mem_type()) as u64).div_ceil(c.bus_bytes() as u64);
    let xtotal = u64::from(m.x_pad0 + m.x_size + m.x_pad1);
    let pads = u64::from(m.y_pad0 + m.y_pad1) * xtotal
        + u64::from(m.y_size) * u64::from(m.x_pad0 + m.x_pad1);
    DMA_LATENCY + u64::from(m.y_size) * row + pads
}

/// Cycles of a STORE.
pub fn store(c: &VtaConfig, m: &MemInsn) -> u64 {
    if m.x_size == 0 {
        return 1;
    }
    let row = (u64::from(m.x_size) * c.block() as u64).div_ceil(c.bus_bytes() as u64);
    DMA_LATENCY + u64::from(m.y_size) * row
}

/// Cycles of a GEMM of `executions` micro-ops with `stalls` back-to-back writes of one
/// accumulator.
pub fn gemm(executions: u64, stalls: u64) -> u64 {
    PIPELINE_DEPTH + executions + stalls * PIPELINE_DEPTH
}

/// Cycles of an ALU instruction of `executions` micro-ops.
pub fn alu(executions: u64) -> u64 {
    PIPELINE_DEPTH + ALU_II * executions
}

/// How many micro-op executions of `nest` write the accumulator the execution before wrote.
/// `uops` is the uop buffer (the nest's range is checked by the caller).
pub fn repeated_dst(nest: &LoopNest, uops: &[Uop]) -> u64 {
    let Some(kernel) = uops.get(nest.uop_bgn as usize..nest.uop_end as usize) else {
        return 0;
    };
    if kernel.is_empty() {
        return 0;
    }
    let inner: u64 = kernel.windows(2).filter(|w| w[0].dst == w[1].dst).count() as u64;
    let (first, last) = (kernel[0].dst, kernel[kernel.len() - 1].dst);
    let mut total = inner * nest.executions() / kernel.len() as u64;
    // Between passes: the last micro-op of one pass, then the first of the next, whose base
    // moved by dst_factor_in (inner step) or by dst_factor_out less the inner loop's travel
    // (outer step).
    let (first, last) = (i64::from(first), i64::from(last));
    let fi = i64::from(nest.dst_factor_in);
    let travel = i64::from(nest.iter_in.saturating_sub(1)) * fi;
    let steps = [
        (
            first + fi,
            u64::from(nest.iter_out) * u64::from(nest.iter_in.saturating_sub(1)),
        ),
        (
            first + i64::from(nest.dst_factor_out) - travel,
            u64::from(nest.iter_out.saturating_sub(1)),
        ),
    ];
    for (next_first, count) in steps {
        if next_first == last {
            total += count;
        }
    }
    total
}
