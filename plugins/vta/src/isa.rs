//! The VTA instruction set: 128-bit instructions (LOAD, STORE, GEMM, ALU, FINISH) and 32-bit
//! micro-ops, encoded and decoded bit-exactly as `hw_spec.h` lays them out, and printed as
//! one line of assembly each.
//!
//! Layout: bit 0 is the least significant bit of the first little-endian 64-bit word. Every
//! instruction starts with `opcode` [2:0], `pop_prev` [3], `pop_next` [4], `push_prev` [5],
//! `push_next` [6]. Memory instructions then hold `memory_type`, `sram_base` (16), `dram_base`
//! (32) in the first word and `y_size`, `x_size`, `x_stride` (16 each) and the four 4-bit pads
//! in the second; GEMM and ALU hold `reset`, `uop_bgn`, `uop_end`, `iter_out`, `iter_in` in the
//! first word and the index factors (and for ALU `alu_opcode`, `use_imm`, `imm`) in the second.
//! The index widths follow the configuration ([`crate::config::VtaConfig`]); with the default
//! they are TVM's (uop 13, acc 11, inp 11, wgt 10 bits).

use std::fmt;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::config::{VtaConfig, ALU_IMM_WIDTH, LOOP_ITER_WIDTH};

/// An instruction or micro-op that cannot be encoded or decoded.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum IsaError {
    /// A field value does not fit its bits.
    #[error("field {field} = {value} does not fit in {bits} bits")]
    FieldOverflow {
        /// The field name.
        field: &'static str,
        /// The value.
        value: i64,
        /// The field width.
        bits: u32,
    },
    /// An opcode outside LOAD, STORE, GEMM, FINISH, ALU.
    #[error("unknown opcode {0}")]
    Opcode(u64),
    /// A memory type outside UOP, WGT, INP, ACC, OUT, ACC_8BIT.
    #[error("unknown memory type {0}")]
    MemType(u64),
    /// An ALU opcode outside MIN, MAX, ADD, SHR, MUL.
    #[error("unknown ALU opcode {0}")]
    AluOpcode(u64),
}

/// The dependency-token flags of an instruction ("prev" is upstream in load → compute →
/// store, "next" downstream).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DepFlags {
    /// Wait for (and take) a token from the upstream module.
    pub pop_prev: bool,
    /// Wait for (and take) a token from the downstream module.
    pub pop_next: bool,
    /// Give a token to the upstream module when done.
    pub push_prev: bool,
    /// Give a token to the downstream module when done.
    pub push_next: bool,
}

/// Memory types of LOAD and STORE.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum MemType {
    /// Micro-ops (4-byte elements).
    #[default]
    Uop = 0,
    /// Weights (BLOCK x BLOCK int8).
    Wgt = 1,
    /// Inputs (BLOCK int8).
    Inp = 2,
    /// Accumulators (BLOCK int32).
    Acc = 3,
    /// Outputs (BLOCK int8, stored from the accumulators, truncated).
    Out = 4,
    /// int8 DRAM data loaded into the accumulators sign-extended.
    Acc8 = 5,
}

impl MemType {
    fn from_bits(v: u64) -> Result<Self, IsaError> {
        Ok(match v {
            0 => MemType::Uop,
            1 => MemType::Wgt,
            2 => MemType::Inp,
            3 => MemType::Acc,
            4 => MemType::Out,
            5 => MemType::Acc8,
            other => return Err(IsaError::MemType(other)),
        })
    }

    /// The assembly name.
    pub fn name(self) -> &'static str {
        match self {
            MemType::Uop => "uop",
            MemType::Wgt => "wgt",
            MemType::Inp => "inp",
            MemType::Acc => "acc",
            MemType::Out => "out",
            MemType::Acc8 => "acc8",
        }
    }
}

/// ALU operations (`dst = op(dst, src or imm)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum AluOp {
    /// Minimum.
    Min = 0,
    /// Maximum.
    Max = 1,
    /// Wrapping addition.
    Add = 2,
    /// Arithmetic shift right; a negative amount shifts left.
    Shr = 3,
    /// Wrapping multiplication (the simulator's extension; not in the Xilinx HLS design).
    Mul = 4,
}

