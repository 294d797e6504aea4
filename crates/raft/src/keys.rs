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
/// Prefix of the sessions' outcomes, followed by the big-endian id and
/// request number.
pub(crate) const OUTCOME: &[u8] = b"\x00outcome:";
/// Prefix of the sessions by age, followed by the big-endian log index of
/// a session's last request and its id (the value is empty).
pub(crate) const SESSION_AGE: &[u8] = b"\x00session-age:";
/// Set once the sessions' records are in the layout above (before, one
/// record held a session's outcomes, and no age was kept).
pub(crate) const SESSIONS_SPLIT: &[u8] = b"\x00sessions-split";

/// The state machine's key of session `id`.
pub(crate) fn session(id: u64) -> Vec<u8> {
    [SESSION, &id.to_be_bytes()].concat()
}

/// The session id of a [`session`] key.
pub(crate) fn session_of(key: &[u8]) -> Option<u64> {
    Some(u64::from_be_bytes(
        key.strip_prefix(SESSION)?.try_into().ok()?,
    ))
}

/// The prefix of session `id`'s outcomes.
pub(crate) fn outcome_prefix(id: u64) -> Vec<u8> {
    [OUTCOME, &id.to_be_bytes()].concat()
}

/// The key of the outcome of request `seq` of session `id`.
pub(crate) fn outcome(id: u64, seq: u64) -> Vec<u8> {
    [&outcome_prefix(id)[..], &seq.to_be_bytes()].concat()
}

/// The key saying session `id`'s last request was applied at `index`.
pub(crate) fn session_age(index: u64, id: u64) -> Vec<u8> {
    [SESSION_AGE, &index.to_be_bytes(), &id.to_be_bytes()].concat()
}

/// The session id a [`session_age`] key names, and the index.
pub(crate) fn session_age_of(key: &[u8]) -> Option<(u64, u64)> {
    let rest = key.strip_prefix(SESSION_AGE)?;
    let (index, id) = rest.split_at_checked(8)?;
    Some((
        u64::from_be_bytes(index.try_into().ok()?),
        u64::from_be_bytes(id.try_into().ok()?),
    ))
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
        assert_eq!(session_age_of(&session_age(300, 7)), Some((300, 7)));
        assert_eq!(session_age_of(b"\x00session-age:short"), None);
        assert!(session_age(1, u64::MAX) < session_age(2, 0));
    }
}
