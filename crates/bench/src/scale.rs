//! `sift-bench scale`: point lookups when the tables' filters and indexes
//! get less memory than they take, every engine given the same total.
//!
//! A child process loads `--num` keys (16 bytes, 100-byte values, random
//! order) into each engine's store and compacts it fully, so that every
//! engine is read in the same shape. This process then measures, for each
//! memory point and each key distribution, every engine once per round, on
//! the same lookups:
//! - the open and the first lookup after it;
//! - lookups, half of them for missing keys that sort inside the stored
//!   range (so that only a filter can rule a table out), timed, each answer
//!   checked (a stored key's value, a missing key's absence);
//! - the bytes read from table files per lookup during the timed lookups;
//!   for Sift its data blocks per lookup, resident metadata, loads and
//!   evictions; for RocksDB the bytes its block cache took in (data blocks,
//!   and index and filter blocks); the process's resident memory after the
//!   open and after the lookups.
//!
//! Memory: a memory point is a share of Sift's full metadata (every table's
//! index, filters and properties, measured with every table read), and is
//! the total T each engine gets. Sift: 3/4·T of metadata budget and 1/4·T of
//! block cache. RocksDB: one LRU block cache of T, which holds data, index
//! and filter blocks alike (`cache_index_and_filter_blocks`, its way of
//! bounding its metadata). `rocksdb-partitioned` adds partitioned filters
//! and a two-level index, RocksDB's answer to metadata larger than memory:
//! only each table's top-level index and filter stay pinned, the partitions
//! come and go through the cache. Its table format differs, so it has a
//! store of its own.
//!
//! Rounds: within a memory point and distribution, every engine runs once
//! per round, the order rotated each round so that none always runs first
//! (the page cache and the machine drift); each opens its store afresh. The
//! summaries report each engine's best round.
//!
//! Distributions: `uniform`; `zipf`, Zipf's law (θ = 0.99) over key ranks
//! in key order, so the hot keys share a few tables (recent keys, a hot
//! tenant); `zipf-scattered`, the same law over scattered ranks, which at
//! the level of tables is uniform.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use anyhow::{bail, ensure};
use clap::Parser;
use siftdb::fs::{FileSystem, LockGuard, ReadableFile, StdFs, WritableFile};
use siftdb::{Compression, Db, FilterPolicy, Stats};

use crate::value_search::rng::{SplitMix64, Zipf};

/// Options of `sift-bench scale`.
#[derive(Parser, Debug, Clone)]
pub struct Args {
    /// Keys stored.
    #[arg(long, default_value_t = 20_000_000)]
    num: u64,
    /// Total memory of each engine, in percent of Sift's full metadata:
    /// Sift gets 3/4 of it as metadata budget and 1/4 as block cache,
    /// RocksDB one block cache of all of it.
    #[arg(long, value_delimiter = ',', default_value = "400,100,50,25,10")]
    memory: Vec<u64>,
    /// Lookups timed per memory point, distribution, engine and round.
    #[arg(long, default_value_t = 1_000_000)]
    lookups: usize,
    /// Rounds: every engine measured once per round, the order rotated;
    /// the summaries report each engine's best round.
    #[arg(long, default_value_t = 2)]
    rounds: usize,
    /// Engines: `sift`, and `rocksdb-partitioned` and `rocksdb` when built
    /// with the `rocksdb` feature.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "sift,rocksdb-partitioned,rocksdb",
        value_parser = Engine::parse
    )]
    engines: Vec<Engine>,
    /// Distributions: `zipf`, `zipf-scattered`, `uniform`.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "zipf,zipf-scattered,uniform"
    )]
    distributions: Vec<String>,
    /// Target table size, MiB (fractions for stores of many small tables).
    #[arg(long, default_value_t = 2.0)]
    table_mib: f64,
    /// Sift's `partition_keys`: tables with more keys get a key filter of
    /// 4 KiB partitions, each read and kept on its own (Sift's setting for
    /// metadata larger than memory, as `rocksdb-partitioned` is RocksDB's).
    /// It shapes the store when it is loaded: a new value needs a new
    /// `--dir`.
    #[arg(long, default_value_t = 4096)]
    sift_partition_keys: u64,
    /// Read table files around the page cache while measuring (Sift's
    /// `direct_reads`, RocksDB's `use_direct_reads`), so that what the
    /// engines' own memory misses is read from the device.
    #[arg(long)]
    direct_reads: bool,
    /// Memtable size, MiB.
    #[arg(long, default_value_t = 32)]
    memtable_mib: u64,
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

