//! Search by value: which keys have a value (or an extracted field equal to
//! it) as of a snapshot, without scanning every table.
//!
//! 1. The value is hashed once. The index's leaves (one Bloom filter per
//!    table, see `value/table_filters.rs`) are searched through the
//!    hierarchy, the bit-sliced layout or one by one ([`Method`], chosen by
//!    the planner of `sift-value-index` unless the caller names one); tables
//!    without a readable leaf (written before the index, or damaged) are
//!    always candidates.
//! 2. Candidate tables and the memtables (which have no filter) are scanned
//!    for entries whose extracted values include the searched one.
//! 3. Every key found is validated (Algorithm 3 of Macyna & Ordonez): it is
//!    returned once, and only if its newest version visible at the snapshot
//!    is not a tombstone and still has the value. An older version that had
//!    the value, or a newer one hidden by the snapshot, never makes a result.

use std::collections::BTreeSet;
use std::ops::Bound;

use sift_filter::KeyHash;
use sift_value_index::planner::CostModel;
use sift_value_index::{Method, ProbeStats};

use crate::error::{Error, Result};
use crate::key::{Entry, SeqNo, ValueKind};
use crate::value::IndexRecord;

use crate::db::{Inner, lock};

/// The planner's costs with the engine's own table scan: opening a table
/// iterator and reading its first block (a few µs), then decoding, copying
/// and running the extractor on each entry (tens of ns, against the 2.2 ns
/// of the crate's in-memory default). Estimates from `sift-bench db`'s
/// scan and seek figures; the filter-side constants are the crate's
/// measured defaults.
const SCAN_COSTS: CostModel = CostModel {
    scan_table_ns: 5_000.0,
    scan_entry_ns: 60.0,
    ..CostModel::DEFAULT
};

/// What one search by value did: the `explain` of a query.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct FindStats {
    /// How the leaves were searched.
    pub method: Method,
    /// Inner nodes of the hierarchy probed.
    pub inner_nodes_probed: u64,
    /// Leaf filters probed one by one (bloom-scan, and the hierarchy's
    /// bottom nodes); the flat layout reads rows instead: `words_anded`.
    pub leaves_probed: u64,
    /// Leaves that said "maybe".
    pub leaves_positive: u64,
    /// 64-bit words ANDed by the flat layout.
    pub words_anded: u64,
    /// Tables read in full: the positive leaves plus every table without a
    /// readable leaf (all tables for [`Method::Scan`]).
    pub tables_scanned: u64,
    /// Tables scanned because they have no readable leaf of this index.
    pub tables_unindexed: u64,
    /// Scanned tables that really held an entry with the value: the rest
    /// were the filters' false positives.
    pub tables_matched: u64,
    /// Memtable entries scanned (memtables have no value filter).
    pub memtable_entries_scanned: u64,
    /// Candidate keys checked against their newest visible version.
    pub entries_validated: u64,
    /// Keys returned.
    pub results: u64,
}

/// The result of a search by value: `(key, value)` pairs in key order,
/// each key once. Computed when the search is made; [`Find::stats`] is
/// complete from the start.
#[derive(Debug)]
pub struct Find {
    results: std::vec::IntoIter<(Vec<u8>, Vec<u8>)>,
    stats: FindStats,
}

impl Find {
    /// What the search did.
    #[must_use]
    pub fn stats(&self) -> &FindStats {
        &self.stats
    }
}

impl Iterator for Find {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        self.results.next().map(Ok)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.results.size_hint()
    }
}

/// The keys of a [`Find`], without their values.
#[derive(Debug)]
pub struct FindKeys(Find);

impl FindKeys {
    pub(crate) fn new(find: Find) -> Self {
        Self(find)
    }

    /// What the search did.
    #[must_use]
    pub fn stats(&self) -> &FindStats {
        self.0.stats()
    }
}

impl Iterator for FindKeys {
    type Item = Result<Vec<u8>>;

    fn next(&mut self) -> Option<Self::Item> {
        self.0.next().map(|item| item.map(|(key, _)| key))
    }
}

/// Whether `extractor` yields `wanted` from `value`.
fn has_value(index: &IndexRecord, value: &[u8], wanted: &[u8]) -> bool {
    let mut found = false;
    index
        .extractor
        .extract(value, &mut |v| found |= v == wanted);
    found
}

impl Inner {
    /// Keys whose value, by `index`, is `wanted`, as of `seq`.
    pub(crate) fn find_at(
        &self,
        index: &str,
        wanted: &[u8],
        seq: SeqNo,
        method: Option<Method>,
    ) -> Result<Find> {
        let record = self
            .index_named(index)
            .ok_or_else(|| Error::InvalidArgument(format!("no value index named {index:?}")))?;
        let current = self.current();
        let hash = KeyHash::of(wanted);
        let mut probes = ProbeStats::default();
        let (method, candidates) = {
            let mut leaves = lock(&self.value_leaves);
            let state = leaves.sync(&current.version, &record)?;
            let method = method.unwrap_or_else(|| {
                let mut profile = state.profile().clone();
                let tables = current.version.tables().count().max(1);
                let entries: u64 = current.version.tables().map(|t| t.meta.entries).sum();
                profile.mean_leaf_entries = entries as f64 / tables as f64;
                sift_value_index::planner::plan(&profile, &SCAN_COSTS)
            });
            let mut candidates: BTreeSet<u64> = match method {
                Method::Scan => current.version.tables().map(|t| t.meta.id).collect(),
                _ => state
                    .index
                    .search(method, hash, &mut probes)
                    .into_iter()
                    .collect(),
            };
            candidates.extend(state.unindexed.iter().copied());
            (method, candidates)
        };
        let mut stats = FindStats {
            method,
            inner_nodes_probed: probes.inner_nodes_probed,
            leaves_probed: probes.leaves_probed,
            leaves_positive: probes.leaves_positive,
            words_anded: probes.words_anded,
            tables_scanned: 0,
            tables_unindexed: 0,
            tables_matched: 0,
            memtable_entries_scanned: 0,
            entries_validated: 0,
            results: 0,
        };
        let mut keys = BTreeSet::new();
        let matching = |entry: &Entry| {
            entry.key.seq <= seq
                && entry.key.kind == ValueKind::Value
                && has_value(&record, &entry.value, wanted)
        };
        for memtable in std::iter::once(&current.active).chain(&current.immutables) {
            for entry in memtable.iter((Bound::Unbounded, Bound::Unbounded)) {
                let entry = entry?;
                stats.memtable_entries_scanned += 1;
                if matching(&entry) {
                    keys.insert(entry.key.user_key);
                }
            }
        }
        {
            let leaves = lock(&self.value_leaves);
            stats.tables_unindexed = leaves
                .state(record.id)
                .map_or(0, |s| s.unindexed.intersection(&candidates).count() as u64);
        }
        for table in current
            .version
            .tables()
            .filter(|t| candidates.contains(&t.meta.id))
        {
            stats.tables_scanned += 1;
            let mut matched = false;
            for entry in table.table.iter(Bound::Unbounded, Bound::Unbounded) {
                let entry = entry?;
                if matching(&entry) {
                    matched = true;
                    keys.insert(entry.key.user_key);
                }
            }
            stats.tables_matched += u64::from(matched);
        }
        let mut results = Vec::new();
        for key in keys {
            stats.entries_validated += 1;
            if let Some(value) = self.get_at(&key, seq)?
                && has_value(&record, &value, wanted)
            {
                results.push((key, value));
            }
        }
        stats.results = results.len() as u64;
        Ok(Find {
            results: results.into_iter(),
            stats,
        })
    }
}
