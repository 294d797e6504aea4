//! The read path: point lookups that hash the key once and share the hash
//! with every filter, and range iterators over memtables and runs.

use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

use sift_filter::KeyHash;

use crate::batch::MAX_KEY_LEN;
use crate::error::{Error, Result};
use crate::iter::{BoxedSource, MergeIter, VisibleIter};
use crate::key::{SeqNo, ValueKind};
use crate::read_tier::{Files, MemoryOnly, ReadTier, TierError};
use crate::sstable::{ScanProbe, SharedBounds, Table};
use crate::version::TableRef;

use super::counters::{LevelCounters, Shard};
use super::run_iter::{RunIter, ScanFiltering};
use super::{Inner, SuperVersion};

/// User-key bounds owned by an iterator.
pub(super) type Bounds = (Bound<Vec<u8>>, Bound<Vec<u8>>);

/// A point lookup: the key, its hash (computed once, shared by every
/// filter), and the sequence number it reads at.
#[derive(Clone, Copy, Debug)]
pub(super) struct PointLookup<'a> {
    pub key: &'a [u8],
    pub hash: KeyHash,
    pub seq: SeqNo,
}

/// Which tables a point lookup reads, newest run first. A trait, so that
/// a get ([`AllTables`]) compiles to a loop with no scope test at all: it
/// is the hot path, and the tests cost about 80 instructions a get over
/// ten runs (measured with callgrind).
pub(super) trait TableScope: Copy {
    /// Whether the lookup reads run `run` of `level` (and, as runs come
    /// newest first, any after it).
    fn reads(self, level: usize, run: usize) -> bool;
    /// Whether a table whose newest entry has sequence number `max_seq`
    /// can hold a version the lookup wants.
    fn wants(self, max_seq: SeqNo) -> bool;
    /// Whether the lookup passes over run `run` of `level` (one it
    /// [`reads`](Self::reads) the runs after): none by default.
    #[inline]
    fn skips(self, _level: usize, _run: usize) -> bool {
        false
    }
}

/// Every table: a get.
#[derive(Clone, Copy, Debug)]
pub(super) struct AllTables;

impl TableScope for AllTables {
    #[inline]
    fn reads(self, _level: usize, _run: usize) -> bool {
        true
    }

    #[inline]
    fn wants(self, _max_seq: SeqNo) -> bool {
        true
    }
}

/// The runs before run `run` of `level` (and that run too, if
/// `inclusive`) from run `first.1` of level `first.0` on, and only tables
/// with a version newer than `seq`: what can hide a version found in that
/// run, less the runs a search by value read whole (before `first`).
#[derive(Clone, Copy, Debug)]
pub(super) struct NewerThan {
    pub level: usize,
    pub run: usize,
    pub inclusive: bool,
    pub seq: SeqNo,
    pub first: (usize, usize),
}

impl TableScope for NewerThan {
    fn reads(self, level: usize, run: usize) -> bool {
        (level, run) < (self.level, self.run)
            || (self.inclusive && (level, run) == (self.level, self.run))
    }

    fn wants(self, max_seq: SeqNo) -> bool {
        max_seq > self.seq
    }

    fn skips(self, level: usize, run: usize) -> bool {
        (level, run) < self.first
    }
}

/// Copies the caller's range into owned bounds.
pub(super) fn owned_bounds<K: AsRef<[u8]>, R: RangeBounds<K>>(range: &R) -> Bounds {
    let own = |bound: Bound<&K>| match bound {
        Bound::Included(key) => Bound::Included(key.as_ref().to_vec()),
        Bound::Excluded(key) => Bound::Excluded(key.as_ref().to_vec()),
        Bound::Unbounded => Bound::Unbounded,
    };
    (own(range.start_bound()), own(range.end_bound()))
}

impl Inner {
    /// The value of `key` as of sequence number `seq`.
    ///
    /// The key is hashed once, here; the same [`KeyHash`] is handed to the
    /// filter of every table the lookup meets.
    pub(super) fn get_at(&self, key: &[u8], seq: SeqNo) -> Result<Option<Vec<u8>>> {
        self.get_with(Files, key, None, Some(seq))
    }

    /// [`Inner::get_at`] for a caller that already hashed `key` (a
    /// transaction, which probes its own sets with the same hash).
    pub(super) fn get_hashed(
        &self,
        key: &[u8],
        hash: KeyHash,
        seq: SeqNo,
    ) -> Result<Option<Vec<u8>>> {
        self.get_with(Files, key, Some(hash), Some(seq))
    }

