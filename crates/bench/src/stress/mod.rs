//! `sift-bench stress`: random operations from several threads checked
//! against an expected state, with the process killed at random moments,
//! as RocksDB's `db_stress` (with its expected-state files) and sled's
//! crash tests do.
//!
//! - **Keys** (`model.rs`): each thread owns a disjoint key range, so it
//!   knows the exact state of its keys at every moment and checks its
//!   reads of them exactly. Values name their key and version; keys are
//!   drawn with Zipf skew.
//! - **Operations** (`writes.rs`, `reads.rs`, `txn.rs`): puts, deletes
//!   and atomic write batches (some synced); gets, bounded ranges and
//!   prefix scans; snapshots read after later writes; searches on a value
//!   index; transactions (a conflict is expected only where one can
//!   occur). Small memtables and tables keep background flushes and
//!   compactions running.
//! - **Expected state** (`expected.rs`): one file per thread, written
//!   before and after every write with plain `pwrite`s, which a kill
//!   cannot undo.
//! - **Kills** (`parent.rs`, `child.rs`): the parent runs the workload in
//!   a child (this binary, `stress --child`), kills it with `SIGKILL` after
//!   1 to 4 s, reopens the database and checks every key, scan and search
//!   against the expected state, then runs `siftdb::verify` on the closed
//!   database (`check.rs`). Every acknowledged write must survive; a write
//!   in flight may or may not, but atomically.
//!
//! Output (`report.rs`): one summary (a JSON object with `--json`) on
//! stdout; each divergence (key, expected, found) on stderr, the first 20
//! printed. Exit status 1 if anything diverged; the run's directory is
//! then kept for inspection.

mod check;
mod child;
mod compare;
mod counts;
mod expected;
mod model;
mod parent;
mod reads;
mod report;
mod txn;
mod worker;
mod writes;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, bail};

/// Options of `sift-bench stress`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Length of the run in seconds (the last round is cut short to end
    /// on time; the check after it adds a little).
    #[arg(long, default_value_t = 60.0)]
    seconds: f64,

    /// Worker threads in the child process.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=99))]
    threads: u32,

    /// Keys each thread owns.
    #[arg(long, default_value_t = 8192, value_parser = clap::value_parser!(u32).range(16..=99_999))]
    keys_per_thread: u32,

    /// Seed of the operations and of the kill times (each child gets its
    /// own, derived from it and printed if it fails).
    #[arg(long, default_value_t = 42)]
    seed: u64,

    /// Directory for the database and the expected-state files: created,
    /// must be empty if it exists, and kept. Default: a temporary directory,
    /// deleted unless something diverged.
    #[arg(long)]
    dir: Option<PathBuf>,

    /// Shortest time a child runs before it is killed, in milliseconds.
    #[arg(long, default_value_t = 1_000)]
    min_kill_ms: u64,

    /// Longest time a child runs before it is killed, in milliseconds.
    #[arg(long, default_value_t = 4_000)]
    max_kill_ms: u64,

    /// Print the summary as one JSON object.
    #[arg(long)]
    json: bool,

    /// Run as the child: the workload in `--dir` for `--seconds`.
    #[arg(long, hide = true)]
    child: bool,
}

/// The database's directory inside the run's directory.
fn db_path(dir: &Path) -> PathBuf {
    dir.join("db")
}

/// Runs the stress test (or, with `--child`, the workload of one child).
pub fn run(args: &Args) -> anyhow::Result<()> {
    if !(args.seconds.is_finite() && args.seconds > 0.0) {
        bail!("--seconds must be a positive number");
    }
    if args.child {
        let dir = args.dir.as_deref().context("--child needs --dir")?;
        return child::run(&child::Plan {
            dir,
            threads: args.threads,
            keys: args.keys_per_thread,
            seed: args.seed,
            seconds: args.seconds,
        });
    }
    if args.min_kill_ms == 0 || args.min_kill_ms > args.max_kill_ms {
        bail!("need 0 < --min-kill-ms <= --max-kill-ms");
    }
    let (dir, temp) = match &args.dir {
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            if std::fs::read_dir(dir)?.next().is_some() {
                bail!("{} is not empty", dir.display());
            }
            (dir.clone(), None)
        }
        None => {
            let temp = tempfile::tempdir().context("cannot create a temporary directory")?;
            (temp.path().to_path_buf(), Some(temp))
        }
    };
    eprintln!(
        "sift-bench stress: {} s, {} threads of {} keys, seed {}, in {}",
        args.seconds,
        args.threads,
        args.keys_per_thread,
        args.seed,
        dir.display()
    );
    let settings = parent::Settings {
        dir: dir.clone(),
        threads: args.threads,
        keys: args.keys_per_thread,
        seed: args.seed,
        seconds: args.seconds,
        run_ms: (args.min_kill_ms, args.max_kill_ms),
    };
    let sink = Arc::new(report::Sink::default());
    let report = parent::run(&settings, &sink)?;
    report.print(args.json)?;
    sink.finish();
    if report.divergences > 0 {
        if let Some(temp) = temp {
            let _ = temp.keep();
        }
        eprintln!("the run's directory is kept: {}", dir.display());
        bail!("{} divergences (seed {})", report.divergences, args.seed);
    }
    Ok(())
}
