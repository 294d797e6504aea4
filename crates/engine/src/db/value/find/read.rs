//! Step 3 of a search: the entries with the value in the memtables and in
//! the candidate blocks, one block at a time.

use std::collections::VecDeque;

use super::candidates::CandidateTable;
use super::{FindStats, has_value};
use crate::db::SuperVersion;
use crate::error::Result;
use crate::key::{SeqNo, ValueKind};
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
}

/// What a search is for.
pub(super) struct Query {
    pub index: IndexRecord,
    /// The value searched for.
    pub value: Vec<u8>,
    /// The snapshot.
    pub seq: SeqNo,
    /// The least key returned.
    pub from: Vec<u8>,
}

/// The hits of each memtable, in key order. Memtables have no filter:
/// every entry is read.
pub(super) fn memtables(
    current: &SuperVersion,
    query: &Query,
    stats: &mut FindStats,
) -> Result<Vec<VecDeque<Hit>>> {
    let memtables = std::iter::once(&current.active).chain(&current.immutables);
    let mut all = Vec::new();
    for (i, memtable) in memtables.enumerate() {
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
            if entry.key.kind == ValueKind::Value
                && has_value(&query.index, &entry.value, &query.value)
            {
                hits.push_back(Hit {
                    key: entry.key.user_key,
                    value: entry.value,
                    seq: entry.key.seq,
                    source: Source::Memtable(i),
                });
            }
        }
        all.push(hits);
    }
    Ok(all)
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
    table.for_each_in_block(at, |key, value| {
        stats.entries_examined += 1;
        // A key before `from` is skipped whole; the first key after it is
        // a continuation only if the block began with it.
        if key.seq > query.seq
            || key.user_key < query.from.as_slice()
            || (!first && decided == key.user_key)
        {
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