impl AluOp {
    fn from_bits(v: u64) -> Result<Self, IsaError> {
        Ok(match v {
            0 => AluOp::Min,
            1 => AluOp::Max,
            2 => AluOp::Add,
            3 => AluOp::Shr,
            4 => AluOp::Mul,
            other => return Err(IsaError::AluOpcode(other)),
        })
    }

    /// The assembly name.
    pub fn name(self) -> &'static str {
        match self {
            AluOp::Min => "min",
            AluOp::Max => "max",
            AluOp::Add => "add",
            AluOp::Shr => "shr",
            AluOp::Mul => "mul",
        }
    }
}

/// A LOAD or STORE: a 2-D strided copy between DRAM and an SRAM, with zero padding on loads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemInsn {
    /// Dependency flags.
    pub deps: DepFlags,
    /// Which memory (SRAM buffer, and DRAM element size).
    pub mem: MemType,
    /// First SRAM element.
    pub sram_base: u32,
    /// First DRAM element (in elements of the memory type).
    pub dram_base: u32,
    /// Rows.
    pub y_size: u32,
    /// Elements per row (0: the instruction only moves tokens).
    pub x_size: u32,
    /// DRAM elements between row starts.
    pub x_stride: u32,
    /// Zero rows before.
    pub y_pad0: u32,
    /// Zero rows after.
    pub y_pad1: u32,
    /// Zero elements before each row.
    pub x_pad0: u32,
    /// Zero elements after each row.
    pub x_pad1: u32,
}

impl MemInsn {
    /// The memory type.
    pub fn mem_type(&self) -> MemType {
        self.mem
    }
}

/// The loop nest shared by GEMM and ALU: `iter_out` x `iter_in` passes over the micro-ops
/// `uop_bgn..uop_end`, each index advanced by its factors.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoopNest {
    /// First micro-op.
    pub uop_bgn: u32,
    /// One past the last micro-op.
    pub uop_end: u32,
    /// Outer loop extent.
    pub iter_out: u32,
    /// Inner loop extent.
    pub iter_in: u32,
    /// Accumulator index step of the outer loop.
    pub dst_factor_out: u32,
    /// Accumulator index step of the inner loop.
    pub dst_factor_in: u32,
    /// Source index step of the outer loop.
    pub src_factor_out: u32,
    /// Source index step of the inner loop.
    pub src_factor_in: u32,
}

impl LoopNest {
    /// Micro-op executions: `iter_out * iter_in * (uop_end - uop_bgn)`.
    pub fn executions(&self) -> u64 {
        u64::from(self.iter_out)
            * u64::from(self.iter_in)
            * u64::from(self.uop_end.saturating_sub(self.uop_bgn))
    }
}

/// A GEMM: `acc[dst] += inp[src] x wgt[wgt]^T` per micro-op execution, or zero `acc[dst]` when
/// `reset`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GemmInsn {
    /// Dependency flags.
    pub deps: DepFlags,
    /// Zero the accumulators instead of accumulating.
    pub reset: bool,
    /// The loops and the accumulator/input factors.
    pub nest: LoopNest,
    /// Weight index step of the outer loop.
    pub wgt_factor_out: u32,
    /// Weight index step of the inner loop.
    pub wgt_factor_in: u32,
}

/// An ALU instruction: `acc[dst] = op(acc[dst], acc[src] or imm)` lane-wise.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AluInsn {
    /// Dependency flags.
    pub deps: DepFlags,
    /// The reset bit (ignored by the ALU, as in fsim).
    pub reset: bool,
    /// The loops; `src` indexes the accumulators.
    pub nest: LoopNest,
    /// The operation.
    pub op: AluOp,
    /// Use the immediate instead of `acc[src]`.
    pub use_imm: bool,
    /// The immediate, sign-extended to 32 bits.
    pub imm: i16,
}

/// One instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Insn {
    /// DRAM → SRAM.
    Load(MemInsn),
    /// Accumulators → DRAM (low 8 bits of each lane).
    Store(MemInsn),
    /// Matrix multiply-accumulate.
    Gemm(GemmInsn),
    /// Vector ALU.
    Alu(AluInsn),
    /// End of the program.
    Finish(DepFlags),
}

