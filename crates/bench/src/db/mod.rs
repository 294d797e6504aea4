//! `sift-bench db`: whole-engine workloads (db_bench's names) run against
//! Sift, fjall and (feature `rocksdb`) RocksDB in one process.
//!
//! Each repetition runs every engine once, in an order rotated by one per
//! repetition, and each engine alone: it is opened on a fresh directory,
//! loaded, read in two shapes and closed before the next engine starts, so
//! one engine's background compaction never runs during another's
//! measurement. Per engine and repetition:
//!
//! 1. `fillrandom`: every key once, in random order; then flush and wait
//!    until no flush or compaction runs. That is the **loaded** shape: many
//!    tables in several levels, level 0 below its compaction trigger.
//! 2. `readrandom`, `readmissing`, `multireadrandom`, `multireadmissing`,
//!    `seekrandom`, `readwhilewriting`, `seekrandombounded` on it, each at
//!    every `--threads` count, in an order rotated by one per repetition
//!    (see [`threads`]).
//! 3. Full compaction: the **compacted** shape, the same reads again.
//! 4. Only when `--workloads` names them, the scan workloads that need a
//!    store of their own (see [`stores`]): for each such store, a fresh
//!    directory, a load in random order (untimed, not reported), flush and
//!    wait, its reads in the loaded shape, full compaction, its reads in the
//!    compacted shape. `seekempty16`, `seekempty1024` on the gapped integer
//!    keys; `prefixhit`, `prefixmissing` on the prefixed keys.
//! 5. `fillseq` into a fresh directory.
//! 6. Only when `--workloads` names them, the threaded writes (see
//!    [`writes`]): `fillthreads`, then `fillsync`, each at every `--threads`
//!    count in the plan's rotated order, each run into a fresh directory,
//!    with the engine's write stalls and (`fillthreads`, after an untimed
//!    flush and wait) the bytes written per byte put.
//!
//! Filter counters that cost an engine time (RocksDB's statistics) are off
//! in the timed runs; such an engine's counters come from an untimed pass of
//! the same read workload over a copy of the store (see [`read`]).
//!
//! Reported: medians over repetitions. See `docs/benchmarks.md`.

mod engine;
mod fjall;
mod plan;
mod report;
#[cfg(feature = "rocksdb")]
mod rocksdb;
mod scan;
mod sift;
mod stores;
mod threads;
mod workload;
mod writes;

use std::collections::BTreeMap;

use anyhow::{Context, bail};

use crate::filters::keys;
use engine::{Engine, Pass, Settings};
use plan::{Plan, select};
use report::{Row, Sample, Shape};
use sift::Flavor;
use stores::Store;
use workload::{Keys, Workload};

