//! `sift compact`: everything into the last level.

use std::path::Path;
use std::time::Instant;

use serde_json::json;

use super::open_existing;
use crate::error::Outcome;
use crate::output::Output;
use crate::progress::{self, Unit};
use crate::report::{self, human_bytes};

/// Compacts the whole database and reports the shape before and after.
pub fn run(db: &Path, out: &mut Output) -> Outcome {
    let db = open_existing(db)?;
    let shape = |db: &siftdb::Db| {
        let stats = db.stats();
        let bytes: u64 = stats.levels.iter().map(|level| level.bytes).sum();
        (report::table_count(&stats), bytes)
    };
    let (tables_before, bytes_before) = shape(&db);
    // A full compaction rewrites about every byte once.
    let bar = progress::bar("compacting", bytes_before, Unit::Bytes);
    let written_before = db.stats().compaction_bytes_written;
    let started = Instant::now();
    progress::track(
        &bar,
        || db.compact(),
        || db.stats().compaction_bytes_written - written_before,
    )?;
    let seconds = started.elapsed().as_secs_f64();
    let (tables, bytes) = shape(&db);
    if out.json {
        out.json_line(&json!({
            "tables_before": tables_before, "bytes_before": bytes_before,
            "tables": tables, "bytes": bytes, "seconds": seconds,
        }))
    } else {
        out.line(format!(
            "compacted {tables_before} tables ({}) into {tables} ({}) in {seconds:.2} s",
            human_bytes(bytes_before),
            human_bytes(bytes)
        ))
    }
}
