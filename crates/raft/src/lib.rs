//! Sift replicated by Raft, on [openraft] 0.9.
//!
//! - [`LogStore`]: openraft's log, vote and committed index, kept in a Sift
//!   database of their own and synced before openraft is told they are.
//! - [`StateMachine`]: the replicated store, a Sift database; a
//!   [`Command`] (a write batch, or a transaction with its read checks) is
//!   one Raft entry, applied atomically. Snapshots are
//!   [`siftdb::Db::checkpoint`]s of its table files, packed in one file
//!   that openraft streams to a lagging follower in chunks.
//!
//! The design, and the path past one Raft group: `docs/replication.md`.

#![allow(
    clippy::result_large_err,
    reason = "openraft's StorageError, the error of its storage traits, is large"
)]

pub mod api;
mod auth;
mod client;
mod codec;
mod command;
mod errors;
mod events;
mod files;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
mod keys;
mod limits;
pub mod linearizable;
mod listener;
mod log_retention;
mod log_store;
pub mod malloc;
mod network;
mod node;
mod purge_gate;
pub mod registers;
mod server;
mod sessions;
mod snapshot;
mod snapshot_chunk;
mod snapshot_file;
mod snapshot_pack;
mod snapshot_unpack;
mod state_machine;
mod types;

pub use auth::Token;
pub use client::{Client, Pages};
pub use command::{
    Check, Command, MAX_COMMAND_BYTES, MAX_KEY_LEN, Op, Outcome, Request, SESSION_TTL_ENTRIES,
    Session,
};
pub use errors::{ReadError, WriteError};
pub use events::Changes;
pub use limits::{Limits, MAX_OPS, MAX_REQUEST_BYTES};
pub use log_store::{LogStore, MAX_APPEND_BYTES};
pub use network::Partition;
pub use node::{DEFAULT_HEARTBEAT_MS, Node, NodeOptions};
pub use snapshot_file::SnapshotFile;
pub use state_machine::{DataHandle, DataSettings, StateMachine};
pub use types::{NodeId, Raft, TypeConfig};

use std::path::Path;
use std::sync::Arc;

use siftdb::fs::FileSystem;

use openraft::StorageError;

/// Opens (or creates) the log and the state machine of a node under `dir`:
/// `dir/log` and `dir/sm`, with snapshots in `dir/snapshots`. The state
/// machine's database is opened as `settings` say; its value indexes
/// (every node declares the same: they are derived from the data, so they
/// agree).
///
/// The log is never purged past the current snapshot (`purge_gate`), and
/// the data is brought up to that snapshot here if it is behind it (a crash
/// during an install, or one that lost the data's unsynced writes): the
/// log may no longer hold what lies between them, and openraft would not
/// send the snapshot again, since it counts it as the node's own.
///
/// # Errors
/// What opening either database returns; an error if the log is purged
/// past the data and every snapshot.
pub async fn open_storage(
    dir: &Path,
    settings: &DataSettings,
) -> Result<(LogStore, StateMachine), StorageError<NodeId>> {
    open_storage_on(Arc::new(siftdb::fs::StdFs), dir, settings).await
}

/// [`open_storage`] on the file system `fs`: every file of the node goes
/// through it (a test's lying disk sees them all).
///
/// # Errors
/// What opening either database returns; an error if the log is purged
/// past the data and every snapshot.
pub async fn open_storage_on(
    fs: Arc<dyn FileSystem>,
    dir: &Path,
    settings: &DataSettings,
) -> Result<(LogStore, StateMachine), StorageError<NodeId>> {
    let mut log = LogStore::open_on(Arc::clone(&fs), &dir.join("log"))?;
    let mut sm = StateMachine::open_on(fs, dir, settings).await?;
    sm.catch_up_to_snapshot().await?;
    if let Some(purged) = log.purged_index()?
        && sm.applied_index() < Some(purged)
    {
        let behind = format!(
            "the log is purged up to {purged}, past the data (applied {:?}) and every snapshot",
            sm.applied_index()
        );
        return Err(StorageError::from_io_error(
            openraft::ErrorSubject::StateMachine,
            openraft::ErrorVerb::Read,
            std::io::Error::other(behind),
        ));
    }
    log.gate_purges(sm.purge_wait());
    Ok((log, sm))
}
