//! The databases of one shape: the same records loaded with no index, with
//! one value index, and with the exact index; each timed and measured.

use std::time::Instant;

use siftdb::{Db, DbBuilder, IndexDef, IndexStats};

use super::dataset::Dataset;
use super::exact;
use crate::scratch::ScratchDir;

/// Name of the value index.
pub const INDEX: &str = "field";

/// Memtable of the small-table configuration: flushes of 1 MiB, compacted
/// into tables of [`SMALL_TABLE_BYTES`].
const SMALL_MEMTABLE_BYTES: usize = 1 << 20;
/// Table target of the small-table configuration: a few hundred thousand
/// records of 30-100 bytes make 50-250 tables.
const SMALL_TABLE_BYTES: u64 = 128 << 10;

/// What the memtable configuration bounds a write's memtable charge by:
/// [`ENTRIES_PER_WRITE`] entries of its key, its record and
/// [`ENTRY_BYTES`]. The store charges an entry its key, value and 96 bytes,
/// a value posting its key and 72; a write makes at most the record and a
/// posting, or (exact index) the record, its index entry and the deletion
/// of the stale one, whose values are shorter than the record.
const ENTRIES_PER_WRITE: u64 = 3;
/// See [`ENTRIES_PER_WRITE`].
const ENTRY_BYTES: u64 = 128;

/// How tables are sized.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Tables {
    /// 128 KiB tables from 1 MiB memtables: many tables.
    Small,
    /// The store's defaults (32 MiB memtables, 64 MiB tables): one or two.
    Default,
    /// A memtable larger than the load, never flushed: no table at all, as
    /// a search right after loading into memtables meets.
    Memtable,
}

impl Tables {
    /// The configurations run by default, in report order.
    pub const ALL: [Self; 2] = [Self::Small, Self::Default];

    /// Every configuration `--tables` accepts, in report order
    /// (`memtable` only on request).
    pub const KNOWN: [Self; 3] = [Self::Small, Self::Default, Self::Memtable];

    /// Name in options and reports.
    pub fn name(self) -> &'static str {
        match self {
            Self::Small => "128k",
            Self::Default => "default",
            Self::Memtable => "memtable",
        }
    }

    /// Whether the load ends with a flush.
    fn flushes(self) -> bool {
        self != Self::Memtable
    }

    fn apply(self, builder: DbBuilder, data: &Dataset) -> DbBuilder {
        match self {
            Self::Small => builder
                .memtable_bytes(SMALL_MEMTABLE_BYTES)
                .table_target_bytes(SMALL_TABLE_BYTES),
            Self::Default => builder,
            Self::Memtable => builder.memtable_bytes(load_bound(data)),
        }
    }
}

/// More memtable bytes than any store's load of `data` charges. Derived
/// from the load rather than fixed: 10M records need gigabytes, 20,000 a
/// few MiB, and the store sizes a new index's leaves for tables as large as
/// its memtable.
fn load_bound(data: &Dataset) -> usize {
    let bytes: u64 = data
        .writes()
        .map(|w| ENTRIES_PER_WRITE * ((w.key.len() + w.record.len()) as u64 + ENTRY_BYTES))
        .sum();
    usize::try_from(bytes).unwrap_or(usize::MAX)
}

/// What a database indexes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Store {
    /// Records only.
    Plain,
    /// Records and one value index ([`INDEX`], the shape's extractor,
    /// leaves sized per table at the default 1% rate).
    ValueIndex,
    /// Records and the hand-built exact index ([`exact`]).
    ExactIndex,
}

impl Store {
    /// Every store, in report order.
    pub const ALL: [Self; 3] = [Self::Plain, Self::ValueIndex, Self::ExactIndex];

    /// Name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Self::Plain => "no-index",
            Self::ValueIndex => "value-index",
            Self::ExactIndex => "exact-index",
        }
    }
}

