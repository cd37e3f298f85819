//! 2-D convolution and transposed convolution through GEMM.
//!
//! conv2d lowers each (batch, group) to GEMMs over im2col blocks (or over the input itself for
//! a 1×1, stride-1, unpadded kernel); depthwise NCHW convolutions (one input channel per
//! group) take the direct kernel of [`super::depthwise`] instead. For NCHW data the kernel
//! splits the work itself: tiles of output pixels, as many as a multiple of the threads, each
//! with its own cache-sized im2col block and a single-threaded GEMM into a per-thread output
//! tile that is copied into its columns of the output, run in parallel (the blocks and tiles
//! are the per-thread buffers of [`super::scratch`], neither allocated nor zero-filled per
//! tile); with few output pixels, blocks of output channels share one im2col matrix. NHWC
//! data uses one GEMM per (batch, group) with the GEMM's own threads. conv2d_transpose is a
//! GEMM followed by a col2im scatter-add. Weights arrive repacked by [`pack4`]: OIHW for channels-first data,
//! HWIO for channels-last data, IOHW for the transposed convolution.

use byoc_ir::ops::conv::Conv2dGeom;
use {
    super::depthwise::{self, depthwise_nchw},
    super::gemm::{Gemm, MatMut, MatRef},
    super::numeric::Widen,
    super::scratch,
    super::window::Columns,
    crate::OutputEpilogue,
    byoc_ir::tensor::Element,
    rayon::prelude::*,
};

/// A convolution's output epilogue (if any) and the element offset in the whole output of the
/// piece of output at hand: blocks of the piece are handed to the epilogue as soon as they are
/// final.
#[derive(Clone, Copy)]
pub(crate) struct Tail<'a> {
    epilogue: Option<&'a dyn OutputEpilogue>,
    offset: usize,
}

impl<'a> Tail<'a> {
    /// The tail of a whole output.
    pub(crate) fn new(epilogue: Option<&'a dyn OutputEpilogue>) -> Self {
        Tail {
            epilogue,
            offset: 0,
        }
    }

    /// The tail of the piece `offset` elements into this one.
    pub(super) fn at(self, offset: usize) -> Self {
        Tail {
            offset: self.offset + offset,
            ..self
        }
    }

    /// Applies the epilogue to `block`, the first elements of this piece.
    pub(crate) fn apply<T: Element>(self, block: &mut [T]) {
        if let Some(e) = self.epilogue {
            e.apply(self.offset, bytemuck::cast_slice_mut(block));
        }
    }
}

/// Copies a 4-D tensor into a new contiguous buffer with its axes permuted. `dims[d]` and `strides[d]` give logical axis `d`'s extent and element stride in
/// `src`; `order` lists the logical axes from outermost to innermost in the result.
pub(crate) fn pack4<E: Copy>(
    src: &[E],
    dims: [usize; 4],
    strides: [usize; 4],
    order: [usize; 4],
) -> Vec<E> {
    let d = order.map(|o| dims[o]);
    let s = order.map(|o| strides[o]);
    let mut out = Vec::with_capacity(d.iter().product());
    for a in 0..d[0] {
        for b in 0..d[1] {
            for c in 0..d[2] {
                let base = a * s[0] + b * s[1] + c * s[2];
                out.extend((0..d[3]).map(|e| src[base + e * s[3]]));
            }
        }
    }
    out
}

/// Runs `f` over the chunks of `data`, in parallel when `threads > 1`.
pub(super) fn for_chunks<T: Send>(
    data: &mut [T],
    chunk: usize,
    threads: usize,
    f: impl Fn(usize, &mut [T]) + Send + Sync,
) {
    if chunk == 0 {
        return;
    }
    if threads > 1 {
        data.par_chunks_mut(chunk)
            .enumerate()
            .for_each(|(i, c)| f(i, c));
    } else {
        data.chunks_mut(chunk)
            .enumerate()
            .for_each(|(i, c)| f(i, c));
    }
}

/// im2col of one (batch, group) of NCHW data `x` (`cin_g × H × W`) into `col`
/// (`cin_g·KH·KW` rows of `OH·OW`).
fn im2col_nchw<E: Element>(g: &Conv2dGeom, x: &[E], col: &mut [E], threads: usize) {
    let [kh, kw] = g.kernel;
    let (h, w, ow) = (g.in_h, g.in_w, g.out_w);
    for_chunks(col, g.out_h * ow, threads, |r, row| {
        let (ci, ky, kx) = (r / (kh * kw), (r / kw) % kh, r % kw);
        let plane = &x[ci * h * w..(ci + 1) * h * w];
        for (oy, seg) in row.chunks_mut(ow).enumerate() {
            let iy = g.src(0, oy, ky);
            if iy < 0 || iy >= h as isize {
                seg.fill(E::zeroed());
                continue;
            }
            let src = &plane[iy as usize * w..(iy as usize + 1) * w];
            gather_row(g, src, kx, 0, seg);
        }
    });
}

