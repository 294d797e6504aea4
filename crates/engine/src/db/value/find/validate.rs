//! Step 4 of a search: a hit is a result only if no newer source holds a
//! version of its key visible at the snapshot (Algorithm 3 of Macyna &
//! Ordonez, checking only where a newer version can be).
//!
//! In an LSM tree a key's newer versions are in newer sources: the
//! memtables before the hit's one, and for a table hit every memtable and
//! every run read before its own (shallower levels, newer runs of its
//! level). Those are read by the point lookup of `Db::get`
//! (`Inner::get_from_tables`: key range, key filter with one hash, then
//! the block, each filter probe counted), limited to those runs and to
//! tables whose newest sequence number is above the hit's. The hit's own
//! table is asked only when the key's versions began in an earlier block.

use sift_filter::KeyHash;

use super::read::{Hit, Source};
use crate::db::counters::Shard;
use crate::db::read::{NewerThan, PointLookup};
use crate::db::{Inner, SuperVersion};
use crate::error::Result;
use crate::key::{ParsedKey, SeqNo};
use crate::read_tier::Files;

/// Whether a source newer than `hit`'s holds a version of its key visible
/// at `seq`, counting its filter probes in `counters`. `scratch` is
/// reused for the keys that lookups decode.
///
/// With `read_whole` (`Query::read_whole`), the memtables and the runs
/// before that one were read whole, merged with the hits: their versions
/// were met there, and are not looked up again.
pub(in crate::db) fn shadowed(
    current: &SuperVersion,
    hit: &Hit,
    seq: SeqNo,
    read_whole: Option<(usize, usize)>,
    counters: &Shard,
    scratch: &mut Vec<u8>,
) -> Result<bool> {
    let memtables = std::iter::once(&current.active).chain(&current.immutables);
    let newer_memtables = match hit.source {
        Source::Memtable(i) => i,
        Source::Table { .. } if read_whole.is_some() => 0,
        Source::Table { .. } => usize::MAX,
        Source::ReadWhole { .. } => return Ok(false),
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
    let first = read_whole.unwrap_or((0, 0));
    // Nothing between the runs read whole and the hit's own run.
    if (level, run) == first && !check_own {
        return Ok(false);
    }
    let lookup = PointLookup {
        key: &hit.key,
        hash: KeyHash::of(&hit.key),
        seq,
    };
    // The runs read before the hit's own, and its own table when the key's
    // versions began in an earlier block.
    let scope = NewerThan {
        level,
        run,
        inclusive: check_own,
        seq: hit.seq,
        first,
    };
    let mut blocks_read = 0;
    let found = Inner::get_from_tables(
        Files,
        current,
        lookup,
        scope,
        counters,
        &mut blocks_read,
        scratch,
    )?;
    Ok(found.is_some() && ParsedKey::parse(scratch).is_some_and(|k| k.seq > hit.seq))
}