    /// The newest value of `key`. The version is pinned before the
    /// sequence number is read: a compaction that finishes in between
    /// keeps, in the pinned version, every version a later sequence number
    /// sees (reading the number first could lose the one it must see).
    pub(super) fn get_latest(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.get_with(Files, key, None, None)
    }

    /// [`Inner::get_at`] (or with no `seq`, [`Inner::get_latest`]) from
    /// memtables, resident metadata and the block cache only:
    /// [`TierError::NotInMemory`] where it would read a file. Its probes
    /// are counted, but as a get only once it answers.
    pub(super) fn get_in_memory(
        &self,
        key: &[u8],
        seq: Option<SeqNo>,
    ) -> std::result::Result<Option<Vec<u8>>, TierError> {
        self.get_with(MemoryOnly, key, None, seq)
    }

    /// A memtable hit needs no hash, so it is computed (unless given) only
    /// when the lookup reaches the tables. Reads as of `seq`, or of the
    /// newest write once the version is pinned, within `tier`.
    fn get_with<T: ReadTier>(
        &self,
        tier: T,
        key: &[u8],
        hash: Option<KeyHash>,
        seq: Option<SeqNo>,
    ) -> std::result::Result<Option<Vec<u8>>, T::Error> {
        if key.len() > MAX_KEY_LEN {
            return Err(Error::InvalidArgument(format!(
                "key of {} bytes is over the limit of {MAX_KEY_LEN}",
                key.len()
            ))
            .into());
        }
        let current = self.pin();
        let seq = seq.unwrap_or_else(|| self.visible_seq());
        let found = self.counters.with(|counters| {
            for memtable in std::iter::once(&current.active).chain(&current.immutables) {
                if let Some(value) = memtable.lookup(key, seq) {
                    counters.gets.add(1);
                    counters.memtable_hits.add(1);
                    return Ok(value.map(|value| (ValueKind::Value, value)));
                }
            }
            // One hash per lookup that reaches the tables, whoever computed it.
            let hash = hash.unwrap_or_else(|| KeyHash::of(key));
            counters.key_hashes.add(1);
            let mut blocks_read = 0;
            // Scratch for the keys the block seeks decode, shared by the tables.
            let mut scratch = Vec::new();
            let found = Self::get_from_tables(
                tier,
                &current,
                PointLookup { key, hash, seq },
                AllTables,
                counters,
                &mut blocks_read,
                &mut scratch,
            );
            counters.data_blocks_read.add(blocks_read);
            counters.gets.add(u64::from(found.is_ok()));
            found
        })?;
        Ok(found.and_then(|(kind, value)| (kind == ValueKind::Value).then_some(value)))
    }

    /// The newest values of `keys`, all read at one sequence number, as
    /// RocksDB's MultiGet does: each key is hashed once; run by run, every
    /// remaining key finds its table and prefetches its filter line before
    /// any filter is probed, so the cache misses overlap; the survivors are
    /// looked up in key order, reading each data block once.
    pub(super) fn multi_get_latest(&self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        if let Some(long) = keys.iter().find(|k| k.len() > MAX_KEY_LEN) {
            return Err(Error::InvalidArgument(format!(
                "key of {} bytes is over the limit of {MAX_KEY_LEN}",
                long.len()
            )));
        }
        let current = self.pin();
        let seq = self.visible_seq();
        let mut found: Vec<Option<(ValueKind, Vec<u8>)>> = vec![None; keys.len()];
        self.counters.with(|counters| {
            counters.gets.add(keys.len() as u64);
            // Keys the memtables do not settle, with their hashes.
            let mut pending: Vec<(usize, KeyHash)> = Vec::with_capacity(keys.len());
            for (i, key) in keys.iter().enumerate() {
                let memtables = std::iter::once(&current.active).chain(&current.immutables);
                match memtables.into_iter().find_map(|m| m.lookup(key, seq)) {
                    Some(value) => {
                        counters.memtable_hits.add(1);
                        found[i] = value.map(|v| (ValueKind::Value, v));
                    }
                    None => pending.push((i, KeyHash::of(key))),
                }
            }
            counters.key_hashes.add(pending.len() as u64);
            let mut blocks_read = 0;
            let result = Self::multi_get_from_tables(
                &current,
                keys,
                seq,
                &mut pending,
                &mut found,
                counters,
                &mut blocks_read,
            );
            counters.data_blocks_read.add(blocks_read);
            result
        })?;
        Ok(found
            .into_iter()
            .map(|f| f.and_then(|(kind, value)| (kind == ValueKind::Value).then_some(value)))
            .collect())
    }

