//! [`WriteBatch`]: operations applied atomically, and its WAL record
//! encoding.
//!
//! A batch keeps its operations in one byte buffer already in the record's
//! body format, so logging it is a header plus one copy. One batch is one
//! WAL record (`docs/format-logs.md`, "Batch record"):
//!
//! ```text
//! first_seq u64 | count u32 | count × (kind u8 | varint key len | key | [varint value len | value])
//! ```
//!
//! The value part is present for [`ValueKind::Value`] only; a delete is a
//! kind and a key.

#![deny(clippy::indexing_slicing)]

use crate::encoding::{Decoder, put_bytes};
use crate::error::{Corrupt, Error, Result};
use crate::key::{MAX_SEQNO, SeqNo, ValueKind};
use crate::log::MAX_RECORD_LEN;

/// Longest key accepted (64 KiB). Keys are copied into every index block
/// entry and compared on every lookup; LevelDB-style stores assume them
/// small, and 64 KiB leaves room for the 8-byte trailer in a `u32` block
/// entry with no overflow concerns.
pub const MAX_KEY_LEN: usize = 64 << 10;

/// Longest value accepted (64 MiB). A value is stored whole in one table
/// block and copied about three times on the way there (batch, WAL record,
/// memtable), so it must stay far below the WAL record limit of 4 GiB
/// (`u32` length) that RocksDB and fjall accept; 64 MiB keeps a batch of a
/// few large values well inside one record and one block in memory.
pub const MAX_VALUE_LEN: usize = 64 << 20;

/// Bytes of the record header before the operations: first sequence
/// number (u64) and operation count (u32).
pub(crate) const RECORD_HEADER_LEN: usize = 12;

/// The fewest bytes one encoded operation takes (a delete of the empty
/// key: kind byte and a one-byte zero length). Bounds what a count read
/// from untrusted bytes may allocate.
const MIN_OP_LEN: usize = 2;

/// Operations applied atomically by [`Db::write`](crate::Db::write): either
/// every one becomes visible, or (after a crash) none.
///
/// Operations apply in the order they were added; a later operation on
/// the same key wins.
///
/// ```
/// let mut batch = siftdb::WriteBatch::new();
/// batch.insert("a", "1").insert("b", "2").remove("a");
/// assert_eq!(batch.len(), 3);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteBatch {
    /// The operations, encoded as in the record body.
    ops: Vec<u8>,
    /// Number of operations in `ops`.
    count: usize,
    /// Longest key added, checked by `validate`.
    max_key: usize,
    /// Longest value added, checked by `validate`.
    max_value: usize,
}

impl WriteBatch {
    /// An empty batch.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty batch with room for about `bytes` of keys and values
    /// before it reallocates.
    #[must_use]
    pub fn with_capacity(bytes: usize) -> Self {
        Self {
            ops: Vec::with_capacity(bytes),
            ..Self::default()
        }
    }

