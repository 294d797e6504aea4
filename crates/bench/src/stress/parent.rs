//! The parent's loop: run the workload in a child process, kill it with
//! `SIGKILL` at a random moment (or, one round in [`CLEAN_ONE_IN`], let it
//! reach its deadline and close the database), reopen the database and
//! check it, and again until the time is up or something diverged.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::Context;
use sift_filter::mix64;

use super::check;
use super::child::{DIVERGED, DIVERGENCE_LINE};
use super::counts::Counts;
use super::expected::{self, ExpectedFile};
use super::report::{Report, Sink};
use crate::value_search::rng::SplitMix64;

/// One round in this many ends with the child's own clean shutdown rather
/// than a kill: the drop path (WAL sync, background threads stopped) is
/// checked too.
const CLEAN_ONE_IN: u64 = 4;

/// How long a child may overrun its deadline (open, run, close) before it
/// counts as hung and is killed.
const HANG_SECONDS: f64 = 60.0;

/// Deadline given to a child that will be killed: never reached.
const FOREVER_SECONDS: f64 = 86_400.0;

/// How often the parent looks whether its child exited.
const POLL: Duration = Duration::from_millis(10);

/// What the parent runs.
#[derive(Debug)]
pub struct Settings {
    /// The run's directory.
    pub dir: PathBuf,
    /// Worker threads per child.
    pub threads: u32,
    /// Keys per thread.
    pub keys: u32,
    /// Seed of the run.
    pub seed: u64,
    /// Length of the run.
    pub seconds: f64,
    /// Shortest and longest time a child runs before its kill.
    pub run_ms: (u64, u64),
}

/// How a child ended.
enum End {
    Killed,
    Exited(ExitStatus),
    Hung,
}

/// Runs rounds until `settings.seconds` have passed or a divergence was
/// recorded in `sink`; returns the summary.
///
/// # Errors
/// The run's files cannot be created or read, or a child cannot be started.
pub fn run(settings: &Settings, sink: &Arc<Sink>) -> anyhow::Result<Report> {
    for thread in 0..settings.threads {
        ExpectedFile::create(&expected::path(&settings.dir, thread), settings.keys)?;
    }
    let exe = std::env::current_exe().context("cannot find the sift-bench binary")?;
    let mut rng = SplitMix64::new(settings.seed, 0xc41d);
    let start = Instant::now();
    let mut report = Report {
        ops: 0,
        kills: 0,
        clean_exits: 0,
        reopens: 0,
        divergences: 0,
        seconds: 0.0,
        threads: settings.threads,
        keys_per_thread: settings.keys,
        seed: settings.seed,
        keys_checked: 0,
        inflight_applied: 0,
        inflight_lost: 0,
        tables: 0,
        levels: 0,
        counts: Default::default(),
    };
    let mut round = 0u64;
    loop {
        let left = settings.seconds - start.elapsed().as_secs_f64();
        if left <= 0.0 {
            break;
        }
        round += 1;
        let (min, max) = settings.run_ms;
        let run_for = ((min + rng.below(max - min + 1)) as f64 / 1e3).min(left);
        let clean = rng.below(CLEAN_ONE_IN) == 0;
        let seed = mix64(settings.seed ^ round.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let lifetime = if clean { run_for } else { FOREVER_SECONDS };
        let mut child = spawn(&exe, settings, seed, lifetime)?;
        let forwarder = forward(child.stderr.take(), Arc::clone(sink));
        let end = if clean {
            match wait(&mut child, run_for + HANG_SECONDS)? {
                Some(status) => End::Exited(status),
                None => {
                    stop(&mut child)?;
                    End::Hung
                }
            }
        } else {
            match wait(&mut child, run_for)? {
                Some(status) => End::Exited(status),
                None => {
                    stop(&mut child)?;
                    End::Killed
                }
            }
        };
        let child_divergences = forwarder.map_or(0, |f| f.join().unwrap_or(0));
        match end {
            End::Killed => report.kills += 1,
            End::Exited(status) if status.success() => report.clean_exits += 1,
            End::Exited(status) if status.code() == Some(DIVERGED) && child_divergences > 0 => {}
            End::Exited(status) => sink.record(&format!(
                "round {round}: the child (seed {seed}) failed: expected a running workload, found exit {status}"
            )),
            End::Hung => sink.record(&format!(
                "round {round}: the child (seed {seed}) did not stop within {HANG_SECONDS} s of its deadline: expected an exit, found a hang (killed)"
            )),
        }
        match check::after_reopen(&settings.dir, settings.threads, settings.keys, sink) {
            Ok(checked) => {
                report.reopens += 1;
                report.keys_checked += checked.keys;
                report.inflight_applied += checked.applied;
                report.inflight_lost += checked.lost;
                report.tables = checked.tables;
                report.levels = checked.levels;
            }
            Err(err) => sink.record(&format!(
                "round {round}: reopen and check: expected a readable database, found: {err:#}"
            )),
        }
        if sink.count() > 0 {
            eprintln!("sift-bench stress: stopping after round {round} (seed {seed}): divergences");
            break;
        }
    }
    let mut counts = Counts::default();
    for thread in 0..settings.threads {
        let file = ExpectedFile::open(&expected::path(&settings.dir, thread), settings.keys)?;
        counts = counts.plus(&file.counts()?);
    }
    report.seconds = (start.elapsed().as_secs_f64() * 10.0).round() / 10.0;
    report.divergences = sink.count();
    Ok(report.with_counts(&counts))
}

/// Starts a child running the workload for `seconds`.
fn spawn(exe: &Path, settings: &Settings, seed: u64, seconds: f64) -> anyhow::Result<Child> {
    Command::new(exe)
        .arg("stress")
        .arg("--child")
        .arg("--dir")
        .arg(&settings.dir)
        .args(["--threads", &settings.threads.to_string()])
        .args(["--keys-per-thread", &settings.keys.to_string()])
        .args(["--seed", &seed.to_string()])
        .args(["--seconds", &seconds.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .context("cannot start the child")
}

/// Forwards a child's stderr to ours, recording its divergence lines in
/// `sink`; the thread returns how many it recorded.
fn forward(stderr: Option<ChildStderr>, sink: Arc<Sink>) -> Option<JoinHandle<u64>> {
    let stderr = stderr?;
    Some(std::thread::spawn(move || {
        let mut recorded = 0;
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            match line.strip_prefix(DIVERGENCE_LINE) {
                Some(divergence) => {
                    sink.record(divergence);
                    recorded += 1;
                }
                None => eprintln!("{line}"),
            }
        }
        recorded
    }))
}

/// Waits up to `seconds` for the child to exit.
fn wait(child: &mut Child, seconds: f64) -> anyhow::Result<Option<ExitStatus>> {
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Some(status));
        }
        let now = Instant::now();
        if now >= deadline {
            return Ok(None);
        }
        std::thread::sleep(POLL.min(deadline - now));
    }
}

/// Kills the child with `SIGKILL` (what `Child::kill` sends on Unix) and
/// reaps it.
fn stop(child: &mut Child) -> anyhow::Result<()> {
    child.kill().context("cannot kill the child")?;
    child.wait().context("cannot reap the child")?;
    Ok(())
}