/// Options of `sift-bench db`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Keys loaded (16 bytes each, values of 100 bytes).
    #[arg(long, default_value_t = 1_000_000, value_parser = clap::value_parser!(u64).range(1..))]
    num: u64,

    /// Operations of each read workload.
    #[arg(long, default_value_t = 500_000, value_parser = clap::value_parser!(u64).range(1..))]
    reads: u64,

    /// Reader threads of each read workload, or a comma-separated list of
    /// counts (e.g. 1,2,4): every read workload then runs at each count and
    /// the table ends with a scaling summary. Each thread does `--reads`
    /// operations on its own slice of the key stream; readwhilewriting adds
    /// its one writer. The threaded writes (fillthreads, fillsync) run on as
    /// many writers; fillrandom and fillseq always run on one thread.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "1",
        value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..)
    )]
    threads: Vec<usize>,

    /// Repetitions; each runs every engine once, in rotated order.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..))]
    reps: u64,

    /// Engines to run (comma-separated): sift, sift-noscan (Sift without
    /// its scan filters, to measure them), sift-fuse (Sift with Binary
    /// Fuse key filters in the same bits per key), sift-split (Sift with
    /// split-block Bloom key filters at them), fjall, and rocksdb when
    /// built with the `rocksdb` feature.
    #[arg(long, value_delimiter = ',', default_value = "sift,fjall")]
    engines: Vec<String>,

    /// Workloads to run (comma-separated), or `all`. Default: the reads
    /// on the main store, readrandom, readmissing, multireadrandom,
    /// multireadmissing, seekrandom, readwhilewriting, seekrandombounded.
    /// Opt-in, each pair loading a store of its own: seekempty16,
    /// seekempty1024 (empty bounded ranges over integer keys); prefixhit,
    /// prefixmissing (prefix scans). Opt-in threaded writes, each run into
    /// a fresh store at every --threads count: fillthreads (--num unsynced
    /// puts split among the writers), fillsync (--sync-puts synced puts per
    /// writer). fillrandom and fillseq always run.
    #[arg(long, value_delimiter = ',')]
    workloads: Vec<String>,

    /// Synced puts per writer thread of fillsync.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    sync_puts: u64,

    /// Skip the compacted shape.
    #[arg(long)]
    no_compact: bool,

    /// Memtable size in MiB (both engines): small, so the load makes many tables.
    #[arg(long, default_value_t = 8)]
    memtable_mib: u64,

    /// Target table size in MiB (both engines).
    #[arg(long, default_value_t = 8)]
    table_mib: u64,

    /// Block cache in MiB (both engines).
    #[arg(long, default_value_t = 64)]
    cache_mib: u64,

    /// Bloom filter bits per key on every level (both engines).
    #[arg(long, default_value_t = 10.0)]
    bits_per_key: f64,

    /// Sift's range filter bits per key, Monkey's average over the levels
    /// (Sift's default, 12, is sized for ranges of 16 integers; ranges of
    /// 1024 need about 19 for a 1% false-positive rate).
    #[arg(long, default_value_t = 12.0)]
    range_bits_per_key: f64,

    #[command(flatten)]
    dir: crate::scratch::ScratchDir,

    /// Print one JSON object per (engine, workload, shape) and line.
    #[arg(long)]
    json: bool,

    /// Seed of the key generator.
    #[arg(long, default_value_t = 0x5eed_db)]
    seed: u64,
}

/// Runs the comparison and prints its table (or JSON lines).
pub fn run(args: &Args) -> anyhow::Result<()> {
    for name in &args.engines {
        check_engine(name)?;
    }
    let (writes, selected): (Vec<Workload>, Vec<Workload>) = select(&args.workloads)?
        .into_iter()
        .partition(|w| w.threaded_write());
    if selected.iter().any(|w| w.store() == Store::Gapped) {
        stores::Gapped::new(args.seed, args.num)?;
    }
    let settings = Settings {
        memtable_bytes: args.memtable_mib << 20,
        table_bytes: args.table_mib << 20,
        cache_bytes: args.cache_mib << 20,
        bits_per_key: args.bits_per_key,
        range_bits_per_key: args.range_bits_per_key,
    };
    let mut thread_counts = args.threads.clone();
    thread_counts.sort_unstable();
    thread_counts.dedup();
    if thread_counts.is_empty() {
        bail!("--threads needs at least one count");
    }
    let n = usize::try_from(args.num).context("num does not fit in memory")?;
    eprintln!(
        "sift-bench db: num = {n}, reads = {} per thread, threads = {thread_counts:?}, reps = {}, memtable = {} MiB, tables = {} MiB, cache = {} MiB, {} bits/key, Sift range filters {} bits/key",
        args.reads,
        args.reps,
        args.memtable_mib,
        args.table_mib,
        args.cache_mib,
        args.bits_per_key,
        args.range_bits_per_key
    );
    eprintln!("machine: {}", crate::filters::report::machine());
    eprintln!(
        "load average at start: {}",
        crate::filters::report::load_average()
    );
    let present = keys::generate(args.seed, 0, n);
    let mut sorted = present.clone();
    sorted.sort_unstable();
    let keys = Keys {
        seed: args.seed,
        present: args.num,
        missing: args.num,
    };

    let mut samples: BTreeMap<(String, Workload, Shape, usize), Vec<Sample>> = BTreeMap::new();
    for rep in 0..args.reps {
        let mut order = args.engines.clone();
        let shift = rep as usize % order.len().max(1);
        order.rotate_left(shift);
        let mut threads = thread_counts.clone();
        threads.rotate_left(rep as usize % thread_counts.len());
        for name in &order {
            eprintln!("rep {}/{}: {name}", rep + 1, args.reps);
            let plan = Plan {
                settings: &settings,
                keys: &keys,
                workloads: &selected,
                writes: &writes,
                threads: &threads,
            };
            for (workload, shape, threads, sample) in
                run_engine(name, args, plan, &present, &sorted)?
            {
                samples
                    .entry((name.clone(), workload, shape, threads))
                    .or_default()
                    .push(sample);
            }
        }
    }
    let rows: Vec<Row> = samples
        .iter()
        .map(|((engine, workload, shape, threads), s)| {
            Row::summarize(engine, *workload, *shape, *threads, s)
        })
        .collect();
    crate::filters::report::emit(args.json, &rows, Row::json, report::table)
}

