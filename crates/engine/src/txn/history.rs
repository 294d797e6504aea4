//! Recently committed write sets: what a committing transaction is
//! validated against. Lives inside the writer lock, so validation, the WAL
//! write and the recording of the new write set are one critical section.

use std::collections::{BTreeMap, VecDeque};
use std::ops::Bound;

use sift_filter::{Filter, KeyHash, PartitionedBloom};

use crate::error::Error;
use crate::iter::UserBounds;
use crate::key::SeqNo;

use super::keyset::FilteredMap;

/// Committed sets with fewer keys than this get no filter: probing a
/// handful of keys exactly costs less than building and probing a filter.
const FILTER_MIN_KEYS: usize = 16;

/// FPR of a committed set's filter: 1%, as the transaction's own sets.
const COMMITTED_FPR: f64 = 0.01;

/// Bytes charged per retained key on top of its length: the key's `Vec`
/// header (24), its hash (16) and slack for the deque and allocator.
const KEY_OVERHEAD: usize = 64;

/// The keys one commit (a transaction's or a plain write's) wrote.
#[derive(Debug)]
pub(crate) struct CommittedSet {
    /// Sequence number of the commit's first write.
    pub first_seq: SeqNo,
    /// Written keys with their hashes, sorted by key, each once.
    keys: Vec<(Vec<u8>, KeyHash)>,
    /// A single-stage partitioned Bloom filter over `keys` (its size is
    /// known, so it needs no scalable chain); `None` for small sets or when
    /// the pre-check is off.
    filter: Option<PartitionedBloom>,
    bytes: usize,
}

impl CommittedSet {
    /// A set over `keys` (sorted, distinct).
    pub fn new(first_seq: SeqNo, keys: Vec<(Vec<u8>, KeyHash)>, precheck: bool) -> Self {
        let filter = (precheck && keys.len() >= FILTER_MIN_KEYS)
            .then(|| PartitionedBloom::with_fpr(keys.len() as u64, COMMITTED_FPR).ok())
            .flatten()
            .map(|mut filter| {
                keys.iter().for_each(|(_, hash)| filter.insert(*hash));
                filter
            });
        let bytes = keys.iter().map(|(k, _)| k.len() + KEY_OVERHEAD).sum();
        Self {
            first_seq,
            keys,
            filter,
            bytes,
        }
    }

    /// The set of the keys a plain write batch wrote.
    pub fn from_batch(first_seq: SeqNo, batch: &crate::batch::WriteBatch, precheck: bool) -> Self {
        let mut keys: Vec<(Vec<u8>, KeyHash)> = batch
            .iter()
            .map(|(_, key, _)| (key.to_vec(), KeyHash::of(key)))
            .collect();
        keys.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        keys.dedup_by(|a, b| a.0 == b.0);
        Self::new(first_seq, keys, precheck)
    }

    /// Whether the set holds `key`: filter first, then binary search.
    fn contains(&self, key: &[u8], hash: KeyHash, counts: &mut ValidationCounts) -> bool {
        if let Some(filter) = &self.filter
            && !filter.may_contain(hash)
        {
            counts.rejections += 1;
            return false;
        }
        counts.exact += 1;
        self.keys
            .binary_search_by(|(k, _)| k.as_slice().cmp(key))
            .is_ok()
    }

    /// The first key of the set within `bounds`.
    fn first_in(&self, bounds: &UserBounds) -> Option<&[u8]> {
        let start = self.keys.partition_point(|(k, _)| match &bounds.0 {
            Bound::Included(b) => k < b,
            Bound::Excluded(b) => k <= b,
            Bound::Unbounded => false,
        });
        let (key, _) = self.keys.get(start)?;
        let inside = match &bounds.1 {
            Bound::Included(b) => key <= b,
            Bound::Excluded(b) => key < b,
            Bound::Unbounded => true,
        };
        inside.then_some(key.as_slice())
    }
}

/// Probes made while validating one commit.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct ValidationCounts {
    /// Probes a filter answered "not here".
    pub rejections: u64,
    /// Exact look-ups (after a "maybe", or with no filter).
    pub exact: u64,
}

/// What a committing transaction asks validation about.
pub(crate) struct Footprint<'a, V> {
    /// The sequence number its reads saw.
    pub snapshot: SeqNo,
    pub reads: &'a FilteredMap<()>,
    pub ranges: &'a [UserBounds],
    pub writes: &'a FilteredMap<V>,
}

/// The active transactions' snapshots and the write sets committed since
/// the oldest of them.
#[derive(Debug)]
pub(crate) struct CommitLog {
    /// Snapshot sequence number -> active transactions reading at it.
    active: BTreeMap<SeqNo, usize>,
    /// Oldest first, so ascending `first_seq`.
    committed: VecDeque<CommittedSet>,
    retained_bytes: usize,
    /// Bound on `retained_bytes`.
    limit_bytes: usize,
    /// The largest `first_seq` of a set dropped to keep the bound: a
    /// transaction whose snapshot is older cannot be validated and fails.
    dropped_through: SeqNo,
    precheck: bool,
}

