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
pub mod measure;
pub mod report;

use anyhow::{Context, bail};
use contenders::{Contender, Params, Prehashed};
use measure::{Sample, Summary};
use std::io::{IsTerminal, Write};
use std::time::Instant;

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
    #[arg(long, default_value_t = 10.0, value_parser = parse_bits_per_key)]
    bits_per_key: f64,

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
    let hashed = Prehashed::of(&non_members);

    let mut samples: Vec<Vec<Sample>> = vec![Vec::new(); selected.len()];
    let mut failures: Vec<Option<String>> = vec![None; selected.len()];
    let live = std::io::stderr().is_terminal();
    let (mut floor_sift, mut floor_64) = (Vec::new(), Vec::new());
    for rep in 0..args.reps as usize {
        let (sift, xxh3_64) = measure::hash_floor(&non_members);
        floor_sift.push(sift);
        floor_64.push(xxh3_64);
        for offset in 0..selected.len() {
            let i = (rep + offset) % selected.len();
            if failures[i].is_some() {
                continue;
            }
            let c = &selected[i];
            if live {
                eprint!("\rrep {}/{}: {:<16}", rep + 1, args.reps, c.name());
                // Progress only: a failed flush loses nothing measured.
                let _ = std::io::stderr().flush();
            }
            match measure::run_once(c.as_ref(), &params, &members, &non_members, &hashed) {
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

    let summaries: Vec<Summary> = selected
        .iter()
        .zip(&samples)
        .filter_map(|(c, s)| measure::summarize(c.name(), c.ours(), n, probes, s))
        .collect();
    let failed: Vec<(&'static str, &String)> = selected
        .iter()
        .zip(&failures)
        .filter_map(|(c, f)| f.as_ref().map(|e| (c.name(), e)))
        .collect();
    print_results(args, &params, &header, &selected, &summaries, &failed)?;
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
    params: &Params,
    header: &[String],
    selected: &[Box<dyn Contender>],
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
            args.reps, params.n, args.probes
        )?;
        let width = selected.iter().map(|c| c.name().len()).max().unwrap_or(0);
        for c in selected {
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
