//! General matrix multiply `dst = lhs × rhs` over strided matrices: the `gemm` crate for f32
//! and f64, an exact wrapping int32 loop for the quantized path.
//!
//! Invariant (checked): every matrix's slice covers all the elements its shape and strides
//! address, so the raw-pointer call into `gemm` never reads or writes out of bounds.

use rayon::prelude::*;

use super::numeric::Acc;

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

    fn covers(&self, rows: usize, cols: usize) -> bool {
        (rows - 1) * self.rs + (cols - 1) * self.cs < self.data.len()
    }
}

/// Element types with a matrix multiply.
pub(crate) trait Gemm: Acc {
    /// `dst[m×n] = lhs[m×k] × rhs[k×n]`, using up to `threads` threads.
    fn gemm(
        m: usize,
        n: usize,
        k: usize,
        lhs: MatRef<'_, Self>,
        rhs: MatRef<'_, Self>,
        dst: MatMut<'_, Self>,
        threads: usize,
    );
}

/// Checks the shapes against the slices; returns false when there is nothing to multiply
/// (after zeroing `dst` when `k == 0`).
fn prepare<T: Acc>(
    m: usize,
    n: usize,
    k: usize,
    lhs: &MatRef<'_, T>,
    rhs: &MatRef<'_, T>,
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
            fn gemm(
                m: usize,
                n: usize,
                k: usize,
                lhs: MatRef<'_, Self>,
                rhs: MatRef<'_, Self>,
                mut dst: MatMut<'_, Self>,
                threads: usize,
            ) {
                if !prepare(m, n, k, &lhs, &rhs, &mut dst) {
                    return;
                }
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
                        lhs.data.as_ptr(),
                        lhs.cs as isize,
                        lhs.rs as isize,
                        rhs.data.as_ptr(),
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
    fn gemm(
        m: usize,
        n: usize,
        k: usize,
        lhs: MatRef<'_, Self>,
        rhs: MatRef<'_, Self>,
        mut dst: MatMut<'_, Self>,
        threads: usize,
    ) {
        if !prepare(m, n, k, &lhs, &rhs, &mut dst) {
            return;
        }
        // Pack the right operand row-major so the inner loop is contiguous and vectorizes.
        let packed: Vec<i32>;
        let rhs = if rhs.cs == 1 {
            rhs
        } else {
            packed = (0..k)
                .flat_map(|p| (0..n).map(move |j| rhs.data[p * rhs.rs + j * rhs.cs]))
                .collect();
            MatRef::row_major(&packed, n)
        };
        let row = |(i, out): (usize, &mut [i32])| {
            let out = &mut out[..n];
            out.fill(0);
            for p in 0..k {
                let a = lhs.data[i * lhs.rs + p * lhs.cs];
                if a == 0 {
                    continue;
                }
                let b = &rhs.data[p * rhs.rs..p * rhs.rs + n];
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
}
