//! `sift-bench raft`: replicated writes and linearizable reads on
//! loopback, side by side with what one node does.
//!
//! Three setups, interleaved within each repetition:
//! - `embedded`: a Sift database in this process, every write synced (the
//!   durability a Raft log gives an acknowledged write);
//! - `1 node`: a one-node cluster over HTTP (the server and client costs,
//!   no replication);
//! - `3 nodes`: a three-node cluster over HTTP, every node in this process.
//!
//! Workloads, from `--clients` concurrent clients: `put` (one key per
//! request), `batch` (`--batch` keys per request, one Raft entry), `get`
//! (linearizable reads of written keys, Zipf-skewed). Keys are 16 bytes,
//! values 100. Reported: medians over `--reps` of entries per second.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use sift_filter::mix64;
use sift_raft::{Client, Command, Node, NodeOptions, Op};
use siftdb::{Db, WriteBatch, WriteOptions};

/// Options of `sift-bench raft`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Entries written (and read) per workload and setup.
    #[arg(long, default_value_t = 20_000)]
    ops: u64,
    /// Entries per request of `batch`.
    #[arg(long, default_value_t = 100)]
    batch: u64,
    /// Concurrent clients.
    #[arg(long, default_value_t = 16)]
    clients: u64,
    /// Repetitions (medians are taken over them).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..))]
    reps: u64,
    #[command(flatten)]
    dir: crate::scratch::ScratchDir,
}

const VALUE_LEN: usize = 100;
const SETUPS: [&str; 3] = ["embedded", "1 node", "3 nodes"];
const WORKLOADS: [&str; 3] = ["put", "batch", "get"];

/// Where a workload's requests go.
enum Target {
    Embedded(Arc<Db>),
    Cluster(Vec<Client>),
}

/// Key `i`: 16 bytes, spread over the key space.
fn key(i: u64) -> Vec<u8> {
    let mut key = mix64(i).to_be_bytes().to_vec();
    key.extend_from_slice(&i.to_be_bytes());
    key
}

/// The `i`th read's key among `n` written: Zipf-like skew (half the reads
/// go to about the first 1% of keys).
fn skewed(i: u64, n: u64) -> u64 {
    let u = (mix64(i ^ 0x9e37) >> 11) as f64 / (1u64 << 53) as f64;
    ((n as f64).powf(u) as u64).saturating_sub(1).min(n - 1)
}

/// Runs `requests` requests of `per` entries each, from `clients` tasks.
async fn drive(
    target: &Target,
    workload: &str,
    requests: u64,
    per: u64,
    clients: u64,
) -> anyhow::Result<Duration> {
    let start = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..clients {
        let share: Vec<u64> = (c..requests).step_by(clients as usize).collect();
        let target = match target {
            Target::Embedded(db) => Target::Embedded(Arc::clone(db)),
            Target::Cluster(clients) => Target::Cluster(clients.clone()),
        };
        let workload = workload.to_string();
        let total = requests * per;
        tasks.push(tokio::spawn(async move {
            for r in share {
                let keys: Vec<u64> = (r * per..(r + 1) * per).collect();
                request(&target, &workload, &keys, total).await?;
            }
            anyhow::Ok(())
        }));
    }
    for task in tasks {
        task.await??;
    }
    Ok(start.elapsed())
}

/// One request: writes of `keys`, or a read of one of `written` keys.
async fn request(
    target: &Target,
    workload: &str,
    keys: &[u64],
    written: u64,
) -> anyhow::Result<()> {
    let value = vec![b'v'; VALUE_LEN];
    match (target, workload) {
        (Target::Embedded(db), "get") => {
            let db = Arc::clone(db);
            let k = key(skewed(keys[0], written));
            let found = tokio::task::spawn_blocking(move || db.get(&k)).await??;
            anyhow::ensure!(found.is_some(), "embedded: a written key is missing");
        }
        (Target::Embedded(db), _) => {
            let mut batch = WriteBatch::new();
            for &k in keys {
                batch.insert(key(k), &value);
            }
            let db = Arc::clone(db);
            tokio::task::spawn_blocking(move || db.write_with(&batch, WriteOptions::sync()))
                .await??;
        }
        (Target::Cluster(clients), "get") => {
            let client = &clients[keys[0] as usize % clients.len()];
            let found = client.get(&key(skewed(keys[0], written))).await?;
            anyhow::ensure!(found.is_some(), "cluster: a written key is missing");
        }
        (Target::Cluster(clients), _) => {
            let client = &clients[keys[0] as usize % clients.len()];
            let ops = keys
                .iter()
                .map(|&k| Op::Put {
                    key: key(k),
                    value: value.clone(),
                })
                .collect();
            client.write(&Command::Write(ops)).await?;
        }
    }
    Ok(())
}

