//! Packing tensors into VTA's DRAM layouts and back: activations NCHW → `NCHW1n16c` (one
//! input element per image, channel block, row, column), weights OIHW → `OIHW16o16i` (one
//! weight element per output block, input block, kernel row, kernel column; rows are output
//! channels), per-channel operands → one accumulator element per output block, full operands
//! → `(N, Ob, OH, OW)` accumulator elements, outputs back to NCHW. Channels beyond the tensor's
//! are zero (the compiler pads channel counts to whole blocks). Dense tensors map as a
//! 1 x K x 1 x N image: `data[n, k]` is image column `n`, channel `k`.

use super::layer::{Geometry, LayerKind};

/// A layer's tensors as the packers see them.
#[derive(Clone, Copy, Debug)]
pub struct Packer {
    /// The op.
    pub kind: LayerKind,
    /// The geometry.
    pub g: Geometry,
    /// Block lanes.
    pub b: usize,
}

impl Packer {
    fn blocks(&self) -> (usize, usize) {
        (self.g.c.div_ceil(self.b), self.g.o.div_ceil(self.b))
    }

    /// Flat index of data element (image n, channel c, row y, column x).
    fn data_index(&self, n: usize, c: usize, y: usize, x: usize) -> usize {
        let g = &self.g;
        match self.kind {
            LayerKind::Conv2d => ((n * g.c + c) * g.h + y) * g.w + x,
            LayerKind::Dense => x * g.c + c,
        }
    }

    /// Output coordinates in the output tensor's own rank.
    fn out_coords(&self, n: usize, o: usize, y: usize, x: usize) -> ([usize; 4], usize) {
        match self.kind {
            LayerKind::Conv2d => ([n, o, y, x], 4),
            LayerKind::Dense => ([x, o, 0, 0], 2),
        }
    }

    /// Packs int8 data into `dst` (`n * Cb * h * w * b` bytes).
    pub fn input(&self, data: &[i8], dst: &mut [u8]) {
        let (g, b) = (&self.g, self.b);
        let (cb, _) = self.blocks();
        let mut at = 0;
        for n in 0..g.n {
            for cbi in 0..cb {
                for y in 0..g.h {
                    for x in 0..g.w {
                        for k in 0..b {
                            let c = cbi * b + k;
                            dst[at] = if c < g.c {
                                data[self.data_index(n, c, y, x)] as u8
                            } else {
                                0
                            };
                            at += 1;
                        }
                    }
                }
            }
        }
    }

    /// Packs int8 weights (OIHW, or (O, K) for dense) into `dst`.
    pub fn weight(&self, w: &[i8], dst: &mut [u8]) {
        let (g, b) = (&self.g, self.b);
        let (cb, ob) = self.blocks();
        let mut at = 0;
        for obi in 0..ob {
            for cbi in 0..cb {
                for kh in 0..g.kh {
                    for kw in 0..g.kw {
                        for j in 0..b {
                            for k in 0..b {
                                let (o, c) = (obi * b + j, cbi * b + k);
                                dst[at] = if o < g.o && c < g.c {
                                    w[((o * g.c + c) * g.kh + kh) * g.kw + kw] as u8
                                } else {
                                    0
                                };
                                at += 1;
                            }
                        }
                    }
                }
            }
        }
    }

    /// Packs a per-channel int32 operand (O values, or 1 broadcast) plus `offset` into `dst`.
    pub fn channel(&self, values: &[i32], offset: i32, dst: &mut [u8]) {
        let (_, ob) = self.blocks();
        for o in 0..ob * self.b {
            let v = if o >= self.g.o {
                0
            } else if values.len() == 1 {
                values[0].wrapping_add(offset)
            } else {
                values[o].wrapping_add(offset)
            };
            dst[o * 4..o * 4 + 4].copy_from_slice(&v.to_le_bytes());
        }
    }

    /// Packs a full int32 operand of `shape`, broadcast to the output, plus `offset` into
    /// `dst`.
    pub fn full(&self, shape: &[usize], values: &[i32], offset: i32, dst: &mut [u8]) {
        let (g, b) = (&self.g, self.b);
        let (_, ob) = self.blocks();
        let (_, rank) = self.out_coords(0, 0, 0, 0);
        // Operand strides right-aligned to the output rank; broadcast dims step by 0.
        let mut strides = [0usize; 4];
        let mut s = 1;
        for (d, &dim) in shape.iter().enumerate().rev() {
            let axis = d + rank - shape.len();
            strides[axis] = if dim == 1 { 0 } else { s };
            s *= dim;
        }
        let mut at = 0;
        for n in 0..g.n {
            for obi in 0..ob {
                for y in 0..g.oh {
                    for x in 0..g.ow {
                        for j in 0..b {
                            let o = obi * b + j;
                            let v = if o < g.o {
                                let (c, _) = self.out_coords(n, o, y, x);
                                values[(0..4).map(|d| c[d] * strides[d]).sum::<usize>()]
                                    .wrapping_add(offset)
                            } else {
                                0
                            };
                            dst[at..at + 4].copy_from_slice(&v.to_le_bytes());
                            at += 4;
                        }
                    }
                }
            }
        }
    }

    /// Calls `f(byte, index)` for each output value: its byte offset in the packed
    /// `(N, Ob, OH, OW)` layout and its flat index in the output tensor (padded lanes skipped).
    fn each_output(&self, mut f: impl FnMut(usize, usize)) {
        let (g, b) = (&self.g, self.b);
        let (_, ob) = self.blocks();
        let mut at = 0;
        for n in 0..g.n {
            for obi in 0..ob {
                for y in 0..g.oh {
                    for x in 0..g.ow {
                        for j in 0..b {
                            let o = obi * b + j;
                            if o < g.o {
                                f(
                                    at,
                                    match self.kind {
                                        LayerKind::Conv2d => ((n * g.o + o) * g.oh + y) * g.ow + x,
                                        LayerKind::Dense => x * g.o + o,
                                    },
                                );
                            }
                            at += 1;
                        }
                    }
                }
            }
        }
    }

    /// Unpacks the int8 output from `src` (`n * Ob * oh * ow * b` bytes).
    pub fn output(&self, src: &[u8], out: &mut [i8]) {
        self.each_output(|at, index| out[index] = src[at] as i8);
    }

    /// Unpacks an int32 output from its four byte planes in `src` (each `n * Ob * oh * ow * b`
    /// bytes, plane `k` holding bits `8k..8k+8` of each value).
    pub fn output_int32(&self, src: &[u8], out: &mut [i32]) {
        let (_, ob) = self.blocks();
        let plane = self.g.n * ob * self.g.oh * self.g.ow * self.b;
        self.each_output(|at, index| {
            out[index] = i32::from_le_bytes([
                src[at],
                src[at + plane],
                src[at + 2 * plane],
                src[at + 3 * plane],
            ]);
        });
    }
}
