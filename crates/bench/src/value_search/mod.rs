//! `sift-bench value-search`: search by value ("which keys have this
//! value?") on generated tables that look like real data, by data shape,
//! method and query class (see `docs/value-search.md`).
//!
//! For each shape (`shapes/`) and each table configuration (`stores.rs`),
//! the same records are loaded three times, timed: with no index, with
//! one value index over the shape's column, and with the hand-built exact
//! index (`exact.rs`). Then each query class (uniform, by frequency,
//! absent) runs through the five filter contenders on the value-index
//! store and the exact index on its store, interleaved (`measure.rs`);
//! every answer is checked against the generator (`dataset.rs`).

mod dataset;
mod exact;
mod measure;
mod report;
pub(crate) mod rng;
mod shapes;
mod stores;

use anyhow::Context;

use dataset::{Class, Dataset};
use measure::{Contender, Stores};
use report::{LoadRow, QueryRow, Row, Setting};
use shapes::Shape;
use stores::{Loaded, Store, Tables};

/// Options of `sift-bench value-search`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Records per shape (distinct keys; 10% more writes are updates).
    #[arg(long, default_value_t = 300_000, value_parser = clap::value_parser!(u64).range(100..=10_000_000))]
    records: u64,

    /// Queries per contender, class, shape, configuration and repetition.
    #[arg(long, default_value_t = 12, value_parser = clap::value_parser!(u64).range(1..))]
    queries: u64,

    /// Repetitions of every load and every query class (medians are taken
    /// over them).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..))]
    reps: u64,

    /// Queries per batch: each batch runs through every contender before
    /// the next starts.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u64).range(1..))]
    batch: u64,

    /// Shapes to run, comma-separated (small, clustered, spread, zipf3,
    /// zipf20, zipf16, zipf105, hitters; default all).
    #[arg(long, value_delimiter = ',')]
    shapes: Vec<String>,

    /// Table configurations, comma-separated (128k, default, memtable:
    /// everything left in memtables; default 128k and default).
    #[arg(long, value_delimiter = ',')]
    tables: Vec<String>,

    /// A CI-sized run: 20,000 records, 4 queries, one repetition (overrides
    /// those options).
    #[arg(long)]
    quick: bool,

    #[command(flatten)]
    dir: crate::scratch::ScratchDir,

    /// Print one JSON object per row and line.
    #[arg(long)]
    json: bool,

    /// Seed of the generators.
    #[arg(long, default_value_t = 0x5eed_5ea4)]
    seed: u64,
}

/// The sizes after `--quick`.
#[derive(Clone, Copy, Debug)]
struct Plan {
    records: u64,
    queries: u64,
    reps: u64,
    batch: u64,
}

/// Runs every shape and configuration and prints the tables (or JSON lines).
pub fn run(args: &Args) -> anyhow::Result<()> {
    let plan = if args.quick {
        Plan {
            records: 20_000,
            queries: 4,
            reps: 1,
            batch: 2,
        }
    } else {
        Plan {
            records: args.records,
            queries: args.queries,
            reps: args.reps,
            batch: args.batch,
        }
    };
    let shapes = chosen(&args.shapes, &Shape::ALL, &Shape::ALL, Shape::name)?;
    let configs = chosen(&args.tables, &Tables::KNOWN, &Tables::ALL, Tables::name)?;
    eprintln!(
        "sift-bench value-search: records = {}, queries = {}, reps = {}, batch = {}, shapes {:?}, tables {:?}",
        plan.records,
        plan.queries,
        plan.reps,
        plan.batch,
        shapes.iter().map(|s| s.name()).collect::<Vec<_>>(),
        configs.iter().map(|c| c.name()).collect::<Vec<_>>()
    );
    eprintln!("machine: {}", crate::filters::report::machine());
    eprintln!(
        "load average at start: {}",
        crate::filters::report::load_average()
    );
    let mut rows = Vec::new();
    for (s, &shape) in shapes.iter().enumerate() {
        let data = Dataset::new(shape, args.seed, plan.records)?;
        eprintln!(
            "{shape}: {} records, {} writes, {} distinct values, {:.1} bytes per record, {}",
            data.records(),
            data.write_count(),
            data.distinct(),
            data.mean_record_bytes(),
            data.extractor().description()
        );
        for (c, &config) in configs.iter().enumerate() {
            rows.extend(run_one(args, &plan, &data, config, s + c)?);
        }
    }
    crate::filters::report::emit(args.json, &rows, Row::json, report::tables)
}

/// The items of `known` named in `names` (`default` when none is).
fn chosen<T: Copy>(
    names: &[String],
    known: &[T],
    default: &[T],
    name: fn(T) -> &'static str,
) -> anyhow::Result<Vec<T>> {
    if names.is_empty() {
        return Ok(default.to_vec());
    }
    names
        .iter()
        .map(|wanted| {
            known
                .iter()
                .copied()
                .find(|&t| name(t) == wanted)
                .with_context(|| {
                    let choices: Vec<&str> = known.iter().map(|&t| name(t)).collect();
                    format!(
                        "unknown name {wanted:?}: choose from {}",
                        choices.join(", ")
                    )
                })
        })
        .collect()
}

