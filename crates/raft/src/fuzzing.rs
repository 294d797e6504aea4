//! Entry points for the fuzz targets (`fuzz/`, feature `fuzzing`): every
//! decoder of bytes a node stores or receives, which must answer an error,
//! never panic, whatever the bytes.

use openraft::raft::{AppendEntriesRequest, InstallSnapshotRequest, VoteRequest};
use openraft::{BasicNode, Entry, LogId, StoredMembership, Vote};

use crate::api::{ApiError, Read, ReadAnswer, Written};
use crate::codec::decode;
use crate::command::Request;
use crate::snapshot::Meta;
use crate::types::{NodeId, TypeConfig};

/// Decodes `bytes` as each record of the log and the state machine, each
/// RPC and client message, and a snapshot's metadata; returns how many
/// decoded.
pub fn decode_everything(bytes: &[u8]) -> usize {
    let decoded = [
        decode::<Entry<TypeConfig>>(bytes).is_ok(),
        decode::<Vote<NodeId>>(bytes).is_ok(),
        decode::<Option<LogId<NodeId>>>(bytes).is_ok(),
        decode::<StoredMembership<NodeId, BasicNode>>(bytes).is_ok(),
        decode::<Request>(bytes).is_ok(),
        decode::<AppendEntriesRequest<TypeConfig>>(bytes).is_ok(),
        decode::<VoteRequest<NodeId>>(bytes).is_ok(),
        decode::<InstallSnapshotRequest<TypeConfig>>(bytes).is_ok(),
        decode::<Read>(bytes).is_ok(),
        decode::<Result<ReadAnswer, ApiError>>(bytes).is_ok(),
        decode::<Result<Written, ApiError>>(bytes).is_ok(),
        serde_json::from_slice::<Meta>(bytes).is_ok(),
        crate::keys::entry_of(bytes).is_some(),
    ];
    decoded.iter().filter(|ok| **ok).count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::encode;
    use crate::command::{Command, Op, Session};

    #[test]
    fn what_a_node_writes_decodes_and_garbage_does_not_panic() {
        let request = Request {
            session: Some(Session {
                id: 7,
                seq: 2,
                first_unanswered: 1,
            }),
            command: Command::Write(vec![Op::Put {
                key: b"k".to_vec(),
                value: b"v".to_vec(),
            }]),
        };
        assert!(decode_everything(&encode(&request).unwrap()) >= 1);
        for bytes in [
            &b""[..],
            b"\xff",
            b"\x93\x01\x02",
            b"\xdd\xff\xff\xff\xff",
            b"{\"x\":1}",
        ] {
            decode_everything(bytes);
        }
    }
}
