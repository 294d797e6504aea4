//! The child process: opens the database and runs one worker per thread
//! until its deadline, unless the parent kills it first.
//!
//! It reports on stderr only: one `divergence: ...` line per divergence
//! (exit status [`DIVERGED`]), or the error that stopped a worker (exit
//! status 1). Its counts are in the expected-state files.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::expected::{self, ExpectedFile};
use super::model::{self, Space};
use super::worker::{Chooser, Worker};

/// Exit status of a child that saw a divergence.
pub const DIVERGED: i32 = 3;

/// Prefix of a divergence line on the child's stderr.
pub const DIVERGENCE_LINE: &str = "divergence: ";

/// What the child is told by its parent.
#[derive(Debug)]
pub struct Plan<'a> {
    /// The run's directory (database and expected-state files).
    pub dir: &'a Path,
    /// Worker threads.
    pub threads: u32,
    /// Keys each thread owns.
    pub keys: u32,
    /// Seed of this child's randomness.
    pub seed: u64,
    /// When to stop on its own.
    pub seconds: f64,
}

/// Runs the workers; exits with [`DIVERGED`] after a divergence.
///
/// # Errors
/// An engine error met by a worker, or a failure to open the database or
/// an expected-state file.
pub fn run(plan: &Plan<'_>) -> anyhow::Result<()> {
    let db = model::open_db(&super::db_path(plan.dir))?;
    let deadline = Instant::now() + Duration::from_secs_f64(plan.seconds);
    let stop = AtomicBool::new(false);
    let chooser = Chooser::new(plan.keys, plan.seed);
    let outcomes: Vec<_> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..plan.threads)
            .map(|thread| {
                let (db, stop, chooser) = (&db, &stop, &chooser);
                scope.spawn(move || {
                    let file = ExpectedFile::open(&expected::path(plan.dir, thread), plan.keys)?;
                    let space = Space {
                        thread,
                        keys: plan.keys,
                    };
                    let mut worker =
                        Worker::new(db, space, plan.threads, file, chooser, plan.seed)?;
                    let result = worker.run(deadline, stop);
                    if result.is_err() {
                        stop.store(true, Ordering::Relaxed);
                    }
                    result.map(|()| worker.divergences)
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join()).collect()
    });
    let mut diverged = false;
    let mut failure = None;
    for (thread, outcome) in outcomes.into_iter().enumerate() {
        match outcome {
            Ok(Ok(divergences)) => {
                for divergence in &divergences {
                    eprintln!("{DIVERGENCE_LINE}thread {thread}: {divergence}");
                }
                diverged |= !divergences.is_empty();
            }
            Ok(Err(err)) => {
                eprintln!("sift-bench stress: thread {thread} failed: {err:#}");
                failure.get_or_insert(err);
            }
            Err(_) => {
                failure.get_or_insert_with(|| anyhow::anyhow!("thread {thread} panicked"));
            }
        }
    }
    drop(db);
    if let Some(err) = failure {
        return Err(err);
    }
    if diverged {
        std::process::exit(DIVERGED);
    }
    Ok(())
}
