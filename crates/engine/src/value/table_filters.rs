//! Value filters (the leaves of search by value): one standard Bloom filter
//! per table and index over the hashes of the values the index extracts
//! from the table's `Value` entries, built in the pass that writes the
//! table, stored one per block, found through a directory in the
//! properties (format version 2).
//!
//! As for the key filter, damage never fails the open: a leaf whose block
//! fails its checksum or does not decode is [`ValueLeaf::Unreadable`] (a
//! search scans the table) and `verify` reports it.

use std::path::Path;
use std::sync::Arc;

use sift_filter::{Filter, KeyHash, StandardBloom};

use crate::encoding::{Decoder, put_varint};
use crate::error::{Corrupt, Error, Result};
use crate::fs::ReadableFile;
use crate::sstable::{BlockHandle, read_block};
use crate::value::IndexRecord;

/// Each directory entry takes at least 4 bytes (four varints), which bounds
/// the count a damaged directory can claim.
const MIN_ENTRY_BYTES: usize = 4;

/// One directory entry: which index, where its leaf is, how many distinct
/// values it holds (estimated from the leaf's fill).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ValueFilterEntry {
    /// The index's id (`IndexRecord::id`).
    pub index_id: u64,
    /// The leaf's block.
    pub handle: BlockHandle,
    /// Distinct values extracted, estimated from the leaf's fill ratio.
    pub distinct_values: u64,
}

/// Appends the directory: `varint count`, then per leaf `varint index id |
/// varint offset | varint size | varint distinct values`, ids ascending.
pub(crate) fn encode_directory(entries: &[ValueFilterEntry], out: &mut Vec<u8>) {
    put_varint(out, entries.len() as u64);
    for entry in entries {
        put_varint(out, entry.index_id);
        entry.handle.put_varints(out);
        put_varint(out, entry.distinct_values);
    }
}

/// Reads what [`encode_directory`] wrote; ids must strictly ascend.
pub(crate) fn decode_directory(d: &mut Decoder<'_>) -> Result<Vec<ValueFilterEntry>, Corrupt> {
    let count = d.varint_len(d.remaining() / MIN_ENTRY_BYTES, "value filter count")?;
    let mut out: Vec<ValueFilterEntry> = Vec::with_capacity(count);
    for _ in 0..count {
        let at = d.position() as u64;
        let index_id = d.varint("value filter index id")?;
        let handle = BlockHandle::read_varints(d)?;
        let distinct_values = d.varint("distinct values")?;
        if out.last().is_some_and(|last| last.index_id >= index_id) {
            return Err(Corrupt::new(at, "value filter index ids out of order"));
        }
        out.push(ValueFilterEntry {
            index_id,
            handle,
            distinct_values,
        });
    }
    Ok(out)
}

/// Builds the leaves of one table. Call order: [`new`](Self::new),
/// [`add`](Self::add) per `Value` entry, [`finish`](Self::finish) once.
pub(crate) struct ValueFilterBuilder {
    /// Per index, ids ascending: the index and its leaf so far.
    leaves: Vec<(IndexRecord, StandardBloom)>,
}

impl std::fmt::Debug for ValueFilterBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ValueFilterBuilder")
            .field("leaves", &self.leaves.len())
            .finish()
    }
}

impl ValueFilterBuilder {
    /// Empty leaves for `indexes` (each of its shape). Shapes were checked
    /// when the index was defined or decoded; one the filter refused anyway
    /// would only leave its leaf missing (searches scan such tables).
    pub(crate) fn new(indexes: &[IndexRecord]) -> Self {
        let mut leaves: Vec<_> = indexes
            .iter()
            .filter_map(|index| Some((index.clone(), StandardBloom::new(index.shape).ok()?)))
            .collect();
        leaves.sort_by_key(|(index, _)| index.id);
        Self { leaves }
    }

    /// Whether any index is built (the write path skips extraction if not).
    pub(crate) fn is_empty(&self) -> bool {
        self.leaves.is_empty()
    }

    /// Adds every value each index extracts from `value`, each hashed once.
    pub(crate) fn add(&mut self, value: &[u8]) {
        for (index, leaf) in &mut self.leaves {
            index
                .extractor
                .extract(value, &mut |v| leaf.insert(KeyHash::of(v)));
        }
    }

    /// Bytes the leaves will take, encoded.
    pub(crate) fn estimated_bytes(&self) -> u64 {
        self.leaves
            .iter()
            .map(|(index, _)| index.shape.bits.div_ceil(8) + 64)
            .sum()
    }

    /// The leaves, ids ascending: (index id, encoded leaf, distinct values).
    pub(crate) fn finish(self) -> Vec<(u64, Vec<u8>, u64)> {
        self.leaves
            .into_iter()
            .map(|(index, leaf)| {
                let distinct = leaf.estimated_count().unwrap_or(0.0).round() as u64;
                (index.id, leaf.encode(), distinct)
            })
            .collect()
    }
}

