//! General matrix multiply `dst = lhs × rhs` over strided matrices: the `gemm` crate for f32
//! and f64; for int32 accumulation, the packed int8 GEMM of [`super::gemm_int8`] when both
//! operands are 8-bit (read unwidened), otherwise (or when that module selects the portable
//! path) an exact wrapping int32 loop that widens each operand element.
//!
//! A one-row float product (a dense layer at batch 1) splits its columns over the threads
//! itself, since `gemm` runs matrix-vector products on one thread.
//!
//! Invariant (checked): every matrix's slice covers all the elements its shape and strides
//! address, so the raw-pointer call into `gemm` never reads or writes out of bounds.

use rayon::prelude::*;

use super::gemm_int8::{self, ByteMat, Isa};
use super::numeric::{widen_slice, Acc, Widen};

/// A read-only strided matrix: element `(i, j)` is `data[i * rs + j * cs]`.
#[derive(Clone, Copy)]
pub(crate) struct MatRef<'a, T> {
    pub data: &'a [T],
    pub rs: usize,
    pub cs: usize,
}

/// A writable matrix with unit column stride: element `(i, j)` is `data[i * rs + j]`.
pub(crate) struct MatMut<'a, T> {
    pub data: &'a mut [T],
    pub rs: usize,
}

impl<'a, T> MatRef<'a, T> {
    /// A row-major matrix with `cols` columns.
    pub fn row_major(data: &'a [T], cols: usize) -> Self {
        MatRef {
            data,
            rs: cols,
            cs: 1,
        }
    }

    /// The transpose of a row-major matrix with `cols` columns (so `cols` becomes the rows).
    pub fn transposed(data: &'a [T], cols: usize) -> Self {
        MatRef {
            data,
            rs: 1,
            cs: cols,
        }
    }

    /// The matrix of 8-bit elements as bytes, read as `i8` when `signed`.
    fn bytes(&self, signed: bool) -> ByteMat<'a>
    where
        T: bytemuck::Pod,
    {
        ByteMat {
            data: bytemuck::cast_slice(self.data),
            rs: self.rs,
            cs: self.cs,
            signed,
        }
    }

    fn covers(&self, rows: usize, cols: usize) -> bool {
        (rows - 1) * self.rs + (cols - 1) * self.cs < self.data.len()
    }
}

/// Accumulation types with a matrix multiply over operands that widen to them.
pub(crate) trait Gemm: Acc {
    /// `dst[m×n] = lhs[m×k] × rhs[k×n]`, using up to `threads` threads.
    fn gemm<L: Widen<Self>, R: Widen<Self>>(
        m: usize,
        n: usize,
        k: usize,
        lhs: MatRef<'_, L>,
        rhs: MatRef<'_, R>,
        dst: MatMut<'_, Self>,
        threads: usize,
    );
}

/// Checks the shapes against the slices; returns false when there is nothing to multiply
/// (after zeroing `dst` when `k == 0`).
fn prepare<L, R, T: Acc>(
    m: usize,
    n: usize,
    k: usize,
    lhs: &MatRef<'_, L>,
    rhs: &MatRef<'_, R>,
    dst: &mut MatMut<'_, T>,
) -> bool {
    if m == 0 || n == 0 {
        return false;
    }
    assert!(
        dst.rs >= n && (m - 1) * dst.rs + n <= dst.data.len(),
        "gemm destination too small"
    );
    if k == 0 {
        for row in dst.data.chunks_mut(dst.rs).take(m) {
            row[..n].fill(T::default());
        }
        return false;
    }
    assert!(
        lhs.covers(m, k) && rhs.covers(k, n),
        "gemm operand too small"
    );
    true
}

macro_rules! gemm_float {
    ($($t:ty),*) => {$(
        impl Gemm for $t {
            fn gemm<L: Widen<Self>, R: Widen<Self>>(
                m: usize,
                n: usize,
                k: usize,
                lhs: MatRef<'_, L>,
                rhs: MatRef<'_, R>,
                mut dst: MatMut<'_, Self>,
                threads: usize,
            ) {
                if !prepare(m, n, k, &lhs, &rhs, &mut dst) {
                    return;
                }
                // `gemm` multiplies a one-row product (a dense layer at batch 1) as a
                // matrix-vector product on one thread whatever the parallelism asked: split
                // its columns over the threads instead (each output's sum is unchanged).
                if m == 1 && n > 1 && super::parallel(threads, n * k) {
                    let block = n.div_ceil(threads);
                    dst.data[..n]
                        .par_chunks_mut(block)
                        .enumerate()
                        .for_each(|(b, out)| {
                            let rhs_b = MatRef {
                                data: &rhs.data[b * block * rhs.cs..],
                                ..rhs
                            };
                            let len = out.len();
                            let dst_b = MatMut { data: out, rs: len };
                            Self::gemm(1, len, k, lhs, rhs_b, dst_b, 1);
                        });
                    return;
                }
                // Only the type itself widens to a float: these borrow, never copy.
                let (lhs_data, rhs_data) = (widen_slice(lhs.data), widen_slice(rhs.data));
                let parallelism = if threads > 1 {
                    gemm::Parallelism::Rayon(threads)
                } else {
                    gemm::Parallelism::None
                };
                // SAFETY: `prepare` checked that every addressed element of the three matrices
                // lies inside its slice; `dst` is borrowed mutably, so nothing aliases it.
                unsafe {
                    gemm::gemm(
                        m,
                        n,
                        k,
                        dst.data.as_mut_ptr(),
                        1,
                        dst.rs as isize,
                        false,
                        lhs_data.as_ptr(),
                        lhs.cs as isize,
                        lhs.rs as isize,
                        rhs_data.as_ptr(),
                        rhs.cs as isize,
                        rhs.rs as isize,
                        0.0,
                        1.0,
                        false,
                        false,
                        false,
                        parallelism,
                    );
                }
            }
        }
    )*};
}
gemm_float!(f32, f64);

