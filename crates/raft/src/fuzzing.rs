//! Entry points for the fuzz targets (`fuzz/`, feature `fuzzing`): every
//! decoder of bytes a node stores or receives, which must answer an error,
//! never panic, whatever the bytes.

use std::path::Path;
use std::sync::Arc;

use openraft::raft::{AppendEntriesRequest, VoteRequest};
use openraft::{BasicNode, Entry, LogId, StoredMembership, Vote};
use siftdb::fs::{FaultInjectionFs, FileSystem};

use crate::api::{ApiError, Read, ReadAnswer, Written};
use crate::codec::decode;
use crate::command::Request;
use crate::snapshot::Meta;
use crate::snapshot_chunk::SnapshotChunk;
use crate::snapshot_unpack::Unpacker;
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
        decode::<SnapshotChunk>(bytes).is_ok(),
        decode::<Read>(bytes).is_ok(),
        decode::<Result<ReadAnswer, ApiError>>(bytes).is_ok(),
        decode::<Result<Written, ApiError>>(bytes).is_ok(),
        serde_json::from_slice::<Meta>(bytes).is_ok(),
        crate::keys::entry_of(bytes).is_some(),
    ];
    decoded.iter().filter(|ok| **ok).count()
}

/// Unpacks `bytes` as a received snapshot stream, in memory, in pieces
/// of 1,000 bytes; returns the files unpacked, or `None` for a stream
/// refused.
pub fn unpack_snapshot(bytes: &[u8]) -> Option<usize> {
    let fs = FaultInjectionFs::new();
    let into = Path::new("/node/snapshot-1");
    let mut unpacker = Unpacker::create(Arc::new(fs.clone()), into.to_path_buf()).ok()?;
    for piece in bytes.chunks(1000) {
        unpacker.write(piece).ok()?;
    }
    unpacker.finish().ok()?;
    fs.list(into).ok().map(|names| names.len())
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
            unpack_snapshot(bytes);
        }
    }

    #[test]
    fn a_snapshot_unpacks_and_a_damaged_one_is_refused() {
        let mut builder = tar::Builder::new(Vec::new());
        let mut header = tar::Header::new_gnu();
        header.set_size(5);
        header.set_mode(0o644);
        builder
            .append_data(&mut header, "000001.sst", &b"table"[..])
            .unwrap();
        let archive = builder.into_inner().unwrap();
        assert_eq!(unpack_snapshot(&archive), Some(1));
        let mut damaged = archive.clone();
        damaged[100] ^= 0xff;
        assert_eq!(unpack_snapshot(&damaged), None);
        // Cut inside the file's bytes.
        assert_eq!(unpack_snapshot(&archive[..514]), None);
    }
}
