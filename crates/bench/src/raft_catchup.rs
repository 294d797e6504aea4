//! `sift-bench raft-catchup`: a follower far behind catches up by
//! snapshot, and what a node's full scan and `find` cost in memory.
//!
//! Three nodes in this process. A follower stops; `--bytes` of JSON
//! records are written through the leader, which snapshots and purges its
//! log; the follower starts again and must take the snapshot. Reported:
//! the catch-up time against the time to copy the snapshot's files once on
//! the same disk (read, write, fsync), the issue's yardstick ("within 2x
//! the copy"). Then, with the peak resident size reset (Linux's
//! `/proc/self/clear_refs`), a full scan in pages and a `find` through the
//! leader: the peak growth over the resident size before each, for the
//! whole process (three nodes and the client), an upper bound for one node.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;
use sift_raft::{Client, Command, Node, NodeOptions, Op};

/// Options of `sift-bench raft-catchup`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Bytes of values written while the follower is down.
    #[arg(long, default_value_t = 1 << 30)]
    bytes: u64,
    /// Bytes per value.
    #[arg(long, default_value_t = 64 << 10)]
    value_len: usize,
    /// Values per write request (one Raft entry).
    #[arg(long, default_value_t = 16)]
    batch: usize,
    /// Concurrent writers.
    #[arg(long, default_value_t = 4)]
    clients: usize,
    /// Results a `find` may return.
    #[arg(long, default_value_t = 1000)]
    find_limit: usize,
    /// Measure memory only, on a one-node cluster: the process's peak
    /// resident size (the node's and the client's) during a full scan and a
    /// `find`, an upper bound of what the node holds.
    #[arg(long)]
    memory_only: bool,
    #[command(flatten)]
    dir: crate::scratch::ScratchDir,
}

/// Records fall in this many groups, the field `g` of their JSON value:
/// a `find` of one group matches 1 in `GROUPS` of the store.
const GROUPS: u64 = 16;

/// Patience for any one phase.
const PATIENCE: Duration = Duration::from_secs(1800);

fn key(i: u64) -> Vec<u8> {
    format!("record-{i:010}").into_bytes()
}

/// Record `i`: `{"g":"<group>","p":"<padding>"}`, `len` bytes.
fn value(i: u64, len: usize) -> Vec<u8> {
    let head = format!("{{\"g\":\"{}\",\"p\":\"", i % GROUPS);
    let pad = len.saturating_sub(head.len() + 2);
    let mut value = head.into_bytes();
    value.extend(std::iter::repeat_n(b'a' + (i % 26) as u8, pad));
    value.extend_from_slice(b"\"}");
    value
}

/// The options every node gets: a snapshot every 256 entries and no log
/// kept past it, so a follower that missed the load must take a snapshot.
fn configure(options: NodeOptions) -> NodeOptions {
    let mut options = options;
    options.config.snapshot_policy = openraft::SnapshotPolicy::LogsSinceLast(256);
    options.config.max_in_snapshot_log_to_keep = 0;
    options
}

/// Resident and peak resident bytes of this process.
pub(crate) fn memory() -> anyhow::Result<(u64, u64)> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    let field = |name: &str| -> anyhow::Result<u64> {
        let line = status
            .lines()
            .find(|line| line.starts_with(name))
            .with_context(|| format!("no {name} in /proc/self/status"))?;
        let kib: u64 = line
            .split_whitespace()
            .nth(1)
            .context("a malformed line")?
            .parse()?;
        Ok(kib << 10)
    };
    Ok((field("VmRSS:")?, field("VmHWM:")?))
}

/// Runs `work` with the peak resident size reset first; the peak growth
/// over the resident size before it (`None` where the peak cannot be
/// reset).
async fn peak_growth<T>(
    work: impl std::future::Future<Output = anyhow::Result<T>>,
) -> anyhow::Result<(T, Option<u64>)> {
    let reset = std::fs::write("/proc/self/clear_refs", "5");
    if let Err(e) = &reset {
        eprintln!("cannot reset the peak resident size: {e}");
    }
    let (before, _) = memory()?;
    let out = work.await?;
    let (_, peak) = memory()?;
    Ok((out, reset.ok().map(|()| peak.saturating_sub(before))))
}

/// Finds up to `limit` records of one group, in pages, as a client that
/// does not hold the whole answer reads them; how many.
async fn find_group(client: &Client, limit: usize) -> anyhow::Result<usize> {
    let mut pages = client.find_pages("g", b"3", limit);
    let mut found = 0;
    while let Some(page) = pages.next_page().await? {
        found += page.len();
    }
    Ok(found)
}

