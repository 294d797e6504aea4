//! What [`Db::stats`](crate::Db::stats) reports about each value index:
//! the size and the measured accuracy of its filters.

use super::leaves::IndexState;
use crate::db::{Inner, lock};
use crate::sstable::ValueLeaf;
use std::sync::Arc;

use crate::version::Version;

/// The filters of one value index, over the live tables.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct IndexStats {
    /// The index's name.
    pub name: String,
    /// Tables with a readable leaf.
    pub tables_indexed: usize,
    /// Tables without one (not yet backfilled, or damaged): searches read
    /// them whole.
    pub tables_unindexed: usize,
    /// Distinct values, summed over the tables (a value in two tables
    /// counts twice: each leaf holds it).
    pub distinct_values: u64,
    /// Values extracted, repeats included, summed over the tables.
    pub values: u64,
    /// The false-positive rate the leaves aim at.
    pub target_fpr: f64,
    /// Bytes of leaves (pinned in memory).
    pub leaf_bytes: u64,
    /// Leaf bits per distinct value of a table.
    pub leaf_bits_per_value: f64,
    /// Leaf shapes in use (one search structure each).
    pub leaf_classes: usize,
    /// False-positive rate of the leaves measured with sampled absent
    /// values (each leaf probed with the same 1,024 values when it joined).
    pub measured_leaf_fpr: f64,
    /// Probes that measurement rests on.
    pub fpr_probes: u64,
    /// Bytes of block filters (pinned in memory).
    pub block_filter_bytes: u64,
    /// Block filter bits per value extracted (per indexed record, for one
    /// value a record): block filters hold each block's distinct values,
    /// so with few distinct values per table they cost more per distinct
    /// value than per record.
    pub block_filter_bits_per_value: f64,
}

impl Inner {
    /// The statistics of every live index over `version`. An index whose
    /// search structures cannot follow the version (an internal error that
    /// its next search reports) is left out.
    pub(in crate::db) fn index_stats(&self, version: &Arc<Version>) -> Vec<IndexStats> {
        self.indexes()
            .iter()
            .filter_map(|record| {
                let state = self.value_leaves.of(record);
                let mut state = lock(&state);
                state.sync(version).ok()?;
                let fpr = record.sizing.target_fpr();
                Some(describe(version, record.id, &record.name, fpr, &state))
            })
            .collect()
    }
}

fn describe(
    version: &Version,
    id: u64,
    name: &str,
    target_fpr: f64,
    state: &IndexState,
) -> IndexStats {
    let (measured_leaf_fpr, fpr_probes) = state.measured_fpr();
    let mut stats = IndexStats {
        name: name.to_owned(),
        tables_unindexed: state.unindexed.len(),
        target_fpr,
        leaf_classes: state.classes(),
        measured_leaf_fpr,
        fpr_probes,
        ..IndexStats::default()
    };
    // A table that cannot be read counts as unindexed.
    for table in version.tables().filter_map(|t| t.table().ok()) {
        let ValueLeaf::Present(leaf) = table.value_filter(id) else {
            continue;
        };
        stats.tables_indexed += 1;
        stats.leaf_bytes += leaf.shape().bits.div_ceil(64) * 8;
        if let Some(entry) = table.value_filters().entry(id) {
            stats.distinct_values += entry.distinct_values;
            stats.values += entry.values;
        }
        if let Some(blocks) = table.block_filters(id) {
            stats.block_filter_bytes += blocks.size_bytes();
        }
    }
    let bits_per = |bytes: u64, count: u64| {
        if count == 0 {
            0.0
        } else {
            bytes as f64 * 8.0 / count as f64
        }
    };
    stats.leaf_bits_per_value = bits_per(stats.leaf_bytes, stats.distinct_values);
    stats.block_filter_bits_per_value = bits_per(stats.block_filter_bytes, stats.values);
    stats
}
