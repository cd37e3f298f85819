//! Per-thread scratch buffers for kernel temporaries that are fully written before they are
//! read (im2col blocks, GEMM output tiles): each thread keeps its buffers from call to call,
//! so a convolution neither allocates nor zero-fills them per tile.
//!
//! Invariant: a buffer handed out holds initialized elements of a plain-old-data type (zeros
//! when it first grows, then whatever earlier users left), never uninitialized memory; callers
//! must not rely on its contents. A buffer keeps its largest size for the thread's lifetime (at
//! most one im2col block or output tile of the largest convolution the thread ran). A nested
//! request on a thread whose buffers are in use gets fresh zeroed buffers instead.

use std::cell::RefCell;

use bytemuck::Pod;

thread_local! {
    /// Two buffers, so a kernel can hold an input block and an output tile at once; `u64`
    /// words give every element type up to 8-byte alignment.
    static BUFFERS: [RefCell<Vec<u64>>; 2] = const { [RefCell::new(Vec::new()), RefCell::new(Vec::new())] };
}

/// Runs `f` with a scratch buffer of `len` elements (contents unspecified).
pub(crate) fn with_one<A: Pod, R>(len: usize, f: impl FnOnce(&mut [A]) -> R) -> R {
    BUFFERS.with(|b| match b[0].try_borrow_mut() {
        Ok(mut words) => f(view(&mut words, len)),
        Err(_) => f(&mut vec![A::zeroed(); len]),
    })
}

/// Runs `f` with two scratch buffers of `a` and `b` elements (contents unspecified).
pub(crate) fn with_two<A: Pod, B: Pod, R>(
    a: usize,
    b: usize,
    f: impl FnOnce(&mut [A], &mut [B]) -> R,
) -> R {
    BUFFERS.with(
        |bufs| match (bufs[0].try_borrow_mut(), bufs[1].try_borrow_mut()) {
            (Ok(mut wa), Ok(mut wb)) => f(view(&mut wa, a), view(&mut wb, b)),
            _ => f(&mut vec![A::zeroed(); a], &mut vec![B::zeroed(); b]),
        },
    )
}

/// The first `len` elements of type `A` of `words`, grown (with zeros) when too short.
fn view<A: Pod>(words: &mut Vec<u64>, len: usize) -> &mut [A] {
    const {
        assert!(std::mem::align_of::<A>() <= std::mem::align_of::<u64>());
        assert!(std::mem::size_of::<A>() > 0);
    }
    let bytes = len
        .checked_mul(std::mem::size_of::<A>())
        .expect("scratch buffer size overflows usize");
    let n = bytes.div_ceil(8);
    if words.len() < n {
        words.resize(n, 0);
    }
    bytemuck::cast_slice_mut(&mut bytemuck::cast_slice_mut::<u64, u8>(&mut words[..n])[..bytes])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Buffers have the asked length and type, keep their storage between calls, and a nested
    /// request gets separate memory.
    #[test]
    fn buffers_are_reused_and_never_shared() {
        let first = with_two::<f32, i8, _>(100, 7, |a, b| {
            assert_eq!((a.len(), b.len()), (100, 7));
            a.fill(3.0);
            a.as_ptr() as usize
        });
        let again = with_one::<f32, _>(50, |a| {
            assert_eq!(a[49], 3.0, "the same storage, not zeroed again");
            a.as_ptr() as usize
        });
        assert_eq!(first, again);
        with_one::<f64, _>(10, |outer| {
            outer.fill(1.0);
            with_one::<f64, _>(10, |inner| {
                assert!(inner.iter().all(|&v| v == 0.0));
                assert_ne!(inner.as_ptr(), outer.as_ptr());
            });
        });
    }
}
