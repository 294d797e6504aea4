//! `sift-bench txn`: what the Bloom pre-check buys a transaction.
//!
//! Experiments (see `docs/benchmarks.md`, "Transactions"):
//!
//! 1. `ownset`: look-ups in a transaction's own key set
//!    ([`siftdb::txn::KeySet`]) of N distinct keys, 90% of them of keys not
//!    in the set, with the scalable Bloom pre-check and with the exact set
//!    alone; hashes are computed beforehand (the engine computes one per
//!    operation either way), so the rows time the look-up only;
//! 2. `txn`: whole transactions of N operations (alternating inserts of new
//!    keys and gets of absent ones) on a database built with
//!    `txn_precheck(true)` and `(false)`, time per operation;
//! 3. `validation`: the commit of a transaction after C others committed
//!    since its snapshot (C = 1, 10, 100, 1000), for two shapes: a large
//!    read set against small commits, and a small one against large
//!    commits.
//!
//! Reported: medians over `--reps` of the mean time per operation.

mod measure;
mod report;

use report::Row;

/// Transaction sizes of experiments 1 and 2.
const SIZES: [u64; 5] = [10, 100, 1_000, 10_000, 100_000];
/// Commits since the snapshot in experiment 3.
const COMMITTED: [u64; 4] = [1, 10, 100, 1_000];

/// Options of `sift-bench txn`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Repetitions (medians are taken over them).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..))]
    reps: u64,

    /// A CI-sized run: sizes up to 10,000, commits up to 100, one
    /// repetition (overrides `--reps`).
    #[arg(long)]
    quick: bool,

    #[command(flatten)]
    dir: crate::scratch::ScratchDir,

    /// Print one JSON object per row and line.
    #[arg(long)]
    json: bool,

    /// Experiments to run (comma-separated: ownset, txn, validation;
    /// default all).
    #[arg(long, value_delimiter = ',')]
    experiments: Vec<String>,
}

/// Runs the experiments and prints the table (or JSON lines).
pub fn run(args: &Args) -> anyhow::Result<()> {
    let (sizes, committed, reps): (&[u64], &[u64], u64) = if args.quick {
        (&SIZES[..4], &COMMITTED[..3], 1)
    } else {
        (&SIZES, &COMMITTED, args.reps)
    };
    eprintln!("sift-bench txn: sizes = {sizes:?}, committed = {committed:?}, reps = {reps}");
    eprintln!("machine: {}", crate::filters::report::machine());
    eprintln!(
        "load average at start: {}",
        crate::filters::report::load_average()
    );
    let dir = args.dir.create()?;
    const KNOWN: [&str; 3] = ["ownset", "txn", "validation"];
    if let Some(bad) = args
        .experiments
        .iter()
        .find(|e| !KNOWN.contains(&e.as_str()))
    {
        anyhow::bail!("unknown experiment {bad}: choose from {KNOWN:?}");
    }
    let wanted =
        |name: &str| args.experiments.is_empty() || args.experiments.iter().any(|e| e == name);
    let mut rows: Vec<Row> = Vec::new();
    for &n in sizes.iter().filter(|_| wanted("ownset")) {
        eprintln!("ownset: {n} keys");
        rows.extend(measure::own_set(n, reps));
    }
    for &n in sizes.iter().filter(|_| wanted("txn")) {
        eprintln!("txn: {n} operations");
        rows.extend(measure::whole_txn(dir.path(), n, reps)?);
    }
    for &c in committed.iter().filter(|_| wanted("validation")) {
        for shape in measure::SHAPES {
            eprintln!("validation: {c} commits, {}", shape.name);
            rows.extend(measure::validation(dir.path(), shape, c, reps)?);
        }
    }
    crate::filters::report::emit(args.json, &rows, Row::json, report::table)
}
