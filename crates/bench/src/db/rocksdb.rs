//! RocksDB (the `rocksdb` crate, feature `rocksdb`) as a contender,
//! configured like Sift: full Bloom filters (format_version 5, the
//! cache-local Bloom) at the same bits/key on every level, whole-key
//! filtering, no compression on any level, an LRU block cache of the same
//! size, the same memtable and target table sizes, the same block size,
//! leveled compaction, the WAL on and not synced. Filter counters come from
//! RocksDB's statistics tickers, which are on only in a [`Pass::Counted`]
//! open: RocksDB 7's C API cannot lower the statistics level, and the default
//! one also times every read. Timed passes run without them; the harness
//! counts on a checkpoint of the store ([`Engine::copy_for_counting`]).
//!
//! On the [`Store::Prefixed`] store RocksDB also gets a fixed prefix
//! extractor of [`PREFIX_LEN`] bytes, so its full filters hold the prefixes
//! beside the whole keys (its prefix Bloom, as Sift's prefix filters), and
//! prefix scans set `prefix_same_as_start` and an upper bound. RocksDB has
//! no range filter: bounded scans set `iterate_upper_bound`, which lets it
//! skip files past the bound.

use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use rocksdb::checkpoint::Checkpoint;
use rocksdb::{
    BlockBasedOptions, BottommostLevelCompaction, Cache, CompactOptions, DB, DBCompactionStyle,
    DBCompressionType, Options, ReadOptions, SliceTransform, WriteOptions,
};

use super::engine::{Engine, FilterCounters, Pass, Settings, Shape, Visit};
use super::stores::{PREFIX_LEN, Store};
use crate::filters::keys::Key;

/// Sift's data block size (`DbBuilder::block_bytes` default; the harness
/// does not change it), so both engines read blocks of one size.
const BLOCK_BYTES: usize = 4096;

/// The block-based table format whose full filter is the cache-local
/// ("fast local") Bloom: every probe of one key stays in one cache line, as
/// Sift's blocked Bloom.
const FORMAT_VERSION: i32 = 5;

/// Levels RocksDB has by default (`num_levels`): the tables are counted on
/// each.
const LEVELS: usize = 7;

/// Statistics tickers (their names in `Options::get_statistics`' text).
const USEFUL: &str = "rocksdb.bloom.filter.useful";
const FULL_POSITIVE: &str = "rocksdb.bloom.filter.full.positive";
const FULL_TRUE_POSITIVE: &str = "rocksdb.bloom.filter.full.true.positive";
/// Prefix filter checks by iterator seeks, and "no" answers among them.
const PREFIX_CHECKED: &str = "rocksdb.bloom.filter.prefix.checked";
const PREFIX_USEFUL: &str = "rocksdb.bloom.filter.prefix.useful";

/// A RocksDB database with the default column family.
pub struct RocksDb {
    db: DB,
    /// Kept for its statistics object (a counted pass's), which the open
    /// database shares.
    options: Options,
}

