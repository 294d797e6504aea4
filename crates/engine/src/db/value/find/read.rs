//! Step 3 of a search: read the candidate blocks and the memtables for
//! entries with the value, or scan the whole store.

use std::ops::Bound;

use super::candidates::Candidates;
use super::{FindStats, has_value};
use crate::db::{Inner, SuperVersion};
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

/// The hits of the memtables and of the candidate blocks.
pub(super) fn candidates(
    current: &SuperVersion,
    index: &IndexRecord,
    candidates: &Candidates,
    wanted: &[u8],
    seq: SeqNo,
    stats: &mut FindStats,
) -> Result<Vec<Hit>> {
    let mut hits = memtables(current, index, wanted, seq, stats)?;
    for candidate in &candidates.tables {
        stats.tables_scanned += 1;
        let table = &candidate.table.table;
        let mut table_matched = false;
        // The user key whose visible version was last seen: older versions
        // of it are skipped.
        let mut decided: Vec<u8> = Vec::new();
        for &at in &candidate.blocks {
            stats.blocks_read += 1;
            let continued = at
                .checked_sub(1)
                .and_then(|before| table.block_last_user_key(before))
                .map(<[u8]>::to_vec);
            let mut first = true;
            let mut block_matched = false;
            decided.clear();
            table.for_each_in_block(at, |key, value| {
                stats.entries_examined += 1;
                if key.seq > seq || (!first && decided == key.user_key) {
                    return;
                }
                let check_own = first && continued.as_deref() == Some(key.user_key);
                first = false;
                decided.clear();
                decided.extend_from_slice(key.user_key);
                if key.kind == ValueKind::Value && has_value(index, value, wanted) {
                    block_matched = true;
                    hits.push(Hit {
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
            stats.blocks_matched += u64::from(block_matched);
            table_matched |= block_matched;
        }
        stats.tables_matched += u64::from(table_matched);
    }
    Ok(hits)
}

/// The hits of the memtables, which have no filter: every entry is read.
fn memtables(
    current: &SuperVersion,
    index: &IndexRecord,
    wanted: &[u8],
    seq: SeqNo,
    stats: &mut FindStats,
) -> Result<Vec<Hit>> {
    let mut hits = Vec::new();
    let memtables = std::iter::once(&current.active).chain(&current.immutables);
    for (i, memtable) in memtables.enumerate() {
        let mut decided: Option<Vec<u8>> = None;
        for entry in memtable.entries() {
            let entry = entry?;
            stats.memtable_entries_scanned += 1;
            if entry.key.seq > seq || decided.as_ref() == Some(&entry.key.user_key) {
                continue;
            }
            decided = Some(entry.key.user_key.clone());
            if entry.key.kind == ValueKind::Value && has_value(index, &entry.value, wanted) {
                hits.push(Hit {
                    key: entry.key.user_key,
                    value: entry.value,
                    seq: entry.key.seq,
                    source: Source::Memtable(i),
                });
            }
        }
    }
    Ok(hits)
}

/// Every key of the store whose newest version visible at `seq` has the
/// value: one merged pass, no filter, nothing to validate.
pub(super) fn scan(
    current: &SuperVersion,
    index: &IndexRecord,
    wanted: &[u8],
    seq: SeqNo,
    stats: &mut FindStats,
) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
    for table in current.version.tables() {
        stats.tables_scanned += 1;
        stats.blocks_read += table.table.index().entries.len() as u64;
    }
    let mut results = Vec::new();
    for item in Inner::iter_in(current, (Bound::Unbounded, Bound::Unbounded), seq) {
        let (key, value) = item?;
        stats.entries_examined += 1;
        if has_value(index, &value, wanted) {
            results.push((key, value));
        }
    }
    Ok(results)
}