/// The size of a loaded database.
#[derive(Clone, Debug, Default)]
pub struct Footprint {
    /// Tables per level, L0 first.
    pub levels: Vec<usize>,
    /// Entries in tables (records, versions, tombstones, index entries).
    pub entries: u64,
    /// Bytes of table files.
    pub disk_bytes: u64,
    /// Bytes of key filters (pinned in memory).
    pub key_filter_bytes: u64,
    /// The value index's statistics, if it has one.
    pub index: Option<IndexStats>,
}

impl Footprint {
    /// Tables in all levels.
    pub fn tables(&self) -> u64 {
        self.levels.iter().map(|&t| t as u64).sum()
    }

    /// The size of `db` now.
    pub fn of(db: &Db) -> Self {
        let stats = db.stats();
        Self {
            levels: stats.levels.iter().map(|l| l.tables).collect(),
            entries: stats.levels.iter().map(|l| l.entries).sum(),
            disk_bytes: stats.levels.iter().map(|l| l.bytes).sum(),
            key_filter_bytes: stats.levels.iter().map(|l| l.filter_bytes).sum(),
            index: stats.indexes.into_iter().next(),
        }
    }
}

/// Compacts `db` fully (one sorted run, no shadowed versions) and returns
/// its size then: the same records in every store, whatever the
/// background compactions of its load happened to leave, so sizes compare.
pub fn compacted(db: &Db) -> anyhow::Result<Footprint> {
    db.compact()?;
    db.wait_for_compactions()?;
    Ok(Footprint::of(db))
}

/// A loaded database. Fields drop in order: the store before its directory.
pub struct Loaded {
    /// The store.
    pub db: Db,
    /// Its scratch directory.
    _dir: tempfile::TempDir,
    /// Seconds of the load: every write, the final flush and the wait for
    /// compactions (an index's cost is paid at flush and compaction too).
    pub seconds: f64,
    /// Its size after the load.
    pub footprint: Footprint,
}

/// Loads `data` into a fresh database of `store` with `tables`, timed.
/// Plain and value-index stores take one `insert` per write; the exact
/// index one read and one batch. After the writes: flush (nothing stays in
/// a memtable; not for [`Tables::Memtable`], where everything does) and
/// wait for compactions, but no manual compaction, so the levels are what
/// a running store has.
pub fn load(
    scratch: &ScratchDir,
    data: &Dataset,
    tables: Tables,
    store: Store,
) -> anyhow::Result<Loaded> {
    let dir = scratch.create()?;
    let mut builder = tables.apply(Db::builder(dir.path()), data);
    if store == Store::ValueIndex {
        builder = builder.value_index(IndexDef::new(INDEX, data.extractor()));
    }
    let db = builder.open()?;
    let start = Instant::now();
    match store {
        Store::Plain | Store::ValueIndex => {
            for w in data.writes() {
                db.insert(w.key, w.record)?;
            }
        }
        Store::ExactIndex => {
            let mut writer = exact::Writer::new(&db, data.extractor());
            for w in data.writes() {
                writer.put(w.key, w.record, w.value)?;
            }
        }
    }
    if tables.flushes() {
        db.flush()?;
    }
    db.wait_for_compactions()?;
    db.wait_for_backfill()?;
    let seconds = start.elapsed().as_secs_f64();
    let footprint = Footprint::of(&db);
    Ok(Loaded {
        db,
        _dir: dir,
        seconds,
        footprint,
    })
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::value_search::shapes::Shape;

    #[derive(Parser)]
    struct Scratch {
        #[command(flatten)]
        dir: ScratchDir,
    }

    #[test]
    fn the_memtable_configuration_writes_no_table() {
        let scratch = Scratch::parse_from(["test"]).dir;
        let data = Dataset::new(Shape::Hitters, 1, 5_000).unwrap();
        for store in Store::ALL {
            let loaded = load(&scratch, &data, Tables::Memtable, store).unwrap();
            assert_eq!(loaded.footprint.tables(), 0, "{}", store.name());
        }
        let value = load(&scratch, &data, Tables::Memtable, Store::ValueIndex).unwrap();
        let found = value.db.find(INDEX, "page_view").unwrap().count();
        assert_eq!(found, data.expected(0).len());
    }
}
