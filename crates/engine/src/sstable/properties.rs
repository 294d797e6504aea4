//! The properties block: what a table holds, written last before the index
//! and footer, decoded at open.

#![deny(clippy::indexing_slicing)]

use super::filters::value::{ValueFilterEntry, decode_directory, encode_directory};
use super::trailer::BlockHandle;
use crate::encoding::{Decoder, put_bytes, put_varint};
use crate::error::Corrupt;
use crate::key::{MAX_SEQNO, ParsedKey, SeqNo};
use crate::options::Compression;
use sift_filter::FilterKind;

/// Longest smallest/largest key accepted: the engine's key limit (64 KiB)
/// plus the trailer, with room to spare.
const MAX_KEY: usize = 1 << 20;

/// Which filter a table was built with (its filters' actual kinds: a
/// Ribbon or Binary Fuse table may hold blocked Bloom fallbacks, and a
/// Binary Fuse one Ribbon filters for partitions too small for it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum BuiltFilterKind {
    /// No key filter.
    None = 0,
    /// Every filter is blocked Bloom.
    BlockedBloom = 1,
    /// Every filter is Ribbon.
    Ribbon = 2,
    /// Filters of more than one kind.
    Mixed = 3,
    /// Every filter is Binary Fuse (8- or 16-bit fingerprints).
    BinaryFuse = 4,
    /// Every filter is split-block Bloom.
    SplitBlockBloom = 5,
}

impl BuiltFilterKind {
    /// Parses the stored byte.
    pub(crate) fn from_u8(byte: u8) -> Option<Self> {
        match byte {
            0 => Some(Self::None),
            1 => Some(Self::BlockedBloom),
            2 => Some(Self::Ribbon),
            3 => Some(Self::Mixed),
            4 => Some(Self::BinaryFuse),
            5 => Some(Self::SplitBlockBloom),
            _ => None,
        }
    }

    /// The kind of a table whose filters are of `kinds` (none: no filter).
    pub(crate) fn of(mut kinds: impl Iterator<Item = FilterKind>) -> Self {
        let one = |kind| match kind {
            FilterKind::BlockedBloom => Self::BlockedBloom,
            FilterKind::Ribbon => Self::Ribbon,
            FilterKind::BinaryFuse => Self::BinaryFuse,
            FilterKind::SplitBlockBloom => Self::SplitBlockBloom,
            _ => Self::Mixed,
        };
        let Some(first) = kinds.next() else {
            return Self::None;
        };
        if kinds.all(|kind| kind == first) {
            one(first)
        } else {
            Self::Mixed
        }
    }

    /// The name `sift dump-sst` prints.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::BlockedBloom => "blocked_bloom",
            Self::Ribbon => "ribbon",
            Self::Mixed => "mixed",
            Self::BinaryFuse => "binary_fuse",
            Self::SplitBlockBloom => "split_block_bloom",
        }
    }
}

/// What a finished table holds (also stored in its properties block).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Properties {
    /// Entries.
    pub entries: u64,
    /// Distinct user keys (what the filter holds).
    pub distinct_keys: u64,
    /// File size (not stored: taken from the file at open).
    pub file_size: u64,
    /// Smallest internal key, encoded (empty for an empty table).
    pub smallest: Vec<u8>,
    /// Largest internal key, encoded (empty for an empty table).
    pub largest: Vec<u8>,
    /// Smallest sequence number.
    pub min_seq: SeqNo,
    /// Largest sequence number.
    pub max_seq: SeqNo,
    /// Bytes of key filter data (`Filter::size_bytes`, summed over
    /// partitions).
    pub filter_bytes: u64,
    /// Data blocks.
    pub data_blocks: u64,
    /// Filter kind built.
    pub filter_kind: BuiltFilterKind,
    /// Filter partitions (0 for none or a whole-table filter).
    pub filter_partitions: u64,
    /// Bits per key asked for.
    pub bits_per_key: f64,
    /// Compression asked for (each block records whether it kept it).
    pub compression: Compression,
    /// Data block bytes before compression, trailers excluded.
    pub raw_data_bytes: u64,
    /// Data block bytes as stored, trailers included.
    pub stored_data_bytes: u64,
    /// The value filter directory (format version 2; empty in version 1).
    pub value_filters: Vec<ValueFilterEntry>,
    /// The scan filters block (format version 4; `None` before it, or for
    /// a table written without prefix and range filters).
    pub scan_filters: Option<BlockHandle>,
}