impl Gemm for i32 {
    fn gemm<L: Widen<Self>, R: Widen<Self>>(
        m: usize,
        n: usize,
        k: usize,
        lhs: MatRef<'_, L>,
        rhs: MatRef<'_, R>,
        mut dst: MatMut<'_, Self>,
        threads: usize,
    ) {
        if !prepare(m, n, k, &lhs, &rhs, &mut dst) {
            return;
        }
        if let (Some(ls), Some(rs)) = (L::SIGNED_BYTE, R::SIGNED_BYTE) {
            let (l, r) = (lhs.bytes(ls), rhs.bytes(rs));
            let dst = MatMut {
                data: &mut *dst.data,
                rs: dst.rs,
            };
            if gemm_int8::gemm(Isa::selected(), m, n, k, l, r, dst, threads) {
                return;
            }
        }
        widening_loop(m, n, k, lhs, rhs, dst, threads);
    }
}

/// The portable int32 product: every operand element widened, one output row at a time.
fn widening_loop<L: Widen<i32>, R: Widen<i32>>(
    m: usize,
    n: usize,
    k: usize,
    lhs: MatRef<'_, L>,
    rhs: MatRef<'_, R>,
    dst: MatMut<'_, i32>,
    threads: usize,
) {
    // Pack the right operand row-major (widened) so the inner loop is contiguous and
    // vectorizes.
    let packed: Vec<i32> = (0..k)
        .flat_map(|p| (0..n).map(move |j| rhs.data[p * rhs.rs + j * rhs.cs].widen()))
        .collect();
    let row = |(i, out): (usize, &mut [i32])| {
        let out = &mut out[..n];
        out.fill(0);
        for p in 0..k {
            let a: i32 = lhs.data[i * lhs.rs + p * lhs.cs].widen();
            if a == 0 {
                continue;
            }
            let b = &packed[p * n..(p + 1) * n];
            for (o, &bv) in out.iter_mut().zip(b) {
                *o = o.mul_add(a, bv);
            }
        }
    };
    if threads > 1 {
        dst.data
            .par_chunks_mut(dst.rs)
            .take(m)
            .enumerate()
            .for_each(row);
    } else {
        dst.data
            .chunks_mut(dst.rs)
            .take(m)
            .enumerate()
            .for_each(row);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A one-row float product split over threads equals the one-thread product bit for bit
    /// and the f64 product closely, with row-major and transposed weights.
    #[test]
    fn one_row_products_split_over_threads() {
        let (n, k) = (300, 517);
        let a: Vec<f32> = (0..k)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) / 64.0)
            .collect();
        let b: Vec<f32> = (0..k * n)
            .map(|i| ((i * 53 % 97) as f32 - 48.0) / 32.0)
            .collect();
        for transposed in [false, true] {
            let rhs = if transposed {
                MatRef::transposed(&b, k)
            } else {
                MatRef::row_major(&b, n)
            };
            let want: Vec<f64> = (0..n)
                .map(|j| {
                    (0..k)
                        .map(|p| f64::from(a[p]) * f64::from(b[p * rhs.rs + j * rhs.cs]))
                        .sum()
                })
                .collect();
            let run = |threads: usize| {
                let mut y = vec![f32::NAN; n];
                let dst = MatMut {
                    data: &mut y,
                    rs: n,
                };
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .expect("thread pool");
                pool.install(|| f32::gemm(1, n, k, MatRef::row_major(&a, k), rhs, dst, threads));
                y
            };
            let one = run(1);
            for threads in [2, 3] {
                let split = run(threads);
                assert_eq!(split, one, "threads {threads} transposed {transposed}");
            }
            for (j, (&got, &w)) in one.iter().zip(&want).enumerate() {
                assert!(
                    (f64::from(got) - w).abs() <= 1e-3 * (1.0 + w.abs()),
                    "[{j}] {got} vs {w}"
                );
            }
        }
    }
}