/// Writes `count` records from `clients` concurrent writers.
async fn load(client: &Client, args: &Args, count: u64) -> anyhow::Result<()> {
    let mut writers = tokio::task::JoinSet::new();
    let requests = count.div_ceil(args.batch as u64);
    for w in 0..args.clients as u64 {
        let (client, batch, len) = (client.clone(), args.batch as u64, args.value_len);
        let share: Vec<u64> = (w..requests).step_by(args.clients).collect();
        writers.spawn(async move {
            for r in share {
                let ops = (r * batch..((r + 1) * batch).min(count))
                    .map(|i| Op::Put {
                        key: key(i),
                        value: value(i, len),
                    })
                    .collect();
                client.write(&Command::Write(ops)).await?;
            }
            anyhow::Ok(())
        });
    }
    while let Some(done) = writers.join_next().await {
        done??;
    }
    Ok(())
}

/// Waits until `check` holds, polling.
async fn until(what: &str, mut check: impl FnMut() -> bool) -> anyhow::Result<()> {
    let start = Instant::now();
    while !check() {
        anyhow::ensure!(start.elapsed() < PATIENCE, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(())
}

/// The current snapshot file of the node in `dir`.
/// The directory of the node's current snapshot.
fn snapshot_dir(dir: &Path) -> anyhow::Result<PathBuf> {
    let snapshots = dir.join("snapshots");
    let current = std::fs::read_to_string(snapshots.join("CURRENT"))?;
    Ok(snapshots.join(format!("snapshot-{}", current.trim())))
}

/// Copies the files of `from` into a new directory beside it, each synced,
/// then the directory; the bytes copied and the time it took.
fn timed_copy(from: &Path) -> anyhow::Result<(u64, Duration)> {
    let to = from.with_extension("copy");
    let start = Instant::now();
    std::fs::create_dir(&to)?;
    let mut bytes = 0;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        bytes += std::fs::copy(entry.path(), &target)?;
        std::fs::File::open(&target)?.sync_all()?;
    }
    std::fs::File::open(&to)?.sync_all()?;
    let took = start.elapsed();
    std::fs::remove_dir_all(&to)?;
    Ok((bytes, took))
}

async fn measure(args: &Args) -> anyhow::Result<()> {
    let dir = args.dir.create()?;
    let (mut nodes, clients) = crate::raft::cluster(dir.path(), 3, configure).await?;
    let leader_id = nodes[0].status().leader.context("no leader")?;
    let leader = nodes
        .iter()
        .position(|node| node.status().id == leader_id)
        .context("the leader is not a node")?;
    let client = clients[leader].clone();
    client.define_index("g", "/g").await?;
    // Stop a follower.
    let follower = (0..3).find(|&i| i != leader).context("no follower")?;
    let stopped = nodes.remove(follower);
    let (follower_id, follower_addr) = (stopped.status().id, stopped.addr());
    stopped.shutdown().await;
    let leader = if follower < leader {
        leader - 1
    } else {
        leader
    };

    let count = args.bytes / args.value_len as u64;
    eprintln!("loading {count} records of {} bytes", args.value_len);
    let start = Instant::now();
    load(&client, args, count).await?;
    let load_secs = start.elapsed().as_secs_f64();
    eprintln!("loaded in {load_secs:.1} s");
    let applied = nodes[leader].status().last_applied;
    // A trigger while a build runs is dropped: triggered again until a
    // snapshot covers the load.
    let start = Instant::now();
    while nodes[leader].status().snapshot < applied {
        anyhow::ensure!(start.elapsed() < PATIENCE, "no snapshot covers the load");
        nodes[leader].raft().trigger().snapshot().await?;
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    // The leader purges its log up to the snapshot once no replication
    // uses it: the follower must then take the snapshot.
    let purge_start = Instant::now();
    let purged = until("the leader's purge", || {
        let purged = nodes[leader].raft().metrics().borrow().purged;
        purged.map(|id| id.index) >= applied
    });
    if let Err(e) = tokio::time::timeout(Duration::from_secs(60), purged).await {
        eprintln!("{e}: the leader's log is not purged after 60 s");
    }
    eprintln!("purged after {:.1} s", purge_start.elapsed().as_secs_f64());
    let leader_dir = dir.path().join(format!("n{leader_id}"));
    // The faster of two copies: the second finds the files in the page
    // cache, as the transfer that follows does.
    let snapshot = snapshot_dir(&leader_dir)?;
    let (snapshot_bytes, first_copy) = timed_copy(&snapshot)?;
    let copy = first_copy.min(timed_copy(&snapshot)?.1);

    eprintln!("restarting node {follower_id}");
    let start = Instant::now();
    let options = configure(NodeOptions::new(
        follower_id,
        follower_addr,
        dir.path().join(format!("n{follower_id}")),
    ));
    let restarted = Node::start(options).await?;
    until("the follower's catch-up", || {
        restarted.status().last_applied >= applied
    })
    .await?;
    let catch_up = start.elapsed();
    let transfers = restarted.status().snapshot_transfers;

    let (scanned, scan_peak) = peak_growth(async {
        let mut pages = client.scan_pages(b"", None, usize::MAX);
        let (mut entries, mut bytes) = (0u64, 0u64);
        while let Some(page) = pages.next_page().await? {
            entries += page.len() as u64;
            bytes += page
                .iter()
                .map(|e| (e.key.len() + e.value.len()) as u64)
                .sum::<u64>();
        }
        anyhow::Ok((entries, bytes))
    })
    .await?;
    anyhow::ensure!(
        scanned.0 == count,
        "the scan saw {} of {count} records",
        scanned.0
    );
    let (found, find_peak) = peak_growth(find_group(&client, args.find_limit)).await?;
    let (rss, _) = memory()?;

    let mib = |bytes: u64| bytes as f64 / f64::from(1 << 20);
    let growth =
        |peak: Option<u64>| peak.map_or("unknown".into(), |p| format!("{:.1} MiB", mib(p)));
    println!(
        "sift-bench raft-catchup: {count} records of {} bytes ({:.0} MiB) written in {load_secs:.1} s with node {follower_id} down",
        args.value_len,
        mib(count * args.value_len as u64)
    );
    println!(
        "catch-up by snapshot: {:.1} s for a {:.0} MiB snapshot ({transfers} transfer(s)); copying its files once: {:.1} s (first copy {:.1} s); ratio {:.2}x",
        catch_up.as_secs_f64(),
        mib(snapshot_bytes),
        copy.as_secs_f64(),
        first_copy.as_secs_f64(),
        catch_up.as_secs_f64() / copy.as_secs_f64()
    );
    println!(
        "full scan through the leader: {} records, {:.0} MiB, peak growth {}",
        scanned.0,
        mib(scanned.1),
        growth(scan_peak)
    );
    println!(
        "find of 1 group in {GROUPS} (limit {}): {found} records, peak growth {}",
        args.find_limit,
        growth(find_peak)
    );
    println!(
        "resident size of the process (3 nodes) afterwards: {:.0} MiB",
        mib(rss)
    );
    restarted.shutdown().await;
    for node in nodes {
        node.shutdown().await;
    }
    Ok(())
}

/// Runs the measurement once and prints it.
pub fn run(args: &Args) -> anyhow::Result<()> {
    // As `sift serve` runs its node.
    sift_raft::malloc::tune_for_node();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    if args.memory_only {
        runtime.block_on(measure_memory(args))
    } else {
        runtime.block_on(measure(args))
    }
}

/// `--memory-only`: one node, loaded, then a full scan and a `find`, each
/// with the peak resident size reset first.
async fn measure_memory(args: &Args) -> anyhow::Result<()> {
    let dir = args.dir.create()?;
    let (nodes, clients) = crate::raft::cluster(dir.path(), 1, configure).await?;
    let client = clients[0].clone();
    client.define_index("g", "/g").await?;
    let count = args.bytes / args.value_len as u64;
    eprintln!("loading {count} records of {} bytes", args.value_len);
    load(&client, args, count).await?;
    let mib = |bytes: u64| bytes as f64 / f64::from(1 << 20);
    let peak = |what: &str, before: u64| -> anyhow::Result<()> {
        let (_, peak) = memory()?;
        println!(
            "{what}: resident {:.0} MiB before, peak {:.0} MiB",
            mib(before),
            mib(peak)
        );
        Ok(())
    };
    std::fs::write("/proc/self/clear_refs", "5").context("cannot reset the peak resident size")?;
    let (before, _) = memory()?;
    let mut pages = client.scan_pages(b"", None, usize::MAX);
    let mut entries = 0;
    while let Some(page) = pages.next_page().await? {
        entries += page.len() as u64;
    }
    anyhow::ensure!(
        entries == count,
        "the scan saw {entries} of {count} records"
    );
    peak(&format!("one node, full scan of {count} records"), before)?;
    std::fs::write("/proc/self/clear_refs", "5")?;
    let (before, _) = memory()?;
    let found = find_group(&client, args.find_limit).await?;
    peak(
        &format!(
            "one node, find (limit {}): {found} records",
            args.find_limit
        ),
        before,
    )?;
    for node in nodes {
        node.shutdown().await;
    }
    Ok(())
}
