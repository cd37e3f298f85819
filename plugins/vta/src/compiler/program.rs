//! Instruction stream generation for one layer: the DRAM layout, the per-tile LOAD / GEMM /
//! ALU / STORE sequence with its dependency tokens, and the micro-op kernels with a uop cache.
//!
//! Tokens (module queues run in order; see [`crate::sim`]):
//! - RAW load → compute: the last LOAD of a chunk pushes `l2c`; the chunk's GEMM pops it.
//! - WAR compute → load: the chunk's GEMM pushes `c2l` when done reading its slot; the LOAD of
//!   the chunk `v` later (same slot) pops it first.
//! - RAW compute → store: the tile's last compute instruction pushes `c2s`; its first STORE
//!   pops it.
//! - WAR store → compute: the tile's last STORE pushes `s2c`; the reset of the tile `v` later
//!   (same accumulator slot) pops it. Before FINISH the compute module pops the tokens of the
//!   last `v` tiles, so the program ends after its last store.

use std::collections::HashMap;

use crate::config::VtaConfig;
use crate::isa::{
    AluInsn, AluOp, DepFlags, GemmInsn, Insn, Layout, LoopNest, MemInsn, MemType, Uop,
};

use super::layer::{EpilogueOp, Geometry, Layer, OperandRole};
use super::tiling::{choose, Dim, KernelPlan, Needs, Slots, TileShape, Tiling};
use super::CompileError;

/// Byte offsets of a layer's DRAM regions (each aligned to a weight element, so every
/// memory type's element index is exact).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DramLayout {
    /// Micro-op kernels.
    pub uop: usize,
    /// Packed input (N, Cb, H, W) elements.
    pub inp: usize,
    /// Packed weights (Ob, Cb, KH, KW).
    pub wgt: usize,
    /// Each epilogue operand: (Ob) accumulator elements per channel, or (N, Ob, OH, OW).
    pub operands: Vec<usize>,
    /// Output (N, Ob, OH, OW) elements; for an int32 output, four such planes, plane `k`
    /// holding byte `k` of each value (little-endian).
    pub out: usize,
    /// Total bytes.
    pub total: usize,
}

/// A compiled layer: its instruction stream, the micro-op kernels' bytes, its DRAM layout.
#[derive(Clone, Debug)]
pub struct LayerProgram {
    /// The instructions.
    pub insns: Vec<Insn>,
    /// The encoded micro-ops, placed at [`DramLayout::uop`].
    pub uop_bytes: Vec<u8>,
    /// The DRAM regions.
    pub dram: DramLayout,
    /// The tiling used.
    pub tiling: Tiling,
    /// Channel blocks of the input and the output.
    pub blocks: (usize, usize),
}

/// The largest DRAM image a layer may use (element indices are 32-bit).
const MAX_DRAM: usize = 1 << 32;

fn checked(parts: &[usize]) -> Result<usize, CompileError> {
    parts
        .iter()
        .try_fold(1usize, |a, &b| a.checked_mul(b))
        .filter(|&v| v < MAX_DRAM)
        .ok_or_else(|| {
            CompileError::DoesNotFit("a tensor exceeds the 4 GiB DRAM image".to_string())
        })
}

fn field(name: &str, value: usize, max: usize) -> Result<u32, CompileError> {
    if value > max {
        return Err(CompileError::DoesNotFit(format!(
            "{name} = {value} exceeds the instruction field maximum {max}"
        )));
    }
    Ok(value as u32)
}

/// The zero padding and the in-range part of a window of `len` positions starting at `start`
/// (may be negative) over `size` positions: (pad before, first index, count, pad after).
fn window(start: i64, len: usize, size: usize) -> (usize, usize, usize, usize) {
    let end = start + len as i64;
    let lo = start.clamp(0, size as i64);
    let hi = end.clamp(0, size as i64).max(lo);
    // A window that starts past the data (`start > size`) is all padding after it.
    let before = (lo - start).clamp(0, len as i64) as usize;
    let count = (hi - lo) as usize;
    (before, lo as usize, count, len - before - count)
}

/// Maps micro-op kernels to DRAM and to uop SRAM: kernels are loaded on first use at the
/// next free position, restarting at 0 (and evicting what they overlap) when the buffer end
/// is reached, as TVM's runtime does.
struct UopCache {
    depth: usize,
    kernels: HashMap<Vec<Uop>, usize>,
    blob: Vec<Uop>,
    resident: Vec<(usize, usize, usize)>,
    next: usize,
}

