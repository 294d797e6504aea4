//! Encoding of a [`VersionEdit`]: a sequence of tagged fields, each a
//! varint tag followed by that tag's value, so that new fields can be
//! added under new tags. A reader refuses a tag it does not know rather
//! than skip what it cannot interpret (a new field may change what the
//! edit means).
//!
//! | tag | field | value |
//! |---|---|---|
//! | 1 | `next_file_number` | varint |
//! | 2 | `log_number` | varint |
//! | 3 | `last_seq` | varint, at most `MAX_SEQNO` |
//! | 4 | `compaction_style` | varint, at most 255 |
//! | 5 | one removed table | varint level, varint id |
//! | 6 | one added table | see [`encode_table`] |
//! | 7 | one added value index | see [`IndexRecord::encode`] |
//! | 8 | one dropped value index | varint index id |
//!
//! Tags 1–4 appear at most once; 5 and 6 once per table, 7 and 8 once per
//! index, in list order. Manifests written before indexes existed have no
//! 7 or 8 and read as before.

#![deny(clippy::indexing_slicing)]

use super::{TableMeta, VersionEdit};
use crate::batch::MAX_KEY_LEN;
use crate::encoding::{Decoder, put_bytes, put_varint};
use crate::error::Corrupt;
use crate::key::{MAX_SEQNO, SeqNo, TRAILER_LEN};
use crate::value_def::IndexRecord;

/// Tag of `next_file_number`.
const TAG_NEXT_FILE_NUMBER: u64 = 1;
/// Tag of `log_number`.
const TAG_LOG_NUMBER: u64 = 2;
/// Tag of `last_seq`.
const TAG_LAST_SEQ: u64 = 3;
/// Tag of `compaction_style`.
const TAG_COMPACTION_STYLE: u64 = 4;
/// Tag of one entry of `removed`.
const TAG_REMOVED: u64 = 5;
/// Tag of one entry of `added`.
const TAG_ADDED: u64 = 6;
/// Tag of one entry of `added_indexes`.
const TAG_ADDED_INDEX: u64 = 7;
/// Tag of one entry of `dropped_indexes`.
const TAG_DROPPED_INDEX: u64 = 8;

/// Deepest level a manifest may name. The version keeps a vector indexed
/// by level, so the bound keeps a damaged level number from allocating;
/// 256 levels with any size ratio of 2 or more hold more than 2^64 bytes.
pub(crate) const MAX_LEVEL: u32 = 255;

/// Longest encoded internal key a table bound may have: a user key plus
/// its trailer.
const MAX_INTERNAL_KEY_LEN: usize = MAX_KEY_LEN + TRAILER_LEN;

/// Appends one table's fields, in this fixed order: id, level, run,
/// file_size, entries (varints), smallest, largest (varint length and
/// bytes), min_seq, max_seq (varints).
fn encode_table(out: &mut Vec<u8>, table: &TableMeta) {
    put_varint(out, table.id);
    put_varint(out, u64::from(table.level));
    put_varint(out, table.run);
    put_varint(out, table.file_size);
    put_varint(out, table.entries);
    put_bytes(out, &table.smallest);
    put_bytes(out, &table.largest);
    put_varint(out, table.min_seq);
    put_varint(out, table.max_seq);
}

/// The record payload of `edit`. Canonical: scalar fields first in tag
/// order, then removed tables, added tables, dropped indexes, added
/// indexes.
pub(crate) fn encode_edit(edit: &VersionEdit) -> Vec<u8> {
    let mut out = Vec::new();
    let scalars = [
        (TAG_NEXT_FILE_NUMBER, edit.next_file_number),
        (TAG_LOG_NUMBER, edit.log_number),
        (TAG_LAST_SEQ, edit.last_seq),
        (TAG_COMPACTION_STYLE, edit.compaction_style.map(u64::from)),
    ];
    for (tag, value) in scalars {
        if let Some(value) = value {
            put_varint(&mut out, tag);
            put_varint(&mut out, value);
        }
    }
    for &(level, id) in &edit.removed {
        put_varint(&mut out, TAG_REMOVED);
        put_varint(&mut out, u64::from(level));
        put_varint(&mut out, id);
    }
    for table in &edit.added {
        put_varint(&mut out, TAG_ADDED);
        encode_table(&mut out, table);
    }
    for &id in &edit.dropped_indexes {
        put_varint(&mut out, TAG_DROPPED_INDEX);
        put_varint(&mut out, id);
    }
    for index in &edit.added_indexes {
        put_varint(&mut out, TAG_ADDED_INDEX);
        index.encode(&mut out);
    }
    out
}

/// A level number, at most [`MAX_LEVEL`].
fn level(decoder: &mut Decoder<'_>) -> Result<u32, Corrupt> {
    decoder
        .varint_len(MAX_LEVEL as usize, "level")
        .map(|level| level as u32)
}

