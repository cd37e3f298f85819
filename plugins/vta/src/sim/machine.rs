//! The functional semantics of each instruction over the on-chip SRAMs and a DRAM image, as
//! TVM's fsim (`sim_driver.cc`) defines them:
//!
//! - LOAD: a 2-D strided copy of `y_size` rows of `x_size` elements (row starts `x_stride`
//!   apart in DRAM) into consecutive SRAM elements, with zero rows above and below and zero
//!   elements left and right; `x_size == 0` only moves tokens. ACC_8BIT sign-extends int8.
//! - STORE: accumulator elements to DRAM OUT elements, each int32 lane truncated to its low 8
//!   bits; pads must be 0.
//! - GEMM: for every loop iteration and micro-op, `acc[dst] += inp[src] · wgt[wgt]^T` with
//!   wrapping int32, or `acc[dst] = 0` when `reset`.
//! - ALU: `acc[dst] = op(acc[dst], acc[src] or imm)` lane-wise; SHR by a negative amount shifts
//!   left; amounts outside -31..=31 are an error (C leaves them undefined).
//!
//! Every SRAM and DRAM range is checked before an instruction touches memory: a bad program is
//! an error, never a panic or a partial write past a buffer.

use crate::config::VtaConfig;
use crate::isa::{AluInsn, AluOp, GemmInsn, Layout, LoopNest, MemInsn, MemType, Uop};

/// What went wrong executing one instruction (the caller adds which instruction).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExecFault {
    /// An SRAM index range outside its buffer.
    Sram {
        /// The buffer.
        buffer: &'static str,
        /// One past the highest index used.
        end: u64,
        /// The buffer depth.
        depth: usize,
    },
    /// A DRAM byte range outside the image.
    Dram {
        /// First byte.
        start: u64,
        /// One past the last byte.
        end: u64,
        /// Image size.
        size: usize,
    },
    /// Something else the hardware cannot do.
    Invalid(String),
}

impl std::fmt::Display for ExecFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExecFault::Sram { buffer, end, depth } => write!(
                f,
                "{buffer} buffer access up to index {} but the buffer holds {depth} elements",
                end.saturating_sub(1)
            ),
            ExecFault::Dram { start, end, size } => write!(
                f,
                "DRAM access to bytes {start}..{end} outside the {size}-byte image"
            ),
            ExecFault::Invalid(m) => f.write_str(m),
        }
    }
}

/// The on-chip state: input, weight, accumulator and micro-op buffers.
#[derive(Clone, Debug)]
pub struct Machine {
    block: usize,
    layout: Layout,
    /// `inp_depth x block` int8.
    inp: Vec<i8>,
    /// `wgt_depth x block x block` int8 (rows are output lanes).
    wgt: Vec<i8>,
    /// `acc_depth x block` int32.
    acc: Vec<i32>,
    uop: Vec<Uop>,
    depth: [usize; 4],
}

/// The largest block the configuration allows (`LOG_BLOCK` <= 6).
const MAX_BLOCK: usize = 64;

const UOP: usize = 0;
const INP: usize = 1;
const WGT: usize = 2;
const ACC: usize = 3;
const NAMES: [&str; 4] = ["uop", "inp", "wgt", "acc"];

fn check_sram(which: usize, depth: &[usize; 4], end: u64) -> Result<(), ExecFault> {
    if end > depth[which] as u64 {
        return Err(ExecFault::Sram {
            buffer: NAMES[which],
            end,
            depth: depth[which],
        });
    }
    Ok(())
}

fn dram_range(dram: &[u8], start: u64, len: u64) -> Result<std::ops::Range<usize>, ExecFault> {
    let end = start + len;
    if end > dram.len() as u64 {
        return Err(ExecFault::Dram {
            start,
            end,
            size: dram.len(),
        });
    }
    Ok(start as usize..end as usize)
}

/// `acc += inp · wgt^T` for one micro-op, with the block size known at compile time so the
/// inner products vectorize.
#[inline(always)]
fn gemm_fixed<const B: usize>(acc: &mut [i32], inp: &[i8], wgt: &[i8]) {
    let inp: &[i8; B] = inp.try_into().expect("block-sized input row");
    for (a, w) in acc.iter_mut().zip(wgt.chunks_exact(B)) {
        let w: &[i8; B] = w.try_into().expect("block-sized weight row");
        let s: i32 = inp
            .iter()
            .zip(w)
            .map(|(&x, &y)| i32::from(x) * i32::from(y))
            .sum();
        *a = a.wrapping_add(s);
    }
}

