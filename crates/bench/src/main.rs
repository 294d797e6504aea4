//! `sift-bench`: benchmarks (in progress).
fn main() {}
