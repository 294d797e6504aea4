//! `sift-bench filters`: every Sift filter and the crates.io baselines, built
//! from the same keys and probed with the same non-members, side by side.
//!
//! The workload: `n` member keys and `probes` non-member keys, 16 random
//! bytes each (or `--key-bytes`) from a fixed seed ([`keys`]). For each repetition every
//! selected contender is built and queried once, in an order rotated by one
//! per repetition so no contender always runs first (cold) or right after
//! the same neighbour. The table reports medians over repetitions; FPR pools
//! the probes of all repetitions. See `docs/benchmarks.md`.

mod contenders;
pub mod keys;
mod matched;
pub mod measure;
pub mod report;

use anyhow::{Context, bail};
use contenders::{Contender, Params, Prehashed};
use measure::{Sample, Summary};
use std::io::{IsTerminal, Write};
use std::time::Instant;

/// Bits per key of the Bloom kinds in the default run.
const DEFAULT_BITS_PER_KEY: f64 = 10.0;
/// Member keys in the default run.
const DEFAULT_N: u64 = 1_000_000;
/// Member keys with `--large`: where a filter no longer fits any cache.
const LARGE_N: u64 = 50_000_000;

/// Options of `sift-bench filters`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Member keys per filter.
    #[arg(long, default_value_t = DEFAULT_N, conflicts_with = "large",
          value_parser = clap::value_parser!(u64).range(1..))]
    n: u64,

    /// Use n = 50,000,000: a few GB of memory, ~3 minutes per repetition on 2 cores.
    #[arg(long)]
    large: bool,

    /// Non-member probes for the FPR and the negative query time. The default
    /// resolves FPRs near 1% to about ±0.006 percentage points (2σ).
    #[arg(long, default_value_t = 10_000_000, value_parser = clap::value_parser!(u64).range(1..))]
    probes: u64,

    /// Repetitions; every contender runs once per repetition, interleaved.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..))]
    reps: u64,

    /// Bits per key of the Bloom kinds (Sift's and the baselines').
    #[arg(long, default_value_t = DEFAULT_BITS_PER_KEY, value_parser = parse_bits_per_key)]
    bits_per_key: f64,

    /// Compare at these FPRs (percent, comma-separated) instead of at
    /// --bits-per-key: each Bloom kind is sized to meet each target, and
    /// one table per target is printed (see `matched.rs`).
    #[arg(long, value_delimiter = ',', value_parser = parse_fpr_percent)]
    fpr: Vec<f64>,

    /// Run only these contenders (comma-separated names; see --list).
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,

    /// Print one JSON object per filter and line instead of the table.
    #[arg(long)]
    json: bool,

    /// Bytes per key (at least 16): the hash's share of a query grows with
    /// the key, which the "neg probe ns" column (prehashed probes) splits
    /// out.
    #[arg(long, default_value_t = keys::MIN_KEY_BYTES as u64,
          value_parser = clap::value_parser!(u64).range(keys::MIN_KEY_BYTES as u64..=4096))]
    key_bytes: u64,

    /// Seed of the key generator.
    #[arg(long, default_value_t = 0x5eed_f11e)]
    seed: u64,

    /// List the contenders and how each is configured, then exit.
    #[arg(long)]
    list: bool,
}

/// Bits per key must be a number in `[1, 64]`: below one bit a filter
/// says "maybe" to nearly everything and some baselines divide by zero.
fn parse_bits_per_key(s: &str) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|e| format!("{e}"))?;
    if (1.0..=64.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!("{v} is not in [1, 64]"))
    }
}

/// A target FPR in percent, in `(0, 50]`.
fn parse_fpr_percent(s: &str) -> Result<f64, String> {
    let v: f64 = s.parse().map_err(|e| format!("{e}"))?;
    if v > 0.0 && v <= 50.0 {
        Ok(v)
    } else {
        Err(format!("{v} is not a percentage in (0, 50]"))
    }
}