    /// The table part of [`Inner::multi_get_latest`]: settles what it finds
    /// of `pending` into `found`, run by run, newest first.
    fn multi_get_from_tables(
        current: &SuperVersion,
        keys: &[&[u8]],
        seq: SeqNo,
        pending: &mut Vec<(usize, KeyHash)>,
        found: &mut [Option<(ValueKind, Vec<u8>)>],
        counters: &Shard,
        blocks_read: &mut u64,
    ) -> Result<()> {
        let mut scratch = Vec::new();
        // (pending position, table id, table) of the keys a run may hold.
        let mut probes: Vec<(usize, u64, TableRef)> = Vec::with_capacity(pending.len());
        let mut settled = vec![false; pending.len()];
        for (level, tables) in current.version.levels.iter().enumerate() {
            let counters = counters.level(level);
            for run in &tables.runs {
                probes.clear();
                for (p, &(i, hash)) in pending.iter().enumerate() {
                    if let Some(live) = run.table_for_at(keys[i], seq) {
                        let table = live.table()?;
                        table.prefetch_filter(keys[i], hash);
                        probes.push((p, live.meta.id, table));
                    }
                }
                probes.retain(|(p, _, table)| {
                    let (i, hash) = pending[*p];
                    probe_filter(Files, counters, table, keys[i], hash)
                });
                // In key order, so keys of one block follow each other.
                probes.sort_unstable_by_key(|&(p, id, _)| (id, keys[pending[p].0]));
                let mut last = None;
                let mut last_table = None;
                for (p, id, table) in &probes {
                    let p = *p;
                    if last_table != Some(*id) {
                        (last, last_table) = (None, Some(*id));
                    }
                    let i = pending[p].0;
                    let hit = table.lookup_reusing(
                        Files,
                        keys[i],
                        seq,
                        &mut last,
                        blocks_read,
                        &mut scratch,
                    )?;
                    match hit {
                        Some(hit) => {
                            found[i] = Some(hit);
                            settled[p] = true;
                        }
                        None => counters.false_positives.add(1),
                    }
                }
                if probes.iter().any(|&(p, _, _)| settled[p]) {
                    let mut flags = settled.iter();
                    pending.retain(|_| !flags.next().is_some_and(|&s| s));
                    settled.clear();
                    settled.resize(pending.len(), false);
                }
            }
        }
        Ok(())
    }

    /// The newest version of `key` visible at `seq` in the tables of
    /// `current` that `scope` names, newest run first, read within `tier`,
    /// with the found entry's internal key left in `scratch`. A get and the
    /// validation of a search by value both go through here, so their key
    /// filter probes are counted alike in `counters`.
    pub(super) fn get_from_tables<T: ReadTier>(
        tier: T,
        current: &SuperVersion,
        lookup: PointLookup<'_>,
        scope: impl TableScope,
        counters: &Shard,
        blocks_read: &mut u64,
        scratch: &mut Vec<u8>,
    ) -> std::result::Result<Option<(ValueKind, Vec<u8>)>, T::Error> {
        let PointLookup { key, hash, seq } = lookup;
        for (level, tables) in current.version.levels.iter().enumerate() {
            let counters = counters.level(level);
            for (at, run) in tables.runs.iter().enumerate() {
                if !scope.reads(level, at) {
                    return Ok(None);
                }
                if scope.skips(level, at) {
                    continue;
                }
                let Some(table) = run.table_for_at(key, seq) else {
                    continue;
                };
                if !scope.wants(table.meta.max_seq) {
                    continue;
                }
                let table = table.table_in(tier)?;
                if !probe_filter(tier, counters, &table, key, hash) {
                    continue;
                }
                match table.lookup(tier, key, seq, blocks_read, scratch)? {
                    Some(found) => return Ok(Some(found)),
                    None => counters.false_positives.add(1),
                }
            }
        }
        Ok(None)
    }

    /// An iterator over the user keys within `bounds` as of `seq`.
    pub(super) fn iter(&self, bounds: Bounds, seq: SeqNo) -> DbIter {
        let filtering = self.scan_filtering(&bounds);
        Self::iter_filtered(&self.current(), bounds, seq, filtering)
    }

