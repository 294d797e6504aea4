//! The value filters a table carries, per value index: the leaf (a
//! standard Bloom filter over every value the index extracts from the
//! table's `Value` entries) and the block filters (one small filter per
//! data block, `blocks.rs`), found through a directory at the end of
//! the properties block, decoded and pinned at open.
//!
//! As for the key filter, damage never fails the open: a leaf whose block
//! fails its checksum or does not decode is [`ValueLeaf::Unreadable`] (a
//! search reads the table), damaged block filters make every block a
//! candidate, and `verify` reports both.

#![deny(clippy::indexing_slicing)]

use std::path::Path;
use std::sync::Arc;

use sift_filter::StandardBloom;

use sift_filter::KeyHash;

use super::blocks::BlockFilters;
use super::hitters::HeavyHitters;
use crate::encoding::{Decoder, put_varint};
use crate::error::{Corrupt, Error, Result};
use crate::fs::ReadableFile;
use crate::sstable::{BlockHandle, read_block};

/// Table format version whose directory entries name block filters.
const BLOCK_FILTERS_VERSION: u32 = 3;

/// Table format version whose directory entries end with heavy hitters.
pub(crate) const HEAVY_HITTERS_VERSION: u32 = 7;

/// One directory entry: which index, where its filters are, what the
/// table holds for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ValueFilterEntry {
    /// The index's id (`IndexRecord::id`).
    pub index_id: u64,
    /// The leaf's block.
    pub handle: BlockHandle,
    /// Distinct values extracted: exact from format 3 on, estimated from
    /// the leaf's fill before.
    pub distinct_values: u64,
    /// Values extracted, repeats included (format 3; 0 before).
    pub values: u64,
    /// The block filters' block (format 3; `None` before).
    pub blocks: Option<BlockHandle>,
    /// The most frequent values (format 7; none before).
    pub heavy_hitters: HeavyHitters,
}

impl ValueFilterEntry {
    /// The entries the value hashed to `hash` is expected in.
    pub(crate) fn expected_values(&self, hash: KeyHash) -> f64 {
        self.heavy_hitters
            .expected(hash.lo(), self.values, self.distinct_values)
    }
}

/// Appends the directory in the current format: `varint count`, then per
/// index `varint id | leaf handle | varint distinct values | varint values
/// | block filters handle | heavy hitters` (handles are two varints,
/// heavy hitters as `hitters.rs` encodes them), ids ascending.
pub(crate) fn encode_directory(entries: &[ValueFilterEntry], out: &mut Vec<u8>) {
    put_varint(out, entries.len() as u64);
    for entry in entries {
        put_varint(out, entry.index_id);
        entry.handle.put_varints(out);
        put_varint(out, entry.distinct_values);
        put_varint(out, entry.values);
        entry.blocks.unwrap_or_default().put_varints(out);
        entry.heavy_hitters.encode(out);
    }
}

/// Reads the directory of a table of format `version` (2: `varint id |
/// leaf handle | varint distinct values` per entry; 3 to 6: with values and
/// block filters; 7: as [`encode_directory`] writes); ids must strictly
/// ascend.
pub(crate) fn decode_directory(
    d: &mut Decoder<'_>,
    version: u32,
) -> Result<Vec<ValueFilterEntry>, Corrupt> {
    let with_blocks = version >= BLOCK_FILTERS_VERSION;
    let with_hitters = version >= HEAVY_HITTERS_VERSION;
    // Each entry takes at least one byte per varint, which bounds the count
    // a damaged directory can claim.
    let min_entry_bytes = 4 + 3 * usize::from(with_blocks) + usize::from(with_hitters);
    let count = d.varint_len(d.remaining() / min_entry_bytes, "value filter count")?;
    let mut out: Vec<ValueFilterEntry> = Vec::with_capacity(count);
    for _ in 0..count {
        let at = d.position() as u64;
        let index_id = d.varint("value filter index id")?;
        let handle = BlockHandle::read_varints(d)?;
        let distinct_values = d.varint("distinct values")?;
        let (values, blocks) = if with_blocks {
            (d.varint("values")?, Some(BlockHandle::read_varints(d)?))
        } else {
            (0, None)
        };
        let heavy_hitters = if with_hitters {
            HeavyHitters::decode(d)?
        } else {
            HeavyHitters::default()
        };
        if out.last().is_some_and(|last| last.index_id >= index_id) {
            return Err(Corrupt::new(at, "value filter index ids out of order"));
        }
        out.push(ValueFilterEntry {
            index_id,
            handle,
            distinct_values,
            values,
            blocks,
            heavy_hitters,
        });
    }
    Ok(out)
}

/// The leaf of one index in one table.
#[derive(Clone, Debug)]
pub(crate) enum ValueLeaf {
    /// The leaf, decoded at open.
    Present(Arc<StandardBloom>),
    /// The table was written before the index existed: read it whole.
    Missing,
    /// The leaf is damaged: read the table whole.
    Unreadable,
}

