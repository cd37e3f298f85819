//! Tiling: how a layer's output is cut into tiles that fit the on-chip buffers, and the GEMM
//! micro-op kernel of a tile.
//!
//! A tile is `tob` output-channel blocks x `th` output rows x `tw` output columns of one image;
//! its reduction runs in chunks of `tib` input-channel blocks. With `v` virtual threads each
//! buffer is split in `v` slots: chunk `c` loads into input/weight slot `c mod v` and tile `t`
//! accumulates in accumulator slot `t mod v`, so the load module fills one slot while the
//! compute module works on the other, and the store module drains one accumulator slot while
//! the next tile accumulates in the other.
//!
//! The choice minimizes an estimate of the layer's cycles under the cycle model (loads
//! overlapped with compute when `v >= 2`) over the tilings that fit.

use crate::config::VtaConfig;
use crate::sim::cycles::{ALU_II, DMA_LATENCY};

use super::layer::{Geometry, OperandRole};
use super::CompileError;

/// One loop dimension of a GEMM tile: extent and the index step it gives the accumulator,
/// input and weight addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dim {
    /// Iterations.
    pub extent: usize,
    /// Accumulator index step.
    pub dst: usize,
    /// Input index step.
    pub src: usize,
    /// Weight index step.
    pub wgt: usize,
}

/// A tile's extents (edge tiles are smaller than the tiling's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TileShape {
    /// Output-channel blocks.
    pub ob: usize,
    /// Output rows.
    pub oh: usize,
    /// Output columns.
    pub ow: usize,
    /// Input-channel blocks of a reduction chunk.
    pub ib: usize,
}

impl TileShape {
    /// Input rows a tile reads.
    pub fn rows(&self, g: &Geometry) -> usize {
        (self.oh - 1) * g.sh + g.kh
    }

    /// Input columns a tile reads.
    pub fn cols(&self, g: &Geometry) -> usize {
        (self.ow - 1) * g.sw + g.kw
    }

    /// Accumulator elements of the output.
    pub fn entries(&self) -> usize {
        self.ob * self.oh * self.ow
    }

    /// The GEMM dimensions: parallel (channel block, row, column), then reduction (input
    /// block, kernel row, kernel column), for the on-chip layouts of the tile.
    pub fn gemm_dims(&self, g: &Geometry) -> [Dim; 6] {
        let (rows, cols, khkw) = (self.rows(g), self.cols(g), g.kh * g.kw);
        [
            Dim {
                extent: self.ob,
                dst: self.oh * self.ow,
                src: 0,
                wgt: self.ib * khkw,
            },
            Dim {
                extent: self.oh,
                dst: self.ow,
                src: g.sh * cols,
                wgt: 0,
            },
            Dim {
                extent: self.ow,
                dst: 1,
                src: g.sw,
                wgt: 0,
            },
            Dim {
                extent: self.ib,
                dst: 0,
                src: rows * cols,
                wgt: khkw,
            },
            Dim {
                extent: g.kh,
                dst: 0,
                src: cols,
                wgt: g.kw,
            },
            Dim {
                extent: g.kw,
                dst: 0,
                src: 1,
                wgt: 1,
            },
        ]
    }
}

/// How dims split between the micro-op kernel and the instruction's two hardware loops: the
/// kernel's innermost dim is a parallel one with two or more iterations (so consecutive
/// micro-ops write different accumulators), and the two largest other dims become loops.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelPlan {
    /// Indices of the loop dims, outer first (0, 1 or 2 of them).
    pub loops: Vec<usize>,
    /// Indices of the kernel dims, outer first.
    pub kernel: Vec<usize>,
}

impl KernelPlan {
    /// The plan for `dims`, of which the first `parallel` are parallel dims.
    pub fn new(dims: &[Dim], parallel: usize) -> Self {
        // Innermost: the last parallel dim with two or more iterations (columns first).
        let inner = (0..parallel).rev().find(|&d| dims[d].extent >= 2);
        let mut candidates: Vec<usize> = (0..dims.len())
            .filter(|&d| Some(d) != inner && dims[d].extent >= 2)
            .collect();
        candidates.sort_by_key(|&d| std::cmp::Reverse(dims[d].extent));
        let mut loops: Vec<usize> = candidates.into_iter().take(2).collect();
        loops.sort_unstable();
        let mut kernel: Vec<usize> = (0..dims.len())
            .filter(|d| !loops.contains(d) && Some(*d) != inner)
            .collect();
        kernel.extend(inner);
        KernelPlan { loops, kernel }
    }

    /// Micro-ops of the kernel.
    pub fn kernel_len(&self, dims: &[Dim]) -> usize {
        self.kernel.iter().map(|&d| dims[d].extent).product()
    }
}

/// The tiling of a layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tiling {
    /// The full tile shape.
    pub tile: TileShape,
    /// Virtual threads (buffer slots).
    pub threads: usize,
}

/// What a layer needs besides its GEMM, for buffer sizing.
#[derive(Clone, Copy, Debug)]
pub struct Needs {
    /// Per-channel operands (one accumulator element per channel block while used).
    pub channel: bool,
    /// Full-shape operands (a second tile of accumulators while used).
    pub full: bool,
    /// Epilogue ALU instructions per tile.
    pub alu_ops: usize,
    /// Byte planes stored per output value: 1 for int8 outputs, 4 for int32 ones (the store
    /// keeps the low byte of each lane, so an int32 value leaves as four shifted copies).
    pub planes: usize,
}

