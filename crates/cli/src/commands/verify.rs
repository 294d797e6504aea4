//! `sift verify`: every checksum of every file, and every filter against
//! its table; each problem with its file and offset.

use std::path::Path;

use serde_json::json;

use crate::error::{Failure, Outcome};
use crate::output::Output;
use crate::progress::{self, Unit};

/// Checks the database; exit 3 if anything is wrong.
pub fn run(db: &Path, out: &mut Output) -> Outcome {
    if !db.exists() {
        return Err(Failure::usage(format!(
            "no Sift database at {}",
            db.display()
        )));
    }
    let bar = progress::bar("verifying", 0, Unit::Bytes);
    let report = siftdb::verify(db, &mut |at| {
        bar.set_length(at.bytes_total);
        bar.set_position(at.bytes_done);
    })?;
    bar.finish_and_clear();
    if out.json {
        let problems: Vec<_> = report
            .problems
            .iter()
            .map(|p| json!({ "file": p.path, "offset": p.offset, "detail": p.detail }))
            .collect();
        out.json_line(&json!({
            "tables": report.tables,
            "logs": report.logs,
            "bytes": report.bytes,
            "problems": problems,
            "notes": report.notes,
        }))?;
    } else {
        for problem in &report.problems {
            out.line(format!("problem: {problem}"))?;
        }
        for note in &report.notes {
            out.line(format!("note: {note}"))?;
        }
        out.line(format!(
            "checked {} tables and {} logs ({} bytes): {} problems",
            report.tables,
            report.logs,
            report.bytes,
            report.problems.len()
        ))?;
    }
    if report.is_clean() {
        Ok(())
    } else {
        Err(Failure::storage(format!(
            "{} problems found in {}",
            report.problems.len(),
            db.display()
        )))
    }
}
