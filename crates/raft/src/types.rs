//! The type configuration openraft is instantiated with.

use openraft::BasicNode;

use crate::command::{Outcome, Request};

/// A node's id in the cluster.
pub type NodeId = u64;

openraft::declare_raft_types!(
    /// Sift's Raft: [`Request`]s in, [`Outcome`]s out, nodes known by
    /// address, snapshots as files.
    pub TypeConfig:
        D = Request,
        R = Outcome,
        NodeId = NodeId,
        Node = BasicNode,
        SnapshotData = crate::snapshot_file::SnapshotFile,
);

/// A Raft node of Sift.
pub type Raft = openraft::Raft<TypeConfig>;
