//! A software prefetch of one table entry: the hot paths' random table accesses (and the bench's
//! probe of the machine's limit) ask for entries a few writes ahead.

/// Ask the CPU to bring the cache line of `v[i]` in; nothing when `i` is out of bounds or off
/// x86_64. A hint: it changes no result.
#[inline(always)]
pub fn prefetch(v: &[u32], i: usize) {
    #[cfg(target_arch = "x86_64")]
    if i < v.len() {
        // SAFETY: the pointer is in bounds; prefetch has no architectural effect.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(v.as_ptr().add(i) as *const i8);
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (v, i);
}