/// The three execution modules; fetch routes each instruction to one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Module {
    /// LOAD of inputs and weights.
    Load = 0,
    /// GEMM, ALU, FINISH, and LOAD of micro-ops and accumulators.
    Compute = 1,
    /// STORE.
    Store = 2,
}

impl Module {
    /// The module name.
    pub fn name(self) -> &'static str {
        match self {
            Module::Load => "load",
            Module::Compute => "compute",
            Module::Store => "store",
        }
    }
}

impl Insn {
    /// The dependency flags.
    pub fn deps(&self) -> DepFlags {
        match self {
            Insn::Load(m) | Insn::Store(m) => m.deps,
            Insn::Gemm(g) => g.deps,
            Insn::Alu(a) => a.deps,
            Insn::Finish(d) => *d,
        }
    }

    /// Mutable dependency flags.
    pub fn deps_mut(&mut self) -> &mut DepFlags {
        match self {
            Insn::Load(m) | Insn::Store(m) => &mut m.deps,
            Insn::Gemm(g) => &mut g.deps,
            Insn::Alu(a) => &mut a.deps,
            Insn::Finish(d) => d,
        }
    }

    /// The module that executes it (fetch's routing).
    pub fn module(&self) -> Module {
        match self {
            Insn::Store(_) => Module::Store,
            Insn::Load(m) if matches!(m.mem_type(), MemType::Inp | MemType::Wgt) => Module::Load,
            _ => Module::Compute,
        }
    }

    /// The opcode name.
    pub fn opcode_name(&self) -> &'static str {
        match self {
            Insn::Load(_) => "LOAD",
            Insn::Store(_) => "STORE",
            Insn::Gemm(_) => "GEMM",
            Insn::Alu(_) => "ALU",
            Insn::Finish(_) => "FINISH",
        }
    }
}

/// Field widths of the configuration's instruction layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    uop: u32,
    inp: u32,
    wgt: u32,
    acc: u32,
}

impl Layout {
    /// The layout of `config`.
    pub fn new(config: &VtaConfig) -> Self {
        Layout {
            uop: config.log_uop_depth(),
            inp: config.log_inp_depth(),
            wgt: config.log_wgt_depth(),
            acc: config.log_acc_depth(),
        }
    }

    /// Encodes an instruction as its two 64-bit words (`[lo, hi]`).
    pub fn encode(&self, insn: &Insn) -> Result<[u64; 2], IsaError> {
        let mut lo = Bits::default();
        let mut hi = Bits::default();
        let (opcode, deps) = match insn {
            Insn::Load(_) => (0, insn.deps()),
            Insn::Store(_) => (1, insn.deps()),
            Insn::Gemm(_) => (2, insn.deps()),
            Insn::Finish(_) => (3, insn.deps()),
            Insn::Alu(_) => (4, insn.deps()),
        };
        lo.put("opcode", opcode, 3)?;
        for flag in [deps.pop_prev, deps.pop_next, deps.push_prev, deps.push_next] {
            lo.put("dep", u64::from(flag), 1)?;
        }
        match insn {
            Insn::Load(m) | Insn::Store(m) => {
                lo.put("memory_type", m.mem_type() as u64, 3)?;
                lo.put("sram_base", m.sram_base.into(), 16)?;
                lo.put("dram_base", m.dram_base.into(), 32)?;
                hi.put("y_size", m.y_size.into(), 16)?;
                hi.put("x_size", m.x_size.into(), 16)?;
                hi.put("x_stride", m.x_stride.into(), 16)?;
                hi.put("y_pad_0", m.y_pad0.into(), 4)?;
                hi.put("y_pad_1", m.y_pad1.into(), 4)?;
                hi.put("x_pad_0", m.x_pad0.into(), 4)?;
                hi.put("x_pad_1", m.x_pad1.into(), 4)?;
            }
            Insn::Gemm(g) => {
                self.put_nest(&mut lo, &mut hi, g.reset, &g.nest, self.inp)?;
                hi.put("wgt_factor_out", g.wgt_factor_out.into(), self.wgt)?;
                hi.put("wgt_factor_in", g.wgt_factor_in.into(), self.wgt)?;
            }
            Insn::Alu(a) => {
                self.put_nest(&mut lo, &mut hi, a.reset, &a.nest, self.acc)?;
                hi.put("alu_opcode", a.op as u64, 3)?;
                hi.put("use_imm", u64::from(a.use_imm), 1)?;
                hi.put("imm", u64::from(a.imm as u16), ALU_IMM_WIDTH)?;
            }
            Insn::Finish(_) => {}
        }
        Ok([lo.word, hi.word])
    }