/// im2col of one batch of NHWC data `x` (`H × W × C`), group `gi`, into `col`
/// (`OH·OW` rows of `KH·KW·cin_g`).
fn im2col_nhwc<E: Element>(g: &Conv2dGeom, x: &[E], gi: usize, col: &mut [E], threads: usize) {
    let [kh, kw] = g.kernel;
    let cin_g = g.in_c / g.groups;
    let (h, w, ow) = (g.in_h, g.in_w, g.out_w);
    for_chunks(col, kh * kw * cin_g, threads, |p, row| {
        let (oy, ox) = (p / ow, p % ow);
        for ky in 0..kh {
            let iy = g.src(0, oy, ky);
            for kx in 0..kw {
                let ix = g.src(1, ox, kx);
                let seg = &mut row[(ky * kw + kx) * cin_g..(ky * kw + kx + 1) * cin_g];
                if iy < 0 || iy >= h as isize || ix < 0 || ix >= w as isize {
                    seg.fill(E::zeroed());
                } else {
                    let base = (iy as usize * w + ix as usize) * g.in_c + gi * cin_g;
                    seg.copy_from_slice(&x[base..base + cin_g]);
                }
            }
        }
    });
}

/// `y = conv2d(x, w)`, then the epilogue of `tail` over `y`. `w` is packed OIHW (NCHW data) or
/// HWIO (NHWC data); `y` is in the data layout. Data and weights reach the GEMM unwidened
/// (im2col copies data elements as they are).
pub(crate) fn conv2d<A: Widen<T>, B: Widen<T>, T: Gemm>(
    g: &Conv2dGeom,
    x: &[A],
    w: &[B],
    y: &mut [T],
    threads: usize,
    tail: Tail<'_>,
) {
    let [kh, kw] = g.kernel;
    let (cin_g, cout_g) = (g.in_c / g.groups, g.out_c / g.groups);
    let kk = cin_g * kh * kw;
    let (hw_in, hw_out) = (g.in_h * g.in_w, g.out_h * g.out_w);
    let pointwise = g.pointwise();
    if !g.channels_last {
        for n in 0..g.batch {
            let x_n = &x[n * g.in_c * hw_in..(n + 1) * g.in_c * hw_in];
            let y_n = &mut y[n * g.out_c * hw_out..(n + 1) * g.out_c * hw_out];
            let tail_n = tail.at(n * g.out_c * hw_out);
            if depthwise::applies(g) {
                depthwise_nchw(g, x_n, w, y_n, threads, tail_n);
            } else {
                conv_nchw_groups(g, x_n, w, y_n, threads, tail_n);
            }
        }
        return;
    }
    let mut col = if pointwise {
        Vec::new()
    } else {
        vec![A::zeroed(); kk * hw_out]
    };
    for n in 0..g.batch {
        for gi in 0..g.groups {
            let x_n = &x[n * hw_in * g.in_c..(n + 1) * hw_in * g.in_c];
            let lhs = if pointwise {
                MatRef {
                    data: &x[n * hw_in * g.in_c + gi * cin_g..],
                    rs: g.in_c,
                    cs: 1,
                }
            } else {
                im2col_nhwc(g, x_n, gi, &mut col, threads);
                MatRef::row_major(&col, kk)
            };
            let rhs = MatRef {
                data: &w[gi * cout_g..],
                rs: g.out_c,
                cs: 1,
            };
            let dst = MatMut {
                data: &mut y[n * hw_out * g.out_c + gi * cout_g..],
                rs: g.out_c,
            };
            T::gemm(hw_out, cout_g, kk, lhs, rhs, dst, threads);
        }
    }
    tail.apply(y);
}

