//! Loads keys in random order and prints, every 10 s and at the end, what
//! each level holds and what flushes and compactions wrote into it: where a
//! load's write amplification comes from.
//!
//! ```text
//! cargo run --release -p siftdb --example level_writes -- [KEYS] [DIR]
//! ```
//!
//! Defaults: 10,000,000 keys of 16 bytes with 100-byte values, in a fresh
//! `DIR` (default `level-writes-db` under the system's temporary
//! directory), with the settings of `sift-bench db --memtable-mib 32
//! --table-mib 2 --cache-mib 32` and no compression.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use siftdb::{Compression, Db, Stats};

const KEY_BYTES: u64 = 16;
const VALUE_BYTES: usize = 100;
const REPORT_EVERY: Duration = Duration::from_secs(10);

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let keys: u64 = args.next().map_or(Ok(10_000_000), |a| a.parse())?;
    let dir = args.next().map_or_else(
        || std::env::temp_dir().join("level-writes-db"),
        PathBuf::from,
    );
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    let db = Db::builder(&dir)
        .memtable_bytes(32 << 20)
        .table_target_bytes(2 << 20)
        .block_cache_bytes(32 << 20)
        .compression(Compression::None)
        .open()?;
    let value = [7u8; VALUE_BYTES];
    let start = Instant::now();
    let mut reported = start;
    for i in 0..keys {
        db.insert(format!("{:016x}", scatter(i)), value)?;
        if reported.elapsed() >= REPORT_EVERY {
            reported = Instant::now();
            report(&db.stats(), i + 1, start.elapsed());
        }
    }
    let elapsed = start.elapsed();
    println!(
        "loaded {keys} keys in {:.1} s: {:.0} puts/s",
        elapsed.as_secs_f64(),
        keys as f64 / elapsed.as_secs_f64()
    );
    report(&db.stats(), keys, elapsed);
    db.flush()?;
    db.wait_for_compactions()?;
    report(&db.stats(), keys, start.elapsed());
    let on_disk: u64 = std::fs::read_dir(&dir)?
        .map(|entry| Ok(entry?.metadata()?.len()))
        .sum::<std::io::Result<u64>>()?;
    println!(
        "after compactions: {} MiB in {}",
        on_disk >> 20,
        dir.display()
    );
    Ok(())
}

/// A bijection of `u64`: distinct keys in an order unrelated to `i`.
fn scatter(i: u64) -> u64 {
    let x = (i ^ 0x5555).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    x ^ (x >> 29)
}

/// One line: puts so far, stall time, and per level its runs, size, and
/// the bytes written into it and read out of it; then table bytes written
/// per byte put (the write amplification, less the WAL).
fn report(stats: &Stats, puts: u64, elapsed: Duration) {
    let mib = |bytes: u64| bytes >> 20;
    let mut line = format!(
        "{:6.1} s {puts:>10} puts, stalled {:>6} ms",
        elapsed.as_secs_f64(),
        stats.write_stall_micros / 1000
    );
    let mut written = 0;
    for (i, level) in stats.levels.iter().enumerate() {
        written += level.bytes_written;
        line += &format!(
            " | L{i}: {} runs {} MiB, in {} MiB, out {} MiB",
            level.runs,
            mib(level.bytes),
            mib(level.bytes_written),
            mib(level.compaction_bytes_read)
        );
    }
    let put = puts * (KEY_BYTES + VALUE_BYTES as u64);
    println!(
        "{line} | tables written per byte put {:.2}",
        written as f64 / put.max(1) as f64
    );
}
