//! `sift-bench scale`: point lookups when the tables' filters and indexes
//! get less memory than they take.
//!
//! A child process loads `--num` keys (16 bytes, 100-byte values, random
//! order) into each engine's store and compacts it fully, so that both
//! engines are read in the same shape. This process then
//! measures, for each budget (a share of Sift's full metadata, the bytes
//! of every table's index, filters and properties) and each key
//! distribution, each engine in turn, on the same lookups:
//! - the open (Sift reads the manifest only) and the first lookup after it;
//! - lookups, half of them for missing keys that sort inside the stored
//!   range (so that only a filter can rule a table out), timed;
//! - Sift's data blocks per lookup, resident metadata, loads and
//!   evictions; the process's resident memory after the open and after
//!   the lookups.
//!
//! RocksDB gets the same memory: its block cache holds Sift's block cache
//! plus the budget, with `cache_index_and_filter_blocks`, so its filters
//! and indexes compete with data blocks for it (its way of bounding them).
//!
//! Distributions: `uniform`; `zipf`, Zipf's law (θ = 0.99) over key ranks
//! in key order, so the hot keys share a few tables (recent keys, a hot
//! tenant); `zipf-scattered`, the same law over scattered ranks, which at
//! the level of tables is uniform.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::ensure;
use clap::Parser;
use siftdb::{Compression, Db, FilterPolicy, Stats};

use crate::raft_catchup::memory;
use crate::value_search::rng::{SplitMix64, Zipf};

/// Options of `sift-bench scale`.
#[derive(Parser, Debug, Clone)]
pub struct Args {
    /// Keys stored.
    #[arg(long, default_value_t = 20_000_000)]
    num: u64,
    /// Budgets in percent of Sift's full metadata.
    #[arg(long, value_delimiter = ',', default_value = "100,50,25,10")]
    budgets: Vec<u64>,
    /// Lookups timed per budget, distribution and engine.
    #[arg(long, default_value_t = 1_000_000)]
    lookups: usize,
    /// Engines: `sift`, and `rocksdb` when built with the `rocksdb` feature.
    #[arg(long, value_delimiter = ',', default_value = "sift,rocksdb")]
    engines: Vec<String>,
    /// Distributions: `zipf`, `zipf-scattered`, `uniform`.
    #[arg(long, value_delimiter = ',', default_value = "zipf,uniform")]
    distributions: Vec<String>,
    /// Target table size, MiB (fractions for stores of many small tables).
    #[arg(long, default_value_t = 2.0)]
    table_mib: f64,
    /// Memtable size, MiB.
    #[arg(long, default_value_t = 32)]
    memtable_mib: u64,
    /// Block cache, MiB (RocksDB's also holds the budget).
    #[arg(long, default_value_t = 32)]
    cache_mib: u64,
    /// Bloom filter bits per key.
    #[arg(long, default_value_t = 10.0)]
    bits_per_key: f64,
    /// Where the stores are kept (loaded unless they hold `--num` keys).
    #[arg(long, default_value = "scale-bench")]
    dir: PathBuf,
    /// Load the stores and stop (the child process).
    #[arg(long, hide = true)]
    load_only: bool,
}

const VALUE_LEN: usize = 100;
const ZIPF_THETA: f64 = 0.99;

/// Key `i`: its 16 decimal digits, so that key order is rank order.
fn key(i: u64) -> [u8; 16] {
    let mut out = [b'0'; 16];
    let mut n = i;
    for byte in out.iter_mut().rev() {
        *byte = b'0' + (n % 10) as u8;
        n /= 10;
    }
    out
}

/// A key absent from the store that sorts right after key `i`.
fn missing(i: u64) -> [u8; 17] {
    let mut out = [b'~'; 17];
    out[..16].copy_from_slice(&key(i));
    out
}