impl UopCache {
    /// The SRAM position of `kernel`, emitting a LOAD UOP first when it is not resident.
    fn place(
        &mut self,
        kernel: Vec<Uop>,
        dram_base: usize,
        out: &mut Vec<Insn>,
    ) -> Result<u32, CompileError> {
        let len = kernel.len();
        if len > self.depth {
            return Err(CompileError::DoesNotFit(format!(
                "a micro-op kernel of {len} uops exceeds the {}-uop buffer",
                self.depth
            )));
        }
        let id = match self.kernels.get(&kernel) {
            Some(&id) => id,
            None => {
                let id = self.blob.len();
                self.blob.extend_from_slice(&kernel);
                self.kernels.insert(kernel, id);
                id
            }
        };
        if let Some(&(_, start, _)) = self.resident.iter().find(|r| r.0 == id) {
            return Ok(start as u32);
        }
        if self.next + len > self.depth {
            self.next = 0;
        }
        let (start, end) = (self.next, self.next + len);
        self.resident
            .retain(|&(_, s, l)| s + l <= start || s >= end);
        self.resident.push((id, start, len));
        self.next = end;
        out.push(Insn::Load(MemInsn {
            mem: MemType::Uop,
            sram_base: start as u32,
            dram_base: (dram_base / 4 + id) as u32,
            y_size: 1,
            x_size: len as u32,
            x_stride: len as u32,
            ..MemInsn::default()
        }));
        Ok(start as u32)
    }
}

/// Enumerates the micro-ops of `plan`'s kernel dims over `dims`, from the bases.
fn kernel_uops(dims: &[Dim], plan: &KernelPlan, base: Uop) -> Vec<Uop> {
    let mut uops = vec![base];
    for &d in &plan.kernel {
        let dim = dims[d];
        uops = uops
            .iter()
            .flat_map(|u| {
                (0..dim.extent).map(move |i| Uop {
                    dst: u.dst + (i * dim.dst) as u32,
                    src: u.src + (i * dim.src) as u32,
                    wgt: u.wgt + (i * dim.wgt) as u32,
                })
            })
            .collect();
    }
    uops
}

/// The loop nest of `plan`'s loop dims (unused loops have extent 1).
fn loop_nest(dims: &[Dim], plan: &KernelPlan, uop_bgn: u32, len: usize) -> (LoopNest, u32, u32) {
    let one = Dim {
        extent: 1,
        dst: 0,
        src: 0,
        wgt: 0,
    };
    let get = |k: usize| plan.loops.get(k).map(|&d| dims[d]).unwrap_or(one);
    let (o, i) = (get(0), get(1));
    (
        LoopNest {
            uop_bgn,
            uop_end: uop_bgn + len as u32,
            iter_out: o.extent as u32,
            iter_in: i.extent as u32,
            dst_factor_out: o.dst as u32,
            dst_factor_in: i.dst as u32,
            src_factor_out: o.src as u32,
            src_factor_in: i.src as u32,
        },
        o.wgt as u32,
        i.wgt as u32,
    )
}

/// Per-module positions of the instructions that carry tokens.
struct Emitter<'a> {
    config: &'a VtaConfig,
    insns: Vec<Insn>,
    cache: UopCache,
    uop_dram: usize,
}

