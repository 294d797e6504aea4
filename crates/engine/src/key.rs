//! Internal keys: a user key plus the sequence number and kind of one
//! version of it.
//!
//! Order: user key ascending, then sequence number *descending*, so the
//! newest version of a key is met first. Encoded on disk as the user key
//! followed by an 8-byte little-endian trailer `seqno << 8 | kind`.

use std::cmp::Ordering;

/// A write's position in the database's total order of writes.
pub type SeqNo = u64;

/// The largest sequence number: 56 bits, the rest of the trailer is the kind.
pub(crate) const MAX_SEQNO: SeqNo = (1 << 56) - 1;

/// Length of the encoded trailer after the user key.
pub(crate) const TRAILER_LEN: usize = 8;

/// What one version of a key says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub(crate) enum ValueKind {
    /// The key was removed at this sequence number (a tombstone).
    Delete = 0,
    /// The key was set to a value at this sequence number.
    Value = 1,
}

impl ValueKind {
    /// The largest kind: a search key `(k, s, MAX)` sorts before every real
    /// version of `k` at or below `s`.
    pub(crate) const MAX: Self = Self::Value;

    /// Parses a stored kind byte.
    pub(crate) fn from_u8(byte: u8) -> Option<Self> {
        match byte {
            0 => Some(Self::Delete),
            1 => Some(Self::Value),
            _ => None,
        }
    }
}

/// An owned internal key, used by the memtable and the iterators.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct InternalKey {
    /// The key the user wrote.
    pub user_key: Vec<u8>,
    /// Sequence number of this version.
    pub seq: SeqNo,
    /// Value or tombstone.
    pub kind: ValueKind,
}

impl InternalKey {
    /// A key for one version.
    pub(crate) fn new(user_key: impl Into<Vec<u8>>, seq: SeqNo, kind: ValueKind) -> Self {
        Self {
            user_key: user_key.into(),
            seq,
            kind,
        }
    }

    /// Appends the on-disk encoding to `out`.
    pub(crate) fn encode_into(&self, out: &mut Vec<u8>) {
        encode_internal_key(out, &self.user_key, self.seq, self.kind);
    }

    /// Parses an encoded internal key.
    pub(crate) fn decode(encoded: &[u8]) -> Option<Self> {
        let parsed = ParsedKey::parse(encoded)?;
        Some(Self::new(parsed.user_key, parsed.seq, parsed.kind))
    }
}

impl Ord for InternalKey {
    fn cmp(&self, other: &Self) -> Ordering {
        self.user_key
            .cmp(&other.user_key)
            .then_with(|| other.seq.cmp(&self.seq))
            .then_with(|| other.kind.cmp(&self.kind))
    }
}

impl PartialOrd for InternalKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// One version of a key with its value (empty for a tombstone): what the
/// memtable, table and merging iterators yield.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    /// Which key, which version.
    pub key: InternalKey,
    /// The value; empty when `key.kind` is [`ValueKind::Delete`].
    pub value: Vec<u8>,
}

/// Appends `user_key ++ (seq << 8 | kind)` (little-endian) to `out`.
pub(crate) fn encode_internal_key(out: &mut Vec<u8>, user_key: &[u8], seq: SeqNo, kind: ValueKind) {
    out.extend_from_slice(user_key);
    out.extend_from_slice(&((seq << 8) | kind as u64).to_le_bytes());
}

/// A borrowed view of an encoded internal key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ParsedKey<'a> {
    /// The key the user wrote.
    pub user_key: &'a [u8],
    /// Sequence number of this version.
    pub seq: SeqNo,
    /// Value or tombstone.
    pub kind: ValueKind,
}

impl<'a> ParsedKey<'a> {
    /// Splits an encoded internal key; `None` if it is shorter than the
    /// trailer or names an unknown kind.
    pub(crate) fn parse(encoded: &'a [u8]) -> Option<Self> {
        let split = encoded.len().checked_sub(TRAILER_LEN)?;
        let (user_key, trailer) = encoded.split_at(split);
        let trailer = u64::from_le_bytes(trailer.try_into().ok()?);
        Some(Self {
            user_key,
            seq: trailer >> 8,
            kind: ValueKind::from_u8(trailer as u8)?,
        })
    }
}

/// Orders two encoded internal keys as [`InternalKey`] orders owned ones.
/// Keys too short to hold a trailer sort by their raw bytes, before any
/// well-formed key with the same prefix; decoders reject them earlier.
pub(crate) fn cmp_internal(a: &[u8], b: &[u8]) -> Ordering {
    // `cmp_internal_split` with no head, written out: memtable and merge
    // comparisons run through here.
    match (
        a.len().checked_sub(TRAILER_LEN),
        b.len().checked_sub(TRAILER_LEN),
    ) {
        (Some(split_a), Some(split_b)) => {
            let (user_a, trailer_a) = a.split_at(split_a);
            let (user_b, trailer_b) = b.split_at(split_b);
            user_a
                .cmp(user_b)
                .then_with(|| trailer(trailer_b).cmp(&trailer(trailer_a)))
        }
        _ => a.cmp(b),
    }
}

