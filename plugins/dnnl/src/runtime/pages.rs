//! Zeroed byte buffers for the runtime's large memory: packed weights, the arena of
//! temporaries and the scratchpad.
//!
//! A whole-network partition streams its weights (ResNet-50: about 100 MB) and activations
//! through the convolution kernels on every run. On 4 KiB pages that is tens of thousands of
//! pages per run, far more than the TLB covers, so the kernels' loads keep missing it. Buffers
//! of [`HUGE_PAGE`] bytes or more are therefore aligned to [`HUGE_PAGE`] and, on Linux,
//! advised to the kernel as transparent huge page candidates (`madvise(MADV_HUGEPAGE)`, which
//! is what the default THP mode `madvise` waits for) before their first touch. Where the
//! kernel refuses, the buffer simply stays on small pages.
//!
//! Buffers are zeroed when made, so their pages are faulted in at build (weights) or when an
//! execution state is made (before the first run's first step), not inside a step.

use std::alloc::{self, Layout};
use std::ptr::NonNull;

use crate::dnnl::{ffi, status_name, DnnlError};

/// The huge page size (x86-64's 2 MiB) that large buffers are aligned to.
pub(crate) const HUGE_PAGE: usize = 2 << 20;

/// The alignment of small buffers (a cache line; oneDNN wants 64 bytes).
const LINE: usize = 64;

/// A zeroed, aligned, heap-allocated byte buffer (see the module docs).
pub(crate) struct PageBuf {
    ptr: NonNull<u8>,
    layout: Layout,
}

// SAFETY: the buffer owns its allocation; access goes through &self / &mut self.
unsafe impl Send for PageBuf {}
// SAFETY: as above (shared access is read-only).
unsafe impl Sync for PageBuf {}

impl PageBuf {
    /// A zero-filled buffer of `len` bytes (at least one byte is allocated) for `what`; an
    /// error instead of an abort when the memory cannot be allocated (the sizes come from the
    /// partition's shapes).
    pub fn try_zeroed(len: usize, what: &'static str) -> Result<Self, DnnlError> {
        let out_of_memory = || DnnlError {
            call: what,
            status: status_name(ffi::dnnl_out_of_memory),
        };
        let (size, align) = if len >= HUGE_PAGE {
            (
                len.checked_next_multiple_of(HUGE_PAGE)
                    .ok_or_else(out_of_memory)?,
                HUGE_PAGE,
            )
        } else {
            (len.max(1).div_ceil(LINE) * LINE, LINE)
        };
        let layout = Layout::from_size_align(size, align).map_err(|_| out_of_memory())?;
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe { alloc::alloc(layout) };
        let ptr = NonNull::new(raw).ok_or_else(out_of_memory)?;
        if align == HUGE_PAGE {
            advise_huge_pages(ptr, size);
        }
        // SAFETY: `size >= len` bytes at `ptr` were just allocated. The rounding beyond `len`
        // is never read, so it stays untouched (no memory behind it).
        unsafe { ptr.as_ptr().write_bytes(0, len) };
        Ok(PageBuf { ptr, layout })
    }

    /// The start of the bytes (for oneDNN memory objects).
    pub fn ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }
}

impl Drop for PageBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `zeroed` with this layout.
        unsafe { alloc::dealloc(self.ptr.as_ptr(), self.layout) };
    }
}

#[cfg(target_os = "linux")]
fn advise_huge_pages(ptr: NonNull<u8>, size: usize) {
    use std::ffi::{c_int, c_void};
    const MADV_HUGEPAGE: c_int = 14;
    extern "C" {
        fn madvise(addr: *mut c_void, len: usize, advice: c_int) -> c_int;
    }
    // SAFETY: the range is one allocation, aligned to the page size. The advice is a hint:
    // a kernel without THP returns an error and the buffer stays on small pages.
    let _ = unsafe { madvise(ptr.as_ptr().cast(), size, MADV_HUGEPAGE) };
}

#[cfg(not(target_os = "linux"))]
fn advise_huge_pages(_ptr: NonNull<u8>, _size: usize) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_zeroed_and_aligned_large_ones_to_huge_pages() {
        for len in [0, 1, 100, HUGE_PAGE - 1, HUGE_PAGE, 3 * HUGE_PAGE + 5] {
            let b = PageBuf::try_zeroed(len, "test").unwrap();
            let align = if len >= HUGE_PAGE { HUGE_PAGE } else { LINE };
            assert_eq!(b.ptr() as usize % align, 0, "{len}");
            // SAFETY: `len` bytes are allocated and initialised.
            let bytes = unsafe { std::slice::from_raw_parts(b.ptr(), len) };
            assert!(bytes.iter().all(|&x| x == 0));
        }
    }

    #[test]
    fn memory_the_system_refuses_is_an_error() {
        let e = PageBuf::try_zeroed(1 << 62, "the arena")
            .err()
            .expect("refused");
        assert_eq!(e.call, "the arena");
        assert_eq!(e.status, "dnnl_out_of_memory");
        assert!(PageBuf::try_zeroed(usize::MAX - 5, "the arena").is_err());
    }
}