/// The engines compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Engine {
    Sift,
    /// Full filters and a one-level index per table.
    RocksDb,
    /// Partitioned filters and a two-level index.
    RocksDbPartitioned,
}

impl Engine {
    /// An `--engines` name; RocksDB's only in a build that has it.
    fn parse(name: &str) -> Result<Self, String> {
        let engine = match name {
            "sift" => Engine::Sift,
            "rocksdb" => Engine::RocksDb,
            "rocksdb-partitioned" => Engine::RocksDbPartitioned,
            other => return Err(format!("unknown engine {other}")),
        };
        if engine != Engine::Sift && !cfg!(feature = "rocksdb") {
            return Err(format!("{name} needs a build with --features rocksdb"));
        }
        Ok(engine)
    }

    /// Its `--engines` name, also the name of its store's directory.
    fn name(self) -> &'static str {
        match self {
            Engine::Sift => "sift",
            Engine::RocksDb => "rocksdb",
            Engine::RocksDbPartitioned => "rocksdb-partitioned",
        }
    }

    /// Its short name in the summaries' column headers.
    fn label(self) -> &'static str {
        match self {
            Engine::Sift => "sift",
            Engine::RocksDb => "rocks",
            Engine::RocksDbPartitioned => "rocks-p",
        }
    }
}

const VALUE: [u8; 100] = [7; 100];
const ZIPF_THETA: f64 = 0.99;
/// Sift's block cache while loading and measuring the full metadata: what
/// it holds then does not matter.
const LOAD_CACHE_BYTES: u64 = 32 << 20;

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

/// Checks one answer: a stored key must give its value, a missing key none.
fn check(rank: u64, absent: bool, answer: Option<&[u8]>) -> anyhow::Result<()> {
    match (absent, answer) {
        (false, Some(value)) if value == VALUE => Ok(()),
        (false, Some(_)) => bail!("key {rank}: a wrong value"),
        (false, None) => bail!("key {rank}: not found"),
        (true, None) => Ok(()),
        (true, Some(_)) => bail!("the missing key after {rank}: found"),
    }
}

/// The memory one engine gets at one memory point.
#[derive(Clone, Copy, Debug)]
struct Memory {
    /// Bytes in all.
    total: u64,
}

impl Memory {
    /// `percent` of Sift's full metadata `full`.
    fn of(full: u64, percent: u64) -> Self {
        Memory {
            total: full * percent / 100,
        }
    }

    /// Sift's metadata budget: three quarters of the total. The quarter
    /// left is its block cache, which also takes metadata evicted from the
    /// budget: Sift's metadata may use more than the budget, never more
    /// than the total.
    fn sift_metadata(self) -> u64 {
        self.total / 4 * 3
    }

    /// Sift's block cache: the rest.
    fn sift_cache(self) -> u64 {
        self.total - self.sift_metadata()
    }
}

/// The process's resident memory in bytes.
fn rss() -> anyhow::Result<u64> {
    Ok(crate::raft_catchup::memory()?.0)
}

/// Runs the benchmark.
pub fn run(args: &Args) -> anyhow::Result<()> {
    if args.load_only {
        return load_and_measure_metadata(args);
    }
    ensure!(args.rounds > 0, "--rounds must be at least 1");
    ensure!(!args.engines.is_empty(), "no engines");
    let full = full_metadata(args)?;
    print_setup(args, full);
    print_measurement_header();
    let mut best = Best::default();
    for distribution in &args.distributions {
        let lookups = lookups(args, distribution)?;
        for &percent in &args.memory {
            let memory = Memory::of(full, percent);
            for round in 0..args.rounds {
                for engine in rotated(&args.engines, round) {
                    let measured = measure(args, engine, memory, &lookups)?;
                    print_measurement(distribution, percent, engine, round, memory, &measured);
                    best.offer(distribution, percent, engine, measured);
                }
            }
        }
    }
    for distribution in &args.distributions {
        print_summary(args, distribution, full, &best);
    }
    Ok(())
}

