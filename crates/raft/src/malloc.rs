//! The C allocator's settings for a long-running node.

/// Makes glibc's malloc give every allocation of 1 MiB or more a mapping
/// of its own, returned to the system when it is freed.
///
/// glibc starts with a 128 KiB threshold and raises it itself, up to
/// 32 MiB, whenever such a block is freed. A node frees large blocks all
/// the time (log entry pieces, request bodies, memtables), so the threshold
/// soon rises; those blocks then come from glibc's per-thread heaps, which
/// keep most of what is freed in them. A node loaded with 1 GiB held 67 MiB
/// more before a full scan, and peaked 86 MiB higher during it, without
/// this (`sift-bench raft-catchup --memory-only`, `docs/benchmarks.md`).
///
/// Call it once, first thing in `main`: it sets the process's allocator,
/// which a library should not do behind its caller's back. It does
/// nothing with another C library.
pub fn tune_for_node() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes the allocator's parameters, under the
    // allocator's own lock; no memory is touched.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 20);
    }
}
