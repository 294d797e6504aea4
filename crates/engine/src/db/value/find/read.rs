//! Step 3 of a search: the entries with the value in the memtables
//! (through their value postings) and in the candidate blocks, one block
//! at a time.

use std::collections::VecDeque;

use sift_filter::KeyHash;

use super::candidates::CandidateTable;
use super::{FindStats, has_value, same_bytes};
use crate::db::SuperVersion;
use crate::error::Result;
use crate::key::{SeqNo, ValueKind};
use crate::memtable::Memtable;
use crate::value_def::IndexRecord;

/// An entry with the searched value that is the newest version of its key
/// visible at the snapshot within its source. Validation decides whether
/// a newer source hides it.
#[derive(Debug)]
pub(in crate::db) struct Hit {
    pub key: Vec<u8>,
    pub value: Vec<u8>,
    pub seq: SeqNo,
    pub source: Source,
}

/// Where a [`Hit`] was found.
#[derive(Debug)]
pub(in crate::db) enum Source {
    /// Memtable `i`: 0 is the active one, then the frozen ones newest first.
    Memtable(usize),
    /// A table of run `run` of level `level`.
    Table {
        level: usize,
        run: usize,
        /// The key's versions began in the block before, which was not
        /// necessarily read: a newer visible one may be there.
        check_own: bool,
    },
    /// The sources read whole (`whole.rs`): the newest visible version of
    /// the key in all of them, which decides it. A result if `matched`
    /// (a version with the value); otherwise it only hides older hits.
    ReadWhole { matched: bool },
}

/// What a search is for.
pub(super) struct Query {
    pub index: IndexRecord,
    /// The value searched for.
    pub value: Vec<u8>,
    /// Its hash, as the filters and postings hold it.
    pub hash: KeyHash,
    /// The snapshot.
    pub seq: SeqNo,
    /// The least key returned.
    pub from: Vec<u8>,
    /// Per memtable (active first, then the frozen ones newest first), the
    /// keys posted under the value if its postings are read, `None` if it
    /// is read whole: decided once, when the search is made.
    pub posted: Vec<Option<u64>>,
    /// The run `(level, run)` before which every run, and every memtable,
    /// is read whole (`whole.rs`), when the plan reads some whole.
    pub read_whole: Option<(usize, usize)>,
}

impl Query {
    /// The search of `wanted` (hashed to `hash`) by `index` in `current`
    /// at `seq`, from key `from`.
    pub(super) fn new(
        current: &SuperVersion,
        index: IndexRecord,
        wanted: &[u8],
        hash: KeyHash,
        seq: SeqNo,
        from: &[u8],
    ) -> Self {
        let posted = std::iter::once(&current.active)
            .chain(&current.immutables)
            .map(|memtable| posted_keys(memtable, index.id, hash))
            .collect();
        Self {
            index,
            value: wanted.to_vec(),
            hash,
            seq,
            from: from.to_vec(),
            posted,
            read_whole: None,
        }
    }
}

/// Past this share of a memtable's entries, a value's postings are not
/// read: each costs a skip-list search where a scan steps to the next
/// node, so reading the whole memtable costs about as much.
const MAX_POSTING_SHARE: f64 = 0.25;

/// How many keys of `memtable` are posted under the value hashed to
/// `hash` in index `index_id`, if its postings are worth reading rather
/// than the whole memtable.
fn posted_keys(memtable: &Memtable, index_id: u64, hash: KeyHash) -> Option<u64> {
    let cap = (memtable.len() as f64 * MAX_POSTING_SHARE) as u64 + 1;
    let count = memtable.postings().count_up_to(index_id, hash, cap)?;
    (count < cap).then_some(count)
}