/// A sequence number, at most [`MAX_SEQNO`].
fn seq(decoder: &mut Decoder<'_>, what: &str) -> Result<SeqNo, Corrupt> {
    let at = decoder.position();
    let seq = decoder.varint(what)?;
    if seq > MAX_SEQNO {
        return Err(Corrupt::new(
            at as u64,
            format!("{what} {seq} exceeds {MAX_SEQNO}"),
        ));
    }
    Ok(seq)
}

/// One added table, as written by [`encode_table`].
fn decode_table(decoder: &mut Decoder<'_>) -> Result<TableMeta, Corrupt> {
    Ok(TableMeta {
        id: decoder.varint("table id")?,
        level: level(decoder)?,
        run: decoder.varint("run id")?,
        file_size: decoder.varint("file size")?,
        entries: decoder.varint("entry count")?,
        smallest: decoder
            .length_prefixed(MAX_INTERNAL_KEY_LEN, "smallest key")?
            .to_vec(),
        largest: decoder
            .length_prefixed(MAX_INTERNAL_KEY_LEN, "largest key")?
            .to_vec(),
        min_seq: seq(decoder, "smallest sequence number")?,
        max_seq: seq(decoder, "largest sequence number")?,
    })
}

/// Stores a field that may appear once.
fn set_once<T>(slot: &mut Option<T>, value: T, at: usize, name: &str) -> Result<(), Corrupt> {
    if slot.is_some() {
        return Err(Corrupt::new(at as u64, format!("{name} appears twice")));
    }
    *slot = Some(value);
    Ok(())
}