/// One index's filters in an open table.
#[derive(Debug)]
struct IndexFilters {
    index_id: u64,
    /// `None` if it could not be read.
    leaf: Option<Arc<StandardBloom>>,
    /// `None` if the table has none (format 2) or they could not be read.
    blocks: Option<Arc<BlockFilters>>,
    entry: ValueFilterEntry,
}

/// The value filters of an open table.
#[derive(Debug, Default)]
pub(crate) struct ValueFilters {
    /// Ids ascending.
    indexes: Vec<IndexFilters>,
    /// First damage found: file offset and what was wrong.
    problem: Option<(u64, String)>,
}

impl ValueFilters {
    /// Reads every filter the directory names, for a table of
    /// `data_blocks` blocks; blocks end by `limit`. Damage makes a filter
    /// unreadable; only I/O errors fail.
    pub(crate) fn load(
        file: &dyn ReadableFile,
        path: &Path,
        directory: &[ValueFilterEntry],
        data_blocks: u64,
        limit: u64,
    ) -> Result<Self> {
        let mut out = Self::default();
        for entry in directory {
            let leaf = read_block(file, path, entry.handle, limit).and_then(|bytes| {
                StandardBloom::decode(&bytes).map_err(|e| {
                    Error::corruption(
                        path,
                        entry.handle.offset,
                        format!("leaf does not decode: {e}"),
                    )
                })
            });
            let leaf = out.keep(leaf)?.map(Arc::new);
            let blocks = match entry.blocks {
                None => None,
                Some(handle) => {
                    let filters = read_block(file, path, handle, limit).and_then(|bytes| {
                        let filters = BlockFilters::decode(&bytes)
                            .map_err(|c| c.in_file(path, handle.offset))?;
                        if filters.len() as u64 != data_blocks {
                            return Err(Error::corruption(
                                path,
                                handle.offset,
                                format!(
                                    "{} block filters for {data_blocks} data blocks",
                                    filters.len()
                                ),
                            ));
                        }
                        Ok(filters)
                    });
                    out.keep(filters)?.map(Arc::new)
                }
            };
            out.indexes.push(IndexFilters {
                index_id: entry.index_id,
                leaf,
                blocks,
                entry: entry.clone(),
            });
        }
        Ok(out)
    }

    /// No filters: every index's leaf is missing.
    pub(crate) const fn none() -> Self {
        Self {
            indexes: Vec::new(),
            problem: None,
        }
    }

    /// `read`'s value, or `None` with the damage remembered; I/O errors
    /// pass through.
    fn keep<T>(&mut self, read: Result<T>) -> Result<Option<T>> {
        match read {
            Ok(value) => Ok(Some(value)),
            Err(Error::Corruption { offset, detail, .. }) => {
                self.problem
                    .get_or_insert((offset, format!("value filter: {detail}")));
                Ok(None)
            }
            Err(other) => Err(other),
        }
    }

    fn find(&self, index_id: u64) -> Option<&IndexFilters> {
        self.indexes
            .binary_search_by_key(&index_id, |f| f.index_id)
            .ok()
            .and_then(|at| self.indexes.get(at))
    }

    /// The leaf of index `index_id`.
    pub(crate) fn leaf(&self, index_id: u64) -> ValueLeaf {
        match self.find(index_id) {
            None => ValueLeaf::Missing,
            Some(IndexFilters {
                leaf: Some(leaf), ..
            }) => ValueLeaf::Present(Arc::clone(leaf)),
            Some(_) => ValueLeaf::Unreadable,
        }
    }

    /// The block filters of index `index_id`; `None` when every block must
    /// be read (no such filters, or damaged ones).
    pub(crate) fn blocks(&self, index_id: u64) -> Option<&Arc<BlockFilters>> {
        self.find(index_id).and_then(|f| f.blocks.as_ref())
    }

    /// The directory entry of index `index_id`.
    pub(crate) fn entry(&self, index_id: u64) -> Option<&ValueFilterEntry> {
        self.find(index_id).map(|f| &f.entry)
    }

