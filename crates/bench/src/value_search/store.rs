//! Opening and loading one configuration's database.

use std::path::Path;
use std::time::{Duration, Instant};

use siftdb::{Compression, Db, Extractor, IndexDef};

use super::data::Data;

/// Name of the value index every search uses (the first one declared).
pub const INDEX: &str = "value";

/// What one database is built with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Config {
    /// Entries loaded.
    pub entries: u64,
    /// Distinct values, in percent of the entries.
    pub domain_pct: u64,
    /// Order `d` of the leaf hierarchy.
    pub order: usize,
    /// Bits `m` of every leaf filter.
    pub leaf_bits: u64,
    /// Value indexes declared (all over the whole value).
    pub indexes: usize,
}

impl Config {
    /// Distinct values: `domain_pct`% of the entries, at least one.
    pub fn distinct(&self) -> u64 {
        (self.entries * self.domain_pct / 100).max(1)
    }
}

/// Bytes one entry (16-byte key, 9-byte value) takes in a table, block
/// and index overhead included: measured, table bytes less leaf bytes over
/// entries came to 37-38 on loads of 20k and 1M entries; rounded up.
const ENTRY_BYTES: u64 = 40;

/// Store sizes shared by every configuration.
#[derive(Clone, Copy, Debug)]
pub struct Sizes {
    /// Memtable bytes.
    pub memtable_bytes: usize,
    /// Target bytes of entries in a compaction output table. The leaf
    /// filters come on top (see [`open`]).
    pub table_bytes: u64,
}

/// Opens (creates) a database for `config` in `dir`.
///
/// A table's size counts its leaf filters, so the table target is the
/// entries' bytes plus `m / 8` per index: every configuration then has
/// tables of the same entries, whatever `m` (a 2M-bit leaf alone is
/// 250 KB). Leaves get the optimal probe count for the distinct values a
/// table of that many entries holds, so `m` is the only thing experiment 3
/// changes about a leaf.
pub fn open(dir: &Path, config: &Config, sizes: Sizes) -> anyhow::Result<Db> {
    let filter_bytes = config.indexes as u64 * config.leaf_bits.div_ceil(8);
    let mut builder = Db::builder(dir)
        .memtable_bytes(sizes.memtable_bytes)
        .table_target_bytes(sizes.table_bytes + filter_bytes)
        .compression(Compression::None)
        .value_index_order(config.order);
    let probes = leaf_probes(config, sizes);
    for n in 0..config.indexes {
        let name = if n == 0 {
            INDEX.to_owned()
        } else {
            format!("{INDEX}{n}")
        };
        let def = IndexDef::new(name, Extractor::WholeValue)
            .leaf_bits(config.leaf_bits)
            .leaf_probes(probes);
        builder = builder.value_index(def);
    }
    Ok(builder.open()?)
}

/// The optimal probes `k` for `config`'s leaves: `m / n · ln 2` for the
/// `n` distinct values expected in a table of `sizes.table_bytes` of
/// entries (`D · (1 - e^(-entries / D))` of a domain of `D` values).
pub fn leaf_probes(config: &Config, sizes: Sizes) -> u32 {
    let entries = (sizes.table_bytes / ENTRY_BYTES).max(1) as f64;
    let domain = config.distinct() as f64;
    let values = (domain * -(-entries / domain).exp_m1()).max(1.0);
    sift_filter::math::optimal_probes(config.leaf_bits, values.round() as u64).clamp(1, 64)
}

/// Inserts every entry of `data` (one `insert` each, in index order: keys
/// are random, so this is `fillrandom`), then flushes and waits until no
/// flush, compaction or backfill runs. Returns the time of all of it: an
/// index's cost is paid when leaves are built, at flush and compaction.
pub fn load(db: &Db, data: &Data) -> anyhow::Result<Duration> {
    let start = Instant::now();
    for i in 0..data.entries() {
        db.insert(data.key(i), data.value(i))?;
    }
    db.flush()?;
    db.wait_for_compactions()?;
    db.wait_for_backfill()?;
    Ok(start.elapsed())
}

/// Tables per level now.
pub fn tables_per_level(db: &Db) -> Vec<usize> {
    db.stats().levels.iter().map(|l| l.tables).collect()
}