/// One engine's whole sequence (see the module docs), each read and
/// threaded write workload at each thread count of the plan in that order;
/// fillrandom and fillseq run on one thread.
fn run_engine(
    name: &str,
    args: &Args,
    plan: Plan<'_>,
    present: &[keys::Key],
    sorted: &[keys::Key],
) -> anyhow::Result<Vec<(Workload, Shape, usize, Sample)>> {
    let (settings, keys, selected) = (plan.settings, plan.keys, plan.workloads);
    let mut out = Vec::new();
    {
        let dir = args.dir.create()?;
        let engine = open(name, dir.path(), settings, Store::Random, Pass::Timed)?;
        let fill = workload::run_fill(engine.as_ref(), present)?;
        let sample = Sample::of(&fill, engine.as_ref(), dir.path(), false);
        keep(
            &mut out,
            name,
            (Workload::FillRandom, Shape::Load, 1),
            sample,
        );
        if selected.iter().any(|w| w.store() == Store::Random) {
            read_shapes(
                name,
                engine.as_ref(),
                dir.path(),
                args,
                plan,
                Store::Random,
                &mut out,
            )?;
        }
    }
    for store in [Store::Gapped, Store::Prefixed] {
        if !selected.iter().any(|w| w.store() == store) {
            continue;
        }
        eprintln!("  load of the store of {}", store.name());
        let dir = args.dir.create()?;
        let engine = open(name, dir.path(), settings, store, Pass::Timed)?;
        workload::run_fill(engine.as_ref(), &store.fill_keys(keys.seed, keys.present)?)?;
        read_shapes(
            name,
            engine.as_ref(),
            dir.path(),
            args,
            plan,
            store,
            &mut out,
        )?;
    }
    let dir = args.dir.create()?;
    let engine = open(name, dir.path(), settings, Store::Random, Pass::Timed)?;
    let fill = workload::run_fill(engine.as_ref(), sorted)?;
    let sample = Sample::of(&fill, engine.as_ref(), dir.path(), false);
    keep(&mut out, name, (Workload::FillSeq, Shape::Load, 1), sample);
    drop(engine);
    drop(dir);
    for &workload in plan.writes {
        for &threads in plan.threads {
            eprintln!(
                "  {} ({threads} writer{})",
                workload.name(),
                if threads == 1 { "" } else { "s" }
            );
            let sample = write(name, args, plan, (workload, threads), present)?;
            keep(&mut out, name, (workload, Shape::Load, threads), sample);
        }
    }
    Ok(out)
}

/// Keeps one measurement of engine `name`, and prints its rate at once, so
/// that a run cut short (a device's time limit) still shows what it
/// measured.
fn keep(
    out: &mut Vec<(Workload, Shape, usize, Sample)>,
    name: &str,
    (workload, shape, threads): (Workload, Shape, usize),
    sample: Sample,
) {
    eprintln!(
        "    {name} {} ({}, {threads} thread{}): {:.0} ops/s",
        workload.name(),
        shape.name(),
        if threads == 1 { "" } else { "s" },
        sample.ops_per_sec()
    );
    out.push((workload, shape, threads, sample));
}

