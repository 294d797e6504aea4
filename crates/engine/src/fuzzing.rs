//! Hooks for the fuzz targets in `fuzz/`: each runs one decoder of on-disk
//! bytes that is private to this crate over arbitrary input, uses what it
//! decoded, and checks that it re-encodes to the input.
//!
//! Not part of the API: compiled only with the `fuzzing` feature, which
//! only `fuzz/` turns on. The functions take bytes and return nothing, so
//! no internal type leaks; each
//! panics only when a decoder breaks its contract: a panic inside the
//! decoder, or a successful decode of bytes the encoder would not write.
//!
//! The engine's encodings are canonical but for two documented freedoms
//! (`docs/format.md`): a varint may be spelled with more bytes than it needs
//! (LEB128 allows it and the readers accept it), and the fields of a
//! manifest edit may come in any order. So where the filter fuzzers of
//! `sift-filter` demand that the re-encoding equal the input, these demand
//! that it be no longer than the input, and the same bytes whenever it is as
//! long (only an overlong varint makes it shorter); for an edit, the same
//! bytes up to the order of its fields. In every case what the re-encoding
//! decodes to must equal what the input decoded to.

use std::path::Path;

use sift_filter::KeyHash;

use crate::batch::{WriteBatch, decode_record};
use crate::encoding::Decoder;
use crate::fs::{FaultInjectionFs, FileSystem};
use crate::key::ValueKind;
use crate::log::{HEADER_LEN, LogKind, LogStream, LogWriter, Tail, collect, read_log};
use crate::manifest::edit::{decode_edit, encode_edit};
use crate::sstable::filters::value::{
    BlockFilters, HEAVY_HITTERS_VERSION, HeavyHitters, decode_directory, encode_directory,
};
use crate::sstable::index::{COMPACT_VERSION, IN_PLACE_VERSION, Index, TWO_LEVEL_VERSION};

/// Bytes of a checksum field (log header and log records): `u32`.
const CHECKSUM_LEN: usize = 4;

/// Checks `reencoded`, the encoding of what `input` decoded to: never longer
/// than `input`, and `input` itself when as long.
fn assert_canonical(what: &str, input: &[u8], reencoded: &[u8]) {
    assert!(
        reencoded.len() <= input.len(),
        "{what}: {} bytes re-encode to {}",
        input.len(),
        reencoded.len()
    );
    if reencoded.len() == input.len() {
        assert_eq!(reencoded, input, "{what} re-encodes differently");
    }
}

/// A write-batch record, the payload of one WAL record (`batch.rs`,
/// `decode_record`).
pub fn write_batch(data: &[u8]) {
    let Ok((first_seq, ops)) = decode_record(data) else {
        return;
    };
    let mut batch = WriteBatch::new();
    for (kind, key, value) in &ops {
        match kind {
            ValueKind::Value => batch.insert(key, value),
            ValueKind::Delete => batch.remove(key),
        };
    }
    assert_eq!(batch.len(), ops.len());
    assert!(
        batch.validate().is_ok(),
        "a decoded batch breaks the limits"
    );
    let reencoded = [&batch.record_header(first_seq)[..], batch.encoded_ops()].concat();
    assert_canonical("write batch", data, &reencoded);
    assert_eq!(decode_record(&reencoded), Ok((first_seq, ops)));
}

/// A version edit, the payload of one manifest record
/// (`manifest/edit.rs`, `decode_edit`).
pub fn version_edit(data: &[u8]) {
    let Ok(edit) = decode_edit(data) else {
        return;
    };
    let mut indexes = Vec::new();
    edit.apply_indexes(&mut indexes);
    assert!(indexes.len() <= edit.added_indexes.len());
    let reencoded = encode_edit(&edit);
    assert!(
        reencoded.len() <= data.len(),
        "version edit: {} bytes re-encode to {}",
        data.len(),
        reencoded.len()
    );
    if reencoded.len() == data.len() {
        // No overlong varint, so only the order of fields may differ.
        let (mut read, mut written) = (data.to_vec(), reencoded.clone());
        read.sort_unstable();
        written.sort_unstable();
        assert_eq!(read, written, "version edit re-encodes differently");
    }
    assert_eq!(decode_edit(&reencoded), Ok(edit));
}