    /// Sets `key` to `value`. Sizes are checked when the batch is written:
    /// a key over [`MAX_KEY_LEN`] or a value over [`MAX_VALUE_LEN`] makes
    /// the write fail with [`Error::InvalidArgument`].
    pub fn insert(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> &mut Self {
        let (key, value) = (key.as_ref(), value.as_ref());
        self.ops.push(ValueKind::Value as u8);
        put_bytes(&mut self.ops, key);
        put_bytes(&mut self.ops, value);
        self.count += 1;
        self.max_key = self.max_key.max(key.len());
        self.max_value = self.max_value.max(value.len());
        self
    }

    /// Removes `key` (writes a tombstone; removing an absent key is not an
    /// error).
    pub fn remove(&mut self, key: impl AsRef<[u8]>) -> &mut Self {
        let key = key.as_ref();
        self.ops.push(ValueKind::Delete as u8);
        put_bytes(&mut self.ops, key);
        self.count += 1;
        self.max_key = self.max_key.max(key.len());
        self
    }

    /// Number of operations.
    #[must_use]
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether the batch holds no operation.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Removes every operation, keeping the allocated buffer.
    pub fn clear(&mut self) {
        self.ops.clear();
        self.count = 0;
        self.max_key = 0;
        self.max_value = 0;
    }

    /// Size of the batch's WAL record in bytes: roughly what writing it
    /// costs.
    #[must_use]
    pub fn size_in_bytes(&self) -> usize {
        RECORD_HEADER_LEN + self.ops.len()
    }

    /// Checks the limits: every key at most [`MAX_KEY_LEN`], every value
    /// at most [`MAX_VALUE_LEN`], and the whole record at most one WAL
    /// record ([`MAX_RECORD_LEN`]).
    pub(crate) fn validate(&self) -> Result<()> {
        if self.max_key > MAX_KEY_LEN {
            return Err(Error::InvalidArgument(format!(
                "a key of {} bytes exceeds the limit MAX_KEY_LEN = {MAX_KEY_LEN} bytes",
                self.max_key
            )));
        }
        if self.max_value > MAX_VALUE_LEN {
            return Err(Error::InvalidArgument(format!(
                "a value of {} bytes exceeds the limit MAX_VALUE_LEN = {MAX_VALUE_LEN} bytes",
                self.max_value
            )));
        }
        check_record_len(self.size_in_bytes())
    }

    /// Bytes the batch adds to the WAL and (about) to the memtable.
    pub(crate) fn approximate_bytes(&self) -> usize {
        self.size_in_bytes()
    }

    /// The WAL record payload; operation i gets sequence number first_seq + i.
    #[cfg(test)]
    pub(crate) fn encode(&self, first_seq: SeqNo) -> Vec<u8> {
        [&self.record_header(first_seq)[..], &self.ops].concat()
    }

    /// The start of the WAL record payload, before [`Self::encoded_ops`].
    pub(crate) fn record_header(&self, first_seq: SeqNo) -> [u8; RECORD_HEADER_LEN] {
        let mut out = [0; RECORD_HEADER_LEN];
        out[..8].copy_from_slice(&first_seq.to_le_bytes());
        // `validate` bounds the record by `MAX_RECORD_LEN` (u32), and every
        // operation takes at least two bytes, so the count fits.
        out[8..].copy_from_slice(&(self.count as u32).to_le_bytes());
        out
    }

    /// The operations as the WAL record payload holds them.
    pub(crate) fn encoded_ops(&self) -> &[u8] {
        &self.ops
    }

    /// Operations in order: kind, key, value (empty for a delete).
    pub(crate) fn iter(&self) -> impl Iterator<Item = (ValueKind, &[u8], &[u8])> {
        let mut decoder = Decoder::new(&self.ops);
        // The buffer was written by `insert`/`remove`, so it always decodes;
        // stopping at an error keeps this free of panics regardless.
        std::iter::from_fn(move || {
            if decoder.is_empty() {
                return None;
            }
            decode_op(&mut decoder).ok()
        })
    }
}

/// Rejects a batch whose record (of `len` bytes) would not fit one WAL
/// record.
fn check_record_len(len: usize) -> Result<()> {
    if len > MAX_RECORD_LEN {
        return Err(Error::InvalidArgument(format!(
            "the batch encodes to {len} bytes, over the limit of one WAL record \
             ({MAX_RECORD_LEN} bytes); split it"
        )));
    }
    Ok(())
}

/// One decoded operation: kind, key, value (empty for a delete).
pub(crate) type Op = (ValueKind, Vec<u8>, Vec<u8>);

/// Reads one operation (kind, key, value) borrowing from the input.
fn decode_op<'a>(decoder: &mut Decoder<'a>) -> Result<(ValueKind, &'a [u8], &'a [u8]), Corrupt> {
    let at = decoder.position();
    let byte = decoder.u8("operation kind")?;
    let kind = ValueKind::from_u8(byte)
        .ok_or_else(|| Corrupt::new(at as u64, format!("unknown operation kind {byte}")))?;
    let key = decoder.length_prefixed(MAX_KEY_LEN, "key")?;
    let value = match kind {
        ValueKind::Value => decoder.length_prefixed(MAX_VALUE_LEN, "value")?,
        ValueKind::Delete => &[],
    };
    Ok((kind, key, value))
}

