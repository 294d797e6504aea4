//! `sift-bench`: db_bench-style benchmarks for Sift, with competitors run side
//! by side in one process.
//!
//! Each subcommand is one family of named workloads that prints one table of
//! results (or JSON lines with `--json`). Progress goes to stderr so stdout
//! stays parseable. `filters` compares filters, `db` whole engines,
//! `value-search` search by value on generated data shapes (every method, the
//! planner and a hand-built exact index), `txn` what the Bloom
//! pre-check buys a transaction. `stress` is not a benchmark but a
//! correctness run: random operations checked against an expected state,
//! with the process killed at random moments (Unix only).

use clap::{Parser, Subcommand};

mod db;
mod filters;
mod raft;
mod raft_catchup;
mod scale;
mod scratch;
#[cfg(unix)]
mod stress;
mod txn;
mod value_search;

/// Command line of the `sift-bench` binary.
#[derive(Parser, Debug)]
#[command(name = "sift-bench", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The benchmark families.
#[derive(Subcommand, Debug)]
enum Command {
    /// Sift's filters against crates.io filters: size, FPR, build and query time.
    Filters(filters::Args),
    /// Whole-engine workloads (fillrandom, readrandom, readmissing, ...): Sift against fjall.
    Db(db::Args),
    /// Search by value on real-looking data shapes: scan, the filter methods, the planner and an exact index.
    ValueSearch(value_search::Args),
    /// Transactions: own-set look-ups and validation, with and without the Bloom pre-check.
    Txn(txn::Args),
    /// Replicated writes and linearizable reads on loopback: three nodes, one node, embedded.
    Raft(raft::Args),
    /// A follower far behind catches up by snapshot (against copying the file), and a node's memory under a full scan and a find.
    RaftCatchup(raft_catchup::Args),
    /// Point lookups with the tables' filters and indexes under a memory budget, against RocksDB with them in its block cache.
    Scale(scale::Args),
    /// Random operations from several threads checked against an expected state, with SIGKILLs and reopens.
    #[cfg(unix)]
    Stress(stress::Args),
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Filters(args) => filters::run(&args),
        Command::Db(args) => db::run(&args),
        Command::ValueSearch(args) => value_search::run(&args),
        Command::Txn(args) => txn::run(&args),
        Command::Raft(args) => raft::run(&args),
        Command::RaftCatchup(args) => raft_catchup::run(&args),
        Command::Scale(args) => scale::run(&args),
        #[cfg(unix)]
        Command::Stress(args) => stress::run(&args),
    }
}