/// The file where the child process leaves Sift's full metadata in bytes.
fn measured_path(args: &Args) -> PathBuf {
    args.dir.join("sift-full-metadata")
}

/// The child process: loads the stores that lack their keys, and measures
/// Sift's full metadata again if its store was loaded.
fn load_and_measure_metadata(args: &Args) -> anyhow::Result<()> {
    let measured = measured_path(args);
    if load(args)? {
        let _ = std::fs::remove_file(&measured);
    }
    if !measured.exists() {
        std::fs::write(&measured, measure_full_metadata(args)?.to_string())?;
    }
    Ok(())
}

/// Sift's full metadata in bytes, after loading the stores in a child
/// process if any lacks its keys.
fn full_metadata(args: &Args) -> anyhow::Result<u64> {
    let measured = measured_path(args);
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
    Ok(std::fs::read_to_string(&measured)?.trim().parse()?)
}

/// `round`'s order of the engines: the list rotated by `round`.
fn rotated(engines: &[Engine], round: usize) -> impl Iterator<Item = Engine> + '_ {
    (0..engines.len()).map(move |i| engines[(round + i) % engines.len()])
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
                (other, _) => bail!("unknown distribution {other}"),
            };
            Ok((rank, i % 2 == 1))
        })
        .collect()
}

// ---------------------------------------------------------------------
// Loading

/// The engines whose stores a run needs: Sift's always, since the memory
/// points are shares of its metadata.
fn stores(args: &Args) -> impl Iterator<Item = Engine> + '_ {
    let others = args.engines.iter().filter(|&&e| e != Engine::Sift);
    std::iter::once(Engine::Sift).chain(others.copied())
}