impl RocksDb {
    /// Opens (creates) the database in `dir`, configured for `store`, with
    /// statistics in a counted pass only.
    pub fn open(dir: &Path, settings: &Settings, store: Store, pass: Pass) -> anyhow::Result<Self> {
        let cache = Cache::new_lru_cache(usize::try_from(settings.cache_bytes)?)?;
        let mut table = BlockBasedOptions::default();
        table.set_block_cache(&cache);
        table.set_block_size(BLOCK_BYTES);
        table.set_format_version(FORMAT_VERSION);
        // `false`: a full filter per table, not the legacy per-block one.
        table.set_bloom_filter(settings.bits_per_key, false);
        table.set_whole_key_filtering(true);

        let mut options = Options::default();
        options.create_if_missing(true);
        options.set_block_based_table_factory(&table);
        options.set_compression_type(DBCompressionType::None);
        options.set_compression_per_level(&[DBCompressionType::None; LEVELS]);
        options.set_bottommost_compression_type(DBCompressionType::None);
        options.set_write_buffer_size(usize::try_from(settings.memtable_bytes)?);
        options.set_target_file_size_base(settings.table_bytes);
        options.set_compaction_style(DBCompactionStyle::Level);
        if store == Store::Prefixed {
            // The memtable gets no prefix Bloom: the reads run on flushed
            // stores, whose memtables are empty (and Sift's has none).
            options.set_prefix_extractor(SliceTransform::create_fixed_prefix(PREFIX_LEN));
        }
        if pass == Pass::Counted {
            options.enable_statistics();
        }
        // The default column family opened by name, so that the batched
        // MultiGet, which takes a column family handle, can name it; with
        // the same options (`open_cf` by name alone would give it defaults:
        // no filter, another cache).
        let default = rocksdb::ColumnFamilyDescriptor::new(
            rocksdb::DEFAULT_COLUMN_FAMILY_NAME,
            options.clone(),
        );
        let db =
            DB::open_cf_descriptors(&options, dir, [default]).context("cannot open RocksDB")?;
        Ok(Self { db, options })
    }

    /// Seeks an iterator with `options` to `from` and hands `visit` up to
    /// `limit` entries.
    fn visit_from(
        &self,
        options: ReadOptions,
        from: &[u8],
        limit: usize,
        visit: Visit<'_>,
    ) -> anyhow::Result<usize> {
        let mut iter = self.db.raw_iterator_opt(options);
        iter.seek(from);
        let mut count = 0;
        while count < limit {
            let (Some(key), Some(value)) = (iter.key(), iter.value()) else {
                break;
            };
            visit(key, value.len())?;
            count += 1;
            iter.next();
        }
        iter.status()?;
        Ok(count)
    }

    fn busy(&self) -> anyhow::Result<bool> {
        let mut busy = false;
        for property in [
            "rocksdb.num-running-flushes",
            "rocksdb.num-running-compactions",
            "rocksdb.compaction-pending",
            "rocksdb.mem-table-flush-pending",
        ] {
            busy |= self.db.property_int_value(property)?.unwrap_or(0) > 0;
        }
        Ok(busy)
    }
}

