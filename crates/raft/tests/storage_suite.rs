//! openraft's own storage test suite, run against Sift's log and state
//! machine: the vote, log ids, truncation, purge, membership and snapshot
//! rules openraft relies on.

use openraft::StorageError;
use openraft::testing::{StoreBuilder, Suite};
use sift_raft::{LogStore, NodeId, StateMachine, TypeConfig};
use tempfile::TempDir;

struct SiftBuilder;

impl StoreBuilder<TypeConfig, LogStore, StateMachine, TempDir> for SiftBuilder {
    async fn build(&self) -> Result<(TempDir, LogStore, StateMachine), StorageError<NodeId>> {
        let dir = TempDir::new().map_err(|e| {
            StorageError::from_io_error(
                openraft::ErrorSubject::Store,
                openraft::ErrorVerb::Write,
                e,
            )
        })?;
        let (log, sm) =
            sift_raft::open_storage(dir.path(), &sift_raft::DataSettings::default()).await?;
        Ok((dir, log, sm))
    }
}

#[test]
fn sift_passes_the_openraft_storage_suite() {
    Suite::test_all(SiftBuilder).unwrap();
}