fn store_dir(args: &Args, engine: Engine) -> PathBuf {
    args.dir.join(engine.name())
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
fn holds_keys(args: &Args, engine: Engine) -> anyhow::Result<bool> {
    if !store_dir(args, engine).exists() {
        return Ok(false);
    }
    match engine {
        Engine::Sift => {
            let db = sift_builder(args, u64::MAX, LOAD_CACHE_BYTES).open()?;
            Ok(stored_keys(&db.stats()) == args.num)
        }
        #[cfg(feature = "rocksdb")]
        Engine::RocksDb | Engine::RocksDbPartitioned => rocks::holds_keys(args, engine),
        #[cfg(not(feature = "rocksdb"))]
        Engine::RocksDb | Engine::RocksDbPartitioned => {
            bail!("{} needs --features rocksdb", engine.name())
        }
    }
}

/// Loads the stores that lack their keys (in the child process), each
/// into a directory of its own: the others are kept. Returns whether
/// Sift's was loaded.
fn load(args: &Args) -> anyhow::Result<bool> {
    let mut order: Vec<u64> = (0..args.num).collect();
    SplitMix64::new(42, 1).shuffle(&mut order);
    let mut sift_loaded = false;
    for engine in stores(args) {
        if holds_keys(args, engine)? {
            continue;
        }
        sift_loaded |= engine == Engine::Sift;
        let dir = store_dir(args, engine);
        if dir.exists() {
            std::fs::remove_dir_all(&dir)?;
        }
        let start = Instant::now();
        match engine {
            Engine::Sift => {
                let db = sift_builder(args, u64::MAX, LOAD_CACHE_BYTES).open()?;
                for &i in &order {
                    db.insert(key(i), VALUE)?;
                }
                db.compact()?;
            }
            #[cfg(feature = "rocksdb")]
            Engine::RocksDb | Engine::RocksDbPartitioned => rocks::load(args, engine, &order)?,
            #[cfg(not(feature = "rocksdb"))]
            Engine::RocksDb | Engine::RocksDbPartitioned => {
                bail!("{} needs --features rocksdb", engine.name())
            }
        }
        eprintln!(
            "{}: loaded in {:.1} s",
            engine.name(),
            start.elapsed().as_secs_f64()
        );
    }
    Ok(sift_loaded)
}

/// Sift's metadata with every table read: opened without a budget, then
/// a full scan, which reads every table once; the bytes of each table's
/// metadata with all its pieces (index, filter partitions) resident.
fn measure_full_metadata(args: &Args) -> anyhow::Result<u64> {
    let db = sift_builder(args, u64::MAX, LOAD_CACHE_BYTES).open()?;
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
    Ok(db.stats().levels.iter().map(|l| l.metadata_bytes).sum())
}

// ---------------------------------------------------------------------
// Measuring

/// One engine's figures in one round.
struct Measured {
    open: Opened,
    ops: f64,
    /// Bytes read from table files per timed lookup.
    file_bytes: f64,
    /// RocksDB: bytes its block cache took in per timed lookup (its
    /// misses), data blocks, and index and filter blocks.
    data_bytes: Option<f64>,
    meta_bytes: Option<f64>,
    /// RocksDB: its block cache's usage after the lookups.
    cache_used: Option<u64>,
    /// Sift: data blocks per timed lookup (block cache hits included).
    blocks_per_get: Option<f64>,
    /// Sift: resident metadata after the lookups.
    resident: Option<u64>,
    /// Sift, since the open: reads of a table's metadata from its file,
    /// evictions from the budget, uses of tables not resident that the
    /// block cache served.
    loads: Option<u64>,
    evictions: Option<u64>,
    cached: Option<u64>,
    /// The process's resident memory after the lookups.
    rss: u64,
}

/// An engine's open and its first lookup.
struct Opened {
    open_ms: f64,
    first_us: f64,
    /// The process's resident memory after both (what earlier rows of the
    /// process left allocated included).
    rss: u64,
}

/// Measures `engine` with `memory`, on a fresh open of its store.
fn measure(
    args: &Args,
    engine: Engine,
    memory: Memory,
    lookups: &[(u64, bool)],
) -> anyhow::Result<Measured> {
    match engine {
        Engine::Sift => measure_sift(args, memory, lookups),
        #[cfg(feature = "rocksdb")]
        Engine::RocksDb | Engine::RocksDbPartitioned => {
            rocks::measure(args, engine, memory, lookups)
        }
        #[cfg(not(feature = "rocksdb"))]
        Engine::RocksDb | Engine::RocksDbPartitioned => {
            bail!("{} needs --features rocksdb", engine.name())
        }
    }
}

/// Opens a store with `open` and times a first lookup with `first`.
fn opened<D>(
    open: impl FnOnce() -> anyhow::Result<D>,
    first: impl FnOnce(&D) -> anyhow::Result<()>,
) -> anyhow::Result<(D, Opened)> {
    let start = Instant::now();
    let db = open()?;
    let open_ms = start.elapsed().as_secs_f64() * 1e3;
    let start = Instant::now();
    first(&db)?;
    let first_us = start.elapsed().as_secs_f64() * 1e6;
    let rss = rss()?;
    Ok((
        db,
        Opened {
            open_ms,
            first_us,
            rss,
        },
    ))
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

/// Sift's builder for the benchmark's store, with a metadata budget and a
/// block cache of the given sizes.
fn sift_builder(args: &Args, metadata: u64, cache: u64) -> siftdb::DbBuilder {
    Db::builder(store_dir(args, Engine::Sift))
        .memtable_bytes(usize::try_from(args.memtable_mib << 20).unwrap_or(usize::MAX))
        .table_target_bytes(table_bytes(args))
        .block_cache_bytes(cache)
        .compression(Compression::None)
        .filter_policy(FilterPolicy {
            partition_keys: args.sift_partition_keys,
            ..FilterPolicy::blocked_bloom(args.bits_per_key)
        })
        .filter_memory_bytes(metadata)
}

/// `--table-mib` in bytes.
fn table_bytes(args: &Args) -> u64 {
    (args.table_mib * (1u64 << 20) as f64) as u64
}

fn stored_keys(stats: &Stats) -> u64 {
    stats.levels.iter().map(|l| l.entries).sum()
}

fn measure_sift(args: &Args, memory: Memory, lookups: &[(u64, bool)]) -> anyhow::Result<Measured> {
    let fs = CountingFs::default();
    let (db, open) = opened(
        || {
            Ok(
                sift_builder(args, memory.sift_metadata(), memory.sift_cache())
                    .direct_reads(args.direct_reads)
                    .file_system(Arc::new(fs.clone()))
                    .open()?,
            )
        },
        |db| check(args.num / 2, false, db.get(key(args.num / 2))?.as_deref()),
    )?;
    let (stats_before, bytes_before) = (db.stats(), fs.table_bytes_read());
    let ops = timed(lookups, |rank, absent| {
        let answer = if absent {
            db.get(missing(rank))?
        } else {
            db.get(key(rank))?
        };
        check(rank, absent, answer.as_deref())
    })?;
    let (stats, bytes) = (db.stats(), fs.table_bytes_read());
    let per_lookup = |n: u64| n as f64 / lookups.len().max(1) as f64;
    let sum = |f: fn(&siftdb::LevelStats) -> u64| -> u64 { stats.levels.iter().map(f).sum() };
    Ok(Measured {
        open,
        ops,
        file_bytes: per_lookup(bytes - bytes_before),
        data_bytes: None,
        meta_bytes: None,
        cache_used: None,
        blocks_per_get: Some(per_lookup(
            stats.data_blocks_read - stats_before.data_blocks_read,
        )),
        resident: Some(stats.filter_memory_resident),
        loads: Some(sum(|l| l.metadata_loads)),
        evictions: Some(sum(|l| l.metadata_evictions)),
        cached: Some(sum(|l| l.metadata_cache_hits)),
        rss: rss()?,
    })
}

/// The operating system's files, counting the bytes read from table files
/// (`.sst`): Sift's reads from disk or the page cache, which its own
/// statistics do not count in bytes.
#[derive(Debug, Clone, Default)]
struct CountingFs {
    table_bytes: Arc<AtomicU64>,
}

impl CountingFs {
    fn table_bytes_read(&self) -> u64 {
        self.table_bytes.load(Ordering::Relaxed)
    }

    /// `file`, opened at `path`, with its reads counted if it is a table.
    fn counted(
        &self,
        path: &Path,
        file: Arc<dyn ReadableFile>,
    ) -> io::Result<Arc<dyn ReadableFile>> {
        if path.extension().is_some_and(|e| e == "sst") {
            return Ok(Arc::new(CountedFile {
                file,
                bytes: Arc::clone(&self.table_bytes),
            }));
        }
        Ok(file)
    }
}

/// A table file whose reads are counted.
#[derive(Debug)]
struct CountedFile {
    file: Arc<dyn ReadableFile>,
    bytes: Arc<AtomicU64>,
}

impl ReadableFile for CountedFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.file.read_exact_at(buf, offset)?;
        self.bytes.fetch_add(buf.len() as u64, Ordering::Relaxed);
        Ok(())
    }

    fn size(&self) -> io::Result<u64> {
        self.file.size()
    }
}