impl Engine for RocksDb {
    fn name(&self) -> &'static str {
        "rocksdb"
    }

    fn put(&self, key: &[u8], value: &[u8]) -> anyhow::Result<()> {
        // Default write options: through the WAL, not synced (as Sift).
        Ok(self.db.put(key, value)?)
    }

    /// `WriteOptions::set_sync(true)`: the WAL is `fdatasync`ed before the
    /// put returns (RocksDB's default `use_fsync` false), as db_bench's
    /// `fillsync`.
    fn put_synced(&self, key: &[u8], value: &[u8]) -> anyhow::Result<()> {
        let mut options = WriteOptions::default();
        options.set_sync(true);
        Ok(self.db.put_opt(key, value, &options)?)
    }

    /// The "Cumulative stall" of `rocksdb.dbstats`: writers' delays and
    /// stops (`DelayWrite`), kept whether statistics are on or off. RocksDB
    /// 7's C API has no map properties, so the text is parsed (millisecond
    /// resolution).
    fn write_stall(&self) -> Option<Duration> {
        let stats = self.db.property_value("rocksdb.dbstats").ok()??;
        cumulative_stall(&stats)
    }

    fn get(&self, key: &[u8]) -> anyhow::Result<Option<usize>> {
        Ok(self.db.get_pinned(key)?.map(|v| v.len()))
    }

    /// RocksDB's batched MultiGet (`rocksdb_batched_multi_get_cf`), the
    /// optimised one, on the default column family.
    fn multi_get(&self, keys: &[Key]) -> anyhow::Result<Vec<Option<usize>>> {
        let cf = self
            .db
            .cf_handle(rocksdb::DEFAULT_COLUMN_FAMILY_NAME)
            .ok_or_else(|| anyhow::anyhow!("rocksdb: no default column family"))?;
        self.db
            .batched_multi_get_cf(cf, keys, false)
            .into_iter()
            .map(|value| Ok(value?.map(|v| v.len())))
            .collect()
    }

    fn seek(&self, key: &[u8]) -> anyhow::Result<Option<usize>> {
        let mut iter = self.db.raw_iterator();
        iter.seek(key);
        iter.status()?;
        Ok(iter.value().map(<[u8]>::len))
    }

    fn scan(
        &self,
        lower: &[u8],
        upper: &[u8],
        limit: usize,
        visit: Visit<'_>,
    ) -> anyhow::Result<usize> {
        let mut options = ReadOptions::default();
        options.set_iterate_upper_bound(upper);
        self.visit_from(options, lower, limit, visit)
    }

    /// A prefix seek (`prefix_same_as_start`, which uses the prefix filters
    /// of the [`Store::Prefixed`] store), bounded above by the prefix's end
    /// as well.
    fn prefix(&self, prefix: &[u8], visit: Visit<'_>) -> anyhow::Result<usize> {
        let mut options = ReadOptions::default();
        options.set_prefix_same_as_start(true);
        if let Some(end) = prefix_end(prefix) {
            options.set_iterate_upper_bound(end);
        }
        let mut within = |key: &[u8], len: usize| {
            anyhow::ensure!(
                key.starts_with(prefix),
                "rocksdb: a prefix scan left its prefix"
            );
            visit(key, len)
        };
        self.visit_from(options, prefix, usize::MAX, &mut within)
    }

    fn settle(&self) -> anyhow::Result<()> {
        self.db.flush()?;
        // The C API of RocksDB 7 has no "wait for compactions": poll until
        // nothing runs or is pending twice in a row (as for fjall).
        let mut quiet = 0;
        while quiet < 2 {
            std::thread::sleep(Duration::from_millis(50));
            quiet = if self.busy()? { 0 } else { quiet + 1 };
        }
        Ok(())
    }

    fn compact(&self) -> anyhow::Result<()> {
        self.db.flush()?;
        let mut options = CompactOptions::default();
        // Rewrite the last level too, so every table is a compaction output.
        options.set_bottommost_level_compaction(BottommostLevelCompaction::Force);
        // Blocks until the manual compaction is done.
        self.db
            .compact_range_opt(None::<&[u8]>, None::<&[u8]>, &options);
        self.settle()
    }

    /// Zero in a timed pass: statistics are off.
    fn filter_counters(&self) -> FilterCounters {
        let Some(stats) = self.options.get_statistics() else {
            return FilterCounters::default();
        };
        let count = |name| ticker(&stats, name).unwrap_or(0);
        let negatives = count(USEFUL);
        let positives = count(FULL_POSITIVE);
        let true_positives = count(FULL_TRUE_POSITIVE);
        FilterCounters {
            probes: negatives + positives,
            negatives,
            false_positives: Some(positives.saturating_sub(true_positives)),
        }
    }

    /// Prefix filter counters (RocksDB has no range filter); zero in a
    /// timed pass. RocksDB does not tell false positives apart.
    fn scan_filter_counters(&self) -> FilterCounters {
        let Some(stats) = self.options.get_statistics() else {
            return FilterCounters::default();
        };
        FilterCounters {
            probes: ticker(&stats, PREFIX_CHECKED).unwrap_or(0),
            negatives: ticker(&stats, PREFIX_USEFUL).unwrap_or(0),
            false_positives: None,
        }
    }

    /// A checkpoint: hard links to the tables, copies of the small files.
    /// RocksDB flushes the memtable first; the harness copies only after a
    /// flush (settle or compaction) and reads, so there is nothing to flush
    /// and the timed store keeps its shape.
    fn copy_for_counting(&self, dir: &Path) -> anyhow::Result<bool> {
        Checkpoint::new(&self.db)?
            .create_checkpoint(dir)
            .context("cannot checkpoint RocksDB")?;
        Ok(true)
    }

    fn shape(&self) -> Shape {
        let tables = (0..LEVELS)
            .filter_map(|level| {
                let property = format!("rocksdb.num-files-at-level{level}");
                self.db.property_int_value(property.as_str()).ok().flatten()
            })
            .sum();
        let filter_bits_per_key = self
            .db
            .property_value("rocksdb.aggregated-table-properties")
            .ok()
            .flatten()
            .and_then(|props| {
                let entries = table_property(&props, "# entries")?;
                let filter = table_property(&props, "filter block size")?;
                (entries > 0).then(|| (filter * 8) as f64 / entries as f64)
            });
        Shape {
            tables,
            filter_bits_per_key,
            // The prefixes share the full filter with the keys.
            scan_filter_bits_per_key: None,
        }
    }
}