impl Properties {
    /// The smallest user key (empty for an empty table).
    pub(crate) fn smallest_user_key(&self) -> &[u8] {
        ParsedKey::parse(&self.smallest).map_or(&[], |k| k.user_key)
    }

    /// The largest user key (empty for an empty table).
    pub(crate) fn largest_user_key(&self) -> &[u8] {
        ParsedKey::parse(&self.largest).map_or(&[], |k| k.user_key)
    }

    /// The raw properties block (layout in `docs/format-sstable.md`).
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        put_varint(&mut out, self.entries);
        put_varint(&mut out, self.distinct_keys);
        put_varint(&mut out, self.data_blocks);
        put_bytes(&mut out, &self.smallest);
        put_bytes(&mut out, &self.largest);
        put_varint(&mut out, self.min_seq);
        put_varint(&mut out, self.max_seq);
        out.push(self.filter_kind as u8);
        put_varint(&mut out, self.filter_partitions);
        put_varint(&mut out, self.filter_bytes);
        out.extend_from_slice(&self.bits_per_key.to_bits().to_le_bytes());
        out.push(match self.compression {
            Compression::None => 0,
            Compression::Lz4 => 1,
        });
        put_varint(&mut out, self.raw_data_bytes);
        put_varint(&mut out, self.stored_data_bytes);
        encode_directory(&self.value_filters, &mut out);
        self.scan_filters.unwrap_or_default().put_varints(&mut out);
        out
    }

    /// Decodes a properties block of a table of format `version` (1 has no
    /// value filter directory); `file_size` is left 0 for the caller.
    pub(crate) fn decode(bytes: &[u8], version: u32) -> Result<Self, Corrupt> {
        let mut d = Decoder::new(bytes);
        let entries = d.varint("entries")?;
        let distinct_keys = d.varint("distinct keys")?;
        let data_blocks = d.varint("data blocks")?;
        let keys_at = d.position() as u64;
        let smallest = d.length_prefixed(MAX_KEY, "smallest key")?.to_vec();
        let largest = d.length_prefixed(MAX_KEY, "largest key")?.to_vec();
        let seq_at = d.position() as u64;
        let min_seq = d.varint("min seq")?;
        let max_seq = d.varint("max seq")?;
        let kind_at = d.position() as u64;
        let filter_kind = BuiltFilterKind::from_u8(d.u8("filter kind")?)
            .ok_or_else(|| Corrupt::new(kind_at, "unknown filter kind"))?;
        let filter_partitions = d.varint("filter partitions")?;
        let filter_bytes = d.varint("filter bytes")?;
        let bits_per_key = f64::from_bits(d.u64("bits per key")?);
        let compression_at = d.position() as u64;
        let compression = match d.u8("compression")? {
            0 => Compression::None,
            1 => Compression::Lz4,
            other => {
                return Err(Corrupt::new(
                    compression_at,
                    format!("unknown compression {other}"),
                ));
            }
        };
        let raw_data_bytes = d.varint("raw data bytes")?;
        let stored_data_bytes = d.varint("stored data bytes")?;
        let value_filters = if version >= 2 {
            decode_directory(&mut d, version)?
        } else {
            Vec::new()
        };
        let scan_filters = if version >= 4 {
            Some(BlockHandle::read_varints(&mut d)?).filter(|h| *h != BlockHandle::default())
        } else {
            None
        };
        if !d.is_empty() {
            return Err(d.error("bytes after the last property"));
        }
        let counts_agree = distinct_keys <= entries
            && data_blocks <= entries
            && (entries == 0) == (distinct_keys == 0)
            && (entries == 0) == (data_blocks == 0);
        if !counts_agree {
            return Err(Corrupt::new(0, "entry, key and block counts disagree"));
        }
        let keys_ok = if entries == 0 {
            smallest.is_empty() && largest.is_empty()
        } else {
            ParsedKey::parse(&smallest).is_some() && ParsedKey::parse(&largest).is_some()
        };
        if !keys_ok {
            return Err(Corrupt::new(
                keys_at,
                "smallest/largest keys are not internal keys",
            ));
        }
        if min_seq > max_seq || max_seq > MAX_SEQNO {
            return Err(Corrupt::new(seq_at, "sequence number range is impossible"));
        }
        Ok(Self {
            entries,
            distinct_keys,
            file_size: 0,
            smallest,
            largest,
            min_seq,
            max_seq,
            filter_bytes,
            data_blocks,
            filter_kind,
            filter_partitions,
            bits_per_key,
            compression,
            raw_data_bytes,
            stored_data_bytes,
            value_filters,
            scan_filters,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{ValueKind, encode_internal_key};

    pub(crate) fn sample() -> Properties {
        let (mut smallest, mut largest) = (Vec::new(), Vec::new());
        encode_internal_key(&mut smallest, b"a", 9, ValueKind::Value);
        encode_internal_key(&mut largest, b"z", 2, ValueKind::Delete);
        Properties {
            entries: 10,
            distinct_keys: 7,
            file_size: 0,
            smallest,
            largest,
            min_seq: 2,
            max_seq: 9,
            filter_bytes: 64,
            data_blocks: 2,
            filter_kind: BuiltFilterKind::Ribbon,
            filter_partitions: 0,
            bits_per_key: 9.5,
            compression: Compression::Lz4,
            raw_data_bytes: 900,
            stored_data_bytes: 700,
            value_filters: vec![ValueFilterEntry {
                index_id: 4,
                handle: super::super::trailer::BlockHandle {
                    offset: 10,
                    size: 20,
                },
                distinct_values: 3,
                values: 5,
                blocks: Some(super::super::trailer::BlockHandle {
                    offset: 35,
                    size: 12,
                }),
                heavy_hitters: super::super::filters::value::HeavyHitters::of(vec![(5, 3)]),
            }],
            scan_filters: Some(BlockHandle {
                offset: 50,
                size: 30,
            }),
        }
    }

    #[test]
    fn round_trip_and_every_truncation_fails() {
        let props = sample();
        let bytes = props.encode();
        assert_eq!(Properties::decode(&bytes, 7).unwrap(), props);
        for cut in 0..bytes.len() {
            assert!(
                Properties::decode(&bytes[..cut], 7).is_err(),
                "cut at {cut}"
            );
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(Properties::decode(&longer, 7).is_err());
    }

    #[test]
    fn version_3_has_no_scan_filters() {
        let mut props = sample();
        props.scan_filters = None;
        props.value_filters[0].heavy_hitters = Default::default();
        let mut v3 = props.encode();
        assert_eq!(
            v3.split_off(v3.len() - 2),
            [0, 0],
            "no handle is two zero bytes"
        );
        assert_eq!(v3.pop(), Some(0), "no heavy hitter is one zero byte");
        assert_eq!(Properties::decode(&v3, 3).unwrap(), props);
        assert_eq!(Properties::decode(&props.encode(), 7).unwrap(), props);
        assert!(Properties::decode(&v3, 4).is_err());
    }

    #[test]
    fn version_1_has_no_directory() {
        let mut props = sample();
        props.value_filters.clear();
        props.scan_filters = None;
        let mut v1 = props.encode();
        v1.truncate(v1.len() - 2);
        assert_eq!(v1.pop(), Some(0), "an empty directory is one zero byte");
        assert_eq!(Properties::decode(&v1, 1).unwrap(), props);
        assert!(Properties::decode(&props.encode(), 1).is_err());
        assert!(Properties::decode(&v1, 2).is_err());
        assert!(Properties::decode(&v1, 4).is_err());
    }

    #[test]
    fn impossible_values_are_refused() {
        let mut bad = sample();
        bad.min_seq = 10;
        assert!(Properties::decode(&bad.encode(), 7).is_err());
        let mut bad = sample();
        bad.distinct_keys = 11;
        assert!(Properties::decode(&bad.encode(), 7).is_err());
        let mut bad = sample();
        bad.smallest = b"short".to_vec();
        assert!(Properties::decode(&bad.encode(), 7).is_err());
    }
}