impl FileSystem for CountingFs {
    fn open(&self, path: &Path) -> io::Result<Arc<dyn ReadableFile>> {
        self.counted(path, StdFs.open(path)?)
    }

    fn open_direct(&self, path: &Path) -> io::Result<Arc<dyn ReadableFile>> {
        self.counted(path, StdFs.open_direct(path)?)
    }

    // The rest is the operating system's, as is.

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        StdFs.create_dir_all(dir)
    }

    fn create(&self, path: &Path) -> io::Result<Box<dyn WritableFile>> {
        StdFs.create(path)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        StdFs.rename(from, to)
    }

    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        StdFs.hard_link(from, to)
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        StdFs.remove(path)
    }

    fn remove_dir(&self, dir: &Path) -> io::Result<()> {
        StdFs.remove_dir(dir)
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        StdFs.list(dir)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        StdFs.sync_dir(dir)
    }

    fn try_lock(&self, path: &Path) -> io::Result<Option<Box<dyn LockGuard>>> {
        StdFs.try_lock(path)
    }
}

// ---------------------------------------------------------------------
// Output

/// Each engine's best round per distribution and memory point.
#[derive(Default)]
struct Best {
    rounds: HashMap<(String, u64, Engine), Measured>,
}

impl Best {
    /// Keeps `measured` if it is the fastest of its cell so far.
    fn offer(&mut self, distribution: &str, percent: u64, engine: Engine, measured: Measured) {
        match self
            .rounds
            .entry((distribution.to_string(), percent, engine))
        {
            Entry::Occupied(mut kept) => {
                if measured.ops > kept.get().ops {
                    kept.insert(measured);
                }
            }
            Entry::Vacant(free) => {
                free.insert(measured);
            }
        }
    }

    fn get(&self, distribution: &str, percent: u64, engine: Engine) -> Option<&Measured> {
        self.rounds
            .get(&(distribution.to_string(), percent, engine))
    }
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1 << 20) as f64
}