/// The block value filters of one table and index
/// (`sstable/filters/value/blocks.rs`, `BlockFilters::decode`).
pub fn block_filters(data: &[u8]) {
    let Ok(filters) = BlockFilters::decode(data) else {
        return;
    };
    let hashes: Vec<KeyHash> = (0..4u64).map(|i| KeyHash::of(&i.to_le_bytes())).collect();
    // One past the last filter too: a block it does not cover says "maybe".
    for block in 0..=filters.len() {
        for &hash in &hashes {
            let maybe = filters.may_contain(block, hash);
            assert!(maybe || block < filters.len());
        }
    }
    assert!(filters.size_bytes() <= data.len() as u64);
    let mut reencoded = Vec::new();
    filters.encode(&mut reencoded);
    assert_canonical("block filters", data, &reencoded);
    assert_eq!(BlockFilters::decode(&reencoded), Ok(filters));
}

/// A table's index block (`sstable/index.rs`, `Index::decode`). The first
/// byte picks the table format (its remainder by 4): 4 (the walked
/// layout), 5 (laid out to be searched in place), 6 (the compact layout)
/// or 8 (a block of a two-level index may start past 0); the rest is the
/// block. Every entry is read and searched for;
/// where the keys pass the full check, each key is found at its own
/// block, and the block re-encodes to what it decoded to.
pub fn table_index(data: &[u8]) {
    let Some((&selector, bytes)) = data.split_first() else {
        return;
    };
    let version = match selector % 4 {
        0 => IN_PLACE_VERSION - 1,
        1 => IN_PLACE_VERSION,
        2 => COMPACT_VERSION,
        _ => TWO_LEVEL_VERSION,
    };
    let Ok(index) = Index::decode(bytes.to_vec(), u64::MAX, version) else {
        return;
    };
    let keys_ordered = index.check_keys().is_ok();
    for at in 0..index.len() {
        assert!(
            index.key(at).is_some() && index.handle(at).is_some(),
            "entry {at} does not read"
        );
    }
    let entries = index.entries();
    for (at, entry) in entries.iter().enumerate() {
        let found = index.find(&entry.last_key);
        assert!(!keys_ordered || found == at, "key {at} found at {found}");
    }
    let _ = index.find(b"short");
    if keys_ordered {
        let start = Some(index.start());
        let again = Index::encode_from(&entries, index.holds_user_keys(), start)
            .map(|bytes| Index::decode(bytes, u64::MAX, TWO_LEVEL_VERSION).map(|i| i.entries()));
        assert_eq!(again, Some(Ok(entries)));
    }
}

/// The value filter directory at the end of a table's properties block
/// (`sstable/filters/value/reader.rs`, `decode_directory`). The first byte picks the
/// table format, by its remainder mod 3: 2 (no block filters), 3 (no heavy
/// hitters) or 7; the rest is the directory. Only format 7 is written, so
/// only it is re-encoded.
pub fn value_filter_directory(data: &[u8]) {
    let Some((&selector, bytes)) = data.split_first() else {
        return;
    };
    let version = [2, 3, HEAVY_HITTERS_VERSION][usize::from(selector % 3)];
    let mut decoder = Decoder::new(bytes);
    let Ok(entries) = decode_directory(&mut decoder, version) else {
        return;
    };
    let ascending = entries.windows(2).all(|pair| match pair {
        [a, b] => a.index_id < b.index_id,
        _ => true,
    });
    assert!(ascending, "directory ids do not ascend");
    if version < HEAVY_HITTERS_VERSION {
        assert!(
            entries
                .iter()
                .all(|e| e.heavy_hitters == HeavyHitters::default())
        );
        if version == 2 {
            assert!(entries.iter().all(|e| e.blocks.is_none() && e.values == 0));
        }
        return;
    }
    let read = bytes.get(..decoder.position()).unwrap_or_default();
    let mut reencoded = Vec::new();
    encode_directory(&entries, &mut reencoded);
    assert_canonical("value filter directory", read, &reencoded);
    assert_eq!(
        decode_directory(&mut Decoder::new(&reencoded), version),
        Ok(entries)
    );
}

