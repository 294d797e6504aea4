//! Phase 1: open a fresh database with two value indexes, load the
//! records, and let flushes and compactions finish so every later figure
//! describes one stable shape.

use std::path::Path;
use std::time::Instant;

use siftdb::{CompactionStyle, Db, Extractor, IndexDef, WriteBatch};

use super::records::Generator;
use crate::error::Outcome;
use crate::progress::{self, Unit};

/// Tables the data set is cut into, at any size: a few tens, so that
/// filters have tables to rule out (the defaults, 32 MiB memtables and
/// 64 MiB tables, would make four of 1,000,000 records).
const TARGET_TABLES: u64 = 32;

/// Largest memtable and table size: 8 MiB, reached at 1,000,000 records.
const MAX_TABLE_BYTES: u64 = 8 << 20;

/// Smallest: 64 KiB, sixteen 4 KiB blocks, so a table still has an index
/// worth the name.
const MIN_TABLE_BYTES: u64 = 64 << 10;

/// Mean bytes of a record's key and value (measured: 259).
const RECORD_BYTES: u64 = 260;

/// L1's target in tables: four, the defaults' ratio of L1 to table size
/// (256 MiB to 64 MiB), so the data reaches L2 and its Ribbon filters.
const L1_TABLES: u64 = 4;

/// Most records per write batch: enough that the WAL's per-batch cost
/// vanishes, few enough that the progress bar moves smoothly.
const MAX_BATCH: u64 = 1_000;

/// A batch fills at most this fraction of a memtable, so that small
/// memtables (small `--records`) still take many batches each, as in
/// normal use, instead of each batch overflowing one.
const BATCHES_PER_MEMTABLE: u64 = 16;

/// The two value indexes: one value per party of passengers (very many
/// distinct values, each in one table) and one per airport (100 values,
/// the busiest in every table).
pub const INDEXES: [(&str, &str); 2] = [("booking", "/booking"), ("origin", "/origin")];

/// A value no record holds in any indexed field (fields are upper-case
/// letters and digits).
const SYNC_PROBE: &str = "(sync)";

/// What loading measured.
#[derive(Debug)]
pub struct LoadFigures {
    /// Records written.
    pub records: u64,
    /// Bytes of keys and values written.
    pub bytes: u64,
    /// Seconds spent writing.
    pub insert_seconds: f64,
    /// Seconds then spent flushing and waiting for compactions.
    pub settle_seconds: f64,
    /// The memtable size and table target used.
    pub table_bytes: u64,
    /// Per index, seconds its first search spent bringing the in-memory
    /// search structures (hierarchy, bit-sliced rows, planner profile) up
    /// to date with the settled tables: every search after a flush or
    /// compaction pays this for the tables that changed.
    pub index_sync_seconds: Vec<(&'static str, f64)>,
}

/// An open, loaded, settled demo database.
#[derive(Debug)]
pub struct Loaded {
    /// The database.
    pub db: Db,
    /// What loading measured.
    pub figures: LoadFigures,
    /// Keys of records spread evenly over the data set (every
    /// `records / samples`-th), for lookups and searches.
    pub samples: Vec<String>,
}

/// Opens a new database in `dir` and loads `records` records, keeping
/// `samples` keys.
pub fn load(dir: &Path, records: u64, samples: u64) -> Outcome<Loaded> {
    let table_bytes = table_bytes(records);
    let mut builder = Db::builder(dir)
        .memtable_bytes(table_bytes as usize)
        .table_target_bytes(table_bytes)
        .compaction_style(CompactionStyle::Leveled {
            l0_trigger: 4,
            size_ratio: 10,
            l1_bytes: L1_TABLES * table_bytes,
        });
    for (name, pointer) in INDEXES {
        builder = builder.value_index(IndexDef::new(name, Extractor::json_field(pointer)));
    }
    let db = builder.open()?;

    let batch_records = (table_bytes / RECORD_BYTES / BATCHES_PER_MEMTABLE).clamp(1, MAX_BATCH);
    let stride = (records / samples.max(1)).max(1);
    let mut kept = Vec::with_capacity(samples as usize);
    let bar = progress::bar("loading", records, Unit::Items("records"));
    let started = Instant::now();
    let mut batch = WriteBatch::new();
    let mut in_batch = 0u64;
    let mut bytes = 0u64;
    for (n, record) in Generator::new(records).enumerate() {
        if n as u64 % stride == stride / 2 && (kept.len() as u64) < samples {
            kept.push(record.key.clone());
        }
        bytes += (record.key.len() + record.value.len()) as u64;
        batch.insert(record.key, record.value);
        in_batch += 1;
        if in_batch == batch_records {
            db.write(&batch)?;
            batch.clear();
            bar.inc(in_batch);
            in_batch = 0;
        }
    }
    if in_batch > 0 {
        db.write(&batch)?;
        bar.inc(in_batch);
    }
    let insert_seconds = started.elapsed().as_secs_f64();
    bar.finish_and_clear();

    let spinner = progress::spinner("flushing and compacting");
    let settling = Instant::now();
    db.flush()?;
    db.wait_for_backfill()?;
    spinner.finish_and_clear();
    let settle_seconds = settling.elapsed().as_secs_f64();
    let mut index_sync_seconds = Vec::new();
    for (name, _) in INDEXES {
        // A value no record has: the search reads no table, so its time is
        // the structures' update.
        let syncing = Instant::now();
        db.find_keys(name, SYNC_PROBE)?;
        index_sync_seconds.push((name, syncing.elapsed().as_secs_f64()));
    }
    Ok(Loaded {
        db,
        figures: LoadFigures {
            records,
            bytes,
            insert_seconds,
            settle_seconds,
            table_bytes,
            index_sync_seconds,
        },
        samples: kept,
    })
}

/// Memtable and table size for `records` records: about
/// [`TARGET_TABLES`] tables' worth, within 64 KiB ..= 8 MiB.
pub fn table_bytes(records: u64) -> u64 {
    (records.saturating_mul(RECORD_BYTES) / TARGET_TABLES).clamp(MIN_TABLE_BYTES, MAX_TABLE_BYTES)
}