    fn put_nest(
        &self,
        lo: &mut Bits,
        hi: &mut Bits,
        reset: bool,
        n: &LoopNest,
        src_bits: u32,
    ) -> Result<(), IsaError> {
        lo.put("reset_reg", u64::from(reset), 1)?;
        lo.put("uop_bgn", n.uop_bgn.into(), self.uop)?;
        lo.put("uop_end", n.uop_end.into(), self.uop + 1)?;
        lo.put("iter_out", n.iter_out.into(), LOOP_ITER_WIDTH)?;
        lo.put("iter_in", n.iter_in.into(), LOOP_ITER_WIDTH)?;
        hi.put("dst_factor_out", n.dst_factor_out.into(), self.acc)?;
        hi.put("dst_factor_in", n.dst_factor_in.into(), self.acc)?;
        hi.put("src_factor_out", n.src_factor_out.into(), src_bits)?;
        hi.put("src_factor_in", n.src_factor_in.into(), src_bits)
    }

    fn get_nest(&self, lo: &mut Fields, hi: &mut Fields, src_bits: u32) -> (bool, LoopNest) {
        let reset = lo.take(1) == 1;
        let nest = LoopNest {
            uop_bgn: lo.take(self.uop) as u32,
            uop_end: lo.take(self.uop + 1) as u32,
            iter_out: lo.take(LOOP_ITER_WIDTH) as u32,
            iter_in: lo.take(LOOP_ITER_WIDTH) as u32,
            dst_factor_out: hi.take(self.acc) as u32,
            dst_factor_in: hi.take(self.acc) as u32,
            src_factor_out: hi.take(src_bits) as u32,
            src_factor_in: hi.take(src_bits) as u32,
        };
        (reset, nest)
    }

    /// Decodes two 64-bit words.
    pub fn decode(&self, words: [u64; 2]) -> Result<Insn, IsaError> {
        let mut lo = Fields { word: words[0] };
        let mut hi = Fields { word: words[1] };
        let opcode = lo.take(3);
        let deps = DepFlags {
            pop_prev: lo.take(1) == 1,
            pop_next: lo.take(1) == 1,
            push_prev: lo.take(1) == 1,
            push_next: lo.take(1) == 1,
        };
        Ok(match opcode {
            0 | 1 => {
                let m = MemInsn {
                    deps,
                    mem: MemType::from_bits(lo.take(3))?,
                    sram_base: lo.take(16) as u32,
                    dram_base: lo.take(32) as u32,
                    y_size: hi.take(16) as u32,
                    x_size: hi.take(16) as u32,
                    x_stride: hi.take(16) as u32,
                    y_pad0: hi.take(4) as u32,
                    y_pad1: hi.take(4) as u32,
                    x_pad0: hi.take(4) as u32,
                    x_pad1: hi.take(4) as u32,
                };
                if opcode == 0 {
                    Insn::Load(m)
                } else {
                    Insn::Store(m)
                }
            }
            2 => {
                let (reset, nest) = self.get_nest(&mut lo, &mut hi, self.inp);
                Insn::Gemm(GemmInsn {
                    deps,
                    reset,
                    nest,
                    wgt_factor_out: hi.take(self.wgt) as u32,
                    wgt_factor_in: hi.take(self.wgt) as u32,
                })
            }
            3 => Insn::Finish(deps),
            4 => {
                let (reset, nest) = self.get_nest(&mut lo, &mut hi, self.acc);
                let op = AluOp::from_bits(hi.take(3))?;
                let use_imm = hi.take(1) == 1;
                let imm = hi.take(ALU_IMM_WIDTH) as u16 as i16;
                Insn::Alu(AluInsn {
                    deps,
                    reset,
                    nest,
                    op,
                    use_imm,
                    imm,
                })
            }
            other => return Err(IsaError::Opcode(other)),
        })
    }