/// Chunk sizes a log is also streamed in by [`log_file`]: a window far
/// smaller than the input, so records, headers and the search for a valid
/// record after a bad one straddle refills.
const SMALL_CHUNKS: [usize; 3] = [1, 7, 64];

/// A whole log file (`log/stream.rs` through `read_log`), read as a WAL and
/// as a manifest; each record it yields goes on to [`write_batch`] or
/// [`version_edit`]. What it keeps must be the file up to `valid_len`, which
/// rewriting its records reproduces (checksum fields aside in fuzz builds,
/// where checksums are not checked). Streamed in small chunks, the log must
/// read the same as in one.
pub fn log_file(data: &[u8]) {
    for kind in [LogKind::Wal, LogKind::Manifest] {
        let fs = FaultInjectionFs::new();
        let path = Path::new("/db/log");
        let stored = fs
            .create_dir_all(Path::new("/db"))
            .and_then(|()| fs.create(path))
            .and_then(|mut file| file.append(data));
        assert!(stored.is_ok(), "the in-memory file system failed");
        let whole = streamed(&fs, path, kind, data.len());
        for chunk in SMALL_CHUNKS {
            assert_eq!(
                streamed(&fs, path, kind, chunk),
                whole,
                "streamed in {chunk}-byte chunks, the log reads differently"
            );
        }
        let Ok(contents) = read_log(&fs, path, kind) else {
            continue;
        };
        let valid_len = usize::try_from(contents.valid_len).unwrap_or(usize::MAX);
        let kept = data.get(..valid_len);
        assert!(kept.is_some(), "valid_len {valid_len} past the file");
        assert_eq!(
            contents.tail == Tail::Clean,
            valid_len == data.len(),
            "a clean log is read to its end, a torn one is not"
        );
        if valid_len == 0 {
            assert!(contents.records.is_empty());
        } else {
            let offsets: Vec<u64> = contents.record_offsets().collect();
            let mask = |bytes: Option<Vec<u8>>| {
                bytes.map(|mut bytes| {
                    if cfg!(fuzzing) {
                        mask_checksums(&mut bytes, &offsets);
                    }
                    bytes
                })
            };
            assert_eq!(
                mask(rewrite(kind, &contents.records)),
                mask(kept.map(<[u8]>::to_vec)),
                "the log's records re-encode differently"
            );
        }
        for record in &contents.records {
            match kind {
                LogKind::Wal => write_batch(record),
                LogKind::Manifest => version_edit(record),
            }
        }
    }
}

/// The records, `valid_len` and tail of `path` streamed `chunk` bytes at a
/// time, or the error as text.
fn streamed(
    fs: &FaultInjectionFs,
    path: &Path,
    kind: LogKind,
    chunk: usize,
) -> Result<(Vec<Vec<u8>>, u64, Tail), String> {
    LogStream::with_chunk(fs, path, kind, chunk)
        .and_then(collect)
        .map(|contents| (contents.records, contents.valid_len, contents.tail))
        .map_err(|err| err.to_string())
}

/// A log of `kind` holding `records`, as [`LogWriter`] writes it.
fn rewrite(kind: LogKind, records: &[Vec<u8>]) -> Option<Vec<u8>> {
    let fs = FaultInjectionFs::new();
    let path = Path::new("/db/again");
    fs.create_dir_all(Path::new("/db")).ok()?;
    let mut writer = LogWriter::create(&fs, path, kind).ok()?;
    for record in records {
        writer.add_record(record).ok()?;
    }
    fs.contents(path)
}