/// [`gemm_fixed`] for any block size.
fn gemm_any(acc: &mut [i32], inp: &[i8], wgt: &[i8], block: usize) {
    for (a, w) in acc.iter_mut().zip(wgt.chunks_exact(block)) {
        let s: i32 = inp
            .iter()
            .zip(w)
            .map(|(&x, &y)| i32::from(x) * i32::from(y))
            .sum();
        *a = a.wrapping_add(s);
    }
}

/// The highest index a loop nest reaches from micro-op base `base` (the factors are
/// non-negative, so the last iteration is the highest).
fn nest_end(base: u32, n: &LoopNest, out: u32, inn: u32) -> u64 {
    u64::from(base)
        + u64::from(n.iter_out.saturating_sub(1)) * u64::from(out)
        + u64::from(n.iter_in.saturating_sub(1)) * u64::from(inn)
        + 1
}

impl Machine {
    /// Zeroed buffers sized by `config`.
    pub fn new(config: &VtaConfig) -> Self {
        let b = config.block();
        Machine {
            block: b,
            layout: Layout::new(config),
            inp: vec![0; config.inp_depth() * b],
            wgt: vec![0; config.wgt_depth() * b * b],
            acc: vec![0; config.acc_depth() * b],
            uop: vec![Uop::default(); config.uop_depth()],
            depth: [
                config.uop_depth(),
                config.inp_depth(),
                config.wgt_depth(),
                config.acc_depth(),
            ],
        }
    }

    /// The accumulator lanes of element `index` (for tests and debugging).
    pub fn acc_element(&self, index: usize) -> Option<&[i32]> {
        self.acc.get(index * self.block..(index + 1) * self.block)
    }

    /// The int8 lanes of input element `index` (for tests and debugging).
    pub fn inp_element(&self, index: usize) -> Option<&[i8]> {
        self.inp.get(index * self.block..(index + 1) * self.block)
    }

    /// The int8 lanes of weight element `index`, row-major by output lane (for tests).
    pub fn wgt_element(&self, index: usize) -> Option<&[i8]> {
        let n = self.block * self.block;
        self.wgt.get(index * n..(index + 1) * n)
    }

    /// Writes accumulator element `index` (for tests).
    pub fn set_acc_element(&mut self, index: usize, lanes: &[i32]) -> bool {
        match self
            .acc
            .get_mut(index * self.block..(index + 1) * self.block)
        {
            Some(dst) if dst.len() == lanes.len() => {
                dst.copy_from_slice(lanes);
                true
            }
            _ => false,
        }
    }

    /// The micro-ops of the uop buffer (for tests and debugging).
    pub fn uops(&self) -> &[Uop] {
        &self.uop
    }