/// The count of ticker `name` in the text of `Options::get_statistics`,
/// whose lines read `rocksdb.bloom.filter.useful COUNT : 123`.
fn ticker(stats: &str, name: &str) -> Option<u64> {
    stats.lines().find_map(|line| {
        let rest = line
            .strip_prefix(name)?
            .trim_start()
            .strip_prefix("COUNT")?;
        rest.trim_start().strip_prefix(':')?.trim().parse().ok()
    })
}

/// The time of the `Cumulative stall: 00:00:1.250 H:M:S, 0.5 percent`
/// line of `rocksdb.dbstats` (`AppendHumanMicros`' fixed format).
fn cumulative_stall(dbstats: &str) -> Option<Duration> {
    let line = dbstats
        .lines()
        .find_map(|line| line.strip_prefix("Cumulative stall:"))?;
    let time = line.split_whitespace().next()?;
    let mut parts = time.split(':');
    let hours: u64 = parts.next()?.parse().ok()?;
    let minutes: u64 = parts.next()?.parse().ok()?;
    let seconds: f64 = parts.next()?.parse().ok()?;
    Some(
        Duration::from_secs(hours * 3600 + minutes * 60)
            + Duration::try_from_secs_f64(seconds).ok()?,
    )
}

/// The least key above every key that starts with `prefix` (the exclusive
/// upper bound of a prefix scan), or `None` when no key is (`prefix` is all
/// `0xff`).
fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let last = prefix.iter().rposition(|&b| b != 0xff)?;
    let mut end = prefix[..=last].to_vec();
    end[last] += 1;
    Some(end)
}