/// Runs threaded write `workload` on `threads` writers into a fresh store
/// of engine `name` (see [`writes::run`]), timed, with the engine's write
/// stalls over the timed puts. After `fillthreads` the store is flushed and
/// waited for, untimed, so its bytes written per byte put count the flush
/// and compactions the fill left; the sample's tables and disk size are
/// those the timed puts left, as for the other fills.
fn write(
    name: &str,
    args: &Args,
    plan: Plan<'_>,
    (workload, threads): (Workload, usize),
    load: &[keys::Key],
) -> anyhow::Result<Sample> {
    let dir = args.dir.create()?;
    let engine = open(name, dir.path(), plan.settings, Store::Random, Pass::Timed)?;
    let meter = writes::Meter::start(engine.as_ref());
    let run = writes::run(
        engine.as_ref(),
        workload,
        load,
        (plan.keys.seed, args.sync_puts),
        threads,
    )?;
    let stall = meter.stall(engine.as_ref());
    let mut sample = Sample::of(&run, engine.as_ref(), dir.path(), false);
    let write_amp = if workload == Workload::FillThreads {
        engine.settle()?;
        meter.amplification(run.ops * writes::USER_BYTES_PER_PUT)
    } else {
        None
    };
    sample.count_writes(stall, write_amp);
    Ok(sample)
}

/// On `engine` (its `store` in `dir`, just loaded): flush and wait, then
/// the plan's reads of `store` in the loaded shape, then (unless
/// `--no-compact`) a full compaction and the same reads again.
fn read_shapes(
    name: &str,
    engine: &dyn Engine,
    dir: &std::path::Path,
    args: &Args,
    plan: Plan<'_>,
    store: Store,
    out: &mut Vec<(Workload, Shape, usize, Sample)>,
) -> anyhow::Result<()> {
    let (settings, keys) = (plan.settings, plan.keys);
    engine.settle()?;
    let shapes: &[Shape] = if args.no_compact {
        &[Shape::Loaded]
    } else {
        &[Shape::Loaded, Shape::Compacted]
    };
    for &shape in shapes {
        if shape == Shape::Compacted {
            engine.compact()?;
        }
        for &workload in plan.workloads.iter().filter(|w| w.store() == store) {
            for &threads in plan.threads {
                eprintln!(
                    "  {} ({}, {threads} thread{})",
                    workload.name(),
                    shape.name(),
                    if threads == 1 { "" } else { "s" }
                );
                let sample = read(name, engine, dir, (workload, threads), args, settings, keys)?;
                keep(out, name, (workload, shape, threads), sample);
            }
        }
    }
    Ok(())
}

/// Runs read `workload` on `engine` (its store in `dir`, the workload's
/// [`Workload::store`]) on `threads` threads, timed. For an
/// engine whose filter counters are off when timed, first copies the store as
/// the workload finds it, then runs the same workload (the same keys, the
/// same threads) untimed
/// on the copy opened with counters on, and reports the timed figures with
/// that pass's counters. The copy keeps the timed store untouched: its cache
/// stays warm, and `readwhilewriting`'s second writer writes to the copy.
fn read(
    name: &str,
    engine: &dyn Engine,
    dir: &std::path::Path,
    (workload, threads): (Workload, usize),
    args: &Args,
    settings: &Settings,
    keys: &Keys,
) -> anyhow::Result<Sample> {
    let all_absent = workload.all_absent();
    let scratch = args.dir.create()?;
    let copy = scratch.path().join(name);
    let counted_apart = engine.copy_for_counting(&copy)?;
    let timed = workload::run_read(engine, workload, keys, args.reads, threads)?;
    // The store's figures as the timed run left it, before the counting
    // pass gives its background work time to finish.
    let mut sample = Sample::of(&timed, engine, dir, all_absent);
    if counted_apart {
        let counting = open(name, &copy, settings, workload.store(), Pass::Counted)?;
        let counted = workload::run_read(counting.as_ref(), workload, keys, args.reads, threads)?;
        sample.count_filters(&counted, all_absent);
    }
    Ok(sample)
}

/// Engines this build can run.
const ENGINES: &[&str] = &[
    "sift",
    "sift-noscan",
    "sift-fuse",
    "sift-split",
    "fjall",
    #[cfg(feature = "rocksdb")]
    "rocksdb",
];