/// Starts a cluster of `n` nodes under `dir` (node `id` in `dir/n{id}`),
/// each with the options `configure` makes of the defaults, with a leader.
pub(crate) async fn cluster(
    dir: &std::path::Path,
    n: u64,
    configure: impl Fn(NodeOptions) -> NodeOptions,
) -> anyhow::Result<(Vec<Node>, Vec<Client>)> {
    let mut nodes = Vec::new();
    for id in 1..=n {
        let options = NodeOptions::new(id, "127.0.0.1:0".parse()?, dir.join(format!("n{id}")));
        nodes.push(Node::start(configure(options)).await?);
    }
    let members: BTreeMap<u64, String> = nodes
        .iter()
        .zip(1..)
        .map(|(node, id)| (id, node.addr().to_string()))
        .collect();
    let clients: Vec<Client> = nodes
        .iter()
        .map(|node| Client::new(node.addr().to_string()))
        .collect();
    clients[0].init(&members).await?;
    let start = Instant::now();
    while nodes.iter().any(|node| node.status().leader.is_none()) {
        anyhow::ensure!(start.elapsed() < Duration::from_secs(10), "no leader");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok((nodes, clients))
}

/// Runs every workload on `setup`; entries per second of each.
async fn measure(args: &Args, setup: &str) -> anyhow::Result<Vec<f64>> {
    let dir = args.dir.create()?;
    let (nodes, target) = match setup {
        "embedded" => (
            Vec::new(),
            Target::Embedded(Arc::new(Db::open(dir.path().join("db"))?)),
        ),
        _ => {
            let n = if setup == "1 node" { 1 } else { 3 };
            let (nodes, clients) = cluster(dir.path(), n, |options| options).await?;
            (nodes, Target::Cluster(clients))
        }
    };
    let mut rates = Vec::new();
    for workload in WORKLOADS {
        let per = if workload == "batch" { args.batch } else { 1 };
        let requests = args.ops / per;
        let took = drive(&target, workload, requests, per, args.clients)
            .await
            .with_context(|| format!("{setup}, {workload}"))?;
        rates.push((requests * per) as f64 / took.as_secs_f64());
    }
    for node in nodes {
        node.shutdown().await;
    }
    Ok(rates)
}

/// Runs the setups, interleaved, and prints the table.
pub fn run(args: &Args) -> anyhow::Result<()> {
    // As `sift serve` runs its nodes.
    sift_raft::malloc::tune_for_node();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    println!(
        "sift-bench raft: {} entries per workload, batches of {}, {} clients, {} reps; 16-byte keys, {VALUE_LEN}-byte values",
        args.ops, args.batch, args.clients, args.reps
    );
    let mut samples: BTreeMap<(&str, &str), Vec<f64>> = BTreeMap::new();
    for rep in 1..=args.reps {
        for setup in SETUPS {
            eprintln!("rep {rep}/{}: {setup}", args.reps);
            let rates = runtime.block_on(measure(args, setup))?;
            for (workload, rate) in WORKLOADS.iter().zip(rates) {
                samples.entry((setup, workload)).or_default().push(rate);
            }
        }
    }
    let median = |setup: &str, workload: &str| {
        let mut v = samples[&(setup, workload)].clone();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    println!(
        "{:<9} {:<6} {:>12} {:>12} {:>10}",
        "setup", "load", "entries/s", "vs embedded", "vs 1 node"
    );
    for setup in SETUPS {
        for workload in WORKLOADS {
            let rate = median(setup, workload);
            println!(
                "{setup:<9} {workload:<6} {rate:>12.0} {:>11.2}x {:>9.2}x",
                rate / median("embedded", workload),
                rate / median("1 node", workload)
            );
        }
    }
    Ok(())
}