impl Emitter<'_> {
    fn push(&mut self, insn: Insn) -> usize {
        self.insns.push(insn);
        self.insns.len() - 1
    }

    fn deps(&mut self, index: usize) -> &mut DepFlags {
        self.insns[index].deps_mut()
    }

    /// A GEMM (or reset) over `dims` (the first `parallel` of them parallel).
    fn gemm(
        &mut self,
        dims: &[Dim],
        parallel: usize,
        base: Uop,
        reset: bool,
    ) -> Result<usize, CompileError> {
        let plan = KernelPlan::new(dims, parallel);
        let uops = kernel_uops(dims, &plan, base);
        let len = uops.len();
        let at = self.cache.place(uops, self.uop_dram, &mut self.insns)?;
        let (nest, wo, wi) = loop_nest(dims, &plan, at, len);
        Ok(self.push(Insn::Gemm(GemmInsn {
            deps: DepFlags::default(),
            reset,
            nest,
            wgt_factor_out: wo,
            wgt_factor_in: wi,
        })))
    }

    /// An ALU instruction: one micro-op over `outer` x `inner` accumulator elements.
    #[allow(clippy::too_many_arguments, reason = "one ALU instruction's fields")]
    fn alu(
        &mut self,
        op: AluOp,
        imm: Option<i32>,
        dst: u32,
        src: u32,
        outer: (usize, usize, usize),
        inner: (usize, usize, usize),
    ) -> Result<usize, CompileError> {
        let at = self.cache.place(
            vec![Uop { dst, src, wgt: 0 }],
            self.uop_dram,
            &mut self.insns,
        )?;
        let nest = LoopNest {
            uop_bgn: at,
            uop_end: at + 1,
            iter_out: outer.0 as u32,
            iter_in: inner.0 as u32,
            dst_factor_out: outer.1 as u32,
            dst_factor_in: inner.1 as u32,
            src_factor_out: outer.2 as u32,
            src_factor_in: inner.2 as u32,
        };
        Ok(self.push(Insn::Alu(AluInsn {
            deps: DepFlags::default(),
            reset: false,
            nest,
            op,
            use_imm: imm.is_some(),
            imm: imm.unwrap_or(0) as i16,
        })))
    }
}

/// ALU immediates fit 16 signed bits: an addition is split into steps that do.
fn add_steps(mut v: i32) -> Vec<i32> {
    let mut steps = Vec::new();
    while v != 0 {
        let s = v.clamp(i32::from(i16::MIN), i32::from(i16::MAX));
        steps.push(s);
        v = v.wrapping_sub(s);
    }
    steps
}

fn imm16(what: &str, v: i32) -> Result<i32, CompileError> {
    if i16::try_from(v).is_err() {
        return Err(CompileError::Unsupported(format!(
            "{what} bound {v} does not fit the ALU's 16-bit immediate"
        )));
    }
    Ok(v)
}