/// The hits of each memtable, in key order: through the value's postings
/// where they are worth reading, else by reading every entry.
pub(super) fn memtables(
    current: &SuperVersion,
    query: &Query,
    stats: &mut FindStats,
) -> Result<Vec<VecDeque<Hit>>> {
    let memtables = std::iter::once(&current.active).chain(&current.immutables);
    let mut all = Vec::new();
    for (i, memtable) in memtables.enumerate() {
        // Postings planned on may be gone since (an extractor panicked on
        // a later write): the memtable is then read whole.
        let posted = query.posted.get(i).copied().flatten();
        let through_postings = posted.and_then(|_| memtable_postings(memtable, i, query, stats));
        all.push(match through_postings {
            Some(hits) => hits,
            None => memtable_entries(memtable, i, query, stats)?,
        });
    }
    Ok(all)
}

/// The hits of memtable `i` among the keys posted under the value: the
/// newest visible version of each, if it holds the value. `None` if the
/// memtable no longer has complete postings of the index.
fn memtable_postings(
    memtable: &Memtable,
    i: usize,
    query: &Query,
    stats: &mut FindStats,
) -> Option<VecDeque<Hit>> {
    let keys = memtable
        .postings()
        .keys(query.index.id, query.hash, &query.from)?;
    let hits = keys
        .filter_map(|key| {
            stats.memtable_postings_read += 1;
            let entry = memtable.get(&key, query.seq)?;
            (entry.key.kind == ValueKind::Value
                && has_value(&query.index, &entry.value, &query.value))
            .then_some(Hit {
                key,
                value: entry.value,
                seq: entry.key.seq,
                source: Source::Memtable(i),
            })
        })
        .collect();
    Some(hits)
}

/// The hits of memtable `i`, reading every entry.
fn memtable_entries(
    memtable: &Memtable,
    i: usize,
    query: &Query,
    stats: &mut FindStats,
) -> Result<VecDeque<Hit>> {
    let mut hits = VecDeque::new();
    let mut decided: Option<Vec<u8>> = None;
    for entry in memtable.entries() {
        let entry = entry?;
        stats.memtable_entries_scanned += 1;
        if entry.key.seq > query.seq
            || entry.key.user_key < query.from
            || decided.as_ref() == Some(&entry.key.user_key)
        {
            continue;
        }
        decided = Some(entry.key.user_key.clone());
        if entry.key.kind == ValueKind::Value && has_value(&query.index, &entry.value, &query.value)
        {
            hits.push_back(Hit {
                key: entry.key.user_key,
                value: entry.value,
                seq: entry.key.seq,
                source: Source::Memtable(i),
            });
        }
    }
    Ok(hits)
}

/// Appends to `hits` those of candidate block `at` of `candidate`, in key
/// order; whether there were any.
pub(super) fn block(
    candidate: &CandidateTable,
    at: usize,
    query: &Query,
    hits: &mut VecDeque<Hit>,
    stats: &mut FindStats,
) -> Result<bool> {
    let table = &candidate.reader;
    stats.blocks_read += 1;
    let continued = at
        .checked_sub(1)
        .and_then(|before| table.block_last_user_key(before));
    let mut first = true;
    let mut matched = false;
    // The user key whose visible version was last seen: older versions of
    // it are skipped.
    let mut decided: Vec<u8> = Vec::new();
    // Keys ascend in a block: once one reaches `from`, the rest do, and
    // comparing each (a call per entry) is no longer needed.
    let mut before_from = !query.from.is_empty();
    table.for_each_in_block(at, |key, value| {
        stats.entries_examined += 1;
        before_from = before_from && key.user_key < query.from.as_slice();
        // A key before `from` is skipped whole; the first key after it is
        // a continuation only if the block began with it.
        if key.seq > query.seq || before_from || (!first && same_bytes(&decided, key.user_key)) {
            return;
        }
        let check_own = first && continued.as_deref() == Some(key.user_key);
        first = false;
        decided.clear();
        decided.extend_from_slice(key.user_key);
        if key.kind == ValueKind::Value && has_value(&query.index, value, &query.value) {
            matched = true;
            hits.push_back(Hit {
                key: key.user_key.to_vec(),
                value: value.to_vec(),
                seq: key.seq,
                source: Source::Table {
                    level: candidate.level,
                    run: candidate.run,
                    check_own,
                },
            });
        }
    })?;
    stats.blocks_matched += u64::from(matched);
    Ok(matched)
}