    /// Bits of a micro-op's source index: the wider of the input and accumulator indices.
    fn uop_src_bits(&self) -> u32 {
        self.acc.max(self.inp)
    }

    /// Encodes a micro-op: `dst | src << acc_bits | wgt << (acc_bits + src_bits)`.
    pub fn encode_uop(&self, u: &Uop) -> Result<u32, IsaError> {
        let mut b = Bits::default();
        b.put("uop dst_idx", u.dst.into(), self.acc)?;
        b.put("uop src_idx", u.src.into(), self.uop_src_bits())?;
        b.put("uop wgt_idx", u.wgt.into(), self.wgt)?;
        Ok(b.word as u32)
    }

    /// Decodes a micro-op.
    pub fn decode_uop(&self, word: u32) -> Uop {
        let mut f = Fields { word: word.into() };
        Uop {
            dst: f.take(self.acc) as u32,
            src: f.take(self.uop_src_bits()) as u32,
            wgt: f.take(self.wgt) as u32,
        }
    }
}

/// A micro-op: the base indices one GEMM or ALU loop iteration starts from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Uop {
    /// Accumulator index.
    pub dst: u32,
    /// Input index (GEMM) or accumulator index (ALU).
    pub src: u32,
    /// Weight index (GEMM only).
    pub wgt: u32,
}

/// A 64-bit word filled from bit 0 up.
#[derive(Default)]
struct Bits {
    word: u64,
    pos: u32,
}

impl Bits {
    fn put(&mut self, field: &'static str, value: u64, bits: u32) -> Result<(), IsaError> {
        if bits < 64 && value >> bits != 0 {
            return Err(IsaError::FieldOverflow {
                field,
                value: value as i64,
                bits,
            });
        }
        debug_assert!(
            self.pos + bits <= 64,
            "the config validation bounds the layout"
        );
        self.word |= value << self.pos;
        self.pos += bits;
        Ok(())
    }
}

/// A 64-bit word read from bit 0 up.
struct Fields {
    word: u64,
}

impl Fields {
    fn take(&mut self, bits: u32) -> u64 {
        let v = if bits >= 64 {
            self.word
        } else {
            self.word & ((1u64 << bits) - 1)
        };
        self.word = if bits >= 64 { 0 } else { self.word >> bits };
        v
    }
}

impl fmt::Display for DepFlags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let flags = [
            (self.pop_prev, "pop_prev"),
            (self.pop_next, "pop_next"),
            (self.push_prev, "push_prev"),
            (self.push_next, "push_next"),
        ];
        for (on, name) in flags {
            if on {
                write!(f, " {name}")?;
            }
        }
        Ok(())
    }
}

impl fmt::Display for LoopNest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "uop={}..{} iter={}x{} dst={}/{} src={}/{}",
            self.uop_bgn,
            self.uop_end,
            self.iter_out,
            self.iter_in,
            self.dst_factor_out,
            self.dst_factor_in,
            self.src_factor_out,
            self.src_factor_in
        )
    }
}

impl fmt::Display for Insn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Insn::Load(m) | Insn::Store(m) => write!(
                f,
                "{:<6} {:<4} sram={} dram={} y={} x={} stride={} pad=[{},{},{},{}]{}",
                self.opcode_name(),
                m.mem_type().name(),
                m.sram_base,
                m.dram_base,
                m.y_size,
                m.x_size,
                m.x_stride,
                m.y_pad0,
                m.y_pad1,
                m.x_pad0,
                m.x_pad1,
                m.deps
            ),
            Insn::Gemm(g) => write!(
                f,
                "GEMM   {:<4} {} wgt={}/{}{}",
                if g.reset { "rst" } else { "mac" },
                g.nest,
                g.wgt_factor_out,
                g.wgt_factor_in,
                g.deps
            ),
            Insn::Alu(a) => {
                write!(f, "ALU    {:<4} {}", a.op.name(), a.nest)?;
                if a.use_imm {
                    write!(f, " imm={}", a.imm)?;
                }
                write!(f, "{}", a.deps)
            }
            Insn::Finish(d) => write!(f, "FINISH{d}"),
        }
    }
}

impl fmt::Display for Uop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "dst={} src={} wgt={}", self.dst, self.src, self.wgt)
    }
}
