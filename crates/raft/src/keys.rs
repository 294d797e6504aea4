//! Where each thing lives in the two databases of a node.
//!
//! The state machine's database holds user keys behind [`DATA`] and its own
//! records behind 0x00, so a checkpoint carries both together: the data and
//! the last entry applied to it are always consistent.

/// Prefix of every user key in the state machine.
pub(crate) const DATA: u8 = 0x01;
/// The state machine's last applied log id.
pub(crate) const APPLIED: &[u8] = b"\x00applied";
/// The state machine's last applied membership.
pub(crate) const MEMBERSHIP: &[u8] = b"\x00membership";

/// Prefix of the client sessions' records, followed by the big-endian id.
pub(crate) const SESSION: &[u8] = b"\x00session:";

/// The state machine's key of session `id`.
pub(crate) fn session(id: u64) -> Vec<u8> {
    [SESSION, &id.to_be_bytes()].concat()
}

/// Prefix of the log's entries, followed by the big-endian index.
pub(crate) const ENTRY: u8 = b'e';
/// The log's vote.
pub(crate) const VOTE: &[u8] = b"m:vote";
/// The log's committed log id.
pub(crate) const COMMITTED: &[u8] = b"m:committed";
/// The log's last purged log id.
pub(crate) const PURGED: &[u8] = b"m:purged";

/// The state machine's key of user key `key`.
pub(crate) fn data(key: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(key.len() + 1);
    out.push(DATA);
    out.extend_from_slice(key);
    out
}

/// The log's key of entry `index`: sorts as the index.
pub(crate) fn entry(index: u64) -> [u8; 9] {
    let mut out = [ENTRY; 9];
    out[1..].copy_from_slice(&index.to_be_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_keys_sort_as_their_indexes() {
        let keys: Vec<_> = [0, 1, 255, 256, u64::MAX].map(entry).into();
        assert!(keys.is_sorted());
        assert_eq!(data(b"k"), b"\x01k");
    }
}
