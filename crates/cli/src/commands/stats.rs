//! `sift stats`: the levels with their tables and key filters, a measured
//! false-positive rate per level, and the value indexes with the sizes and
//! measured false-positive rate of their filters.

use std::path::Path;

use serde_json::json;
use siftdb::Db;

use super::open_for_reading;
use crate::cli::StatsArgs;
use crate::error::Outcome;
use crate::output::Output;
use crate::report;

/// Bytes appended to a stored key to make a key that is almost surely
/// absent yet sorts right after it, inside the same table's key range.
const ABSENT_SUFFIX: [u8; 8] = *b"\xff\x00sift\x00\xff";

/// Prints the statistics.
pub fn run(db: &Path, args: &StatsArgs, out: &mut Output) -> Outcome {
    let db = open_for_reading(db)?;
    let probed = probe_absent_keys(&db, args.sample)?;
    let stats = db.stats();
    let indexes = db.indexes();
    if out.json {
        let summary = json!({
            "tables": report::table_count(&stats),
            "bytes": stats.levels.iter().map(|l| l.bytes).sum::<u64>(),
            "entries": stats.levels.iter().map(|l| l.entries).sum::<u64>(),
            "filter_bytes": stats.levels.iter().map(|l| l.filter_bytes).sum::<u64>(),
            "filter_memory_resident": stats.filter_memory_resident,
            "filter_memory_budget": stats.filter_memory_budget,
            "absent_keys_probed": probed,
            "levels": report::levels_json(&stats),
            "indexes": indexes.iter().map(report::index_json).collect::<Vec<_>>(),
            "index_filters": stats.indexes.iter().map(report::index_filters_json).collect::<Vec<_>>(),
        });
        return out.json_line(&summary);
    }
    report::levels(out, &stats)?;
    if probed > 0 {
        out.line(format!(
            "(probes, \"said no\" and FPR: {probed} absent keys looked up just now, \
             each an existing key plus a suffix)"
        ))?;
    }
    out.line("")?;
    report::indexes(out, &indexes)?;
    out.line("")?;
    report::index_filters(out, &stats.indexes)
}

/// Looks up about `sample` absent keys spread over the key space, so that
/// the filter counters of [`Db::stats`] measure each level's false-positive
/// rate. Returns how many were looked up.
fn probe_absent_keys(db: &Db, sample: u64) -> Outcome<u64> {
    let entries: u64 = db.stats().levels.iter().map(|level| level.entries).sum();
    if sample == 0 || entries == 0 {
        return Ok(0);
    }
    let stride = (entries / sample).max(1) as usize;
    let mut probed = 0;
    for entry in db.range::<&[u8], _>(..).step_by(stride) {
        let (mut key, _) = entry?;
        key.extend_from_slice(&ABSENT_SUFFIX);
        db.contains_key(&key)?;
        probed += 1;
    }
    Ok(probed)
}
