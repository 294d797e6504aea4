//! `sift serve`: one node of a replicated cluster, until SIGINT or SIGTERM.

use std::path::Path;

use sift_raft::{Node, NodeOptions};

use super::remote::{failure, runtime};
use crate::cli::ServeArgs;
use crate::error::{Failure, Outcome};

/// Starts the node with `--db` as its directory and serves until told to
/// stop.
pub fn run(db: &Path, args: &ServeArgs) -> Outcome {
    if args.id == 0 {
        return Err(Failure::usage("--id must be a positive integer"));
    }
    runtime()?.block_on(async {
        let options = NodeOptions::new(args.id, args.listen, db);
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