impl Needs {
    /// The needs of an epilogue with these operand roles and ALU op count, and an int8 or an
    /// int32 output.
    pub fn new(roles: &[OperandRole], alu_ops: usize, int32_out: bool) -> Self {
        Needs {
            channel: roles.contains(&OperandRole::Channel),
            full: roles.contains(&OperandRole::Full),
            alu_ops,
            planes: if int32_out { 4 } else { 1 },
        }
    }
}

/// Per-slot capacities.
#[derive(Clone, Copy, Debug)]
pub struct Slots {
    /// Input elements per slot.
    pub inp: usize,
    /// Weight elements per slot.
    pub wgt: usize,
    /// Accumulator elements per slot.
    pub acc: usize,
    /// Micro-ops a GEMM kernel may use (half the buffer, so the reset and ALU kernels fit
    /// beside it).
    pub uop: usize,
}

impl Slots {
    /// The slots of `config` with `threads` virtual threads.
    pub fn new(config: &VtaConfig, threads: usize) -> Self {
        Slots {
            inp: config.inp_depth() / threads,
            wgt: config.wgt_depth() / threads,
            acc: config.acc_depth() / threads,
            uop: config.uop_depth() / 2,
        }
    }

    /// Accumulator elements a tile uses: output, then channel and full operand regions, then
    /// the shifted copies of an int32 output's upper byte planes.
    pub fn acc_use(t: &TileShape, needs: &Needs) -> usize {
        t.entries()
            + if needs.channel { t.ob } else { 0 }
            + if needs.full { t.entries() } else { 0 }
            + (needs.planes - 1) * t.entries()
    }

    fn fits(&self, t: &TileShape, g: &Geometry, needs: &Needs) -> bool {
        let dims = t.gemm_dims(g);
        t.ib * t.rows(g) * t.cols(g) <= self.inp
            && t.ob * t.ib * g.kh * g.kw <= self.wgt
            && Self::acc_use(t, needs) <= self.acc
            && KernelPlan::new(&dims, 3).kernel_len(&dims) <= self.uop
    }
}

/// Values `ceil(n / k)` for k = 1..=n, without repeats, largest first.
fn splits(n: usize) -> Vec<usize> {
    let mut v: Vec<usize> = (1..=n).map(|k| n.div_ceil(k)).collect();
    v.dedup();
    v
}

/// Chooses the tiling of a layer with `cb` input and `ob` output channel blocks.
pub fn choose(
    config: &VtaConfig,
    g: &Geometry,
    cb: usize,
    ob: usize,
    needs: &Needs,
    threads: usize,
) -> Result<Tiling, CompileError> {
    let slots = Slots::new(config, threads);
    let bus = config.bus_bytes();
    let (inp_b, wgt_b, out_b) = (
        config.block(),
        config.block() * config.block(),
        config.block(),
    );
    let khkw = g.kh * g.kw;
    let mut best: Option<(u64, TileShape)> = None;
    for tib in splits(cb) {
        for tob in splits(ob) {
            for tw in splits(g.ow) {
                // The most rows that fit, then balanced over the bands.
                let fit = |th: usize| {
                    slots.fits(
                        &TileShape {
                            ob: tob,
                            oh: th,
                            ow: tw,
                            ib: tib,
                        },
                        g,
                        needs,
                    )
                };
                if !fit(1) {
                    continue;
                }
                let (mut lo, mut hi) = (1, g.oh);
                while lo < hi {
                    let mid = (lo + hi).div_ceil(2);
                    if fit(mid) {
                        lo = mid;
                    } else {
                        hi = mid - 1;
                    }
                }
                let th = g.oh.div_ceil(g.oh.div_ceil(lo));
                let t = TileShape {
                    ob: tob,
                    oh: th,
                    ow: tw,
                    ib: tib,
                };
                let tiles = (g.n * g.oh.div_ceil(th) * g.ow.div_ceil(tw) * ob.div_ceil(tob)) as u64;
                let chunks = cb.div_ceil(tib) as u64;
                let (rows, cols) = (t.rows(g) as u64, t.cols(g) as u64);
                let load = tib as u64
                    * (DMA_LATENCY + rows * (cols * inp_b as u64).div_ceil(bus as u64))
                    + DMA_LATENCY
                    + (tob * tib * khkw * wgt_b).div_ceil(bus) as u64;
                let gemm = (t.entries() * tib * khkw) as u64;
                let e = t.entries() as u64;
                // Each upper byte plane: a reset, a copy and a shift.
                let copies = (needs.planes - 1) as u64;
                let compute = e
                    + chunks * gemm
                    + ALU_II * e * needs.alu_ops as u64
                    + copies * (e + 2 * ALU_II * e);
                let store = (needs.planes * tob) as u64
                    * (DMA_LATENCY + th as u64 * (tw * out_b).div_ceil(bus) as u64);
                let per_tile = if threads >= 2 {
                    (chunks * load).max(compute).max(store)
                } else {
                    chunks * load + compute + store
                };
                let cost = tiles * per_tile;
                if best.is_none_or(|(c, _)| cost < c) {
                    best = Some((cost, t));
                }
            }
        }
    }
    let (_, tile) = best.ok_or_else(|| {
        CompileError::DoesNotFit(format!(
            "no tiling of a {}x{} kernel over {}x{} outputs fits the buffers of {} with {threads} virtual thread(s)",
            g.kh,
            g.kw,
            g.oh,
            g.ow,
            config.name()
        ))
    })?;
    Ok(Tiling { tile, threads })
}