impl CommitLog {
    /// An empty log retaining at most about `limit_bytes` of keys.
    pub fn new(limit_bytes: usize, precheck: bool) -> Self {
        Self {
            active: BTreeMap::new(),
            committed: VecDeque::new(),
            retained_bytes: 0,
            limit_bytes,
            dropped_through: 0,
            precheck,
        }
    }

    /// Whether the pre-check is on.
    pub fn precheck(&self) -> bool {
        self.precheck
    }

    /// Whether any transaction is active: only then are commits recorded.
    pub fn any_active(&self) -> bool {
        !self.active.is_empty()
    }

    /// Registers a transaction reading at `snapshot`.
    pub fn begin(&mut self, snapshot: SeqNo) {
        *self.active.entry(snapshot).or_insert(0) += 1;
    }

    /// Unregisters a transaction that read at `snapshot`, and removes the
    /// sets no remaining transaction needs. They are returned so that the
    /// caller frees them after releasing the writer lock.
    #[must_use = "drop the pruned sets after releasing the lock"]
    pub fn end(&mut self, snapshot: SeqNo) -> Vec<CommittedSet> {
        if let Some(count) = self.active.get_mut(&snapshot) {
            *count -= 1;
            if *count == 0 {
                self.active.remove(&snapshot);
            }
        }
        self.prune()
    }

    /// Drops every set committed at or before the oldest active snapshot:
    /// only transactions with an older snapshot could conflict with it.
    fn prune(&mut self) -> Vec<CommittedSet> {
        let oldest = self.active.keys().next().copied();
        let mut pruned = Vec::new();
        while let Some(front) = self.committed.front() {
            if oldest.is_some_and(|oldest| front.first_seq > oldest) {
                break;
            }
            self.retained_bytes -= front.bytes;
            pruned.extend(self.committed.pop_front());
        }
        if oldest.is_none() {
            // Nobody can be older than a dropped set any more.
            self.dropped_through = 0;
        }
        pruned
    }

    /// Records the keys a commit starting at `first_seq` wrote, if any
    /// transaction is active; keeps the log within its bound by dropping
    /// the oldest sets (whose readers will then fail validation).
    pub fn record(&mut self, set: impl FnOnce() -> CommittedSet) {
        if !self.any_active() {
            return;
        }
        let set = set();
        self.retained_bytes += set.bytes;
        self.committed.push_back(set);
        while self.retained_bytes > self.limit_bytes && self.committed.len() > 1 {
            if let Some(front) = self.committed.pop_front() {
                self.retained_bytes -= front.bytes;
                self.dropped_through = self.dropped_through.max(front.first_seq);
            }
        }
    }

    /// Sets retained now.
    pub fn retained_sets(&self) -> usize {
        self.committed.len()
    }

    /// Fails with [`Error::Conflict`] if a set committed after the
    /// footprint's snapshot wrote a key it read or wrote, or a key within a
    /// range it scanned.
    pub fn validate<V>(
        &self,
        footprint: &Footprint<'_, V>,
        counts: &mut ValidationCounts,
    ) -> Result<(), Error> {
        if self.dropped_through > footprint.snapshot {
            return Err(Error::Conflict {
                key: None,
                reason: "commits after this transaction's snapshot were dropped from the \
                         bounded history (txn_history_bytes); it cannot be validated"
                    .into(),
            });
        }
        let newer = self
            .committed
            .partition_point(|set| set.first_seq <= footprint.snapshot);
        for set in self.committed.range(newer..) {
            let conflict = |key: &[u8], what: &str| Error::Conflict {
                key: Some(key.to_vec()),
                reason: format!("{what}, written by a commit at sequence {}", set.first_seq),
            };
            if let Some(key) = intersect(set, footprint.reads, counts) {
                return Err(conflict(key, "it read the key"));
            }
            if let Some(key) = intersect(set, footprint.writes, counts) {
                return Err(conflict(key, "it wrote the key (first committer wins)"));
            }
            for bounds in footprint.ranges {
                if let Some(key) = set.first_in(bounds) {
                    return Err(conflict(key, "the key is in a range it scanned"));
                }
            }
        }
        Ok(())
    }
}

