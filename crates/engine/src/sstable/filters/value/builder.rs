//! [`ValueFilterBuilder`]: the value filters of one table, built in the
//! pass that writes it (flush, compaction, backfill).
//!
//! Per index, every value the extractor yields from a `Value` entry is
//! hashed once and kept with the data block it came from, deduplicated per
//! block. When the table is finished the builder knows each block's
//! distinct values and, after one sort, the table's: the block filters and
//! the leaf are then sized for what the table really holds (`sizing.rs`)
//! and filled. The buffered hashes cost 16 bytes per distinct value of a
//! block while the table is written, as the key filter's buffered key
//! hashes do.

use sift_filter::{Filter, KeyHash, StandardBloom};

use super::blocks::BlockFilters;
use super::hitters::HeavyHitters;
use crate::value_def::IndexRecord;
use crate::value_def::sizing;

/// Bits per value assumed for the size estimate that cuts tables, before
/// the real sizes are known: a leaf at 1% (10.8 bits at most) plus block
/// filters at their usual 0.05%-1% (10-15 bits).
const ESTIMATED_BITS_PER_VALUE: u64 = 24;

/// What one index collects while a table is written.
#[derive(Debug)]
struct Collecting {
    index: IndexRecord,
    /// Values of the data block being written (repeats included).
    block: Vec<KeyHash>,
    /// Distinct values of each finished block, block after block.
    hashes: Vec<KeyHash>,
    /// How many of the block's entries yielded each of `hashes`.
    counts: Vec<u64>,
    /// Where each finished block's values end in `hashes`.
    block_ends: Vec<usize>,
    /// Values extracted (repeats included).
    values: u64,
}

/// The value filters of one index, built: what the table stores.
#[derive(Debug)]
pub(crate) struct BuiltValueFilters {
    /// The index's id.
    pub index_id: u64,
    /// The leaf, encoded (a standard Bloom filter).
    pub leaf: Vec<u8>,
    /// The block filters, encoded (`blocks.rs`).
    pub blocks: Vec<u8>,
    /// Distinct values in the table (exact).
    pub distinct_values: u64,
    /// Values extracted from the table's entries (repeats included).
    pub values: u64,
    /// Its most frequent values.
    pub heavy_hitters: HeavyHitters,
}

/// Builds the value filters of one table. Call order: [`new`](Self::new),
/// then for each data block [`add`](Self::add) per `Value` entry and
/// [`block_boundary`](Self::block_boundary) once the block is written,
/// then [`finish`](Self::finish) once.
#[derive(Debug)]
pub(crate) struct ValueFilterBuilder {
    /// Per index, ids ascending.
    indexes: Vec<Collecting>,
}

impl ValueFilterBuilder {
    /// Collects the values of `indexes`.
    pub(crate) fn new(indexes: &[IndexRecord]) -> Self {
        let mut indexes: Vec<Collecting> = indexes
            .iter()
            .map(|index| Collecting {
                index: index.clone(),
                block: Vec::new(),
                hashes: Vec::new(),
                counts: Vec::new(),
                block_ends: Vec::new(),
                values: 0,
            })
            .collect();
        indexes.sort_by_key(|c| c.index.id);
        Self { indexes }
    }

    /// Whether any index is built (the write path skips extraction if not).
    pub(crate) fn is_empty(&self) -> bool {
        self.indexes.is_empty()
    }

    /// Adds every value each index extracts from `value`, each hashed once,
    /// to the current data block.
    pub(crate) fn add(&mut self, value: &[u8]) {
        for c in &mut self.indexes {
            let block = &mut c.block;
            let mut values = 0;
            c.index.extractor.extract(value, &mut |v| {
                block.push(KeyHash::of(v));
                values += 1;
            });
            c.values += values;
        }
    }

    /// Closes the current data block (possibly without values).
    pub(crate) fn block_boundary(&mut self) {
        for c in &mut self.indexes {
            c.block.sort_unstable();
            for run in c.block.chunk_by(|a, b| a == b) {
                c.hashes.extend(run.first());
                c.counts.push(run.len() as u64);
            }
            c.block.clear();
            c.block_ends.push(c.hashes.len());
        }
    }

    /// Bytes the filters will take, about: for cutting tables at their
    /// target size.
    pub(crate) fn estimated_bytes(&self) -> u64 {
        self.indexes
            .iter()
            .map(|c| {
                let values = (c.hashes.len() + c.block.len()) as u64;
                let leaf = match c.index.sizing {
                    crate::value_def::LeafSizing::Fixed(shape) => shape.bits / 8,
                    crate::value_def::LeafSizing::PerTable { .. } => 0,
                };
                leaf + values * ESTIMATED_BITS_PER_VALUE / 8 + 64
            })
            .sum()
    }

    /// The filters of every index, ids ascending, for a table of
    /// `data_blocks` blocks (the boundaries this builder was told of).
    pub(crate) fn finish(self) -> Vec<BuiltValueFilters> {
        self.indexes.into_iter().map(Collecting::finish).collect()
    }
}

impl Collecting {
    fn finish(mut self) -> BuiltValueFilters {
        let sizing = self.index.sizing;
        let block_fpr = sizing::block_fpr(sizing.target_fpr(), self.block_ends.len() as u64);
        let block_probes = sizing::probes_for(block_fpr);
        let mut start = 0;
        let blocks = self.block_ends.iter().map(|&end| {
            let values = self.hashes.get(start..end).unwrap_or_default();
            start = end;
            let bits = sizing::filter_bits(values.len() as u64, block_probes, block_fpr);
            (values, bits)
        });
        let block_filters = BlockFilters::build(block_probes, blocks);
        let mut encoded_blocks = Vec::new();
        block_filters.encode(&mut encoded_blocks);

        let heavy_hitters = self.heavy_hitters();
        self.hashes.sort_unstable();
        self.hashes.dedup();
        let distinct = self.hashes.len() as u64;
        let mut leaf = new_leaf(sizing.leaf_shape(distinct));
        for &hash in &self.hashes {
            leaf.insert(hash);
        }
        BuiltValueFilters {
            index_id: self.index.id,
            leaf: leaf.encode(),
            blocks: encoded_blocks,
            distinct_values: distinct,
            values: self.values,
            heavy_hitters,
        }
    }

    /// The table's most frequent values: the blocks' counts summed per
    /// value.
    fn heavy_hitters(&self) -> HeavyHitters {
        let mut counts: Vec<(u64, u64)> = self
            .hashes
            .iter()
            .zip(&self.counts)
            .map(|(hash, &count)| (hash.lo(), count))
            .collect();
        counts.sort_unstable_by_key(|&(hash, _)| hash);
        let totals = counts
            .chunk_by(|a, b| a.0 == b.0)
            .map(|run| (run[0].0, run.iter().map(|&(_, c)| c).sum()))
            .collect();
        HeavyHitters::of(totals)
    }
}

/// An empty leaf of `shape`.
#[expect(
    clippy::expect_used,
    reason = "sizings are validated: 64 ..= 2^36 bits and 1 ..= 64 probes, which the filter accepts"
)]
fn new_leaf(shape: sift_filter::BloomShape) -> StandardBloom {
    StandardBloom::new(shape).expect("a validated leaf shape")
}