    /// Per index, ids ascending: (index id, leaf readable, block filters
    /// readable or absent by format).
    pub(crate) fn ids(&self) -> impl Iterator<Item = (u64, bool, bool)> + '_ {
        self.indexes.iter().map(|f| {
            let blocks_ok = f.blocks.is_some() || f.entry.blocks.is_none();
            (f.index_id, f.leaf.is_some(), blocks_ok)
        })
    }

    /// The first damage found, as the error `verify` reports.
    pub(crate) fn problem(&self, path: &Path) -> Option<Error> {
        self.problem
            .as_ref()
            .map(|(offset, detail)| Error::corruption(path, *offset, detail.clone()))
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
            values: 9,
            blocks: Some(BlockHandle {
                offset: 375,
                size: 20,
            }),
            heavy_hitters: HeavyHitters::of(vec![(index_id, 40), (1, 3)]),
        }
    }

    #[test]
    fn directory_golden_bytes_and_round_trip() {
        let entries = [entry(4), entry(200)];
        let mut bytes = Vec::new();
        encode_directory(&entries, &mut bytes);
        // Per entry: id, leaf handle, distinct values, values, block
        // filters handle, then 2 heavy hitters (u64 hash, varint count).
        let hitters = |id: u8| {
            [
                [2, id, 0, 0, 0, 0, 0, 0, 0, 40].as_slice(),
                &[1, 0, 0, 0, 0, 0, 0, 0, 3],
            ]
            .concat()
        };
        let golden = [
            &[2, 4, 0xac, 0x02, 70, 5, 9, 0xf7, 0x02, 20][..],
            &hitters(4),
            &[0xc8, 0x01, 0xac, 0x02, 70, 5, 9, 0xf7, 0x02, 20],
            &hitters(200),
        ]
        .concat();
        assert_eq!(bytes, golden);
        let mut d = Decoder::new(&bytes);
        assert_eq!(
            decode_directory(&mut d, HEAVY_HITTERS_VERSION).unwrap(),
            entries
        );
        assert!(d.is_empty());
        for cut in 0..bytes.len() {
            let mut d = Decoder::new(&bytes[..cut]);
            assert!(decode_directory(&mut d, HEAVY_HITTERS_VERSION).is_err());
        }
    }

    #[test]
    fn format_3_directories_have_no_heavy_hitters() {
        let bytes = [
            2, 4, 0xac, 0x02, 70, 5, 9, 0xf7, 0x02, 20, 0xc8, 0x01, 0xac, 0x02, 70, 5, 9, 0xf7,
            0x02, 20,
        ];
        let mut d = Decoder::new(&bytes);
        let entries = decode_directory(&mut d, 3).unwrap();
        assert!(d.is_empty());
        let mut want = [entry(4), entry(200)];
        for e in &mut want {
            e.heavy_hitters = HeavyHitters::default();
        }
        assert_eq!(entries, want);
        // Its mean stands for every value: 9 values over 5 distinct.
        assert_eq!(entries[0].expected_values(KeyHash::of(b"any")), 1.8);
    }

    #[test]
    fn format_2_directories_have_no_block_filters() {
        let bytes = [2, 4, 0xac, 0x02, 70, 5, 0xc8, 0x01, 0xac, 0x02, 70, 5];
        let mut d = Decoder::new(&bytes);
        let entries = decode_directory(&mut d, 2).unwrap();
        assert!(d.is_empty());
        assert_eq!(entries.len(), 2);
        assert!(entries.iter().all(|e| e.blocks.is_none() && e.values == 0));
        assert_eq!(entries[1].index_id, 200);
    }

    #[test]
    fn directory_damage_is_refused() {
        let mut bytes = Vec::new();
        encode_directory(&[entry(7), entry(7)], &mut bytes);
        let err = decode_directory(&mut Decoder::new(&bytes), 3).unwrap_err();
        assert!(err.detail.contains("out of order"));
        // A count far past what the bytes can hold fails before allocating.
        assert!(decode_directory(&mut Decoder::new(&[0xff, 0xff, 0xff, 0x0f]), 3).is_err());
    }

    #[test]
    fn filters_are_found_by_id() {
        let leaf = Arc::new(StandardBloom::with_fpr(10, 0.01).unwrap());
        let blocks = Arc::new(BlockFilters::build(1, std::iter::empty()));
        let filters = ValueFilters {
            indexes: vec![
                IndexFilters {
                    index_id: 3,
                    leaf: Some(leaf),
                    blocks: Some(blocks),
                    entry: entry(3),
                },
                IndexFilters {
                    index_id: 9,
                    leaf: None,
                    blocks: None,
                    entry: entry(9),
                },
            ],
            problem: Some((5, "bad".into())),
        };
        assert!(matches!(filters.leaf(3), ValueLeaf::Present(_)));
        assert!(filters.blocks(3).is_some());
        assert!(matches!(filters.leaf(9), ValueLeaf::Unreadable));
        assert!(filters.blocks(9).is_none());
        assert!(matches!(filters.leaf(4), ValueLeaf::Missing));
        assert_eq!(filters.entry(9).map(|e| e.values), Some(9));
        assert_eq!(
            filters.ids().collect::<Vec<_>>(),
            [(3, true, true), (9, false, false)]
        );
        let problem = filters.problem(Path::new("t.sst")).unwrap().to_string();
        assert!(problem.contains("bad"), "{problem}");
        assert!(ValueFilters::default().problem(Path::new("t")).is_none());
    }
}