/// Runs the benchmark.
pub fn run(args: &Args) -> anyhow::Result<()> {
    let measured = args.dir.join("sift-full-metadata");
    if args.load_only {
        if load(args)? {
            let _ = std::fs::remove_file(&measured);
        }
        if measured.exists() {
            return Ok(());
        }
        std::fs::write(&measured, full_metadata(args)?.to_string())?;
        return Ok(());
    }
    if !loaded(args)? || !measured.exists() {
        // The load and the pass that reads every table's metadata run
        // apart, so that this process's memory holds only what is measured.
        eprintln!("loading {} keys in a child process", args.num);
        let status = std::process::Command::new(std::env::current_exe()?)
            .args(std::env::args().skip(1))
            .arg("--load-only")
            .status()?;
        ensure!(status.success(), "the load failed");
    }
    let full: u64 = std::fs::read_to_string(&measured)?.trim().parse()?;
    println!(
        "{} keys; Sift's full table metadata {:.1} MiB; block cache {} MiB",
        args.num,
        full as f64 / (1 << 20) as f64,
        args.cache_mib
    );
    println!(
        "{:<15} {:>6} {:<9} {:>10} {:>11} {:>10} {:>11} {:>11} {:>8} {:>10} {:>9} {:>9} {:>9}",
        "distribution",
        "budget",
        "engine",
        "open ms",
        "first µs",
        "ops/s",
        "blocks/get",
        "resident",
        "loads",
        "evictions",
        "cached",
        "RSS open",
        "RSS MiB"
    );
    for distribution in &args.distributions {
        let lookups = lookups(args, distribution)?;
        for &percent in &args.budgets {
            let budget = full * percent / 100;
            for engine in &args.engines {
                let row = match engine.as_str() {
                    "sift" => sift_row(args, budget, &lookups)?,
                    #[cfg(feature = "rocksdb")]
                    "rocksdb" => rocks::row(args, budget, &lookups)?,
                    other => {
                        anyhow::bail!("unknown engine {other} (rocksdb needs --features rocksdb)")
                    }
                };
                println!(
                    "{distribution:<15} {:>5}% {engine:<9} {:>10.1} {:>11.0} {:>10.0} {:>11} {:>11} {:>8} {:>10} {:>9} {:>9.0} {:>9.0}",
                    percent,
                    row.open.open_ms,
                    row.open.first_us,
                    row.ops,
                    row.blocks_per_get.map_or("-".into(), |b| format!("{b:.3}")),
                    row.resident.map_or("-".into(), |r| format!(
                        "{:.1} MiB",
                        r as f64 / (1 << 20) as f64
                    )),
                    row.loads.map_or("-".into(), |n| n.to_string()),
                    row.evictions.map_or("-".into(), |n| n.to_string()),
                    row.cached.map_or("-".into(), |n| n.to_string()),
                    row.open.rss as f64 / (1 << 20) as f64,
                    row.rss as f64 / (1 << 20) as f64,
                );
            }
        }
    }
    Ok(())
}

/// An engine's open and its first lookup.
struct Opened {
    open_ms: f64,
    first_us: f64,
    /// The process's resident memory after both (what earlier rows of the
    /// process left allocated included).
    rss: u64,
}

/// Opens a store with `open` and times a first lookup of a stored key
/// with `first` (whether it was found).
fn opened<D>(
    open: impl FnOnce() -> anyhow::Result<D>,
    first: impl FnOnce(&D) -> anyhow::Result<bool>,
) -> anyhow::Result<(D, Opened)> {
    let start = Instant::now();
    let db = open()?;
    let open_ms = start.elapsed().as_secs_f64() * 1e3;
    let start = Instant::now();
    ensure!(first(&db)?, "a stored key is missing");
    let first_us = start.elapsed().as_secs_f64() * 1e6;
    let rss = memory()?.0;
    Ok((
        db,
        Opened {
            open_ms,
            first_us,
            rss,
        },
    ))
}

/// One engine's figures at one budget.
struct Row {
    open: Opened,
    ops: f64,
    blocks_per_get: Option<f64>,
    resident: Option<u64>,
    loads: Option<u64>,
    evictions: Option<u64>,
    /// Uses of tables not resident served by the block cache.
    cached: Option<u64>,
    /// The process's resident memory after the lookups.
    rss: u64,
}

/// The lookups of a distribution: a key rank, and whether to ask for the
/// missing key beside it.
fn lookups(args: &Args, distribution: &str) -> anyhow::Result<Vec<(u64, bool)>> {
    let mut rng = SplitMix64::new(42, 7);
    let ranks = usize::try_from(args.num)?;
    let zipf = distribution
        .starts_with("zipf")
        .then(|| Zipf::new(ranks, ZIPF_THETA));
    let scatter = |rank: u64| sift_filter::mix64(rank) % args.num;
    (0..args.lookups)
        .map(|i| {
            let rank = match (distribution, &zipf) {
                ("uniform", _) => rng.below(args.num),
                ("zipf", Some(law)) => u64::from(law.sample(&mut rng)),
                ("zipf-scattered", Some(law)) => scatter(u64::from(law.sample(&mut rng))),
                (other, _) => anyhow::bail!("unknown distribution {other}"),
            };
            Ok((rank, i % 2 == 1))
        })
        .collect()
}