/// Loads `data` with `config` into the three stores, `reps` times (in an
/// order rotated by `turn` and by repetition; the last repetition's stores
/// are kept), then runs every query class.
fn run_one(
    args: &Args,
    plan: &Plan,
    data: &Dataset,
    config: Tables,
    turn: usize,
) -> anyhow::Result<Vec<Row>> {
    let setting = Setting {
        shape: data.shape().name().to_owned(),
        config: config.name().to_owned(),
        records: data.records(),
    };
    let label = format!("{} {}", setting.shape, setting.config);
    let mut seconds: [Vec<f64>; 3] = Default::default();
    let mut kept: Vec<Option<Loaded>> = vec![None, None, None];
    for rep in 0..plan.reps as usize {
        kept = vec![None, None, None];
        for step in 0..Store::ALL.len() {
            let slot = (step + turn + rep) % Store::ALL.len();
            let store = Store::ALL[slot];
            let load = stores::load(&args.dir, data, config, store)?;
            eprintln!(
                "  {label} rep {}/{}: {} loaded in {:.2} s, tables per level {:?}",
                rep + 1,
                plan.reps,
                store.name(),
                load.seconds,
                load.footprint.levels
            );
            seconds[slot].push(load.seconds);
            kept[slot] = Some(load);
        }
    }
    let [Some(plain), Some(value), Some(exact)] = <[Option<Loaded>; 3]>::try_from(kept)
        .map_err(|_| anyhow::anyhow!("three stores expected"))?
    else {
        anyhow::bail!("a store was not loaded");
    };
    if let Some(i) = &value.footprint.index {
        eprintln!(
            "  {label}: value index {:?}: {} tables, {} distinct values in tables, {:.1} leaf bits/value, measured leaf FPR {:.4} ({} probes), {} classes, {:.1} block filter bits/value",
            i.name,
            i.tables_indexed,
            i.distinct_values,
            i.leaf_bits_per_value,
            i.measured_leaf_fpr,
            i.fpr_probes,
            i.leaf_classes,
            i.block_filter_bits_per_value
        );
    }
    let stores = Stores {
        value_index: &value.db,
        exact_index: &exact.db,
        data,
        extractor: data.extractor(),
        label: label.clone(),
    };
    let first_find_ms = measure::warm_up(&stores)?;
    eprintln!("  {label}: first Db::find after the load: {first_find_ms:.2} ms (untimed warm-up)");

    let mut rows = Vec::new();
    for class in Class::ALL {
        eprintln!("  {label}: {} values", class.name());
        let tallies = measure::run(&stores, class, plan.queries, plan.reps, plan.batch)?;
        let median = |contender: Contender| {
            tallies
                .iter()
                .find(|(c, _)| *c == contender)
                .map_or(0.0, |(_, t)| {
                    crate::filters::measure::Spread::of(&t.rep_ms).median
                })
        };
        let (scan_ms, exact_ms) = (median(Contender::Scan), median(Contender::ExactIndex));
        for (contender, tally) in &tallies {
            let footprint = if *contender == Contender::ExactIndex {
                &exact.footprint
            } else {
                &value.footprint
            };
            rows.push(Row::Query(QueryRow::new(
                &setting,
                *contender,
                class.name(),
                footprint,
                tally,
                scan_ms,
                exact_ms,
                class == Class::Absent,
            )));
        }
    }
    let kept = [&plain, &value, &exact];
    let mut out = load_rows(&setting, data, &kept, &seconds, first_find_ms)?;
    out.extend(rows);
    Ok(out)
}

/// The load rows of the three stores (`kept`, in [`Store::ALL`] order),
/// with their load times (`seconds`, same order). Sizes are measured after
/// compacting each store fully (untimed, after its searches), so stale
/// versions left by the load do not blur the comparison; the size as
/// searched is reported beside.
fn load_rows(
    setting: &Setting,
    data: &Dataset,
    kept: &[&Loaded; 3],
    seconds: &[Vec<f64>; 3],
    first_find_ms: f64,
) -> anyhow::Result<Vec<Row>> {
    let compacted = kept
        .iter()
        .map(|l| stores::compacted(&l.db))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let loads: Vec<report::Loads<'_>> = (0..Store::ALL.len())
        .map(|slot| report::Loads {
            seconds: &seconds[slot],
            footprint: &kept[slot].footprint,
            compacted: &compacted[slot],
        })
        .collect();
    Ok(Store::ALL
        .iter()
        .zip(&loads)
        .map(|(&store, this)| {
            let first = (store == Store::ValueIndex).then_some(first_find_ms);
            Row::Load(LoadRow::new(
                setting,
                store,
                data.write_count(),
                this,
                &loads[0],
                first,
            ))
        })
        .collect())
}