/// One batch of an NCHW convolution, group by group. When the groups share out evenly over
/// the threads (a multiple of them, or at least four per thread), they run in parallel, one
/// thread each; otherwise (e.g. 3 groups on 2 threads, which would leave one thread idle a
/// third of the time) they run in order and split their own work over the threads. Each
/// finished block goes through `tail`'s epilogue.
pub(super) fn conv_nchw_groups<A: Widen<T>, B: Widen<T>, T: Gemm>(
    g: &Conv2dGeom,
    x: &[A],
    w: &[B],
    y: &mut [T],
    threads: usize,
    tail: Tail<'_>,
) {
    let [kh, kw] = g.kernel;
    let (cin_g, cout_g) = (g.in_c / g.groups, g.out_c / g.groups);
    let kk = cin_g * kh * kw;
    let (hw_in, hw_out) = (g.in_h * g.in_w, g.out_h * g.out_w);
    let across_groups = g.groups > 1
        && g.groups >= threads
        && (g.groups.is_multiple_of(threads.max(1)) || g.groups >= 4 * threads);
    let inner_threads = if across_groups { 1 } else { threads };
    let group = |gi: usize, y_g: &mut [T]| {
        let w_g = &w[gi * cout_g * kk..(gi + 1) * cout_g * kk];
        let range = gi * cin_g * hw_in..(gi + 1) * cin_g * hw_in;
        let tail_g = tail.at(gi * cout_g * hw_out);
        if g.pointwise() {
            conv_nchw_pointwise(g, &x[range], w_g, y_g, inner_threads, tail_g);
        } else {
            conv_nchw_im2col(g, &x[range], w_g, y_g, inner_threads, tail_g);
        }
    };
    for_chunks(
        y,
        cout_g * hw_out,
        if across_groups { threads } else { 1 },
        group,
    );
}

/// Elements of a column tile's im2col buffer: a tile of `kk` rows then takes about 512 KiB of
/// f32 (128 KiB of int8), so it stays in a core's L2 cache while the GEMM streams it.
const TILE_ELEMS: usize = 128 * 1024;
/// The fewest output pixels a column tile gets; below `threads` times this, the work is split
/// over output channels instead.
const MIN_TILE_PIXELS: usize = 64;

/// How one (batch, group) of an NCHW convolution is cut into independent GEMMs.
enum Split {
    /// Column tiles of this many output pixels (the last may be shorter), as many as a
    /// multiple of the threads so that each thread gets the same work.
    Pixels(usize),
    /// Blocks of this many output channels over the whole im2col matrix.
    Channels(usize),
}

impl Split {
    fn choose(kk: usize, cout: usize, hw_out: usize, threads: usize) -> Split {
        let threads = threads.max(1);
        if hw_out >= threads * MIN_TILE_PIXELS || cout < 2 * threads {
            let by_cache = (TILE_ELEMS / kk.max(1)).max(MIN_TILE_PIXELS);
            let tiles = hw_out.div_ceil(by_cache).next_multiple_of(threads);
            Split::Pixels(hw_out.div_ceil(tiles).max(1))
        } else {
            // Multiples of 16 rows keep the GEMM's register tiles full.
            Split::Channels(cout.div_ceil(threads).next_multiple_of(16).min(cout))
        }
    }
}

/// Runs `f(i, chunk)` over `chunk`-sized pieces of `data` on the current rayon pool, or in
/// order when there is one piece or one thread.
fn for_pieces<T: Send>(
    data: &mut [T],
    chunk: usize,
    threads: usize,
    f: impl Fn(usize, &mut [T]) + Send + Sync,
) {
    if chunk >= data.len() {
        f(0, data);
    } else {
        for_chunks(data, chunk, threads, f);
    }
}

/// Applies `tail`'s epilogue to tile `out` (`cout` rows of `len` output pixels from pixel `p0`
/// of rows of `hw` pixels), row by row.
fn tile_tail<T: Element>(tail: Tail<'_>, out: &mut [T], len: usize, p0: usize, hw: usize) {
    for (c, row) in out.chunks_mut(len).enumerate() {
        tail.at(c * hw + p0).apply(row);
    }
}

/// One pixel tile's share of a row-major `rows × hw` output: columns `p0..p0 + len` of every
/// row. Tiles of one output never overlap, so they are written in parallel.
struct TileDst<'a, T> {
    base: *mut T,
    rows: usize,
    hw: usize,
    p0: usize,
    len: usize,
    _output: std::marker::PhantomData<&'a mut [T]>,
}