    /// Executes a LOAD; returns the bytes read from DRAM.
    pub fn load(&mut self, m: &MemInsn, dram: &[u8], elem_bytes: usize) -> Result<u64, ExecFault> {
        if m.x_size == 0 {
            return Ok(0);
        }
        let (which, lanes) = match m.mem_type() {
            MemType::Uop => (UOP, 1),
            MemType::Inp => (INP, self.block),
            MemType::Wgt => (WGT, self.block * self.block),
            MemType::Acc | MemType::Acc8 => (ACC, self.block),
            MemType::Out => {
                return Err(ExecFault::Invalid(
                    "LOAD of memory type out (only STORE writes out)".to_string(),
                ))
            }
        };
        let xtotal = u64::from(m.x_pad0 + m.x_size + m.x_pad1);
        let ytotal = u64::from(m.y_pad0 + m.y_size + m.y_pad1);
        let sram_end = u64::from(m.sram_base) + xtotal * ytotal;
        check_sram(which, &self.depth, sram_end)?;
        // DRAM rows, checked before any write.
        let row_bytes = u64::from(m.x_size) * elem_bytes as u64;
        let mut rows = Vec::with_capacity(m.y_size as usize);
        for y in 0..u64::from(m.y_size) {
            let start = (u64::from(m.dram_base) + y * u64::from(m.x_stride)) * elem_bytes as u64;
            rows.push(dram_range(dram, start, row_bytes)?);
        }
        let mut index = m.sram_base as usize;
        let zero = |s: &mut Self, index: usize, count: usize| s.zero(which, lanes, index, count);
        zero(self, index, (u64::from(m.y_pad0) * xtotal) as usize);
        index += (u64::from(m.y_pad0) * xtotal) as usize;
        for row in rows {
            zero(self, index, m.x_pad0 as usize);
            index += m.x_pad0 as usize;
            let bytes = &dram[row];
            match m.mem_type() {
                MemType::Uop => {
                    for (k, w) in bytes.chunks_exact(4).enumerate() {
                        let word = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
                        self.uop[index + k] = self.layout.decode_uop(word);
                    }
                }
                MemType::Inp => copy_i8(&mut self.inp[index * lanes..], bytes),
                MemType::Wgt => copy_i8(&mut self.wgt[index * lanes..], bytes),
                MemType::Acc => {
                    let dst = &mut self.acc[index * lanes..(index + m.x_size as usize) * lanes];
                    for (d, w) in dst.iter_mut().zip(bytes.chunks_exact(4)) {
                        *d = i32::from_le_bytes([w[0], w[1], w[2], w[3]]);
                    }
                }
                MemType::Acc8 => {
                    let dst = &mut self.acc[index * lanes..(index + m.x_size as usize) * lanes];
                    for (d, &b) in dst.iter_mut().zip(bytes) {
                        *d = i32::from(b as i8);
                    }
                }
                MemType::Out => unreachable!("refused above"),
            }
            index += m.x_size as usize;
            zero(self, index, m.x_pad1 as usize);
            index += m.x_pad1 as usize;
        }
        zero(self, index, (u64::from(m.y_pad1) * xtotal) as usize);
        Ok(u64::from(m.x_size) * u64::from(m.y_size) * elem_bytes as u64)
    }

    fn zero(&mut self, which: usize, lanes: usize, index: usize, count: usize) {
        let range = index * lanes..(index + count) * lanes;
        match which {
            UOP => self.uop[index..index + count].fill(Uop::default()),
            INP => self.inp[range].fill(0),
            WGT => self.wgt[range].fill(0),
            _ => self.acc[range].fill(0),
        }
    }

    /// Executes a STORE; returns the bytes written.
    pub fn store(&self, m: &MemInsn, dram: &mut [u8]) -> Result<u64, ExecFault> {
        if m.x_size == 0 {
            return Ok(0);
        }
        if m.mem_type() != MemType::Out {
            return Err(ExecFault::Invalid(format!(
                "STORE of memory type {} (only out)",
                m.mem_type().name()
            )));
        }
        if m.y_pad0 | m.y_pad1 | m.x_pad0 | m.x_pad1 != 0 {
            return Err(ExecFault::Invalid("STORE with padding".to_string()));
        }
        let n = u64::from(m.x_size) * u64::from(m.y_size);
        check_sram(ACC, &self.depth, u64::from(m.sram_base) + n)?;
        let b = self.block;
        let row_bytes = u64::from(m.x_size) * b as u64;
        let mut rows = Vec::with_capacity(m.y_size as usize);
        for y in 0..u64::from(m.y_size) {
            let start = (u64::from(m.dram_base) + y * u64::from(m.x_stride)) * b as u64;
            rows.push(dram_range(dram, start, row_bytes)?);
        }
        let mut src = m.sram_base as usize * b;
        for row in rows {
            let len = row.len();
            for (d, &a) in dram[row].iter_mut().zip(&self.acc[src..src + len]) {
                *d = a as u8;
            }
            src += len;
        }
        Ok(n * b as u64)
    }

    fn check_uops(&self, n: &LoopNest) -> Result<(), ExecFault> {
        if n.uop_bgn > n.uop_end {
            return Err(ExecFault::Invalid(format!(
                "uop_bgn {} is after uop_end {}",
                n.uop_bgn, n.uop_end
            )));
        }
        check_sram(UOP, &self.depth, n.uop_end.into())
    }