/// The value of `name` in the text of `rocksdb.aggregated-table-properties`,
/// `name=value` pairs separated by `; `.
fn table_property(props: &str, name: &str) -> Option<u64> {
    props.split(';').find_map(|pair| {
        let (key, value) = pair.split_once('=')?;
        (key.trim() == name).then(|| value.trim().parse().ok())?
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tickers_are_read_by_exact_name() {
        let stats = "rocksdb.block.cache.miss COUNT : 7\n\
                     rocksdb.bloom.filter.useful COUNT : 12\n\
                     rocksdb.bloom.filter.full.positive COUNT : 30\n\
                     rocksdb.bloom.filter.full.true.positive COUNT : 25\n\
                     rocksdb.db.get.micros P50 : 1.0 P95 : 2.0 COUNT : 99 SUM : 3\n";
        assert_eq!(ticker(stats, USEFUL), Some(12));
        assert_eq!(ticker(stats, FULL_POSITIVE), Some(30));
        assert_eq!(ticker(stats, FULL_TRUE_POSITIVE), Some(25));
        assert_eq!(ticker(stats, "rocksdb.db.get.micros"), None);
        assert_eq!(ticker(stats, "rocksdb.absent"), None);
    }

    #[test]
    fn the_cumulative_stall_is_read_from_dbstats() {
        let stats = "\n** DB Stats **\nUptime(secs): 12.0 total, 12.0 interval\n\
                     Cumulative writes: 200K writes, 200K keys, 150K commit groups, 1.3 writes per commit group, ingest: 0.02 GB, 1.87 MB/s\n\
                     Cumulative stall: 00:01:2.250 H:M:S, 10.4 percent\n\
                     Interval stall: 00:00:0.000 H:M:S, 0.0 percent\n";
        assert_eq!(cumulative_stall(stats), Some(Duration::from_millis(62_250)));
        assert_eq!(
            cumulative_stall("Cumulative stall: 00:00:0.000 H:M:S, 0.0 percent"),
            Some(Duration::ZERO)
        );
        assert_eq!(cumulative_stall("Interval stall: 00:00:1.000 H:M:S"), None);
    }

    #[test]
    fn prefix_end_bounds_exactly_the_prefix() {
        assert_eq!(prefix_end(b"ab"), Some(b"ac".to_vec()));
        assert_eq!(prefix_end(b"a\xff"), Some(b"b".to_vec()));
        assert_eq!(prefix_end(b"\xff\xff"), None);
        let end = prefix_end(b"p\x00\x01").unwrap_or_default();
        assert!(b"p\x00\x01\xff\xff".as_slice() < end.as_slice());
        assert!(b"p\x00\x02".as_slice() >= end.as_slice());
    }

    #[test]
    fn table_properties_are_read_by_exact_name() {
        let props = "# data blocks=10; # entries=1000; # deletions=0; \
                     filter block size=1250; # entries for filter=1000";
        assert_eq!(table_property(props, "# entries"), Some(1000));
        assert_eq!(table_property(props, "filter block size"), Some(1250));
        assert_eq!(table_property(props, "# range deletions"), None);
    }

    /// Even keys below 4002 present, odd ones absent: inside the table's
    /// key range, so only the filter rejects them.
    fn load(db: &RocksDb) -> anyhow::Result<()> {
        for i in 0u32..=2000 {
            db.put(&(2 * i).to_be_bytes(), b"value")?;
        }
        db.settle()?;
        db.compact()
    }

    /// 2000 present and 2000 absent keys, then two seeks; checks each answer.
    fn lookups(db: &RocksDb) -> anyhow::Result<()> {
        for i in 0u32..2000 {
            assert_eq!(db.get(&(2 * i).to_be_bytes())?, Some(5));
            assert_eq!(db.get(&(2 * i + 1).to_be_bytes())?, None);
        }
        assert_eq!(db.seek(&1u32.to_be_bytes())?, Some(5));
        assert_eq!(db.seek(&4001u32.to_be_bytes())?, None);
        Ok(())
    }

    #[test]
    fn counts_filter_probes_on_a_copy_and_not_when_timed() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        let settings = Settings {
            memtable_bytes: 1 << 20,
            table_bytes: 1 << 20,
            cache_bytes: 1 << 20,
            bits_per_key: 10.0,
            range_bits_per_key: 12.0,
        };
        let timed = RocksDb::open(
            &dir.path().join("timed"),
            &settings,
            Store::Random,
            Pass::Timed,
        )?;
        load(&timed)?;
        let copy = dir.path().join("copy");
        assert!(timed.copy_for_counting(&copy)?);
        lookups(&timed)?;
        // Statistics off: nothing is counted in a timed pass.
        assert_eq!(timed.filter_counters(), FilterCounters::default());

        let counted = RocksDb::open(&copy, &settings, Store::Random, Pass::Counted)?;
        assert!(counted.shape().tables >= 1);
        assert_eq!(counted.shape(), timed.shape());
        let before = counted.filter_counters();
        lookups(&counted)?;
        let after = counted.filter_counters();
        // One table after the full compaction: one probe per lookup.
        assert_eq!(after.probes - before.probes, 4000);
        // About 1% of the 2000 absent keys pass the filter; the rest are rejected.
        assert!(after.negatives - before.negatives > 1900);
        let false_positives =
            after.false_positives.unwrap_or(0) - before.false_positives.unwrap_or(0);
        assert_eq!(after.negatives - before.negatives + false_positives, 2000);
        Ok(())
    }
}
