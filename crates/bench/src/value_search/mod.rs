//! `sift-bench value-search`: search by value ("which keys have this
//! value?") through every method of a value index, on databases of
//! hundreds of tables.
//!
//! Experiments (see `docs/value-search.md`):
//!
//! 1. time per query against the entries loaded (N/10, 3N/10, N);
//! 2. the hierarchy's order `d` ∈ {2, 3, 5, 10};
//! 3. the leaf size `m` ∈ {20k, 200k, 2M} bits;
//! 4. the value domain: distinct values = 1, 5, 10, 40, 70, 100% of N;
//! 5. absent values: how many queries scan no table;
//! 6. write throughput with 0, 1 and 3 value indexes.
//!
//! Experiments 1–5 load each distinct configuration once, compact it (so
//! every table is cut at the table target) and run every method (and the
//! planner) on the same database, interleaved per batch of queries; every
//! answer is checked against the generator. Reported:
//! medians over repetitions of the mean time per query, and mean counters.

mod data;
mod measure;
mod report;
mod store;

use std::collections::BTreeMap;

use anyhow::{Context, bail};

use data::Data;
use measure::Values;
use report::Row;
use store::{Config, Sizes};

/// Orders of experiment 2.
const ORDERS: [usize; 4] = [2, 3, 5, 10];
/// Leaf sizes of experiment 3, in bits (the paper's 20k, 200k and 2M).
const LEAF_BITS: [u64; 3] = [20_000, 200_000, 2_000_000];
/// Domains of experiment 4, in percent of the entries.
const DOMAINS: [u64; 6] = [1, 5, 10, 40, 70, 100];
/// Value indexes of experiment 6.
const INDEX_COUNTS: [usize; 3] = [0, 1, 3];

/// Options of `sift-bench value-search`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Entries of the largest database (16-byte keys, 9-byte values).
    #[arg(long, default_value_t = 1_000_000, value_parser = clap::value_parser!(u64).range(10..))]
    entries: u64,

    /// Queries per searcher, configuration and repetition.
    #[arg(long, default_value_t = 40, value_parser = clap::value_parser!(u64).range(1..))]
    queries: u64,

    /// Repetitions (medians are taken over them).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..))]
    reps: u64,

    /// Queries per batch: each batch runs through every searcher before
    /// the next starts.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..))]
    batch: u64,

    /// Experiments to run (comma-separated, 1 ..= 6; default all).
    #[arg(long, value_delimiter = ',')]
    experiments: Vec<u32>,

    /// Order `d` of the hierarchy where an experiment does not vary it
    /// (default: the engine's default).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u64).range(2..))]
    order: u64,

    /// Leaf bits `m` where an experiment does not vary them.
    #[arg(long, default_value_t = 200_000, value_parser = clap::value_parser!(u64).range(64..))]
    leaf_bits: u64,

    /// Memtable size in KiB. Flushes write one table per memtable; the
    /// searched databases are compacted after the load, so only the table
    /// target sets their table count.
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u64).range(4..))]
    memtable_kib: u64,

    /// Target size of a table's entries in KiB (its leaf filters come on
    /// top): small, so a load makes hundreds of tables.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(4..))]
    table_kib: u64,

    /// A CI-sized run: 20,000 entries, 10 queries, one repetition, 256 KiB
    /// memtables and 16 KiB tables (overrides those options).
    #[arg(long)]
    quick: bool,

    #[command(flatten)]
    dir: crate::scratch::ScratchDir,

    /// Print one JSON object per row and line.
    #[arg(long)]
    json: bool,

    /// Seed of the key generator.
    #[arg(long, default_value_t = 0x5eed_5ea4)]
    seed: u64,
}

/// The settings after `--quick`.
struct Plan {
    entries: u64,
    queries: u64,
    reps: u64,
    sizes: Sizes,
    base: Config,
}

/// Runs the experiments and prints the table (or JSON lines).
pub fn run(args: &Args) -> anyhow::Result<()> {
    let experiments: Vec<u32> = if args.experiments.is_empty() {
        (1..=6).collect()
    } else {
        args.experiments.clone()
    };
    if let Some(bad) = experiments.iter().find(|e| !(1..=6).contains(*e)) {
        bail!("unknown experiment {bad}: choose from 1 ..= 6");
    }
    let plan = plan(args)?;
    eprintln!(
        "sift-bench value-search: entries = {}, queries = {}, reps = {}, batch = {}, memtable = {} B, tables = {} B, d = {}, m = {} bits, experiments {experiments:?}",
        plan.entries,
        plan.queries,
        plan.reps,
        args.batch,
        plan.sizes.memtable_bytes,
        plan.sizes.table_bytes,
        plan.base.order,
        plan.base.leaf_bits
    );
    eprintln!("machine: {}", crate::filters::report::machine());
    eprintln!(
        "load average at start: {}",
        crate::filters::report::load_average()
    );

    let mut rows = Vec::new();
    for (config, uses) in configurations(&plan, &experiments) {
        rows.extend(search_rows(args, &plan, &config, &uses)?);
    }
    if experiments.contains(&6) {
        rows.extend(write_rows(args, &plan)?);
    }
    rows.sort_by_key(|r| r.experiment);
    crate::filters::report::emit(args.json, &rows, Row::json, report::table)
}