    /// An iterator over the user keys within `bounds` as of the newest
    /// write, read once the version is pinned (see [`Inner::get_latest`]).
    pub(super) fn iter_latest(&self, bounds: Bounds) -> DbIter {
        let filtering = self.scan_filtering(&bounds);
        let current = self.current();
        Self::iter_filtered(&current, bounds, self.visible_seq(), filtering)
    }

    /// [`Inner::iter`] over the memtables and version of `current`, reading
    /// every table the bounds overlap (for whole-store passes).
    pub(super) fn iter_in(current: &SuperVersion, bounds: Bounds, seq: SeqNo) -> DbIter {
        Self::iter_filtered(current, bounds, seq, None)
    }

    /// What the scan filters are asked for `bounds`: the prefix every key
    /// within them shares (with a prefix extractor), and whether they are
    /// bounded on both sides (for the range filters); with range filters,
    /// runs may also skip their fronts. `None` for a scan no filter can
    /// rule out.
    fn scan_filtering(&self, bounds: &Bounds) -> Option<Arc<ScanFiltering>> {
        let policy = &self.options.filter_policy;
        let prefix = policy.prefix_extractor.as_ref().and_then(|extractor| {
            let prefix = extractor.shared_by(bounds)?;
            Some((extractor.clone(), KeyHash::of(prefix)))
        });
        let bounded = |bound: &Bound<Vec<u8>>| !matches!(bound, Bound::Unbounded);
        let skips = policy.range_filter.is_some();
        let ranged = skips && bounded(&bounds.0) && bounded(&bounds.1);
        (prefix.is_some() || skips).then(|| {
            Arc::new(ScanFiltering {
                probe: ScanProbe { prefix, ranged },
                skips,
                counters: self.counters.clone(),
            })
        })
    }

    /// [`Inner::iter_in`], skipping the tables `filtering` rules out.
    fn iter_filtered(
        current: &SuperVersion,
        bounds: Bounds,
        seq: SeqNo,
        filtering: Option<Arc<ScanFiltering>>,
    ) -> DbIter {
        let merged = Self::merged(current, &bounds, usize::MAX, filtering.as_ref());
        DbIter {
            inner: VisibleIter::new(merged, seq, bounds),
        }
    }

    /// Every version within `bounds` in the memtables of `current` and its
    /// first `runs` runs (newest first: by level, then run), merged; runs
    /// may skip the tables `filtering` rules out.
    pub(super) fn merged(
        current: &SuperVersion,
        bounds: &Bounds,
        runs: usize,
        filtering: Option<&Arc<ScanFiltering>>,
    ) -> MergeIter<'static> {
        let mut sources: Vec<BoxedSource<'static>> = Vec::new();
        for memtable in std::iter::once(&current.active).chain(&current.immutables) {
            // Writes up to `seq` are in the memtable before `seq` is
            // visible, so one empty now holds nothing this scan may see.
            if !memtable.is_empty() {
                sources.push(Box::new(memtable.iter(bounds.clone())));
            }
        }
        let shared: SharedBounds = Arc::new(bounds.clone());
        let all = current.version.levels.iter().enumerate();
        let every_run =
            all.flat_map(|(index, level)| (0..level.runs.len()).map(move |run| (index, run)));
        for (index, run) in every_run.take(runs) {
            if let Some(iter) = RunIter::new(&current.version, index, run, &shared, filtering) {
                sources.push(Box::new(iter));
            }
        }
        MergeIter::new(sources)
    }
}

/// Keys and values in a range, as of one sequence number, ascending (or
/// descending with `.rev()`). Yields `Err` if a table cannot be read, then
/// ends. Holds the tables it reads open until dropped.
pub struct DbIter {
    inner: VisibleIter<'static>,
}

impl std::fmt::Debug for DbIter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DbIter").finish_non_exhaustive()
    }
}

impl Iterator for DbIter {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        self.inner.next()
    }
}

impl DoubleEndedIterator for DbIter {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.inner.next_back()
    }
}

/// Asks `table`'s filter about `key` (which lies in the table's key range)
/// and counts the probe: whether the table may hold the key.
fn probe_filter<T: ReadTier>(
    tier: T,
    counters: &LevelCounters,
    table: &Table,
    key: &[u8],
    hash: KeyHash,
) -> bool {
    let may_contain = table.may_contain_in_range(tier, key, hash);
    counters.probes.add(1);
    counters.negatives.add(u64::from(!may_contain));
    may_contain
}
