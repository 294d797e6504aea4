//! Software prefetch of one cache line, for callers that know the lines
//! their next queries will read (a batched lookup probes many filters; it
//! asks for every filter line first, so the misses overlap).

/// Asks the CPU to bring the cache line holding `value` into every cache
/// level. A hint only: no effect on results, a no-op off x86-64.
#[inline]
pub(crate) fn line<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        // SAFETY: SSE is part of the x86-64 baseline, so every x86-64 CPU
        // runs the instruction; a prefetch never faults, whatever the address.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(std::ptr::from_ref(value).cast::<i8>()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}
