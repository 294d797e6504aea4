//! The engines under test behind one small trait, so every workload runs
//! the same code against each of them.

use std::path::Path;
use std::time::Duration;

use crate::filters::keys::Key;

/// Settings both engines get, chosen to be equal where they have the same
/// knob (see `docs/benchmarks.md` for the mapping).
#[derive(Clone, Debug)]
pub struct Settings {
    /// Memtable size at which it is flushed to a table.
    pub memtable_bytes: u64,
    /// Target size of a table written by compaction.
    pub table_bytes: u64,
    /// Block cache capacity.
    pub cache_bytes: u64,
    /// Bloom filter bits per key, every level.
    pub bits_per_key: f64,
    /// Sift's range filter bits per key (Monkey's average over the levels).
    pub range_bits_per_key: f64,
}

/// Filter counters since the engine was opened (of one kind of filter:
/// [`Engine::filter_counters`], [`Engine::scan_filter_counters`]). `false_positives` is
/// `None` where the engine does not tell a false positive from a true one.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FilterCounters {
    /// Filters consulted.
    pub probes: u64,
    /// Filter answers "no" ("no such key", "nothing in this range"): table
    /// reads avoided.
    pub negatives: u64,
    /// "Maybe" answers for tables without the key (or without a key in
    /// the scanned range).
    pub false_positives: Option<u64>,
}

/// What a pass of a workload over an engine is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pass {
    /// Timed: instrumentation that costs the engine time is off.
    Timed,
    /// Untimed, for filter counters only: such instrumentation is on.
    Counted,
}

/// The shape of the store now.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Shape {
    /// Table files.
    pub tables: u64,
    /// Bits of key filter per stored entry, where the engine reports it.
    pub filter_bits_per_key: Option<f64>,
    /// Bits of scan filters (prefix and range filters, apart from the key
    /// filters) per stored entry, where the engine has them apart.
    pub scan_filter_bits_per_key: Option<f64>,
}

/// What a scan hands each entry it reads: the key and the value's length.
/// An error stops the scan and is returned by it.
pub type Visit<'a> = &'a mut dyn FnMut(&[u8], usize) -> anyhow::Result<()>;

/// One engine, opened on a directory.
pub trait Engine: Sync {
    /// Short name used in reports.
    fn name(&self) -> &'static str;
    /// Writes one key (no sync: both engines hand the log to the OS).
    fn put(&self, key: &[u8], value: &[u8]) -> anyhow::Result<()>;
    /// Writes one key as its own write, durable when it returns: its log
    /// record synced with `fdatasync` (db_bench's `--sync`).
    fn put_synced(&self, key: &[u8], value: &[u8]) -> anyhow::Result<()>;
    /// Time writers spent delayed or stopped by background work (flush or
    /// compaction debt) since open, where the engine counts it.
    fn write_stall(&self) -> Option<Duration> {
        None
    }
    /// Length of the value of `key`, if present.
    fn get(&self, key: &[u8]) -> anyhow::Result<Option<usize>>;
    /// Lengths of the values of `keys`, in order. The default reads them
    /// one by one, for an engine without a batched read.
    fn multi_get(&self, keys: &[Key]) -> anyhow::Result<Vec<Option<usize>>> {
        keys.iter().map(|key| self.get(key)).collect()
    }

    /// Reads the first entry at or after `key`: its value length.
    fn seek(&self, key: &[u8]) -> anyhow::Result<Option<usize>>;
    /// Opens an iterator bounded to `[lower, upper)` (the engine's own
    /// bounds, so its filters and file boundaries can use them) and hands
    /// `visit` its first `limit` entries, in key order; returns how many.
    fn scan(
        &self,
        lower: &[u8],
        upper: &[u8],
        limit: usize,
        visit: Visit<'_>,
    ) -> anyhow::Result<usize>;
    /// The engine's prefix scan: hands `visit` every entry whose key starts
    /// with `prefix`, in key order; returns how many.
    fn prefix(&self, prefix: &[u8], visit: Visit<'_>) -> anyhow::Result<usize>;
    /// Flushes the memtable and waits until no flush or compaction runs.
    fn settle(&self) -> anyhow::Result<()>;
    /// Compacts everything into the last level.
    fn compact(&self) -> anyhow::Result<()>;
    /// Key filter counters since open (zero where they are off, see
    /// [`Pass`]).
    fn filter_counters(&self) -> FilterCounters;
    /// Scan filter (prefix or range filter) counters since open: probes by
    /// bounded and prefix scans, and "nothing here" answers. The default,
    /// for an engine without scan filters, counts nothing.
    fn scan_filter_counters(&self) -> FilterCounters {
        FilterCounters::default()
    }
    /// For an engine whose filter counters cost time and so are off in a
    /// [`Pass::Timed`] open: copies the store as it is now into `dir` (which
    /// must not exist) and returns `true`, so a [`Pass::Counted`] open of the
    /// copy can count. The default copies nothing: the engine's counters are
    /// always on, part of its cost, and counted in the timed pass.
    fn copy_for_counting(&self, _dir: &Path) -> anyhow::Result<bool> {
        Ok(false)
    }
    /// Tables and filter density now.
    fn shape(&self) -> Shape;
}

/// Bytes of every file under `dir`.
pub fn disk_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .map(|entry| match entry.metadata() {
            Ok(meta) if meta.is_dir() => disk_bytes(&entry.path()),
            Ok(meta) => meta.len(),
            Err(_) => 0,
        })
        .sum()
}