/// Zeroes the header's checksum and that of each record at `offsets`.
fn mask_checksums(bytes: &mut [u8], offsets: &[u64]) {
    let header = HEADER_LEN - CHECKSUM_LEN;
    let records = offsets.iter().filter_map(|&at| usize::try_from(at).ok());
    for at in std::iter::once(header).chain(records) {
        if let Some(field) = bytes.get_mut(at..at.saturating_add(CHECKSUM_LEN)) {
            field.fill(0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::VersionEdit;
    use crate::sstable::filters::value::ValueFilterEntry;
    use crate::sstable::index::IndexEntry;

    fn log_of(kind: LogKind, records: &[Vec<u8>]) -> Vec<u8> {
        rewrite(kind, records).unwrap()
    }

    #[test]
    fn valid_encodings_pass_every_check() {
        let mut batch = WriteBatch::new();
        batch.insert("k", "v").remove("gone");
        let record = [&batch.record_header(9)[..], batch.encoded_ops()].concat();
        write_batch(&record);
        let edit = VersionEdit {
            next_file_number: Some(300),
            removed: vec![(1, 7)],
            ..VersionEdit::default()
        };
        version_edit(&encode_edit(&edit));
        let filters = BlockFilters::build(3, [(&[KeyHash::of(b"x")][..], 70)].into_iter());
        let mut bytes = Vec::new();
        filters.encode(&mut bytes);
        block_filters(&bytes);
        let entry = ValueFilterEntry {
            index_id: 4,
            handle: crate::sstable::BlockHandle {
                offset: 10,
                size: 20,
            },
            distinct_values: 3,
            values: 5,
            blocks: Some(crate::sstable::BlockHandle {
                offset: 35,
                size: 12,
            }),
            heavy_hitters: HeavyHitters::of(vec![(9, 4), (7, 2)]),
        };
        let mut directory = vec![2];
        encode_directory(&[entry], &mut directory);
        value_filter_directory(&directory);
        let index = [b"k1", b"k3"].map(|user| {
            let mut key = Vec::new();
            crate::key::encode_internal_key(&mut key, user, 1, ValueKind::Value);
            key
        });
        let entries: Vec<IndexEntry> = index
            .iter()
            .zip([0, 15])
            .map(|(key, offset)| IndexEntry {
                last_key: key.as_slice().into(),
                handle: crate::sstable::BlockHandle { offset, size: 10 },
            })
            .collect();
        for user_keys in [false, true] {
            let compact = Index::encode(&entries, user_keys).unwrap();
            table_index(&[[2].as_slice(), &compact].concat());
        }
        let format_5 = crate::sstable::index::encode_format_5(&entries);
        table_index(&[[1].as_slice(), &format_5].concat());
        let older = crate::sstable::index::encode_older(&entries);
        table_index(&[[0].as_slice(), &older].concat());
        log_file(&log_of(LogKind::Wal, &[record.clone(), record]));
        log_file(&log_of(LogKind::Manifest, &[encode_edit(&edit)]));
    }

    #[test]
    fn overlong_varints_and_reordered_fields_are_not_reported() {
        // Next file number 300 spelled in three bytes, then log number 8
        // before it.
        version_edit(&[1, 0xac, 0x82, 0x00]);
        version_edit(&[2, 8, 1, 0xac, 0x02]);
        // One filter of 8 bits, its size spelled in two bytes.
        block_filters(&[2, 1, 0x88, 0x00, 1, 0, 0, 0, 0, 0, 0, 0]);
        let mut batch = WriteBatch::new();
        batch.remove("k");
        let mut record = [&batch.record_header(1)[..], batch.encoded_ops()].concat();
        record.splice(13..14, [0x81, 0x00]);
        assert!(decode_record(&record).is_ok());
        write_batch(&record);
    }

    #[test]
    fn damaged_and_arbitrary_bytes_pass() {
        let log = log_of(LogKind::Wal, &[b"not a batch".to_vec(), Vec::new()]);
        for cut in 0..=log.len() {
            log_file(&log[..cut]);
        }
        for input in [&[][..], &[0], &[0xff; 40], b"SLOG\x01\x02\0\0\0\0\0\0"] {
            write_batch(input);
            version_edit(input);
            block_filters(input);
            value_filter_directory(input);
            table_index(input);
            log_file(input);
        }
    }
}
