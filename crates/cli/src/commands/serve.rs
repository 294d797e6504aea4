//! `sift serve`: one node of a replicated cluster, until SIGINT or SIGTERM.

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sift_raft::{Node, NodeOptions, Token};
use siftdb::{Extractor, IndexDef};

use super::import::pointer;
use super::remote::{failure, runtime};
use crate::cli::ServeArgs;
use crate::error::{Failure, Outcome};

/// Starts the node with `--db` as its directory and serves until told to
/// stop, requiring `token` of every request if given. Logs its elections,
/// leaders and memberships to standard error as they change.
pub fn run(db: &Path, args: &ServeArgs, token: Option<Token>) -> Outcome {
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
    let (memtable_bytes, cache_bytes, request_bytes) = (
        bytes("--memtable-mib", args.memtable_mib)?,
        bytes("--cache-mib", args.cache_mib)?,
        bytes("--max-request-mib", args.max_request_mib)?,
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
        options.data.direct_reads = args.direct_reads;
        if let Some(entries) = args.snapshot_every {
            options = options.snapshot_every(entries);
        }
        options.limits.max_connections = args.max_connections;
        options.limits.header_read_timeout = Duration::from_millis(args.header_timeout_ms);
        options.limits.max_client_requests = args.max_client_requests;
        options.limits.max_body_bytes_in_flight = request_bytes;
        if token.is_none() {
            log(
                "warning: no --token-file: anyone who can reach this node can read, write \
                 and change the cluster",
            );
        }
        options.token = token;
        let node = Node::start(options).await.map_err(failure)?;
        log(&format!(
            "node {} serving on {} (data in {})",
            args.id,
            node.addr(),
            db.display()
        ));
        let mut changes = node.changes();
        tokio::spawn(async move {
            while let Some(change) = changes.next().await {
                log(&change);
            }
        });
        stopped().await;
        node.shutdown().await;
        Ok(())
    })
}

/// Prints `line` to standard error, after the time (UTC) and `sift:`.
fn log(line: &str) {
    eprintln!("{} sift: {line}", utc(SystemTime::now()));
}

/// `time` as `YYYY-MM-DDTHH:MM:SS.mmmZ` (RFC 3339, UTC).
fn utc(time: SystemTime) -> String {
    let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    let (days, of_day) = (since.as_secs() / 86_400, since.as_secs() % 86_400);
    format!(
        "{}T{:02}:{:02}:{:02}.{:03}Z",
        crate::demo::calendar::iso_date(days as i64),
        of_day / 3600,
        of_day / 60 % 60,
        of_day % 60,
        since.subsec_millis()
    )
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_written_as_rfc_3339_in_utc() {
        let at =
            |secs: u64, millis: u64| utc(UNIX_EPOCH + Duration::from_millis(secs * 1000 + millis));
        assert_eq!(at(0, 0), "1970-01-01T00:00:00.000Z");
        // A leap day, and the last millisecond of a year.
        assert_eq!(at(951_782_400, 5), "2000-02-29T00:00:00.005Z");
        assert_eq!(at(1_735_689_599, 999), "2024-12-31T23:59:59.999Z");
        assert_eq!(at(1_772_323_200, 0), "2026-03-01T00:00:00.000Z");
    }
}