    /// Executes a GEMM; returns the micro-op executions.
    pub fn gemm(&mut self, g: &GemmInsn) -> Result<u64, ExecFault> {
        let n = &g.nest;
        self.check_uops(n)?;
        let uops = &self.uop[n.uop_bgn as usize..n.uop_end as usize];
        for u in uops {
            check_sram(
                ACC,
                &self.depth,
                nest_end(u.dst, n, n.dst_factor_out, n.dst_factor_in),
            )?;
            if !g.reset {
                check_sram(
                    INP,
                    &self.depth,
                    nest_end(u.src, n, n.src_factor_out, n.src_factor_in),
                )?;
                check_sram(
                    WGT,
                    &self.depth,
                    nest_end(u.wgt, n, g.wgt_factor_out, g.wgt_factor_in),
                )?;
            }
        }
        let b = self.block;
        for y in 0..n.iter_out as usize {
            for x in 0..n.iter_in as usize {
                let dst0 = y * n.dst_factor_out as usize + x * n.dst_factor_in as usize;
                let src0 = y * n.src_factor_out as usize + x * n.src_factor_in as usize;
                let wgt0 = y * g.wgt_factor_out as usize + x * g.wgt_factor_in as usize;
                for u in &self.uop[n.uop_bgn as usize..n.uop_end as usize] {
                    let a = (u.dst as usize + dst0) * b;
                    let acc = &mut self.acc[a..a + b];
                    if g.reset {
                        acc.fill(0);
                        continue;
                    }
                    let i = (u.src as usize + src0) * b;
                    let w = (u.wgt as usize + wgt0) * b * b;
                    let (inp, wgt) = (&self.inp[i..i + b], &self.wgt[w..w + b * b]);
                    match b {
                        16 => gemm_fixed::<16>(acc, inp, wgt),
                        32 => gemm_fixed::<32>(acc, inp, wgt),
                        _ => gemm_any(acc, inp, wgt, b),
                    }
                }
            }
        }
        Ok(n.executions())
    }

    /// Executes an ALU instruction; returns the micro-op executions.
    pub fn alu(&mut self, a: &AluInsn) -> Result<u64, ExecFault> {
        let n = &a.nest;
        self.check_uops(n)?;
        for u in &self.uop[n.uop_bgn as usize..n.uop_end as usize] {
            check_sram(
                ACC,
                &self.depth,
                nest_end(u.dst, n, n.dst_factor_out, n.dst_factor_in),
            )?;
            if !a.use_imm {
                check_sram(
                    ACC,
                    &self.depth,
                    nest_end(u.src, n, n.src_factor_out, n.src_factor_in),
                )?;
            }
        }
        if a.use_imm && a.op == AluOp::Shr && !(-31..=31).contains(&a.imm) {
            return Err(shift_fault(a.imm.into()));
        }
        let b = self.block;
        let imm = i32::from(a.imm);
        for y in 0..n.iter_out as usize {
            for x in 0..n.iter_in as usize {
                let dst0 = y * n.dst_factor_out as usize + x * n.dst_factor_in as usize;
                let src0 = y * n.src_factor_out as usize + x * n.src_factor_in as usize;
                for k in n.uop_bgn as usize..n.uop_end as usize {
                    let u = self.uop[k];
                    let d = (u.dst as usize + dst0) * b;
                    if a.use_imm {
                        alu_lanes(a.op, &mut self.acc[d..d + b], |_| imm)?;
                    } else {
                        let s = (u.src as usize + src0) * b;
                        let mut src = [0i32; MAX_BLOCK];
                        src[..b].copy_from_slice(&self.acc[s..s + b]);
                        alu_lanes(a.op, &mut self.acc[d..d + b], |j| src[j])?;
                    }
                }
            }
        }
        Ok(n.executions())
    }
}

fn shift_fault(amount: i64) -> ExecFault {
    ExecFault::Invalid(format!(
        "ALU shr by {amount}: shift amounts must lie in -31..=31"
    ))
}

fn copy_i8(dst: &mut [i8], src: &[u8]) {
    for (d, &s) in dst.iter_mut().zip(src) {
        *d = s as i8;
    }
}

/// Applies `op` to every lane of `dst` with the right operand `rhs(lane)`.
fn alu_lanes(op: AluOp, dst: &mut [i32], rhs: impl Fn(usize) -> i32) -> Result<(), ExecFault> {
    for (j, d) in dst.iter_mut().enumerate() {
        let r = rhs(j);
        *d = match op {
            AluOp::Min => (*d).min(r),
            AluOp::Max => (*d).max(r),
            AluOp::Add => d.wrapping_add(r),
            AluOp::Mul => d.wrapping_mul(r),
            AluOp::Shr => match r {
                0..=31 => *d >> r,
                -31..=-1 => d.wrapping_shl((-r) as u32),
                _ => return Err(shift_fault(r.into())),
            },
        };
    }
    Ok(())
}
