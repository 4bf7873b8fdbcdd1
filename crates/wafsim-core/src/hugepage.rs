//! Large tables (the L2P and P2L maps) backed by transparent huge pages where the system
//! allows. Their accesses are random over gigabytes, so with 4 KiB pages nearly every access
//! also misses the TLB; 2 MiB pages cut the page walks and, at full size (15 GiB of tables for
//! 7.68 TB), the page faults of the first touch by 512 times.
//!
//! Linux gives huge pages to a process only when it asks (`madvise`, the common
//! `/sys/kernel/mm/transparent_hugepage/enabled` setting) or to everyone (`always`). A table
//! is reserved untouched, advised, and only then filled, so its first touch already faults in
//! huge pages. Where the system refuses (another OS, THP `never`), the table is an ordinary
//! one: the hint changes speed, never a result.

use std::sync::atomic::{AtomicBool, Ordering};

/// Whether tables ask for huge pages (on unless a caller turns it off, as the bench does to
/// compare).
static ADVISE: AtomicBool = AtomicBool::new(true);

/// Turn the huge-page advice for tables built from now on on or off (on by default).
pub fn set_enabled(on: bool) {
    ADVISE.store(on, Ordering::Relaxed);
}

/// Whether tables built now ask for huge pages.
pub fn enabled() -> bool {
    ADVISE.load(Ordering::Relaxed)
}

/// Tables smaller than this stay on ordinary pages (a huge page would hold all of them).
const MIN_ADVISED_BYTES: usize = 4 << 20;

/// Huge page size the advice aligns to (x86_64 and aarch64 with 4 KiB base pages).
pub(crate) const HUGE_PAGE: usize = 2 << 20;

/// A table of `len` copies of `value`, its memory advised for huge pages before the first
/// touch. The same as `vec![value; len]` in every respect but speed.
///
/// ```
/// let t = wafsim_core::hugepage::table(3, u32::MAX);
/// assert_eq!(t, vec![u32::MAX; 3]);
/// ```
pub fn table<T: Copy + Send>(len: usize, value: T) -> Vec<T> {
    let mut v: Vec<T> = Vec::with_capacity(len);
    let bytes = len * std::mem::size_of::<T>();
    advise(v.as_mut_ptr().cast::<u8>(), bytes);
    // The first touch is the kernel zeroing every page (15 GiB for a 7.68 TB drive, most of
    // building one); page faults on distinct pages run in parallel, so large tables are
    // filled by a few threads. The contents do not depend on how the work is split.
    let threads = if bytes < MIN_PARALLEL_BYTES { 1 } else { workers() };
    let spare = &mut v.spare_capacity_mut()[..len];
    if threads <= 1 {
        spare.iter_mut().for_each(|x| {
            x.write(value);
        });
    } else {
        let chunk = len.div_ceil(threads);
        std::thread::scope(|s| {
            for part in spare.chunks_mut(chunk) {
                s.spawn(move || {
                    part.iter_mut().for_each(|x| {
                        x.write(value);
                    })
                });
            }
        });
    }
    // SAFETY: the loops above initialised every one of the first `len` elements, and the
    // capacity is at least `len`.
    unsafe { v.set_len(len) };
    v
}

/// A table of `len` zeros whose memory is advised for huge pages and left untouched: for a
/// table that is about to be overwritten whole (a drive image's maps), so its pages are faulted
/// in by what writes it, once, instead of being filled first.
///
/// ```
/// assert_eq!(wafsim_core::hugepage::untouched(3), vec![0u32; 3]);
/// ```
pub fn untouched(len: usize) -> Vec<u32> {
    // Zeros are allocated zeroed (calloc): a large allocation is fresh memory the kernel
    // zeroes on first touch, so nothing is written here.
    let mut v = vec![0u32; len];
    advise(v.as_mut_ptr().cast::<u8>(), len * 4);
    v
}

/// Tables (and image arrays) at least this large are handled by several threads.
pub(crate) const MIN_PARALLEL_BYTES: usize = 64 << 20;

/// At most this many threads share such work (the page-zeroing and copying bandwidth
/// saturates beyond).
const MAX_THREADS: usize = 8;

/// How many threads share work on a large table: one per core, at most eight.
pub fn workers() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get()).min(MAX_THREADS)
}

/// Ask for huge pages over the whole 2 MiB pages inside `[ptr, ptr + bytes)`; whether it was
/// granted shows in `/proc/self/smaps` (AnonHugePages), which the bench reports.
fn advise(ptr: *mut u8, bytes: usize) {
    if bytes < MIN_ADVISED_BYTES || !enabled() {
        return;
    }
    #[cfg(target_os = "linux")]
    {
        let start = (ptr as usize).next_multiple_of(HUGE_PAGE);
        let end = (ptr as usize + bytes) / HUGE_PAGE * HUGE_PAGE;
        if end > start {
            // SAFETY: [start, end) lies inside the allocation `ptr` heads (rounded inwards), which
            // this process owns and nothing reads yet; MADV_HUGEPAGE changes no contents, only
            // how the kernel backs the pages. A refusal (EINVAL without THP) is ignored on purpose.
            unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (ptr, bytes, HUGE_PAGE);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_large_table_equals_the_plain_vector() {
        // Large enough to be advised: contents and length as vec! gives them.
        let n = (3 * MIN_ADVISED_BYTES) / 4 + 5;
        let t = table(n, 7u32);
        assert_eq!(t.len(), n);
        assert!(t.iter().all(|&x| x == 7));
        let big = table(MIN_PARALLEL_BYTES / 4 + 3, 9u32);
        assert_eq!(big.len(), MIN_PARALLEL_BYTES / 4 + 3);
        assert!(big.iter().all(|&x| x == 9), "every part a filling thread wrote");
        assert_eq!(untouched(MIN_ADVISED_BYTES / 4 + 1), vec![0u32; MIN_ADVISED_BYTES / 4 + 1]);
        let small = table(10, 1u64);
        assert_eq!(small, vec![1u64; 10]);
        assert!(table::<u32>(0, 0).is_empty());
    }
}
