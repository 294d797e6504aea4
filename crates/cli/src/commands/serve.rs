//! `sift serve`: one node of a replicated cluster, until SIGINT or SIGTERM.

use std::path::Path;

use sift_raft::{Node, NodeOptions};
use siftdb::{Extractor, IndexDef};

use super::import::pointer;
use super::remote::{failure, runtime};
use crate::cli::ServeArgs;
use crate::error::{Failure, Outcome};

/// Starts the node with `--db` as its directory and serves until told to
/// stop.
pub fn run(db: &Path, args: &ServeArgs) -> Outcome {
    if args.id == 0 {
        return Err(Failure::usage("--id must be a positive integer"));
    }
    if args.heartbeat_ms == 0 {
        return Err(Failure::usage("--heartbeat-ms must be a positive integer"));
    }
    if args.snapshot_every == Some(0) {
        return Err(Failure::usage(
            "--snapshot-every must be a positive integer",
        ));
    }
    if args.memtable_mib == 0 {
        return Err(Failure::usage("--memtable-mib must be a positive integer"));
    }
    let bytes = |flag: &str, mib: u64| {
        mib.checked_mul(1 << 20)
            .and_then(|bytes| usize::try_from(bytes).ok())
            .ok_or_else(|| Failure::usage(format!("{flag} {mib} is too large")))
    };
    let (memtable_bytes, cache_bytes) = (
        bytes("--memtable-mib", args.memtable_mib)?,
        bytes("--cache-mib", args.cache_mib)?,
    );
    sift_raft::malloc::tune_for_node();
    let value_indexes = args
        .indexes
        .iter()
        .map(|spec| {
            let (name, field) = spec
                .split_once('=')
                .ok_or_else(|| Failure::usage(format!("--index {spec:?}: expected NAME=FIELD")))?;
            Ok(IndexDef::new(name, Extractor::json_field(pointer(field))))
        })
        .collect::<Outcome<Vec<_>>>()?;
    runtime()?.block_on(async {
        let mut options = NodeOptions::new(args.id, args.listen, db).heartbeat(args.heartbeat_ms);
        options.data.indexes = value_indexes;
        options.data.memtable_bytes = memtable_bytes;
        options.data.cache_bytes = cache_bytes as u64;
        if let Some(entries) = args.snapshot_every {
            options = options.snapshot_every(entries);
        }
        let node = Node::start(options).await.map_err(failure)?;
        eprintln!(
            "sift: node {} serving on {} (data in {})",
            args.id,
            node.addr(),
            db.display()
        );
        stopped().await;
        node.shutdown().await;
        Ok(())
    })
}

/// Waits for SIGINT (Ctrl-C) or SIGTERM.
async fn stopped() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}