/// Parses a record payload written by [`encode_edit`]. Offsets in the
/// error are relative to the payload. Never panics; allocates only for
/// fields it has read (no count is trusted).
pub(crate) fn decode_edit(payload: &[u8]) -> Result<VersionEdit, Corrupt> {
    let mut decoder = Decoder::new(payload);
    let mut edit = VersionEdit::default();
    while !decoder.is_empty() {
        let at = decoder.position();
        match decoder.varint("field tag")? {
            TAG_NEXT_FILE_NUMBER => {
                let value = decoder.varint("next file number")?;
                set_once(&mut edit.next_file_number, value, at, "next file number")?;
            }
            TAG_LOG_NUMBER => {
                let value = decoder.varint("log number")?;
                set_once(&mut edit.log_number, value, at, "log number")?;
            }
            TAG_LAST_SEQ => {
                let value = seq(&mut decoder, "last sequence number")?;
                set_once(&mut edit.last_seq, value, at, "last sequence number")?;
            }
            TAG_COMPACTION_STYLE => {
                let value = decoder.varint_len(u8::MAX.into(), "compaction style")? as u8;
                set_once(&mut edit.compaction_style, value, at, "compaction style")?;
            }
            TAG_REMOVED => {
                let level = level(&mut decoder)?;
                edit.removed
                    .push((level, decoder.varint("removed table id")?));
            }
            TAG_ADDED => {
                edit.added.push(decode_table(&mut decoder)?);
            }
            TAG_ADDED_INDEX => {
                edit.added_indexes.push(IndexRecord::decode(&mut decoder)?);
            }
            TAG_DROPPED_INDEX => {
                edit.dropped_indexes
                    .push(decoder.varint("dropped index id")?);
            }
            tag => return Err(Corrupt::new(at as u64, format!("unknown field tag {tag}"))),
        }
    }
    Ok(edit)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn table(id: u64) -> TableMeta {
        TableMeta {
            id,
            level: 1,
            run: 3,
            file_size: 300,
            entries: 2,
            smallest: b"a\x01\x05\0\0\0\0\0\0".to_vec(),
            largest: b"b".to_vec(),
            min_seq: 5,
            max_seq: 6,
        }
    }

    #[test]
    fn golden_edit_bytes() {
        let edit = VersionEdit {
            added: vec![table(9)],
            removed: vec![(0, 4)],
            next_file_number: Some(300),
            log_number: Some(8),
            last_seq: Some(6),
            compaction_style: Some(1),
            dropped_indexes: vec![3],
            added_indexes: vec![IndexRecord {
                id: 5,
                name: "v".into(),
                extractor: crate::value_def::Extractor::WholeValue,
                sizing: crate::value_def::LeafSizing::Fixed(sift_filter::BloomShape {
                    bits: 64,
                    probes: 2,
                }),
            }],
        };
        #[rustfmt::skip]
        let expected: &[u8] = &[
            1, 0xac, 0x02,      // next file number 300
            2, 8,               // log number 8
            3, 6,               // last sequence number 6
            4, 1,               // compaction style 1
            5, 0, 4,            // removed: level 0, table 4
            6, 9, 1, 3, 0xac, 0x02, 2, // added: id 9, level 1, run 3, 300 bytes, 2 entries
            9, b'a', 1, 5, 0, 0, 0, 0, 0, 0, // smallest key (9 bytes)
            1, b'b',            // largest key
            5, 6,               // sequence numbers 5..=6
            8, 3,               // dropped index 3
            7, 5, 1, b'v', 0, 64, 2, // added index 5 "v", whole value, 64 bits, 2 probes
        ];
        assert_eq!(encode_edit(&edit), expected);
        assert_eq!(decode_edit(expected), Ok(edit));
        assert_eq!(encode_edit(&VersionEdit::default()), Vec::<u8>::new());
        assert_eq!(decode_edit(&[]), Ok(VersionEdit::default()));
    }

    #[test]
    fn damage_is_reported_with_its_offset() {
        let err = decode_edit(&[1, 5, 9, 0]).unwrap_err();
        assert_eq!(err.offset, 2);
        assert!(err.detail.contains("unknown field tag 9"));
        let err = decode_edit(&[2, 5, 2, 6]).unwrap_err();
        assert_eq!(err.offset, 2);
        assert!(err.detail.contains("twice"));
        assert!(decode_edit(&[4, 0x80, 0x02]).is_err(), "style 256");
        assert!(decode_edit(&[5, 0x80, 0x02, 1]).is_err(), "level 256");
        let mut over_seq = vec![3];
        put_varint(&mut over_seq, MAX_SEQNO + 1);
        assert!(decode_edit(&over_seq).is_err());
        let full = encode_edit(&VersionEdit {
            added: vec![table(1)],
            ..VersionEdit::default()
        });
        for len in 1..full.len() {
            assert!(decode_edit(&full[..len]).is_err(), "prefix {len}");
        }
        // A key length far past the payload fails before allocating.
        assert!(decode_edit(&[6, 1, 1, 1, 1, 1, 0xff, 0xff, 0x03]).is_err());
    }

    fn any_table() -> impl Strategy<Value = TableMeta> {
        (
            (
                any::<u64>(),
                0..=MAX_LEVEL,
                any::<u64>(),
                any::<u64>(),
                any::<u64>(),
            ),
            proptest::collection::vec(any::<u8>(), 0..30),
            proptest::collection::vec(any::<u8>(), 0..30),
            (0..=MAX_SEQNO, 0..=MAX_SEQNO),
        )
            .prop_map(
                |((id, level, run, file_size, entries), smallest, largest, (min_seq, max_seq))| {
                    TableMeta {
                        id,
                        level,
                        run,
                        file_size,
                        entries,
                        smallest,
                        largest,
                        min_seq,
                        max_seq,
                    }
                },
            )
    }

    fn any_index() -> impl Strategy<Value = IndexRecord> {
        use crate::value_def::Extractor;
        (
            any::<u64>(),
            "[a-z]{1,8}",
            0..4u8,
            "/[a-z]{0,5}",
            (any::<u32>(), any::<u8>()),
            (64..=1u64 << 36, 1..=64u32),
            prop_oneof![Just(None), (1e-9..=0.5f64).prop_map(Some)],
        )
            .prop_map(
                |(id, name, kind, text, (column, separator), (bits, probes), fpr)| {
                    let extractor = match kind {
                        0 => Extractor::WholeValue,
                        1 => Extractor::json_field(text),
                        2 => Extractor::delimited(column as usize, separator),
                        _ => Extractor::custom(text, |_, _| {}),
                    };
                    IndexRecord {
                        id,
                        name,
                        extractor,
                        sizing: match fpr {
                            Some(fpr) => crate::value_def::LeafSizing::PerTable { fpr },
                            None => crate::value_def::LeafSizing::Fixed(sift_filter::BloomShape {
                                bits,
                                probes,
                            }),
                        },
                    }
                },
            )
    }

    fn any_edit() -> impl Strategy<Value = VersionEdit> {
        (
            proptest::collection::vec(any_table(), 0..5),
            proptest::collection::vec((0..=MAX_LEVEL, any::<u64>()), 0..5),
            (any::<Option<u64>>(), any::<Option<u64>>()),
            proptest::option::of(0..=MAX_SEQNO),
            any::<Option<u8>>(),
            proptest::collection::vec(any::<u64>(), 0..3),
            proptest::collection::vec(any_index(), 0..3),
        )
            .prop_map(
                |(
                    added,
                    removed,
                    (next_file_number, log_number),
                    last_seq,
                    compaction_style,
                    dropped_indexes,
                    added_indexes,
                )| {
                    VersionEdit {
                        added,
                        removed,
                        next_file_number,
                        log_number,
                        last_seq,
                        compaction_style,
                        dropped_indexes,
                        added_indexes,
                    }
                },
            )
    }

    proptest! {
        #[test]
        fn edits_round_trip(edit in any_edit()) {
            let bytes = encode_edit(&edit);
            prop_assert_eq!(decode_edit(&bytes), Ok(edit));
        }

        #[test]
        fn decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            if let Ok(edit) = decode_edit(&bytes) {
                // What decodes re-encodes to a payload that decodes the same.
                prop_assert_eq!(decode_edit(&encode_edit(&edit)), Ok(edit));
            }
        }
    }
}