fn plan(args: &Args) -> anyhow::Result<Plan> {
    let (entries, queries, reps, memtable_kib, table_kib) = if args.quick {
        (20_000, 10, 1, 256, 16)
    } else {
        (
            args.entries,
            args.queries,
            args.reps,
            args.memtable_kib,
            args.table_kib,
        )
    };
    Ok(Plan {
        entries,
        queries,
        reps,
        sizes: Sizes {
            memtable_bytes: usize::try_from(memtable_kib << 10).context("memtable too large")?,
            table_bytes: table_kib << 10,
        },
        base: Config {
            entries,
            domain_pct: 100,
            order: usize::try_from(args.order).context("order too large")?,
            leaf_bits: args.leaf_bits,
            indexes: 1,
        },
    })
}

/// Every configuration experiments 1–5 need, each with the experiments
/// that report on it (the base configuration serves several).
fn configurations(plan: &Plan, experiments: &[u32]) -> BTreeMap<Config, Vec<u32>> {
    let base = plan.base;
    let mut out: BTreeMap<Config, Vec<u32>> = BTreeMap::new();
    let mut add = |experiment: u32, config: Config| {
        if experiments.contains(&experiment) {
            out.entry(config).or_default().push(experiment);
        }
    };
    for entries in [plan.entries / 10, plan.entries * 3 / 10, plan.entries] {
        add(1, Config { entries, ..base });
    }
    for order in ORDERS {
        add(2, Config { order, ..base });
    }
    for leaf_bits in LEAF_BITS {
        add(3, Config { leaf_bits, ..base });
    }
    for domain_pct in DOMAINS {
        add(4, Config { domain_pct, ..base });
    }
    add(5, base);
    out
}

/// Loads `config` once and runs the queries of every experiment in `uses`.
fn search_rows(
    args: &Args,
    plan: &Plan,
    config: &Config,
    uses: &[u32],
) -> anyhow::Result<Vec<Row>> {
    eprintln!(
        "experiments {uses:?}: {} entries, {}% domain, d = {}, m = {} bits: loading",
        config.entries, config.domain_pct, config.order, config.leaf_bits
    );
    let data = Data::new(args.seed, config.entries, config.distinct())?;
    let dir = args.dir.create()?;
    let db = store::open(dir.path(), config, plan.sizes)?;
    let load = store::load(&db, &data)?;
    // A flush writes the whole memtable as one table, whose leaf (sized
    // for a table of the target size) would be saturated: compact, so
    // every table searched is cut at the target.
    db.compact()?;
    let levels = store::tables_per_level(&db);
    let tables: u64 = levels.iter().map(|&t| t as u64).sum();
    let shape = db.indexes().first().map(|i| i.leaf_sizing.description());
    let stats = db.stats();
    let bytes: u64 = stats.levels.iter().map(|l| l.bytes).sum();
    eprintln!(
        "  loaded in {:.1} s: {tables} tables, per level {levels:?}, {:.1} table bytes/entry, leaves of {}",
        load.as_secs_f64(),
        bytes as f64 / config.entries as f64,
        shape.unwrap_or_default()
    );
    let mut rows = Vec::new();
    let present = uses.iter().any(|&e| e != 5);
    let searches = [
        (present, Values::Present),
        (uses.contains(&5), Values::Absent),
    ];
    for (wanted, values) in searches {
        if !wanted {
            continue;
        }
        eprintln!("  {values:?} values");
        let tallies = measure::run(&db, &data, values, plan.queries, plan.reps, args.batch)?;
        let users = uses
            .iter()
            .filter(|&&e| (e == 5) == (values == Values::Absent));
        for &experiment in users {
            for (searcher, tally) in &tallies {
                rows.push(Row::of_queries(
                    experiment,
                    searcher.name(),
                    config,
                    tables,
                    tally,
                    values == Values::Absent,
                ));
            }
        }
    }
    Ok(rows)
}

/// Experiment 6: loads the base configuration with 0, 1 and 3 indexes,
/// each on a fresh directory, in an order rotated per repetition.
fn write_rows(args: &Args, plan: &Plan) -> anyhow::Result<Vec<Row>> {
    let data = Data::new(args.seed, plan.entries, plan.base.distinct())?;
    let mut runs: Vec<(Config, u64, Vec<f64>)> = INDEX_COUNTS
        .iter()
        .map(|&indexes| {
            (
                Config {
                    indexes,
                    ..plan.base
                },
                0,
                Vec::new(),
            )
        })
        .collect();
    for rep in 0..plan.reps {
        for step in 0..runs.len() {
            let slot = (step + rep as usize) % runs.len();
            let (config, tables, times) = &mut runs[slot];
            eprintln!(
                "experiment 6, rep {}/{}: fillrandom with {} value indexes",
                rep + 1,
                plan.reps,
                config.indexes
            );
            let dir = args.dir.create()?;
            let db = store::open(dir.path(), config, plan.sizes)?;
            let load = store::load(&db, &data)?;
            *tables = store::tables_per_level(&db).iter().map(|&t| t as u64).sum();
            times.push(load.as_secs_f64() * 1e3 / plan.entries as f64);
        }
    }
    Ok(runs
        .iter()
        .map(|(config, tables, times)| Row::of_writes(config, *tables, times))
        .collect())
}