/// An optional figure, or `-`.
fn or_dash<T>(value: Option<T>, show: impl FnOnce(T) -> String) -> String {
    value.map_or_else(|| "-".into(), show)
}

/// The command line, every option's value, and how memory is shared.
fn print_setup(args: &Args, full: u64) {
    let command: Vec<String> = std::env::args().collect();
    println!("command: {}", command.join(" "));
    let engines: Vec<&str> = args.engines.iter().map(|e| e.name()).collect();
    println!(
        "args: --num {} --memory {} --lookups {} --rounds {} --engines {} --distributions {} \
         --table-mib {} --memtable-mib {} --bits-per-key {} --dir {}",
        args.num,
        join(&args.memory),
        args.lookups,
        args.rounds,
        engines.join(","),
        args.distributions.join(","),
        args.table_mib,
        args.memtable_mib,
        args.bits_per_key,
        args.dir.display()
    );
    println!(
        "{} keys; Sift's full table metadata {:.2} MiB (indexes, filters, properties; every \
         table read)",
        args.num,
        mib(full)
    );
    println!(
        "memory: a share of that, the total each engine gets: Sift 3/4 metadata budget + 1/4 \
         block cache; RocksDB one LRU block cache with its indexes and filters in it"
    );
    println!(
        "each engine once per round, the order rotated each round, each on a fresh open; \
         {} lookups per measurement, half for missing keys, every answer checked",
        args.lookups
    );
    println!();
}

fn join(values: &[u64]) -> String {
    let shown: Vec<String> = values.iter().map(u64::to_string).collect();
    shown.join(",")
}

/// The header of the rows printed as each measurement ends.
fn print_measurement_header() {
    println!("every measurement:");
    println!(
        "{:<15} {:>6} {:<19} {:>5} {:>9} {:>8} {:>9} {:>10} {:>9} {:>9} {:>9} {:>10} {:>10} {:>8} {:>9} {:>8} {:>9} {:>8} {:>8}",
        "distribution",
        "memory",
        "engine",
        "round",
        "total MiB",
        "open ms",
        "first µs",
        "ops/s",
        "B/get",
        "data B",
        "meta B",
        "blocks/get",
        "resident",
        "loads",
        "evictions",
        "cached",
        "cache MiB",
        "RSS open",
        "RSS MiB"
    );
}

fn print_measurement(
    distribution: &str,
    percent: u64,
    engine: Engine,
    round: usize,
    memory: Memory,
    m: &Measured,
) {
    println!(
        "{distribution:<15} {:>5}% {:<19} {:>5} {:>9.2} {:>8.1} {:>9.0} {:>10.0} {:>9.0} {:>9} {:>9} {:>10} {:>10} {:>8} {:>9} {:>8} {:>9} {:>8.0} {:>8.0}",
        percent,
        engine.name(),
        round + 1,
        mib(memory.total),
        m.open.open_ms,
        m.open.first_us,
        m.ops,
        m.file_bytes,
        or_dash(m.data_bytes, |b| format!("{b:.0}")),
        or_dash(m.meta_bytes, |b| format!("{b:.0}")),
        or_dash(m.blocks_per_get, |b| format!("{b:.3}")),
        or_dash(m.resident, |r| format!("{:.2} MiB", mib(r))),
        or_dash(m.loads, |n| n.to_string()),
        or_dash(m.evictions, |n| n.to_string()),
        or_dash(m.cached, |n| n.to_string()),
        or_dash(m.cache_used, |n| format!("{:.2}", mib(n))),
        mib(m.open.rss),
        mib(m.rss),
    );
}