/// Compiles `layer` for `config` with `threads` virtual threads.
pub fn compile_layer(
    layer: &Layer,
    config: &VtaConfig,
    threads: usize,
) -> Result<LayerProgram, CompileError> {
    let g: Geometry = layer.geometry;
    let b = config.block();
    let (cb, ob) = (g.c.div_ceil(b), g.o.div_ceil(b));
    if g.n == 0
        || g.c == 0
        || g.o == 0
        || g.oh == 0
        || g.ow == 0
        || g.kh == 0
        || g.kw == 0
        || g.sh == 0
        || g.sw == 0
    {
        return Err(CompileError::Unsupported(format!("empty layer {g:?}")));
    }
    let dims = [g.n, g.c, g.h, g.w, g.o, g.oh, g.ow, g.kh, g.kw, g.sh, g.sw];
    if dims.iter().any(|&d| d > u16::MAX as usize) {
        return Err(CompileError::DoesNotFit(format!(
            "layer dimensions {g:?} exceed the 16-bit DMA fields"
        )));
    }
    let roles: Vec<OperandRole> = layer.operands.iter().map(|o| o.role).collect();
    let alu_ops = layer
        .epilogue
        .iter()
        .map(|op| match op {
            EpilogueOp::AddImm(v) => add_steps(*v).len(),
            _ => 1,
        })
        .sum();
    let needs = Needs::new(&roles, alu_ops, layer.int32_out);
    let tiling = choose(config, &g, cb, ob, &needs, threads)?;
    // DRAM layout.
    let align = |v: usize| v.div_ceil(256 * 4) * (256 * 4);
    let wgt_elem = b * b;
    let mut off = 0usize;
    let mut region = |bytes: usize| -> Result<usize, CompileError> {
        let at = off;
        off = align(
            off.checked_add(bytes)
                .ok_or_else(|| CompileError::DoesNotFit("DRAM image overflow".to_string()))?,
        );
        if off >= MAX_DRAM {
            return Err(CompileError::DoesNotFit(
                "the layer's DRAM image exceeds 4 GiB".to_string(),
            ));
        }
        Ok(at)
    };
    let inp_bytes = checked(&[g.n, cb, g.h, g.w, b])?;
    let wgt_bytes = checked(&[ob, cb, g.kh, g.kw, wgt_elem])?;
    let out_elems = checked(&[g.n, ob, g.oh, g.ow])?;
    // Micro-ops are generated below; their region goes last, so reserve the others first.
    let inp = region(inp_bytes)?;
    let wgt = region(wgt_bytes)?;
    let operands = roles
        .iter()
        .map(|r| match r {
            OperandRole::Channel => region(ob * 4 * b),
            OperandRole::Full => region(checked(&[out_elems, 4 * b])?),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let out = region(checked(&[out_elems, b, needs.planes])?)?;
    let uop_dram = off;
    let mut e = Emitter {
        config,
        insns: Vec::new(),
        cache: UopCache {
            depth: config.uop_depth(),
            kernels: HashMap::new(),
            blob: Vec::new(),
            resident: Vec::new(),
            next: 0,
        },
        uop_dram,
    };
    let slots = Slots::new(config, threads);
    let t = tiling.tile;
    let (khkw, u16max) = (g.kh * g.kw, u16::MAX as usize);
    let (mut tile_idx, mut chunk_idx) = (0usize, 0usize);
    for n in 0..g.n {
        for oh0 in (0..g.oh).step_by(t.oh) {
            for ow0 in (0..g.ow).step_by(t.ow) {
                for ob0 in (0..ob).step_by(t.ob) {
                    let shape = TileShape {
                        ob: t.ob.min(ob - ob0),
                        oh: t.oh.min(g.oh - oh0),
                        ow: t.ow.min(g.ow - ow0),
                        ib: t.ib,
                    };
                    let entries = shape.entries();
                    let acc_base = (tile_idx % threads) * slots.acc;
                    // Reset the tile's accumulators; wait for the store of the tile that used
                    // this slot before.
                    let reset_dims = TileShape { ib: 1, ..shape }.gemm_dims(&g).map(|d| Dim {
                        src: 0,
                        wgt: 0,
                        ..d
                    });
                    let reset = e.gemm(
                        &reset_dims[..3],
                        3,
                        Uop {
                            dst: acc_base as u32,
                            src: 0,
                            wgt: 0,
                        },
                        true,
                    )?;
                    if tile_idx >= threads {
                        e.deps(reset).pop_next = true;
                    }
                    let mut last_compute = reset;
                    for ib0 in (0..cb).step_by(t.ib) {
                        let cs = TileShape {
                            ib: t.ib.min(cb - ib0),
                            ..shape
                        };
                        let slot = chunk_idx % threads;
                        let (inp_base, wgt_base) = (slot * slots.inp, slot * slots.wgt);
                        let (rows, cols) = (cs.rows(&g), cs.cols(&g));
                        let (yp0, y0, ysz, yp1) =
                            window((oh0 * g.sh) as i64 - g.pt as i64, rows, g.h);
                        let (xp0, x0, xsz, xp1) =
                            window((ow0 * g.sw) as i64 - g.pl as i64, cols, g.w);
                        let mut loads = Vec::new();
                        for il in 0..cs.ib {
                            let sram = inp_base + il * rows * cols;
                            let plane = inp / b + ((n * cb + ib0 + il) * g.h) * g.w;
                            if ysz == 0 || xsz == 0 {
                                // The window lies in the padding: write zero rows, at most
                                // 15 (the pad field) per instruction, reading nothing.
                                for r0 in (0..rows).step_by(15) {
                                    let r = 15.min(rows - r0);
                                    loads.push(MemInsn {
                                        mem: MemType::Inp,
                                        sram_base: field("sram_base", sram + r0 * cols, u16max)?,
                                        dram_base: field("dram_base", plane, u32::MAX as usize)?,
                                        y_size: 0,
                                        x_size: field("x_size", cols, u16max)?,
                                        x_stride: field("x_stride", cols, u16max)?,
                                        y_pad0: r as u32,
                                        ..MemInsn::default()
                                    });
                                }
                                continue;
                            }
                            loads.push(MemInsn {
                                mem: MemType::Inp,
                                sram_base: field("sram_base", sram, u16max)?,
                                dram_base: field(
                                    "dram_base",
                                    plane + y0 * g.w + x0,
                                    u32::MAX as usize,
                                )?,
                                y_size: field("y_size", ysz, u16max)?,
                                x_size: field("x_size", xsz, u16max)?,
                                x_stride: field("x_stride", g.w, u16max)?,
                                y_pad0: field("padding (top)", yp0, 15)?,
                                y_pad1: field("padding (bottom)", yp1, 15)?,
                                x_pad0: field("padding (left)", xp0, 15)?,
                                x_pad1: field("padding (right)", xp1, 15)?,
                                ..MemInsn::default()
                            });
                        }
                        loads.push(MemInsn {
                            mem: MemType::Wgt,
                            sram_base: field("sram_base", wgt_base, u16max)?,
                            dram_base: field(
                                "dram_base",
                                wgt / wgt_elem + (ob0 * cb + ib0) * khkw,
                                u32::MAX as usize,
                            )?,
                            y_size: field("y_size", cs.ob, u16max)?,
                            x_size: field("x_size", cs.ib * khkw, u16max)?,
                            x_stride: field("x_stride", cb * khkw, u16max)?,
                            ..MemInsn::default()
                        });
                        let count = loads.len();
                        for (k, mut m) in loads.into_iter().enumerate() {
                            m.deps.pop_next = k == 0 && chunk_idx >= threads;
                            m.deps.push_next = k + 1 == count;
                            e.push(Insn::Load(m));
                        }
                        let dims = cs.gemm_dims(&g);
                        let gemm = e.gemm(
                            &dims,
                            3,
                            Uop {
                                dst: acc_base as u32,
                                src: inp_base as u32,
                                wgt: wgt_base as u32,
                            },
                            false,
                        )?;
                        let d = e.deps(gemm);
                        d.pop_prev = true;
                        d.push_prev = true;
                        last_compute = gemm;
                        chunk_idx += 1;
                    }
                    // The epilogue.
                    let ext = acc_base + entries;
                    let (chan_base, full_base) = (
                        ext,
                        ext + if roles.contains(&OperandRole::Channel) {
                            shape.ob
                        } else {
                            0
                        },
                    );
                    let px = shape.oh * shape.ow;
                    for op in &layer.epilogue {
                        let all = ((1, 0, 0), (entries, 1, 0));
                        let a = acc_base as u32;
                        match *op {
                            EpilogueOp::Add(k) => {
                                let at = match roles[k] {
                                    OperandRole::Channel => {
                                        e.push(Insn::Load(MemInsn {
                                            mem: MemType::Acc,
                                            sram_base: field("sram_base", chan_base, u16max)?,
                                            dram_base: field(
                                                "dram_base",
                                                operands[k] / (4 * b) + ob0,
                                                u32::MAX as usize,
                                            )?,
                                            y_size: 1,
                                            x_size: field("x_size", shape.ob, u16max)?,
                                            x_stride: field("x_stride", shape.ob, u16max)?,
                                            ..MemInsn::default()
                                        }));
                                        e.alu(
                                            AluOp::Add,
                                            None,
                                            a,
                                            chan_base as u32,
                                            (shape.ob, px, 1),
                                            (px, 1, 0),
                                        )?
                                    }
                                    OperandRole::Full => {
                                        for ol in 0..shape.ob {
                                            let elem =
                                                ((n * ob + ob0 + ol) * g.oh + oh0) * g.ow + ow0;
                                            e.push(Insn::Load(MemInsn {
                                                mem: MemType::Acc,
                                                sram_base: field(
                                                    "sram_base",
                                                    full_base + ol * px,
                                                    u16max,
                                                )?,
                                                dram_base: field(
                                                    "dram_base",
                                                    operands[k] / (4 * b) + elem,
                                                    u32::MAX as usize,
                                                )?,
                                                y_size: field("y_size", shape.oh, u16max)?,
                                                x_size: field("x_size", shape.ow, u16max)?,
                                                x_stride: field("x_stride", g.ow, u16max)?,
                                                ..MemInsn::default()
                                            }));
                                        }
                                        e.alu(
                                            AluOp::Add,
                                            None,
                                            a,
                                            full_base as u32,
                                            (1, 0, 0),
                                            (entries, 1, 1),
                                        )?
                                    }
                                };
                                last_compute = at;
                            }
                            EpilogueOp::AddImm(v) => {
                                for s in add_steps(v) {
                                    last_compute =
                                        e.alu(AluOp::Add, Some(s), a, a, all.0, all.1)?;
                                }
                            }
                            EpilogueOp::Shr(s) => {
                                last_compute =
                                    e.alu(AluOp::Shr, Some(s as i32), a, a, all.0, all.1)?;
                            }
                            EpilogueOp::Min(v) => {
                                last_compute = e.alu(
                                    AluOp::Min,
                                    Some(imm16("clip upper", v)?),
                                    a,
                                    a,
                                    all.0,
                                    all.1,
                                )?;
                            }
                            EpilogueOp::Max(v) => {
                                last_compute = e.alu(
                                    AluOp::Max,
                                    Some(imm16("clip lower", v)?),
                                    a,
                                    a,
                                    all.0,
                                    all.1,
                                )?;
                            }
                        }
                    }
                    // An int32 output leaves as byte planes: plane k is a copy of the
                    // accumulators shifted right by 8k (the store keeps each lane's low byte).
                    let plane_base = |k: usize| match k {
                        0 => acc_base,
                        _ => {
                            full_base
                                + if roles.contains(&OperandRole::Full) {
                                    entries
                                } else {
                                    0
                                }
                                + (k - 1) * entries
                        }
                    };
                    for k in 1..needs.planes {
                        let dst = plane_base(k) as u32;
                        e.gemm(
                            &reset_dims[..3],
                            3,
                            Uop {
                                dst,
                                src: 0,
                                wgt: 0,
                            },
                            true,
                        )?;
                        let all = ((1, 0, 0), (entries, 1, 1));
                        e.alu(AluOp::Add, None, dst, acc_base as u32, all.0, all.1)?;
                        let shift = Some(8 * k as i32);
                        last_compute =
                            e.alu(AluOp::Shr, shift, dst, dst, (1, 0, 0), (entries, 1, 0))?;
                    }
                    e.deps(last_compute).push_next = true;
                    // Store, one instruction per channel block (and byte plane).
                    let stores = needs.planes * shape.ob;
                    for s in 0..stores {
                        let (k, ol) = (s / shape.ob, s % shape.ob);
                        let elem = k * out_elems + ((n * ob + ob0 + ol) * g.oh + oh0) * g.ow + ow0;
                        e.push(Insn::Store(MemInsn {
                            deps: DepFlags {
                                pop_prev: s == 0,
                                push_prev: s + 1 == stores,
                                ..DepFlags::default()
                            },
                            mem: MemType::Out,
                            sram_base: field("sram_base", plane_base(k) + ol * px, u16max)?,
                            dram_base: field("dram_base", out / b + elem, u32::MAX as usize)?,
                            y_size: field("y_size", shape.oh, u16max)?,
                            x_size: field("x_size", shape.ow, u16max)?,
                            x_stride: field("x_stride", g.ow, u16max)?,
                            ..MemInsn::default()
                        }));
                    }
                    tile_idx += 1;
                }
            }
        }
    }
    // Wait for the last tiles' stores, then finish.
    for _ in 0..tile_idx.min(threads) {
        e.push(Insn::Load(MemInsn {
            deps: DepFlags {
                pop_next: true,
                ..DepFlags::default()
            },
            mem: MemType::Uop,
            ..MemInsn::default()
        }));
    }
    e.push(Insn::Finish(DepFlags::default()));
    let layout = Layout::new(e.config);
    let mut uop_bytes = Vec::with_capacity(e.cache.blob.len() * 4);
    for u in &e.cache.blob {
        let word = layout
            .encode_uop(u)
            .map_err(|err| CompileError::DoesNotFit(err.to_string()))?;
        uop_bytes.extend_from_slice(&word.to_le_bytes());
    }
    let total = uop_dram
        .checked_add(uop_bytes.len())
        .filter(|&v| v < MAX_DRAM)
        .ok_or_else(|| {
            CompileError::DoesNotFit("the layer's DRAM image exceeds 4 GiB".to_string())
        })?;
    // Every instruction must encode (fields in range).
    for insn in &e.insns {
        layout
            .encode(insn)
            .map_err(|err| CompileError::DoesNotFit(format!("{insn}: {err}")))?;
    }
    Ok(LayerProgram {
        insns: e.insns,
        uop_bytes,
        dram: DramLayout {
            uop: uop_dram,
            inp,
            wgt,
            operands,
            out,
            total,
        },
        tiling,
        blocks: (cb, ob),
    })
}

#[cfg(test)]
mod tests {
    use super::window;

    /// (pad before, first index, count, pad after) always sum to the window, wherever it lies.
    #[test]
    fn windows_split_into_padding_and_data() {
        assert_eq!(window(-1, 3, 4), (1, 0, 2, 0));
        assert_eq!(window(2, 3, 4), (0, 2, 2, 1));
        assert_eq!(window(-5, 3, 4), (3, 0, 0, 0));
        // Past the data (a padding wider than the kernel): all padding after it.
        assert_eq!(window(5, 3, 4), (0, 4, 0, 3));
        assert_eq!(window(4, 2, 4), (0, 4, 0, 2));
    }
}
