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

/// The log's key of entry `index` (of its first piece): sorts as the index.
pub(crate) fn entry(index: u64) -> Vec<u8> {
    let mut out = vec![ENTRY];
    out.extend_from_slice(&index.to_be_bytes());
    out
}

/// The log's key of piece `piece` (1 and up) of entry `index`: after the
/// entry's first piece and before the next entry.
pub(crate) fn entry_piece(index: u64, piece: u8) -> Vec<u8> {
    let mut out = entry(index);
    out.push(piece);
    out
}

/// The index of the entry a log key belongs to, and whether the key is of
/// its first piece; `None` for a key that is not an entry's.
pub(crate) fn entry_of(key: &[u8]) -> Option<(u64, bool)> {
    match key {
        [ENTRY, index @ ..] if index.len() == 8 || index.len() == 9 => {
            let first = index.len() == 8;
            let index = u64::from_be_bytes(index[..8].try_into().ok()?);
            Some((index, first))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_keys_sort_as_their_indexes_with_pieces_in_between() {
        let mut keys = Vec::new();
        for index in [0, 1, 255, 256, u64::MAX] {
            keys.extend([entry(index), entry_piece(index, 1), entry_piece(index, 255)]);
        }
        assert!(keys.is_sorted());
        assert_eq!(entry_of(&entry(256)), Some((256, true)));
        assert_eq!(entry_of(&entry_piece(u64::MAX, 3)), Some((u64::MAX, false)));
        assert_eq!(entry_of(b"m:vote"), None);
        assert_eq!(entry_of(b"e123"), None);
        assert_eq!(data(b"k"), b"\x01k");
    }
}
