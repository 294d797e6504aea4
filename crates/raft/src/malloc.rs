//! The C allocator's settings for a long-running node.

/// Limits glibc's malloc to two arenas.
///
/// By default glibc gives threads up to eight heaps per core, and each
/// keeps what is freed in it for its own later use. A node's threads (the
/// async runtime's, the blocking pool's, the engine's flushes and
/// compactions) free large blocks all the time: log entry pieces, request
/// bodies, snapshot chunks, memtables. Spread over many heaps, what they
/// keep added up. A node loaded with 1 GiB peaked at 238 MiB during a
/// full scan without this, and at 159-162 MiB with it
/// (`sift-bench raft-catchup --memory-only`, `docs/benchmarks.md`).
/// Fixing the threshold above which blocks get mappings of their own
/// (1 MiB) saved as much, but made every large block a system call and
/// fresh pages: the 1 GiB load took 10-20% longer and a snapshot catch-up
/// half again as long.
///
/// Call it once, first thing in `main`: it sets the process's allocator,
/// which a library should not do behind its caller's back. It does
/// nothing with another C library.
pub fn tune_for_node() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes the allocator's parameters, under the
    // allocator's own lock; no memory is touched.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
    }
}