/// Runs the benchmark; fails if a contender could not be built or one of
/// Sift's filters returned a false negative.
pub fn run(args: &Args) -> anyhow::Result<()> {
    let n = if args.large { LARGE_N } else { args.n };
    let n = usize::try_from(n).context("n does not fit in memory")?;
    let probes = usize::try_from(args.probes).context("probes do not fit in memory")?;
    let params = Params {
        n,
        bits_per_key: args.bits_per_key,
    };
    let selected = select(contenders::all(), &args.only)?;
    if args.list {
        for c in &selected {
            println!("{:<16} {}", c.name(), c.notes(&params));
        }
        return Ok(());
    }

    let header = [
        format!(
            "sift-bench filters: n = {n}, probes = {probes}, reps = {}",
            args.reps
        ),
        format!(
            "bits/key = {} (Bloom kinds); key bytes = {}; seed = {:#x}",
            args.bits_per_key, args.key_bytes, args.seed
        ),
        format!("machine: {}", report::machine()),
        format!("load average at start: {}", report::load_average()),
    ];
    for line in &header {
        eprintln!("{line}");
    }

    let started = Instant::now();
    eprintln!("generating {n} member keys and {probes} non-member probes");
    let key_bytes = args.key_bytes as usize;
    let members = keys::KeySet::generate(args.seed, 0, n, key_bytes);
    let non_members = keys::KeySet::generate(args.seed, n as u64, probes, key_bytes);
    let keys = Keys {
        hashed: Prehashed::of(&non_members),
        members,
        non_members,
    };

    if args.fpr.is_empty() {
        let entries: Vec<(&dyn Contender, Params)> =
            selected.iter().map(|c| (c.as_ref(), params)).collect();
        return report_run(args, &header, &entries, &keys, started);
    }
    let sizing = keys.members.prefix(matched::SIZING_KEYS);
    let mut outcome = Ok(());
    for &percent in &args.fpr {
        let mut entries: Vec<(&dyn Contender, Params)> = Vec::new();
        for c in &selected {
            if let Some(bits_per_key) = matched::bits_for(c.as_ref(), &sizing, percent / 100.0)? {
                entries.push((c.as_ref(), Params { n, bits_per_key }));
            }
        }
        let mut header = header.to_vec();
        header.push(format!(
            "matched FPR: target {percent}%; each Bloom kind at the fewest bits/key whose formula \
             meets it (sized on {} keys), fixed-FPR kinds where they meet it within 2x",
            sizing.len()
        ));
        outcome = outcome.and(report_run(args, &header, &entries, &keys, started));
        if !args.json {
            println!();
        }
    }
    outcome
}

/// The keys of a run: members, non-member probes, and the probes' hashes.
struct Keys {
    members: keys::KeySet,
    non_members: keys::KeySet,
    hashed: Prehashed,
}