/// [`cmp_internal`] of the internal key `head ++ rest`, held in two pieces
/// (a table's index keeps its keys past their shared prefix), against `b`.
#[inline]
pub(crate) fn cmp_internal_split(head: &[u8], rest: &[u8], b: &[u8]) -> Ordering {
    match (
        rest.len().checked_sub(TRAILER_LEN),
        b.len().checked_sub(TRAILER_LEN),
    ) {
        (Some(split_a), Some(split_b)) => {
            let (user_a, trailer_a) = rest.split_at(split_a);
            let (user_b, trailer_b) = b.split_at(split_b);
            cmp_split(head, user_a, user_b)
                .then_with(|| trailer(trailer_b).cmp(&trailer(trailer_a)))
        }
        _ => cmp_split(head, rest, b),
    }
}

/// Orders the bytes `head ++ rest` against `b`, without joining them.
#[inline]
pub(crate) fn cmp_split(head: &[u8], rest: &[u8], b: &[u8]) -> Ordering {
    let (b_head, b_rest) = b.split_at(head.len().min(b.len()));
    head.cmp(b_head).then_with(|| rest.cmp(b_rest))
}

/// Reads an 8-byte little-endian trailer (callers pass exactly 8 bytes).
fn trailer(bytes: &[u8]) -> u64 {
    let mut raw = [0u8; TRAILER_LEN];
    raw.copy_from_slice(bytes);
    u64::from_le_bytes(raw)
}

/// The user-key part of an encoded internal key (the whole slice if it is
/// too short to hold a trailer).
pub(crate) fn user_key_of(encoded: &[u8]) -> &[u8] {
    &encoded[..encoded.len().saturating_sub(TRAILER_LEN)]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(user_key: &[u8], seq: SeqNo, kind: ValueKind) -> Vec<u8> {
        let mut out = Vec::new();
        encode_internal_key(&mut out, user_key, seq, kind);
        out
    }

    #[test]
    fn golden_encoding() {
        assert_eq!(
            encoded(b"ab", 0x0102, ValueKind::Value),
            [b'a', b'b', 0x01, 0x02, 0x01, 0, 0, 0, 0, 0]
        );
    }

    #[test]
    fn newest_version_sorts_first_and_encoded_order_matches() {
        let keys = [
            InternalKey::new(b"a".to_vec(), 9, ValueKind::Value),
            InternalKey::new(b"a".to_vec(), 3, ValueKind::Delete),
            InternalKey::new(b"a".to_vec(), 0, ValueKind::Value),
            InternalKey::new(b"ab".to_vec(), MAX_SEQNO, ValueKind::Value),
            InternalKey::new(b"b".to_vec(), 1, ValueKind::Value),
        ];
        for (i, x) in keys.iter().enumerate() {
            for (j, y) in keys.iter().enumerate() {
                let (mut ex, mut ey) = (Vec::new(), Vec::new());
                x.encode_into(&mut ex);
                y.encode_into(&mut ey);
                assert_eq!(x.cmp(y), i.cmp(&j));
                assert_eq!(cmp_internal(&ex, &ey), i.cmp(&j));
            }
        }
    }

    #[test]
    fn parse_round_trips_and_rejects_bad_trailers() {
        let key = InternalKey::new(b"key".to_vec(), MAX_SEQNO, ValueKind::Delete);
        let mut bytes = Vec::new();
        key.encode_into(&mut bytes);
        assert_eq!(InternalKey::decode(&bytes), Some(key));
        assert_eq!(user_key_of(&bytes), b"key");
        assert_eq!(ParsedKey::parse(&bytes[..7]), None);
        let mut bad_kind = bytes.clone();
        let at = bad_kind.len() - TRAILER_LEN;
        bad_kind[at] = 7;
        assert_eq!(ParsedKey::parse(&bad_kind), None);
    }

    proptest::proptest! {
        #[test]
        fn split_keys_order_as_joined_ones(
            user in proptest::collection::vec(0..3u8, 0..6),
            cut in 0..8usize,
            seq in 0..4u64,
            other in proptest::collection::vec(0..3u8, 0..8),
            other_seq in 0..4u64,
        ) {
            let a = encoded(&user, seq, ValueKind::Value);
            let b = encoded(&other, other_seq, ValueKind::Value);
            let (head, rest) = a.split_at(cut.min(user.len()));
            proptest::prop_assert_eq!(cmp_internal_split(head, rest, &b), cmp_internal(&a, &b));
            let (head, rest) = user.split_at(cut.min(user.len()));
            proptest::prop_assert_eq!(cmp_split(head, rest, &other), user.cmp(&other));
        }
    }
}