impl<T: Copy> TileDst<'_, T> {
    /// Copies `tile` (`rows × len`, row-major) into this tile's columns of the output.
    fn write(&mut self, tile: &[T]) {
        assert_eq!(tile.len(), self.rows * self.len, "tile shape");
        for (r, src) in tile.chunks_exact(self.len.max(1)).enumerate() {
            // SAFETY: `for_tiles` built `self` from an output of `rows × hw` elements with
            // `p0 + len <= hw`, so row `r < rows` spans `r·hw + p0 .. r·hw + p0 + len` inside
            // it; no other tile covers these columns, and `&mut self` hands out one row at a time.
            let row = unsafe {
                std::slice::from_raw_parts_mut(self.base.add(r * self.hw + self.p0), self.len)
            };
            row.copy_from_slice(src);
        }
    }
}

/// The output's base pointer, shared by the tile tasks (each writes only its own columns).
struct SharedOut<T>(*mut T);

// SAFETY: the pointer is only turned into slices of disjoint columns (see `TileDst`), one task
// per tile, while `for_tiles` holds the output's unique borrow.
unsafe impl<T: Send> Send for SharedOut<T> {}
unsafe impl<T: Send> Sync for SharedOut<T> {}

impl<T> SharedOut<T> {
    fn get(&self) -> *mut T {
        self.0
    }
}