/// Parses a WAL record payload written by [`WriteBatch::encode`]: first
/// sequence number and operations. Never panics, and allocates no more
/// than the payload's length justifies whatever count it claims.
pub(crate) fn decode_record(payload: &[u8]) -> Result<(SeqNo, Vec<Op>), Corrupt> {
    let mut decoder = Decoder::new(payload);
    let first_seq = decoder.u64("first sequence number")?;
    let count = decoder.u32("operation count")? as usize;
    if first_seq == 0 {
        return Err(Corrupt::new(
            0,
            "first sequence number is 0; writes start at 1",
        ));
    }
    let last_seq = first_seq.checked_add(count.saturating_sub(1) as u64);
    if last_seq.is_none_or(|last| last > MAX_SEQNO) {
        return Err(Corrupt::new(
            0,
            format!(
                "{count} operations from sequence number {first_seq} pass the largest, {MAX_SEQNO}"
            ),
        ));
    }
    let mut ops = Vec::with_capacity(count.min(decoder.remaining() / MIN_OP_LEN));
    for _ in 0..count {
        let (kind, key, value) = decode_op(&mut decoder)?;
        ops.push((kind, key.to_vec(), value.to_vec()));
    }
    if !decoder.is_empty() {
        return Err(decoder.error(format!(
            "{} bytes follow the {count} operations",
            decoder.remaining()
        )));
    }
    Ok((first_seq, ops))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn golden_record_bytes() {
        let mut batch = WriteBatch::new();
        batch.insert(b"k1", b"v").remove(b"k2");
        #[rustfmt::skip]
        let expected: &[u8] = &[
            7, 0, 0, 0, 0, 0, 0, 0, // first sequence number 7
            2, 0, 0, 0,             // 2 operations
            1, 2, b'k', b'1', 1, b'v', // value: key "k1", value "v"
            0, 2, b'k', b'2',       // delete: key "k2"
        ];
        assert_eq!(batch.encode(7), expected);
        assert_eq!(batch.size_in_bytes(), expected.len());
        let (seq, ops) = decode_record(expected).unwrap();
        assert_eq!(seq, 7);
        assert_eq!(
            ops,
            vec![
                (ValueKind::Value, b"k1".to_vec(), b"v".to_vec()),
                (ValueKind::Delete, b"k2".to_vec(), Vec::new()),
            ]
        );
    }

    #[test]
    fn len_clear_and_iter() {
        let mut batch = WriteBatch::with_capacity(64);
        assert!(batch.is_empty());
        batch.insert("a", "1").remove("b").insert("", "");
        assert_eq!(batch.len(), 3);
        let ops: Vec<_> = batch.iter().collect();
        assert_eq!(
            ops,
            vec![
                (ValueKind::Value, &b"a"[..], &b"1"[..]),
                (ValueKind::Delete, &b"b"[..], &b""[..]),
                (ValueKind::Value, &b""[..], &b""[..]),
            ]
        );
        batch.clear();
        assert!(batch.is_empty());
        assert_eq!(batch.iter().count(), 0);
        assert_eq!(batch, WriteBatch::default());
        assert_eq!(batch.encode(1), [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn validate_names_the_limit_and_the_size() {
        let mut batch = WriteBatch::new();
        batch.insert(vec![0; MAX_KEY_LEN], vec![0; MAX_VALUE_LEN]);
        assert!(batch.validate().is_ok());
        batch.remove(vec![0; MAX_KEY_LEN + 1]);
        let message = batch.validate().unwrap_err().to_string();
        assert!(
            message.contains("MAX_KEY_LEN") && message.contains(&(MAX_KEY_LEN + 1).to_string())
        );
        let mut batch = WriteBatch::new();
        batch.insert("k", vec![0; MAX_VALUE_LEN + 1]);
        let message = batch.validate().unwrap_err().to_string();
        assert!(
            message.contains("MAX_VALUE_LEN") && message.contains(&(MAX_VALUE_LEN + 1).to_string())
        );
        // A batch over one record is 4 GiB: check the rule, not a buffer.
        assert!(check_record_len(MAX_RECORD_LEN).is_ok());
        let err = check_record_len(MAX_RECORD_LEN + 1).unwrap_err();
        assert!(matches!(err, Error::InvalidArgument(_)));
        assert!(err.to_string().contains(&MAX_RECORD_LEN.to_string()));
    }

    #[test]
    fn decode_rejects_damage() {
        let mut batch = WriteBatch::new();
        batch.insert(b"key", b"value");
        let good = batch.encode(5);
        // Every strict prefix is short of something.
        for len in 0..good.len() {
            assert!(decode_record(&good[..len]).is_err(), "prefix {len}");
        }
        let mut trailing = good.clone();
        trailing.push(0);
        assert_eq!(
            decode_record(&trailing).unwrap_err().offset,
            good.len() as u64
        );
        let mut kind = good.clone();
        kind[RECORD_HEADER_LEN] = 9;
        let err = decode_record(&kind).unwrap_err();
        assert_eq!(err.offset, RECORD_HEADER_LEN as u64);
        assert!(err.detail.contains("kind 9"));
        assert!(decode_record(&batch.encode(0)).is_err());
        assert!(decode_record(&batch.encode(MAX_SEQNO)).is_ok());
        let mut two = batch.clone();
        two.remove(b"x");
        assert!(decode_record(&two.encode(MAX_SEQNO)).is_err());
        // A huge count over few bytes fails without allocating for it.
        let mut lying = good.clone();
        lying[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(decode_record(&lying).is_err());
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (
                proptest::collection::vec(any::<u8>(), 0..40),
                proptest::collection::vec(any::<u8>(), 0..200)
            )
                .prop_map(|(k, v)| (ValueKind::Value, k, v)),
            proptest::collection::vec(any::<u8>(), 0..40).prop_map(|k| (
                ValueKind::Delete,
                k,
                Vec::new()
            )),
        ]
    }

    proptest! {
        #[test]
        fn batches_round_trip(ops in proptest::collection::vec(op(), 0..30), seq in 1..1u64 << 40) {
            let mut batch = WriteBatch::new();
            for (kind, key, value) in &ops {
                match kind {
                    ValueKind::Value => batch.insert(key, value),
                    ValueKind::Delete => batch.remove(key),
                };
            }
            prop_assert_eq!(batch.len(), ops.len());
            let iterated: Vec<Op> =
                batch.iter().map(|(k, key, v)| (k, key.to_vec(), v.to_vec())).collect();
            prop_assert_eq!(&iterated, &ops);
            let record = batch.encode(seq);
            prop_assert_eq!(record.len(), batch.approximate_bytes());
            prop_assert_eq!(decode_record(&record), Ok((seq, ops)));
        }

        #[test]
        fn decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = decode_record(&bytes);
        }

        #[test]
        fn decode_never_panics_on_a_plausible_header(
            count in any::<u32>(),
            body in proptest::collection::vec(any::<u8>(), 0..300),
        ) {
            let mut bytes = 1u64.to_le_bytes().to_vec();
            bytes.extend_from_slice(&count.to_le_bytes());
            bytes.extend_from_slice(&body);
            if let Ok((_, ops)) = decode_record(&bytes) {
                prop_assert_eq!(ops.len(), count as usize);
            }
        }
    }
}