/// The leaf of one index in one table.
#[derive(Clone, Debug)]
pub(crate) enum ValueLeaf {
    /// The leaf, decoded at open.
    Present(Arc<StandardBloom>),
    /// The table was written before the index existed: scan it.
    Missing,
    /// The leaf is damaged: scan the table.
    Unreadable,
}

/// The leaves of an open table.
#[derive(Debug, Default)]
pub(crate) struct ValueFilters {
    /// Ids ascending: index id and its leaf (`None` if it could not be read).
    leaves: Vec<(u64, Option<Arc<StandardBloom>>)>,
    /// First damage found: file offset and what was wrong.
    problem: Option<(u64, String)>,
}

impl ValueFilters {
    /// Reads every leaf the directory names; blocks end by `limit`. Damage
    /// makes a leaf unreadable; only I/O errors fail.
    pub(crate) fn load(
        file: &dyn ReadableFile,
        path: &Path,
        directory: &[ValueFilterEntry],
        limit: u64,
    ) -> Result<Self> {
        let mut out = Self::default();
        for entry in directory {
            let leaf = match read_block(file, path, entry.handle, limit) {
                Ok(bytes) => StandardBloom::decode(&bytes).map_err(|e| {
                    (
                        entry.handle.offset,
                        format!("value filter does not decode: {e}"),
                    )
                }),
                Err(Error::Corruption { offset, detail, .. }) => Err((offset, detail)),
                Err(other) => return Err(other),
            };
            let leaf = match leaf {
                Ok(leaf) => Some(Arc::new(leaf)),
                Err(damage) => {
                    out.problem.get_or_insert(damage);
                    None
                }
            };
            out.leaves.push((entry.index_id, leaf));
        }
        Ok(out)
    }

    /// The leaf of index `index_id`.
    pub(crate) fn leaf(&self, index_id: u64) -> ValueLeaf {
        match self.leaves.binary_search_by_key(&index_id, |(id, _)| *id) {
            Err(_) => ValueLeaf::Missing,
            Ok(at) => match self.leaves.get(at) {
                Some((_, Some(leaf))) => ValueLeaf::Present(Arc::clone(leaf)),
                _ => ValueLeaf::Unreadable,
            },
        }
    }

    /// (index id, readable) per leaf, ids ascending.
    pub(crate) fn ids(&self) -> impl Iterator<Item = (u64, bool)> + '_ {
        self.leaves.iter().map(|(id, leaf)| (*id, leaf.is_some()))
    }

    /// The first damage found, as the error `verify` reports.
    pub(crate) fn problem(&self, path: &Path) -> Option<Error> {
        self.problem.as_ref().map(|(offset, detail)| {
            Error::corruption(path, *offset, format!("value filter: {detail}"))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(index_id: u64) -> ValueFilterEntry {
        ValueFilterEntry {
            index_id,
            handle: BlockHandle {
                offset: 300,
                size: 70,
            },
            distinct_values: 5,
        }
    }

    #[test]
    fn directory_golden_bytes_and_round_trip() {
        let entries = [entry(4), entry(200)];
        let mut bytes = Vec::new();
        encode_directory(&entries, &mut bytes);
        assert_eq!(
            bytes,
            [2, 4, 0xac, 0x02, 70, 5, 0xc8, 0x01, 0xac, 0x02, 70, 5]
        );
        let mut d = Decoder::new(&bytes);
        assert_eq!(decode_directory(&mut d).unwrap(), entries);
        assert!(d.is_empty());
        for cut in 0..bytes.len() {
            assert!(decode_directory(&mut Decoder::new(&bytes[..cut])).is_err());
        }
    }

    #[test]
    fn directory_damage_is_refused() {
        let mut bytes = Vec::new();
        encode_directory(&[entry(7), entry(7)], &mut bytes);
        let err = decode_directory(&mut Decoder::new(&bytes)).unwrap_err();
        assert!(err.detail.contains("out of order"));
        // A count far past what the bytes can hold fails before allocating.
        assert!(decode_directory(&mut Decoder::new(&[0xff, 0xff, 0xff, 0x0f])).is_err());
    }

    #[test]
    fn leaves_are_found_by_id() {
        let filters = ValueFilters {
            leaves: vec![
                (
                    3,
                    Some(Arc::new(StandardBloom::with_fpr(10, 0.01).unwrap())),
                ),
                (9, None),
            ],
            problem: Some((5, "bad".into())),
        };
        assert!(matches!(filters.leaf(3), ValueLeaf::Present(_)));
        assert!(matches!(filters.leaf(9), ValueLeaf::Unreadable));
        assert!(matches!(filters.leaf(4), ValueLeaf::Missing));
        let problem = filters.problem(Path::new("t.sst")).unwrap().to_string();
        assert!(problem.contains("value filter: bad"), "{problem}");
        assert!(ValueFilters::default().problem(Path::new("t")).is_none());
    }
}