/// One distribution's table: a row per memory point; each engine's best
/// round, Sift's ratio to each RocksDB, and the bytes read per lookup in
/// that round.
fn print_summary(args: &Args, distribution: &str, full: u64, best: &Best) {
    let sift = args.engines.contains(&Engine::Sift);
    let others: Vec<Engine> = args
        .engines
        .iter()
        .copied()
        .filter(|&e| e != Engine::Sift)
        .collect();
    let mut header = vec!["memory".to_string(), "MiB".to_string()];
    header.extend(args.engines.iter().map(|e| format!("{} ops/s", e.label())));
    if sift {
        header.extend(others.iter().map(|e| format!("sift/{}", e.label())));
    }
    for engine in &args.engines {
        header.push(format!("{} B/get", engine.label()));
        if *engine == Engine::Sift {
            header.push("sift blk/get".into());
        } else {
            header.push(format!("{} data B", engine.label()));
            header.push(format!("{} meta B", engine.label()));
        }
    }
    let mut rows = vec![header];
    for &percent in &args.memory {
        let cell = |engine: Engine| best.get(distribution, percent, engine);
        let mut row = vec![
            format!("{percent}%"),
            format!("{:.2}", mib(Memory::of(full, percent).total)),
        ];
        row.extend(
            args.engines
                .iter()
                .map(|&e| or_dash(cell(e), |m| format!("{:.0}", m.ops))),
        );
        if let (true, Some(s)) = (sift, cell(Engine::Sift)) {
            row.extend(
                others
                    .iter()
                    .map(|&e| or_dash(cell(e), |m| format!("{:.2}x", s.ops / m.ops))),
            );
        }
        for &engine in &args.engines {
            let m = cell(engine);
            row.push(or_dash(m, |m| format!("{:.0}", m.file_bytes)));
            if engine == Engine::Sift {
                row.push(or_dash(m.and_then(|m| m.blocks_per_get), |b| {
                    format!("{b:.3}")
                }));
            } else {
                row.push(or_dash(m.and_then(|m| m.data_bytes), |b| format!("{b:.0}")));
                row.push(or_dash(m.and_then(|m| m.meta_bytes), |b| format!("{b:.0}")));
            }
        }
        rows.push(row);
    }
    println!();
    println!(
        "{distribution}: ops/s of each engine's best of {} round(s), and the bytes read per \
         lookup in that round",
        args.rounds
    );
    print_table(&rows);
}

/// Prints `rows` (the first the header) in columns as wide as their widest
/// cell: the first left-aligned, the others right-aligned.
fn print_table(rows: &[Vec<String>]) {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .filter_map(|row| row.get(c))
                .map(|cell| cell.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for row in rows {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(c, (cell, &width))| {
                if c == 0 {
                    format!("{cell:<width$}")
                } else {
                    format!("{cell:>width$}")
                }
            })
            .collect();
        println!("{}", cells.join("  "));
    }
}

#[cfg(feature = "rocksdb")]
mod rocks {
    //! RocksDB with its filters and indexes in its one block cache.

    use anyhow::Context;
    use rocksdb::{BlockBasedIndexType, BlockBasedOptions, Cache, DB, DBCompressionType, Options};

    use super::{
        Args, Engine, LOAD_CACHE_BYTES, Measured, Memory, VALUE, check, key, missing, rss,
    };

    /// The table options of `engine`'s store, reading through `cache`.
    fn table_options(args: &Args, engine: Engine, cache: &Cache) -> BlockBasedOptions {
        let mut table = BlockBasedOptions::default();
        table.set_block_cache(cache);
        table.set_block_size(4096);
        table.set_format_version(5);
        table.set_bloom_filter(args.bits_per_key, false);
        table.set_whole_key_filtering(true);
        // Indexes and filters live in the block cache, bounded by it, with
        // the data blocks. RocksDB 7.8 inserts them with high priority by
        // default (`cache_index_and_filter_blocks_with_high_priority`,
        // default true, into the LRU cache's high-priority pool, by default
        // half of it); the crate, 0.20.1, has no setter for it.
        table.set_cache_index_and_filter_blocks(true);
        // RocksDB's advice with the above: L0's metadata stays pinned (the
        // fully compacted stores have no L0 tables, so this costs nothing
        // here; it is set as a tuned deployment would set it).
        table.set_pin_l0_filter_and_index_blocks_in_cache(true);
        if engine == Engine::RocksDbPartitioned {
            // Filters and indexes cut into 4 KiB partitions, a lookup
            // reading one of each through the cache; only the top levels
            // stay pinned.
            table.set_index_type(BlockBasedIndexType::TwoLevelIndexSearch);
            table.set_partition_filters(true);
            table.set_metadata_block_size(4096);
            table.set_pin_top_level_index_and_filter(true);
        }
        table
    }

