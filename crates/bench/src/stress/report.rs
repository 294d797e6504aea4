//! What `sift-bench stress` prints: divergences on stderr as they are
//! found (the first [`PRINTED`]), and one summary at the end on stdout, a
//! JSON object with `--json`.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

use serde::Serialize;

use super::counts::{Counts, Kind};

/// Divergence lines printed; the rest are only counted.
const PRINTED: u64 = 20;

/// Where divergences are recorded, from the parent's checks and from the
/// children's stderr.
#[derive(Debug, Default)]
pub struct Sink {
    seen: Mutex<Seen>,
}

/// Divergences counted, and those printed.
#[derive(Debug, Default)]
struct Seen {
    count: u64,
    printed: Vec<String>,
}

impl Sink {
    fn seen(&self) -> std::sync::MutexGuard<'_, Seen> {
        self.seen.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Counts one divergence and prints it if fewer than [`PRINTED`] were.
    pub fn record(&self, line: &str) {
        let mut seen = self.seen();
        seen.count += 1;
        if (seen.printed.len() as u64) < PRINTED {
            eprintln!("divergence: {line}");
            seen.printed.push(line.to_owned());
        }
    }

    /// Divergences recorded.
    pub fn count(&self) -> u64 {
        self.seen().count
    }

    /// The divergences printed.
    #[cfg(test)]
    pub fn printed(&self) -> Vec<String> {
        self.seen().printed.clone()
    }

    /// Says how many divergences were not printed.
    pub fn finish(&self) {
        let seen = self.seen();
        let printed = seen.printed.len() as u64;
        if seen.count > printed {
            eprintln!("... and {} more divergences", seen.count - printed);
        }
    }
}

/// The summary: exactly these fields, then one count per [`Kind`] (in
/// name order).
#[derive(Debug, Serialize)]
pub struct Report {
    /// Operations of every kind, all threads, all children (a kill may
    /// lose the last few of each thread from the counts, not from the
    /// checks).
    pub ops: u64,
    /// Children killed with `SIGKILL`.
    pub kills: u64,
    /// Children that reached their deadline and closed the database.
    pub clean_exits: u64,
    /// Reopens by the parent, each followed by a full check and `verify`.
    pub reopens: u64,
    /// Reads that disagreed with the expected state, problems `verify`
    /// found, and children that failed.
    pub divergences: u64,
    /// Seconds the run took.
    pub seconds: f64,
    /// Worker threads of each child.
    pub threads: u32,
    /// Keys each thread owns.
    pub keys_per_thread: u32,
    /// The seed of the run.
    pub seed: u64,
    /// Keys compared by point read after reopens, in all.
    pub keys_checked: u64,
    /// Writes in flight at a kill found applied after the reopen.
    pub inflight_applied: u64,
    /// Writes in flight at a kill found not applied.
    pub inflight_lost: u64,
    /// Tables of the database at the last reopen.
    pub tables: u64,
    /// Levels holding tables at the last reopen.
    pub levels: u64,
    /// Count of each kind.
    #[serde(flatten)]
    pub counts: BTreeMap<&'static str, u64>,
}

impl Report {
    /// Fills in the counts.
    pub fn with_counts(mut self, counts: &Counts) -> Self {
        self.ops = counts.ops();
        self.counts = Kind::ALL
            .iter()
            .map(|&k| (k.name(), counts.get(k)))
            .collect();
        self
    }

    /// Prints it: one JSON object, or a few lines of text.
    pub fn print(&self, json: bool) -> anyhow::Result<()> {
        if json {
            println!("{}", serde_json::to_string(self)?);
            return Ok(());
        }
        println!(
            "{} ops in {:.1} s on {} threads ({} keys each, seed {}): {} kills, {} clean exits, {} reopens, {} divergences",
            self.ops,
            self.seconds,
            self.threads,
            self.keys_per_thread,
            self.seed,
            self.kills,
            self.clean_exits,
            self.reopens,
            self.divergences
        );
        println!(
            "after reopens: {} keys checked; writes in flight at a kill: {} applied, {} not; last shape: {} tables in {} levels",
            self.keys_checked, self.inflight_applied, self.inflight_lost, self.tables, self.levels
        );
        let counts: Vec<String> = self
            .counts
            .iter()
            .map(|(name, n)| format!("{name} {n}"))
            .collect();
        println!("{}", counts.join(", "));
        Ok(())
    }
}