fn sift_dir(args: &Args) -> PathBuf {
    args.dir.join("sift")
}

fn open_sift(args: &Args, budget: u64) -> anyhow::Result<Db> {
    Ok(Db::builder(sift_dir(args))
        .memtable_bytes(usize::try_from(args.memtable_mib << 20)?)
        .table_target_bytes(table_bytes(args))
        .block_cache_bytes(args.cache_mib << 20)
        .compression(Compression::None)
        .filter_policy(FilterPolicy::blocked_bloom(args.bits_per_key))
        .filter_memory_bytes(budget)
        .open()?)
}

/// `--table-mib` in bytes.
fn table_bytes(args: &Args) -> u64 {
    (args.table_mib * (1u64 << 20) as f64) as u64
}

fn stored_keys(stats: &Stats) -> u64 {
    stats.levels.iter().map(|l| l.entries).sum()
}

/// The engines whose stores a run needs: Sift's always, since the budgets
/// are shares of its metadata.
fn stores(args: &Args) -> impl Iterator<Item = &str> {
    let others = args.engines.iter().filter(|e| e.as_str() != "sift");
    std::iter::once("sift").chain(others.map(String::as_str))
}

/// Whether every store holds `--num` keys already.
fn loaded(args: &Args) -> anyhow::Result<bool> {
    for engine in stores(args) {
        if !holds_keys(args, engine)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Whether `engine`'s store holds `--num` keys: Sift's counts them;
/// RocksDB's (which only estimates its count) holds the first and the last.
fn holds_keys(args: &Args, engine: &str) -> anyhow::Result<bool> {
    if !args.dir.join(engine).exists() {
        return Ok(false);
    }
    match engine {
        "sift" => {
            let db = open_sift(args, u64::MAX)?;
            Ok(stored_keys(&db.stats()) == args.num)
        }
        #[cfg(feature = "rocksdb")]
        "rocksdb" => rocks::holds_keys(args),
        other => anyhow::bail!("unknown engine {other}"),
    }
}

/// Loads the stores that lack their keys (in the child process), each
/// into a directory of its own: the others are kept. Returns whether
/// Sift's was loaded.
fn load(args: &Args) -> anyhow::Result<bool> {
    let mut order: Vec<u64> = (0..args.num).collect();
    SplitMix64::new(42, 1).shuffle(&mut order);
    let value = [7u8; VALUE_LEN];
    let mut sift_loaded = false;
    for engine in stores(args) {
        if holds_keys(args, engine)? {
            continue;
        }
        sift_loaded |= engine == "sift";
        let dir = args.dir.join(engine);
        if dir.exists() {
            std::fs::remove_dir_all(&dir)?;
        }
        let start = Instant::now();
        match engine {
            "sift" => {
                let db = open_sift(args, u64::MAX)?;
                for &i in &order {
                    db.insert(key(i), value)?;
                }
                db.compact()?;
            }
            #[cfg(feature = "rocksdb")]
            "rocksdb" => rocks::load(args, &order, &value)?,
            other => anyhow::bail!("unknown engine {other}"),
        }
        eprintln!("{engine}: loaded in {:.1} s", start.elapsed().as_secs_f64());
    }
    Ok(sift_loaded)
}

/// Sift's metadata with every table read: opened without a budget, one
/// lookup per table's key range.
fn full_metadata(args: &Args) -> anyhow::Result<u64> {
    let db = open_sift(args, u64::MAX)?;
    // A full scan reads every table's metadata once.
    let mut count = 0u64;
    for entry in db.range::<&[u8], _>(..) {
        entry?;
        count += 1;
    }
    ensure!(
        count == args.num,
        "the store holds {count} keys, not {}",
        args.num
    );
    Ok(db.stats().filter_memory_resident)
}

fn sift_row(args: &Args, budget: u64, lookups: &[(u64, bool)]) -> anyhow::Result<Row> {
    let (db, open) = opened(
        || open_sift(args, budget),
        |db| Ok(db.get(key(args.num / 2))?.is_some()),
    )?;
    let before = db.stats();
    let ops = timed(lookups, |rank, absent| {
        let found = if absent {
            db.get(missing(rank))?.is_some()
        } else {
            db.get(key(rank))?.is_some()
        };
        ensure!(found != absent, "key {rank}: wrong answer");
        Ok(())
    })?;
    let after = db.stats();
    let sum = |stats: &Stats, f: fn(&siftdb::LevelStats) -> u64| -> u64 {
        stats.levels.iter().map(f).sum()
    };
    Ok(Row {
        open,
        ops,
        blocks_per_get: Some(
            (after.data_blocks_read - before.data_blocks_read) as f64
                / (after.gets - before.gets).max(1) as f64,
        ),
        resident: Some(after.filter_memory_resident),
        loads: Some(sum(&after, |l| l.metadata_loads)),
        evictions: Some(sum(&after, |l| l.metadata_evictions)),
        cached: Some(sum(&after, |l| l.metadata_cache_hits)),
        rss: memory()?.0,
    })
}

/// Lookups per second over `lookups`, each checked by `get`.
fn timed(
    lookups: &[(u64, bool)],
    mut get: impl FnMut(u64, bool) -> anyhow::Result<()>,
) -> anyhow::Result<f64> {
    let start = Instant::now();
    for &(rank, absent) in lookups {
        get(rank, absent)?;
    }
    Ok(lookups.len() as f64 / start.elapsed().as_secs_f64())
}

#[cfg(feature = "rocksdb")]
mod rocks {
    //! RocksDB with its filters and indexes in the block cache.

    use anyhow::ensure;
    use rocksdb::{BlockBasedOptions, Cache, DB, DBCompressionType, Options};

    use super::{Args, Row, key, missing, timed};
    use crate::raft_catchup::memory;

    fn open(args: &Args, budget: u64) -> anyhow::Result<DB> {
        let cache = Cache::new_lru_cache(usize::try_from((args.cache_mib << 20) + budget)?)?;
        let mut table = BlockBasedOptions::default();
        table.set_block_cache(&cache);
        table.set_block_size(4096);
        table.set_format_version(5);
        table.set_bloom_filter(args.bits_per_key, false);
        table.set_whole_key_filtering(true);
        // Filters and indexes live in the block cache, bounded by it.
        table.set_cache_index_and_filter_blocks(budget != u64::MAX);
        let mut options = Options::default();
        options.create_if_missing(true);
        options.set_block_based_table_factory(&table);
        options.set_compression_type(DBCompressionType::None);
        options.set_write_buffer_size(usize::try_from(args.memtable_mib << 20)?);
        options.set_target_file_size_base(super::table_bytes(args));
        Ok(DB::open(&options, args.dir.join("rocksdb"))?)
    }

    /// Whether the store holds the first and the last of `--num` keys.
    pub(super) fn holds_keys(args: &Args) -> anyhow::Result<bool> {
        let db = open(args, 0)?;
        let last = args.num.saturating_sub(1);
        Ok(db.get_pinned(key(0))?.is_some() && db.get_pinned(key(last))?.is_some())
    }

    pub(super) fn load(args: &Args, order: &[u64], value: &[u8]) -> anyhow::Result<()> {
        let db = open(args, 0)?;
        for &i in order {
            db.put(key(i), value)?;
        }
        db.flush()?;
        db.compact_range::<&[u8], &[u8]>(None, None);
        Ok(())
    }

    pub(super) fn row(args: &Args, budget: u64, lookups: &[(u64, bool)]) -> anyhow::Result<Row> {
        let (db, opened) = super::opened(
            || open(args, budget),
            |db| Ok(db.get(key(args.num / 2))?.is_some()),
        )?;
        let ops = timed(lookups, |rank, absent| {
            let found = if absent {
                db.get_pinned(missing(rank))?.is_some()
            } else {
                db.get_pinned(key(rank))?.is_some()
            };
            ensure!(found != absent, "key {rank}: wrong answer");
            Ok(())
        })?;
        Ok(Row {
            open: opened,
            ops,
            blocks_per_get: None,
            resident: None,
            loads: None,
            evictions: None,
            cached: None,
            rss: memory()?.0,
        })
    }
}