    /// The options of `engine`'s store with a block cache of `cache_bytes`,
    /// statistics on (they cost RocksDB some throughput; the bytes read
    /// need them), and table files read around the page cache if `direct`.
    fn open(
        args: &Args,
        engine: Engine,
        cache_bytes: u64,
        direct: bool,
    ) -> anyhow::Result<(DB, Options)> {
        let cache = Cache::new_lru_cache(usize::try_from(cache_bytes)?)?;
        let mut options = Options::default();
        options.set_use_direct_reads(direct);
        options.create_if_missing(true);
        options.set_block_based_table_factory(&table_options(args, engine, &cache));
        options.set_compression_type(DBCompressionType::None);
        options.set_write_buffer_size(usize::try_from(args.memtable_mib << 20)?);
        options.set_target_file_size_base(super::table_bytes(args));
        options.enable_statistics();
        let db = DB::open(&options, super::store_dir(args, engine))?;
        Ok((db, options))
    }

    /// Whether the store holds the first and the last of `--num` keys.
    pub(super) fn holds_keys(args: &Args, engine: Engine) -> anyhow::Result<bool> {
        let (db, _) = open(args, engine, LOAD_CACHE_BYTES, false)?;
        let last = args.num.saturating_sub(1);
        Ok(db.get_pinned(key(0))?.is_some() && db.get_pinned(key(last))?.is_some())
    }

    pub(super) fn load(args: &Args, engine: Engine, order: &[u64]) -> anyhow::Result<()> {
        let (db, _) = open(args, engine, LOAD_CACHE_BYTES, false)?;
        for &i in order {
            db.put(key(i), VALUE)?;
        }
        db.flush()?;
        db.compact_range::<&[u8], &[u8]>(None, None);
        Ok(())
    }

    /// The counters read from RocksDB's statistics, cumulative since the
    /// open.
    struct Tickers {
        /// Bytes read from table files (every level).
        file: u64,
        /// Bytes inserted into the block cache, by kind of block: what its
        /// misses read from the files (charged as the blocks' memory).
        data: u64,
        meta: u64,
    }

    /// One ticker's count in `statistics`, RocksDB's text dump.
    fn ticker(statistics: &str, name: &str) -> anyhow::Result<u64> {
        statistics
            .lines()
            .find_map(|line| line.strip_prefix(name)?.strip_prefix(" COUNT : "))
            .with_context(|| format!("no ticker {name} in this RocksDB's statistics"))?
            .trim()
            .parse()
            .with_context(|| format!("ticker {name}"))
    }

    fn tickers(options: &Options) -> anyhow::Result<Tickers> {
        let text = options
            .get_statistics()
            .context("RocksDB's statistics are off")?;
        let t = |name| ticker(&text, name);
        Ok(Tickers {
            file: t("rocksdb.last.level.read.bytes")? + t("rocksdb.non.last.level.read.bytes")?,
            data: t("rocksdb.block.cache.data.bytes.insert")?,
            meta: t("rocksdb.block.cache.index.bytes.insert")?
                + t("rocksdb.block.cache.filter.bytes.insert")?,
        })
    }

    pub(super) fn measure(
        args: &Args,
        engine: Engine,
        memory: Memory,
        lookups: &[(u64, bool)],
    ) -> anyhow::Result<Measured> {
        let mid = args.num / 2;
        let ((db, options), open) = super::opened(
            || open(args, engine, memory.total, args.direct_reads),
            |(db, _)| check(mid, false, db.get_pinned(key(mid))?.as_deref()),
        )?;
        let before = tickers(&options)?;
        let ops = super::timed(lookups, |rank, absent| {
            let answer = if absent {
                db.get_pinned(missing(rank))?
            } else {
                db.get_pinned(key(rank))?
            };
            check(rank, absent, answer.as_deref())
        })?;
        let after = tickers(&options)?;
        let per_lookup = |n: u64| n as f64 / lookups.len().max(1) as f64;
        let cache_used = db
            .property_int_value("rocksdb.block-cache-usage")?
            .context("no rocksdb.block-cache-usage")?;
        Ok(Measured {
            open,
            ops,
            file_bytes: per_lookup(after.file - before.file),
            data_bytes: Some(per_lookup(after.data - before.data)),
            meta_bytes: Some(per_lookup(after.meta - before.meta)),
            cache_used: Some(cache_used),
            blocks_per_get: None,
            resident: None,
            loads: None,
            evictions: None,
            cached: None,
            rss: rss()?,
        })
    }
}