/// A key in both `set` and `own`, if any. Probes from the smaller side into
/// the larger one's filter, so a one-key plain write costs one probe of the
/// transaction's filter, and a large commit against a small transaction
/// costs the transaction's keys' probes of the commit's filter.
fn intersect<'a, V>(
    set: &'a CommittedSet,
    own: &'a FilteredMap<V>,
    counts: &mut ValidationCounts,
) -> Option<&'a [u8]> {
    if set.keys.len() <= own.len() {
        set.keys.iter().find_map(|(key, hash)| {
            if own.rules_out(*hash) {
                counts.rejections += 1;
                return None;
            }
            counts.exact += 1;
            own.contains_exact(key).then_some(key.as_slice())
        })
    } else {
        own.iter()
            .find_map(|(key, hash, _)| set.contains(key, *hash, counts).then_some(key.as_slice()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(first_seq: SeqNo, keys: &[&str]) -> CommittedSet {
        let mut keys: Vec<_> = keys
            .iter()
            .map(|k| (k.as_bytes().to_vec(), KeyHash::of(k.as_bytes())))
            .collect();
        keys.sort();
        CommittedSet::new(first_seq, keys, true)
    }

    fn map(keys: &[&str]) -> FilteredMap<()> {
        let mut map = FilteredMap::new(true);
        for key in keys {
            map.insert(key.as_bytes(), KeyHash::of(key.as_bytes()), ());
        }
        map
    }

    fn conflict_key(
        log: &CommitLog,
        snapshot: SeqNo,
        reads: &[&str],
        writes: &[&str],
    ) -> Option<Vec<u8>> {
        let (reads, writes) = (map(reads), map(writes));
        let footprint = Footprint {
            snapshot,
            reads: &reads,
            ranges: &[],
            writes: &writes,
        };
        match log.validate(&footprint, &mut ValidationCounts::default()) {
            Ok(()) => None,
            Err(Error::Conflict { key, .. }) => Some(key.unwrap_or_default()),
            Err(other) => panic!("{other}"),
        }
    }

    #[test]
    fn only_sets_after_the_snapshot_conflict() {
        let mut log = CommitLog::new(1 << 20, true);
        log.begin(10);
        log.record(|| set(8, &["old"]));
        log.record(|| set(11, &["new"]));
        assert_eq!(conflict_key(&log, 10, &["old"], &[]), None);
        assert_eq!(conflict_key(&log, 10, &["new"], &[]), Some(b"new".to_vec()));
        assert_eq!(conflict_key(&log, 10, &[], &["new"]), Some(b"new".to_vec()));
        assert_eq!(conflict_key(&log, 11, &["new"], &[]), None);
    }

    #[test]
    fn large_sets_are_probed_through_their_filter() {
        let mut log = CommitLog::new(1 << 20, true);
        log.begin(0);
        let many: Vec<String> = (0..1000).map(|i| format!("k{i}")).collect();
        let refs: Vec<&str> = many.iter().map(String::as_str).collect();
        log.record(|| set(1, &refs));
        let reads = map(&["x1", "x2", "x3", "k500"]);
        let footprint = Footprint {
            snapshot: 0,
            reads: &reads,
            ranges: &[],
            writes: &map(&[]),
        };
        let mut counts = ValidationCounts::default();
        let err = log.validate(&footprint, &mut counts).unwrap_err();
        assert!(err.to_string().contains("k500"), "{err}");
        assert!(counts.exact >= 1 && counts.rejections + counts.exact <= 4);
    }

    #[test]
    fn ranges_conflict_with_keys_inside_them() {
        let mut log = CommitLog::new(1 << 20, true);
        log.begin(0);
        log.record(|| set(1, &["b", "m"]));
        let empty = map(&[]);
        let check = |bounds: UserBounds| {
            let ranges = [bounds];
            let footprint = Footprint {
                snapshot: 0,
                reads: &empty,
                ranges: &ranges,
                writes: &empty,
            };
            log.validate(&footprint, &mut ValidationCounts::default())
                .err()
        };
        use Bound::{Excluded, Included, Unbounded};
        assert!(check((Included(b"c".to_vec()), Excluded(b"m".to_vec()))).is_none());
        let err = check((Included(b"c".to_vec()), Included(b"m".to_vec()))).unwrap();
        assert!(err.to_string().contains("\"m\""), "{err}");
        assert!(check((Unbounded, Excluded(b"b".to_vec()))).is_none());
        assert!(check((Excluded(b"m".to_vec()), Unbounded)).is_none());
    }

    #[test]
    fn pruning_and_the_bound_keep_the_log_small() {
        let mut log = CommitLog::new(1 << 20, true);
        log.record(|| set(1, &["a"]));
        assert_eq!(
            log.retained_sets(),
            0,
            "nothing is recorded with no transaction"
        );
        log.begin(5);
        log.begin(7);
        log.record(|| set(6, &["a"]));
        log.record(|| set(8, &["b"]));
        drop(log.end(5));
        assert_eq!(
            log.retained_sets(),
            1,
            "only the set after snapshot 7 stays"
        );
        drop(log.end(7));
        assert_eq!(log.retained_sets(), 0);

        // A bound of two keys: the third set pushes the first one out, and
        // a transaction older than it can no longer be validated.
        let mut log = CommitLog::new(2 * (1 + KEY_OVERHEAD), true);
        log.begin(0);
        for seq in 1..=3 {
            log.record(|| set(seq, &["z"]));
        }
        assert_eq!(log.retained_sets(), 2);
        assert_eq!(conflict_key(&log, 0, &["q"], &[]), Some(Vec::new()));
        drop(log.end(0));
        assert_eq!(log.retained_sets(), 0);
        assert_eq!(log.dropped_through, 0);
    }
}