/// Runs `f(p0, len, dst)` for the column tiles of `tile` pixels of the row-major `rows × hw`
/// output `y` (the last may be shorter), in parallel when `threads > 1`; `dst` writes the
/// tile's columns straight into `y`.
fn for_tiles<T: Copy + Send>(
    y: &mut [T],
    hw: usize,
    tile: usize,
    threads: usize,
    f: impl Fn(usize, usize, TileDst<'_, T>) + Send + Sync,
) {
    if hw == 0 || tile == 0 {
        return;
    }
    let rows = y.len() / hw;
    assert_eq!(rows * hw, y.len(), "output is rows of hw pixels");
    let base = SharedOut(y.as_mut_ptr());
    let run = |t: usize| {
        let p0 = t * tile;
        let len = tile.min(hw - p0);
        let dst = TileDst {
            base: base.get(),
            rows,
            hw,
            p0,
            len,
            _output: std::marker::PhantomData,
        };
        f(p0, len, dst);
    };
    let tiles = hw.div_ceil(tile);
    if threads > 1 && tiles > 1 {
        (0..tiles).into_par_iter().for_each(run);
    } else {
        (0..tiles).for_each(run);
    }
}

/// A 1×1, stride-1, unpadded NCHW convolution of one (batch, group): `y = w × x`, straight
/// on the input (no im2col). On one thread it is one GEMM into `y` (the GEMM blocks it for
/// the cache itself); otherwise it is cut into pixel tiles or channel blocks that run in
/// parallel, each a single-threaded GEMM followed by `tail`'s epilogue.
fn conv_nchw_pointwise<A: Widen<T>, B: Widen<T>, T: Gemm>(
    g: &Conv2dGeom,
    x: &[A],
    w: &[B],
    y: &mut [T],
    threads: usize,
    tail: Tail<'_>,
) {
    let (cin, cout) = (g.in_c / g.groups, g.out_c / g.groups);
    let hw = g.out_h * g.out_w;
    if y.is_empty() {
        return;
    }
    if threads <= 1 {
        let (lhs, rhs) = (MatRef::row_major(w, cin), MatRef::row_major(x, hw));
        T::gemm(cout, hw, cin, lhs, rhs, MatMut { data: y, rs: hw }, 1);
        tail.apply(y);
        return;
    }
    match Split::choose(cin, cout, hw, threads) {
        Split::Pixels(tile) => for_tiles(y, hw, tile, threads, |p0, len, mut dst| {
            scratch::with_one(cout * len, |out: &mut [T]| {
                let rhs = MatRef {
                    data: &x[p0..],
                    rs: hw,
                    cs: 1,
                };
                let gemm_dst = MatMut {
                    data: &mut *out,
                    rs: len,
                };
                T::gemm(cout, len, cin, MatRef::row_major(w, cin), rhs, gemm_dst, 1);
                tile_tail(tail, out, len, p0, hw);
                dst.write(out);
            });
        }),
        Split::Channels(rows) => {
            for_pieces(y, rows * hw, threads, |b, out| {
                let m = out.len() / hw;
                let lhs = MatRef::row_major(&w[b * rows * cin..], cin);
                let dst = MatMut { data: out, rs: hw };
                T::gemm(m, hw, cin, lhs, MatRef::row_major(x, hw), dst, 1);
                tail.at(b * rows * hw).apply(out);
            });
        }
    }
}

/// An NCHW convolution of one (batch, group) through im2col: pixel tiles each build their own
/// im2col block (cache-sized) and multiply it, in parallel; with few output pixels the whole
/// im2col matrix is built (in parallel) and channel blocks multiply it in parallel. Each
/// block then goes through `tail`'s epilogue.
fn conv_nchw_im2col<A: Widen<T>, B: Widen<T>, T: Gemm>(
    g: &Conv2dGeom,
    x: &[A],
    w: &[B],
    y: &mut [T],
    threads: usize,
    tail: Tail<'_>,
) {
    let [kh, kw] = g.kernel;
    let cout = g.out_c / g.groups;
    let kk = g.in_c / g.groups * kh * kw;
    let hw = g.out_h * g.out_w;
    if y.is_empty() {
        return;
    }
    match Split::choose(kk, cout, hw, threads) {
        Split::Pixels(tile) => for_tiles(y, hw, tile, threads, |p0, len, mut dst| {
            scratch::with_two(kk * len, cout * len, |col: &mut [A], out: &mut [T]| {
                im2col_nchw_pixels(g, x, p0, len, col);
                let gemm_dst = MatMut {
                    data: &mut *out,
                    rs: len,
                };
                let rhs = MatRef::row_major(&*col, len);
                T::gemm(cout, len, kk, MatRef::row_major(w, kk), rhs, gemm_dst, 1);
                tile_tail(tail, out, len, p0, hw);
                dst.write(out);
            });
        }),
        Split::Channels(rows) => scratch::with_one(kk * hw, |col: &mut [A]| {
            im2col_nchw(g, x, col, threads);
            let col = &*col;
            for_pieces(y, rows * hw, threads, |b, out| {
                let m = out.len() / hw;
                let lhs = MatRef::row_major(&w[b * rows * kk..], kk);
                let dst = MatMut { data: out, rs: hw };
                T::gemm(m, hw, kk, lhs, MatRef::row_major(col, hw), dst, 1);
                tail.at(b * rows * hw).apply(out);
            });
        }),
    }
}

/// im2col of output pixels `p0..p0 + len` (row-major over OH × OW) of one (batch, group) of
/// NCHW data `x` into `col` (`cin_g·KH·KW` rows of `len`).
fn im2col_nchw_pixels<E: Element>(g: &Conv2dGeom, x: &[E], p0: usize, len: usize, col: &mut [E]) {
    let [kh, kw] = g.kernel;
    let (h, w, ow) = (g.in_h, g.in_w, g.out_w);
    for (r, row) in col.chunks_mut(len).enumerate() {
        let (ci, ky, kx) = (r / (kh * kw), (r / kw) % kh, r % kw);
        let plane = &x[ci * h * w..(ci + 1) * h * w];
        let mut p = p0;
        let mut filled = 0;
        while filled < len {
            let (oy, ox0) = (p / ow, p % ow);
            let run = (ow - ox0).min(len - filled);
            let seg = &mut row[filled..filled + run];
            let iy = g.src(0, oy, ky);
            if iy < 0 || iy >= h as isize {
                seg.fill(E::zeroed());
            } else {
                let src = &plane[iy as usize * w..(iy as usize + 1) * w];
                gather_row(g, src, kx, ox0, seg);
            }
            filled += run;
            p += run;
        }
    }
}

/// One im2col row segment: `seg[i]` is input row `src`'s value under kernel column `kx` for
/// output column `ox0 + i`, zero where that falls in the padding. The in-bounds output
/// columns are one range (computed once), copied as a slice with stride 1.
fn gather_row<E: Element>(g: &Conv2dGeom, src: &[E], kx: usize, ox0: usize, seg: &mut [E]) {
    let stride = g.strides[1];
    let off = (kx * g.dilation[1]) as isize - g.pad[1] as isize;
    let Columns { lo, hi, .. } = Columns::new(off, stride, g.in_w, g.out_w);
    let end = ox0 + seg.len();
    let (lo, hi) = (
        lo.clamp(ox0, end),
        hi.clamp(ox0, end).max(lo.clamp(ox0, end)),
    );
    seg[..lo - ox0].fill(E::zeroed());
    seg[hi - ox0..].fill(E::zeroed());
    let inside = &mut seg[lo - ox0..hi - ox0];
    if inside.is_empty() {
        return;
    }
    let first = ((lo * stride) as isize + off) as usize;
    if stride == 1 {
        inside.copy_from_slice(&src[first..first + inside.len()]);
    } else if let Some((last, body)) = inside.split_last_mut().filter(|_| stride == 2) {
        // Whole pairs, so the copy becomes vector loads and shuffles; the last element's
        // partner may lie past the row.
        for (v, pair) in body.iter_mut().zip(src[first..].chunks_exact(2)) {
            *v = pair[0];
        }
        *last = src[first + 2 * body.len()];
    } else {
        for (v, &x) in inside.iter_mut().zip(src[first..].iter().step_by(stride)) {
            *v = x;
        }
    }
}

/// `y = conv2d_transpose(x, w)` for NCHW data; `w` is packed IOHW (`in_c × cout_g × KH × KW`).
pub(crate) fn conv2d_transpose<A: Widen<T>, B: Widen<T>, T: Gemm>(
    g: &Conv2dGeom,
    x: &[A],
    w: &[B],
    y: &mut [T],
    threads: usize,
) {
    let [kh, kw] = g.kernel;
    let (cin_g, cout_g) = (g.in_c / g.groups, g.out_c / g.groups);
    let ckk = cout_g * kh * kw;
    let (hw_in, hw_out) = (g.in_h * g.in_w, g.out_h * g.out_w);
    let mut col = vec![T::default(); ckk * hw_in];
    y.fill(T::default());
    for n in 0..g.batch {
        for gi in 0..g.groups {
            let start = (n * g.in_c + gi * cin_g) * hw_in;
            let lhs = MatRef::transposed(&w[gi * cin_g * ckk..(gi + 1) * cin_g * ckk], ckk);
            let rhs = MatRef::row_major(&x[start..start + cin_g * hw_in], hw_in);
            let dst = MatMut {
                data: &mut col,
                rs: hw_in,
            };
            T::gemm(ckk, hw_in, cin_g, lhs, rhs, dst, threads);
            let y_g = &mut y[(n * g.out_c + gi * cout_g) * hw_out..][..cout_g * hw_out];
            let col = &col;
            for_chunks(y_g, hw_out, threads, |co, plane| {
                for ky in 0..kh {
                    for kx in 0..kw {
                        let r = (co * kh + ky) * kw + kx;
                        let src = &col[r * hw_in..(r + 1) * hw_in];
                        col2im_tap(g, ky, kx, src, plane);
                    }
                }
            });
        }
    }
}

/// Adds one kernel tap's contributions (`src`, one value per input pixel) into an output plane.
fn col2im_tap<T: Gemm>(g: &Conv2dGeom, ky: usize, kx: usize, src: &[T], plane: &mut [T]) {
    for iy in 0..g.in_h {
        let oy = g.src(0, iy, ky);
        if oy < 0 || oy >= g.out_h as isize {
            continue;
        }
        let row = &mut plane[oy as usize * g.out_w..(oy as usize + 1) * g.out_w];
        for ix in 0..g.in_w {
            let ox = g.src(1, ix, kx);
            if ox >= 0 && ox < g.out_w as isize {
                let o = &mut row[ox as usize];
                *o = o.add(src[iy * g.in_w + ix]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gemm_int8::tests::{bytes, paths, Force};

    /// A convolution geometry; the output extent follows from the others.
    #[allow(clippy::too_many_arguments, reason = "one argument per geometry field")]
    fn geom(
        batch: usize,
        in_c: usize,
        out_c: usize,
        hw: [usize; 2],
        kernel: [usize; 2],
        strides: [usize; 2],
        dilation: [usize; 2],
        pad: [usize; 4],
        groups: usize,
        channels_last: bool,
    ) -> Conv2dGeom {
        let out = |a: usize| {
            (hw[a] + pad[a] + pad[a + 2] - dilation[a] * (kernel[a] - 1) - 1) / strides[a] + 1
        };
        Conv2dGeom {
            batch,
            in_c,
            in_h: hw[0],
            in_w: hw[1],
            out_c,
            out_h: out(0),
            out_w: out(1),
            kernel,
            strides,
            dilation,
            pad,
            groups,
            channels_last,
        }
    }

    /// The convolution by definition in i64 (wrapped to i32), data and output in the
    /// geometry's layout, weights OIHW.
    fn reference(g: &Conv2dGeom, x: &[i64], w: &[i64]) -> Vec<i32> {
        let [kh, kw] = g.kernel;
        let (cin_g, cout_g) = (g.in_c / g.groups, g.out_c / g.groups);
        let xi = |n: usize, c: usize, y: usize, x_: usize| {
            if g.channels_last {
                ((n * g.in_h + y) * g.in_w + x_) * g.in_c + c
            } else {
                ((n * g.in_c + c) * g.in_h + y) * g.in_w + x_
            }
        };
        let yi = |n: usize, c: usize, y: usize, x_: usize| {
            if g.channels_last {
                ((n * g.out_h + y) * g.out_w + x_) * g.out_c + c
            } else {
                ((n * g.out_c + c) * g.out_h + y) * g.out_w + x_
            }
        };
        let mut out = vec![0; g.batch * g.out_c * g.out_h * g.out_w];
        for n in 0..g.batch {
            for o in 0..g.out_c {
                for oy in 0..g.out_h {
                    for ox in 0..g.out_w {
                        let mut acc = 0i64;
                        for ci in 0..cin_g {
                            let c = o / cout_g * cin_g + ci;
                            for ky in 0..kh {
                                for kx in 0..kw {
                                    let (iy, ix) = (g.src(0, oy, ky), g.src(1, ox, kx));
                                    if iy < 0
                                        || ix < 0
                                        || iy >= g.in_h as isize
                                        || ix >= g.in_w as isize
                                    {
                                        continue;
                                    }
                                    acc += x[xi(n, c, iy as usize, ix as usize)]
                                        * w[((o * cin_g + ci) * kh + ky) * kw + kx];
                                }
                            }
                        }
                        out[yi(n, o, oy, ox)] = acc as i32;
                    }
                }
            }
        }
        out
    }

    fn run_typed<A: Widen<i32>, B: Widen<i32>>(
        g: &Conv2dGeom,
        x: &[u8],
        w: &[u8],
        threads: usize,
    ) -> Vec<i32> {
        let [kh, kw] = g.kernel;
        let cin_g = g.in_c / g.groups;
        let w: &[B] = bytemuck::cast_slice(w);
        // The kernel takes HWIO weights for NHWC data.
        let packed = if g.channels_last {
            pack4(
                w,
                [g.out_c, cin_g, kh, kw],
                [cin_g * kh * kw, kh * kw, kw, 1],
                [2, 3, 1, 0],
            )
        } else {
            w.to_vec()
        };
        let mut y = vec![-5; g.batch * g.out_c * g.out_h * g.out_w];
        conv2d::<A, B, i32>(
            g,
            bytemuck::cast_slice(x),
            &packed,
            &mut y,
            threads,
            Tail::new(None),
        );
        y
    }

    /// int8 and uint8 convolutions through every int8 GEMM path (and the direct depthwise
    /// kernel) equal the definition: im2col and 1×1, both layouts, groups, depthwise with a
    /// channel multiplier, strides, dilations, asymmetric padding, batches, reductions not a
    /// multiple of 4, pixel-tiled and channel-blocked splits, extreme values.
    #[test]
    fn int8_convolutions_match_the_definition() {
        #[rustfmt::skip]
        let cases = [
            geom(1, 3, 8, [9, 11], [3, 3], [1, 1], [1, 1], [1, 1, 1, 1], 1, false),
            geom(2, 5, 7, [20, 20], [3, 3], [2, 1], [1, 2], [2, 1, 0, 3], 1, false),
            geom(1, 16, 40, [5, 5], [3, 3], [1, 1], [1, 1], [1, 1, 1, 1], 1, false),
            geom(1, 13, 9, [14, 15], [1, 1], [1, 1], [1, 1], [0, 0, 0, 0], 1, false),
            geom(1, 64, 36, [4, 4], [1, 1], [1, 1], [1, 1], [0, 0, 0, 0], 1, false),
            geom(1, 8, 12, [10, 9], [3, 3], [1, 1], [1, 1], [1, 1, 1, 1], 4, false),
            geom(2, 6, 12, [9, 8], [3, 3], [2, 2], [1, 1], [1, 0, 1, 2], 6, false),
            geom(1, 5, 6, [9, 7], [3, 2], [1, 2], [2, 1], [1, 1, 2, 0], 1, true),
            geom(2, 9, 10, [6, 6], [1, 1], [1, 1], [1, 1], [0, 0, 0, 0], 1, true),
            geom(1, 8, 8, [7, 7], [3, 3], [1, 1], [1, 1], [1, 1, 1, 1], 2, true),
            geom(1, 4, 4, [6, 5], [3, 3], [1, 1], [1, 1], [1, 1, 1, 1], 4, true),
        ];
        for (s, g) in cases.iter().enumerate() {
            let [kh, kw] = g.kernel;
            let xd = bytes(g.batch * g.in_c * g.in_h * g.in_w, 10 + s as u64);
            let wd = bytes(g.out_c * g.in_c / g.groups * kh * kw, 50 + s as u64);
            for signs in [(false, true), (true, true), (false, false), (true, false)] {
                let value = |b: u8, signed: bool| {
                    if signed {
                        i64::from(b as i8)
                    } else {
                        i64::from(b)
                    }
                };
                let x: Vec<i64> = xd.iter().map(|&b| value(b, signs.0)).collect();
                let w: Vec<i64> = wd.iter().map(|&b| value(b, signs.1)).collect();
                let want = reference(g, &x, &w);
                for isa in paths() {
                    let _force = Force::new(isa);
                    for threads in [1, 3] {
                        let got = match signs {
                            (false, true) => run_typed::<u8, i8>(g, &xd, &wd, threads),
                            (true, true) => run_typed::<i8, i8>(g, &xd, &wd, threads),
                            (false, false) => run_typed::<u8, u8>(g, &xd, &wd, threads),
                            (true, false) => run_typed::<i8, u8>(g, &xd, &wd, threads),
                        };
                        assert_eq!(
                            got, want,
                            "{isa:?} {g:?} signed {signs:?} threads {threads}"
                        );
                    }
                }
            }
        }
    }

    /// float32 convolutions equal the definition exactly:
    /// the values are small integers, so every product and partial sum is exact in float32
    /// whatever the summation order. Covers 1×1 (pixel-tiled and channel-blocked), im2col
    /// with padding, strides and dilation (the im2col gather's padding and strided ranges),
    /// groups, both layouts, 1 and 2 threads.
    #[test]
    fn float_convolutions_match_the_definition() {
        #[rustfmt::skip]
        let cases = [
            geom(1, 13, 9, [14, 15], [1, 1], [1, 1], [1, 1], [0, 0, 0, 0], 1, false),
            geom(1, 300, 37, [5, 6], [1, 1], [1, 1], [1, 1], [0, 0, 0, 0], 1, false),
            geom(1, 70, 40, [3, 3], [1, 1], [1, 1], [1, 1], [0, 0, 0, 0], 1, false),
            geom(2, 3, 8, [19, 21], [3, 3], [1, 1], [1, 1], [1, 1, 1, 1], 1, false),
            geom(1, 5, 7, [20, 20], [3, 3], [2, 1], [1, 2], [2, 1, 0, 3], 1, false),
            geom(1, 40, 52, [5, 5], [3, 3], [1, 1], [1, 1], [1, 1, 1, 1], 1, false),
            geom(1, 3, 16, [23, 23], [7, 7], [2, 2], [1, 1], [3, 3, 3, 3], 1, false),
            geom(1, 24, 36, [10, 9], [3, 3], [1, 1], [1, 1], [1, 1, 1, 1], 3, false),
            geom(1, 6, 5, [9, 7], [3, 2], [1, 2], [2, 1], [1, 1, 2, 0], 1, true),
            geom(2, 9, 20, [6, 6], [1, 1], [1, 1], [1, 1], [0, 0, 0, 0], 1, true),
        ];
        for (s, g) in cases.iter().enumerate() {
            let [kh, kw] = g.kernel;
            let small = |n: usize, seed: u64| -> Vec<i64> {
                bytes(n, seed)
                    .iter()
                    .map(|&b| i64::from(b % 15) - 7)
                    .collect()
            };
            let x = small(g.batch * g.in_c * g.in_h * g.in_w, 10 + s as u64);
            let w = small(g.out_c * g.in_c / g.groups * kh * kw, 50 + s as u64);
            let want: Vec<f32> = reference(g, &x, &w).iter().map(|&v| v as f32).collect();
            let xf: Vec<f32> = x.iter().map(|&v| v as f32).collect();
            let wf: Vec<f32> = w.iter().map(|&v| v as f32).collect();
            let packed = if g.channels_last {
                let cin_g = g.in_c / g.groups;
                pack4(
                    &wf,
                    [g.out_c, cin_g, kh, kw],
                    [cin_g * kh * kw, kh * kw, kw, 1],
                    [2, 3, 1, 0],
                )
            } else {
                wf
            };
            for threads in [1, 2] {
                let mut y = vec![-5f32; want.len()];
                conv2d::<f32, f32, f32>(g, &xf, &packed, &mut y, threads, Tail::new(None));
                assert_eq!(y, want, "{g:?} threads {threads}");
            }
        }
    }
}
