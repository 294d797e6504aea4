//! Step 4 of a search: a hit is a result only if no newer source holds a
//! version of its key visible at the snapshot (Algorithm 3 of Macyna &
//! Ordonez, checking only where a newer version can be).
//!
//! In an LSM tree a key's newer versions are in newer sources: the
//! memtables before the hit's one, and for a table hit every memtable and
//! every run read before its own (shallower levels, newer runs of its
//! level). Those are probed as a point lookup probes them (key range, key
//! filter with one hash, then the block), skipping tables whose newest
//! sequence number is not above the hit's. The hit's own table is asked
//! only when the key's versions began in an earlier block.

use sift_filter::KeyHash;

use super::FindStats;
use super::read::{Hit, Source};
use crate::db::SuperVersion;
use crate::error::Result;
use crate::key::{ParsedKey, SeqNo};

/// The hits no newer version hides, as `(key, value)` in key order.
pub(super) fn newest(
    current: &SuperVersion,
    hits: Vec<Hit>,
    seq: SeqNo,
    stats: &mut FindStats,
) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
    let mut results = Vec::with_capacity(hits.len());
    let mut scratch = Vec::new();
    for hit in hits {
        stats.entries_validated += 1;
        if !shadowed(current, &hit, seq, &mut scratch)? {
            results.push((hit.key, hit.value));
        }
    }
    results.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    Ok(results)
}

/// Whether a source newer than `hit`'s holds a version of its key visible
/// at `seq`. `scratch` is reused for the keys that lookups decode.
pub(in crate::db) fn shadowed(
    current: &SuperVersion,
    hit: &Hit,
    seq: SeqNo,
    scratch: &mut Vec<u8>,
) -> Result<bool> {
    let memtables = std::iter::once(&current.active).chain(&current.immutables);
    let newer_memtables = match hit.source {
        Source::Memtable(i) => i,
        Source::Table { .. } => usize::MAX,
    };
    for memtable in memtables.take(newer_memtables) {
        if memtable.lookup(&hit.key, seq).is_some() {
            return Ok(true);
        }
    }
    let Source::Table {
        level,
        run,
        check_own,
        ..
    } = hit.source
    else {
        return Ok(false);
    };
    let hash = KeyHash::of(&hit.key);
    let mut blocks_read = 0;
    for (at_level, runs) in current.version.levels.iter().enumerate().take(level + 1) {
        for (at_run, tables) in runs.runs.iter().enumerate() {
            let own = (at_level, at_run) == (level, run);
            if at_level == level && (at_run > run || (own && !check_own)) {
                break;
            }
            let Some(table) = tables.table_for(&hit.key) else {
                continue;
            };
            if table.meta.max_seq <= hit.seq || !table.table.may_contain_in_range(&hit.key, hash) {
                continue;
            }
            let found = table
                .table
                .lookup(&hit.key, seq, &mut blocks_read, scratch)?
                .is_some();
            if found && ParsedKey::parse(scratch).is_some_and(|k| k.seq > hit.seq) {
                return Ok(true);
            }
        }
    }
    Ok(false)
}