/// Measures `entries` (each contender with its parameters), interleaved,
/// then prints the table and judges the run.
fn report_run(
    args: &Args,
    header: &[String],
    entries: &[(&dyn Contender, Params)],
    keys: &Keys,
    started: Instant,
) -> anyhow::Result<()> {
    let mut samples: Vec<Vec<Sample>> = vec![Vec::new(); entries.len()];
    let mut failures: Vec<Option<String>> = vec![None; entries.len()];
    let live = std::io::stderr().is_terminal();
    let (mut floor_sift, mut floor_64) = (Vec::new(), Vec::new());
    for rep in 0..args.reps as usize {
        let (sift, xxh3_64) = measure::hash_floor(&keys.non_members);
        floor_sift.push(sift);
        floor_64.push(xxh3_64);
        for offset in 0..entries.len() {
            let i = (rep + offset) % entries.len();
            if failures[i].is_some() {
                continue;
            }
            let (c, params) = entries[i];
            if live {
                eprint!("\rrep {}/{}: {:<16}", rep + 1, args.reps, c.name());
                // Progress only: a failed flush loses nothing measured.
                let _ = std::io::stderr().flush();
            }
            match measure::run_once(c, &params, &keys.members, &keys.non_members, &keys.hashed) {
                Ok(sample) => samples[i].push(sample),
                Err(e) => failures[i] = Some(format!("{e:#}")),
            }
        }
        if !live {
            eprintln!(
                "rep {}/{} done at {:.1} s",
                rep + 1,
                args.reps,
                started.elapsed().as_secs_f64()
            );
        }
    }
    eprintln!(
        "{}done in {:.1} s; load average at end: {}",
        if live { "\r" } else { "" },
        started.elapsed().as_secs_f64(),
        report::load_average()
    );

    let floor = format!(
        "hashing alone (median ns/key over the probes): KeyHash::of (xxh3-128) {:.2}, xxh3-64 {:.2}",
        measure::Spread::of(&floor_sift).median,
        measure::Spread::of(&floor_64).median
    );
    eprintln!("{floor}");
    let mut header = header.to_vec();
    header.push(floor);

    let (n, probes) = (keys.members.len(), keys.non_members.len());
    let summaries: Vec<Summary> = entries
        .iter()
        .zip(&samples)
        .filter_map(|((c, _), s)| measure::summarize(c.name(), c.ours(), n, probes, s))
        .collect();
    let failed: Vec<(&'static str, &String)> = entries
        .iter()
        .zip(&failures)
        .filter_map(|((c, _), f)| f.as_ref().map(|e| (c.name(), e)))
        .collect();
    print_results(args, &header, entries, &summaries, &failed)?;
    verdict(&summaries, &failed)
}

/// The contenders named by `--only` (all when empty), or an error naming the
/// unknown ones and the valid names.
fn select(
    all: Vec<Box<dyn Contender>>,
    only: &[String],
) -> anyhow::Result<Vec<Box<dyn Contender>>> {
    if only.is_empty() {
        return Ok(all);
    }
    let wanted: Vec<String> = only.iter().map(|s| s.trim().to_ascii_lowercase()).collect();
    let unknown: Vec<&String> = wanted
        .iter()
        .filter(|w| !all.iter().any(|c| c.name() == w.as_str()))
        .collect();
    if !unknown.is_empty() {
        let names: Vec<&str> = all.iter().map(|c| c.name()).collect();
        bail!(
            "unknown contender(s) {unknown:?}; known: {}",
            names.join(", ")
        );
    }
    Ok(all
        .into_iter()
        .filter(|c| wanted.iter().any(|w| w == c.name()))
        .collect())
}

fn print_results(
    args: &Args,
    header: &[String],
    entries: &[(&dyn Contender, Params)],
    summaries: &[Summary],
    failed: &[(&'static str, &String)],
) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    if args.json {
        for s in summaries {
            writeln!(out, "{}", report::json_line(s)?)?;
        }
    } else {
        for line in header {
            writeln!(out, "{line}")?;
        }
        writeln!(out)?;
        write!(out, "{}", report::table(summaries))?;
        for (name, error) in failed {
            writeln!(out, "{name}: FAILED: {error}")?;
        }
        writeln!(out)?;
        writeln!(
            out,
            "Medians over {} interleaved repetitions. Timed: build = key bytes to queryable filter \
             (one hash per key included); queries = hash + lookup per key, over all {} members \
             (pos) and all {} non-members (neg); neg probe = the neg query on hashes computed \
             beforehand (the probe alone). bits/key = real data bytes · 8 / n.",
            args.reps,
            summaries.first().map_or(0, |s| s.n),
            args.probes
        )?;
        let width = entries
            .iter()
            .map(|(c, _)| c.name().len())
            .max()
            .unwrap_or(0);
        for (c, params) in entries {
            let detail = summaries
                .iter()
                .find(|s| s.filter == c.name() && !s.detail.is_empty())
                .map_or_else(String::new, |s| format!(" [{}]", s.detail));
            writeln!(out, "  {:<width$}  {}{detail}", c.name(), c.notes(params))?;
        }
    }
    for (name, error) in failed {
        eprintln!("{name}: FAILED: {error}");
    }
    Ok(())
}

/// Fails the run when a contender did not build or a Sift filter lost a key.
fn verdict(summaries: &[Summary], failed: &[(&'static str, &String)]) -> anyhow::Result<()> {
    let lost: Vec<&str> = summaries
        .iter()
        .filter(|s| s.ours && s.false_negatives > 0)
        .map(|s| s.filter)
        .collect();
    if !lost.is_empty() {
        bail!("false negatives in Sift filter(s): {}", lost.join(", "));
    }
    if !failed.is_empty() {
        let names: Vec<&str> = failed.iter().map(|(n, _)| *n).collect();
        bail!("contender(s) failed to build: {}", names.join(", "));
    }
    Ok(())
}