/// Accepts an engine this build can run; names the feature that adds
/// RocksDB when it is asked for without it.
fn check_engine(name: &str) -> anyhow::Result<()> {
    if ENGINES.contains(&name) {
        Ok(())
    } else if name == "rocksdb" {
        bail!(
            "engine \"rocksdb\" needs sift-bench's `rocksdb` feature: \
             cargo run --release -p sift-bench --features rocksdb -- db ... (see the README)"
        )
    } else {
        bail!(
            "unknown engine {name:?}: choose from {}",
            ENGINES.join(", ")
        )
    }
}

/// Opens engine `name` on `dir`, configured for `store`.
fn open(
    name: &str,
    dir: &std::path::Path,
    settings: &Settings,
    store: Store,
    #[cfg_attr(
        not(feature = "rocksdb"),
        expect(
            unused_variables,
            reason = "Sift's and fjall's counters are always on: only RocksDB takes the pass"
        )
    )]
    pass: Pass,
) -> anyhow::Result<Box<dyn Engine>> {
    check_engine(name)?;
    Ok(match name {
        "sift" => Box::new(sift::Sift::open(dir, settings, store, Flavor::Bloom)?),
        "sift-noscan" => Box::new(sift::Sift::open(dir, settings, store, Flavor::NoScan)?),
        "sift-fuse" => Box::new(sift::Sift::open(dir, settings, store, Flavor::Fuse)?),
        "sift-split" => Box::new(sift::Sift::open(dir, settings, store, Flavor::Split)?),
        "fjall" => Box::new(fjall::Fjall::open(dir, settings)?),
        #[cfg(feature = "rocksdb")]
        "rocksdb" => Box::new(rocksdb::RocksDb::open(dir, settings, store, pass)?),
        other => bail!("unknown engine {other:?}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engines_are_checked_by_name() {
        assert!(check_engine("sift").is_ok());
        assert!(check_engine("fjall").is_ok());
        let unknown = format!("{:#}", check_engine("leveldb").unwrap_err());
        assert!(unknown.contains("unknown engine \"leveldb\""), "{unknown}");
    }

    #[cfg(feature = "rocksdb")]
    #[test]
    fn rocksdb_is_an_engine_with_the_feature() {
        assert!(check_engine("rocksdb").is_ok());
    }

    /// `read` reports filter counters for every engine: from the timed pass
    /// where they are always on, from the untimed pass on a copy for
    /// RocksDB, whose timed store counts nothing. After a full compaction
    /// into one table, Sift and RocksDB probe once per lookup whose key is in
    /// the table's range: every present key, nearly every missing one.
    #[test]
    fn reads_report_filter_counters_of_every_engine() -> anyhow::Result<()> {
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            args: Args,
        }
        let args = <Cli as clap::Parser>::try_parse_from(["db", "--reads", "3000"])?.args;
        let settings = small_settings();
        let keys = Keys {
            seed: 7,
            present: 5000,
            missing: 5000,
        };
        let mut probes = BTreeMap::new();
        for &name in ENGINES {
            let dir = tempfile::tempdir()?;
            let engine = open(name, dir.path(), &settings, Store::Random, Pass::Timed)?;
            workload::run_fill(engine.as_ref(), &keys::generate(7, 0, 5000))?;
            engine.compact()?;
            for workload in [Workload::ReadRandom, Workload::ReadMissing] {
                let before = engine.filter_counters().probes;
                let sample = read(
                    name,
                    engine.as_ref(),
                    dir.path(),
                    (workload, 1),
                    &args,
                    &settings,
                    &keys,
                )?;
                let reported = (sample.probes_per_op() * 3000.0).round() as u64;
                let in_timed_pass = engine.filter_counters().probes - before;
                let expected = if name == "rocksdb" { 0 } else { reported };
                assert_eq!(in_timed_pass, expected, "{name} {}", workload.name());
                probes.insert((name, workload), reported);
            }
        }
        assert_eq!(probes[&("sift", Workload::ReadRandom)], 3000);
        assert!(probes[&("sift", Workload::ReadMissing)] > 2900);
        assert!(probes[&("fjall", Workload::ReadMissing)] > 2900);
        #[cfg(feature = "rocksdb")]
        for workload in [Workload::ReadRandom, Workload::ReadMissing] {
            assert_eq!(probes[&("rocksdb", workload)], probes[&("sift", workload)]);
        }
        Ok(())
    }

    /// With several threads every thread does all its reads (each present
    /// key's lookup probes the one table's filter once), every answer is
    /// still checked, and a wrong one still fails the run.
    #[test]
    fn every_thread_does_its_reads_and_answers_are_checked() -> anyhow::Result<()> {
        let keys = Keys {
            seed: 7,
            present: 5000,
            missing: 5000,
        };
        let dir = tempfile::tempdir()?;
        let engine = open(
            "sift",
            dir.path(),
            &small_settings(),
            Store::Random,
            Pass::Timed,
        )?;
        let empty = workload::run_read(engine.as_ref(), Workload::ReadRandom, &keys, 100, 2);
        assert!(
            empty.is_err(),
            "a present key was not found, yet the run passed"
        );
        workload::run_fill(engine.as_ref(), &keys::generate(7, 0, 5000))?;
        engine.compact()?;
        for workload in Workload::READS
            .into_iter()
            .filter(|w| w.store() == Store::Random)
        {
            let run = workload::run_read(engine.as_ref(), workload, &keys, 1000, 3)?;
            assert_eq!(run.ops, 3000, "{}", workload.name());
            if workload == Workload::ReadRandom {
                assert_eq!(run.filters.probes, 3000);
            }
        }
        Ok(())
    }

    /// Every engine takes the threaded writes: `fillthreads` puts every key
    /// of the load once (all readable afterwards) whatever the writer
    /// count, `fillsync` its puts per writer; the cost figures are there
    /// where the engine has them.
    #[test]
    fn threaded_writes_put_every_key_on_every_engine() -> anyhow::Result<()> {
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            args: Args,
        }
        let args = <Cli as clap::Parser>::try_parse_from(["db", "--sync-puts", "20"])?.args;
        let settings = small_settings();
        let keys = Keys {
            seed: 7,
            present: 5000,
            missing: 5000,
        };
        let load = keys::generate(7, 0, 5000);
        let plan = Plan {
            settings: &settings,
            keys: &keys,
            workloads: &[],
            writes: &Workload::WRITES,
            threads: &[3],
        };
        for &name in ENGINES {
            let dir = tempfile::tempdir()?;
            let engine = open(name, dir.path(), &settings, Store::Random, Pass::Timed)?;
            let run = writes::run(engine.as_ref(), Workload::FillThreads, &load, (7, 20), 3)?;
            assert_eq!(run.ops, 5000, "{name}");
            let check = workload::run_read(engine.as_ref(), Workload::ReadRandom, &keys, 2000, 1);
            assert!(check.is_ok(), "{name}: {check:?}");
            let run = writes::run(engine.as_ref(), Workload::FillSync, &load, (8, 20), 2)?;
            assert_eq!(run.ops, 40, "{name}");
            drop(engine);

            let row = |workload| {
                let sample = write(name, &args, plan, (workload, 3), &load)?;
                anyhow::Ok(report::Row::summarize(
                    name,
                    workload,
                    Shape::Load,
                    3,
                    &[sample],
                ))
            };
            let fill = serde_json::to_value(row(Workload::FillThreads)?)?;
            let sync = serde_json::to_value(row(Workload::FillSync)?)?;
            assert_eq!(
                fill["stall_ms"].is_null(),
                name == "fjall",
                "{name}: {fill}"
            );
            assert_eq!(
                sync["stall_ms"].is_null(),
                name == "fjall",
                "{name}: {sync}"
            );
            // The log alone writes every byte put once.
            let write_amp = fill["write_amp"].as_f64().unwrap_or(0.0);
            assert!(write_amp > 1.0, "{name}: {fill}");
            assert!(sync["write_amp"].is_null(), "{name}: {sync}");
        }
        Ok(())
    }

    fn small_settings() -> Settings {
        Settings {
            memtable_bytes: 1 << 20,
            table_bytes: 8 << 20,
            cache_bytes: 1 << 20,
            bits_per_key: 10.0,
            range_bits_per_key: 12.0,
        }
    }

    #[cfg(not(feature = "rocksdb"))]
    #[test]
    fn rocksdb_without_the_feature_names_it() {
        let message = format!("{:#}", check_engine("rocksdb").unwrap_err());
        assert!(message.contains("`rocksdb` feature"), "{message}");
    }
}
