//! Step 1 of a search: the leaves name the tables that may hold the value,
//! then each such table's block filters name its blocks that may.

use std::sync::Arc;

use sift_filter::KeyHash;
use sift_value_index::planner::CostModel;
use sift_value_index::{Method, ProbeStats};

use super::FindStats;
use super::read::Query;
use crate::db::SuperVersion;
use crate::db::value::leaves::IndexState;
use crate::db::value::plan::{RunWork, Workload};
use crate::error::Result;
use crate::sstable::Table;
use crate::value_def::IndexRecord;

/// A table a search reads, and which of its blocks.
#[derive(Debug)]
pub(super) struct CandidateTable {
    /// Its metadata, held while the search reads it.
    pub reader: Arc<Table>,
    /// Where it is in the version: level, and run within the level.
    pub level: usize,
    pub run: usize,
    /// Its data blocks that may hold the value, ascending.
    pub blocks: Vec<usize>,
}

/// What the probes found, tables in read order (level, then run).
#[derive(Debug, Default)]
pub(super) struct Candidates {
    pub tables: Vec<CandidateTable>,
    /// Per run of the version, in read order: its size, and what its
    /// candidates would read.
    runs: Vec<RunWork>,
    /// Data blocks and entries of all the version's tables.
    store_blocks: u64,
    store_entries: u64,
}

/// Probes the leaves of `state` by `method` (each class's cheapest under
/// `model` when `None`), then the block filters of every positive table.
/// Tables without a readable leaf are candidates, with every block their
/// block filters (if readable) do not rule out.
pub(super) fn probe(
    current: &SuperVersion,
    record: &IndexRecord,
    state: &mut IndexState,
    method: Option<Method>,
    model: &CostModel,
    hash: KeyHash,
    stats: &mut FindStats,
) -> Result<Candidates> {
    let mut probes = ProbeStats::default();
    let (positive, used) = state.search(method, model, hash, &mut probes);
    stats.add_probes(&probes);
    stats.method = used;
    stats.leaf_classes = state.classes() as u64;
    let mut out = Candidates {
        store_blocks: state.store_blocks,
        store_entries: state.store_entries,
        ..Candidates::default()
    };
    for (level, tables) in current.version.levels.iter().enumerate() {
        for (run, tables) in tables.runs.iter().enumerate() {
            out.runs.push(RunWork::default());
            for table in tables.tables() {
                if let Some(work) = out.runs.last_mut() {
                    work.blocks += table.summary().map_or(0, |s| s.data_blocks);
                    work.entries += table.meta.entries;
                }
                let id = table.meta.id;
                let unindexed = state.unindexed.contains(&id);
                if !unindexed && positive.binary_search(&id).is_err() {
                    continue;
                }
                stats.tables_unindexed += u64::from(unindexed);
                let reader = table.table_arc()?;
                let count = reader.data_blocks();
                let blocks: Vec<usize> = match reader.block_filters(record.id) {
                    Some(filters) => {
                        stats.block_filters_probed += count as u64;
                        filters.positive_blocks(hash)
                    }
                    None => (0..count).collect(),
                };
                stats.blocks_positive += blocks.len() as u64;
                if blocks.is_empty() {
                    continue;
                }
                let per_block = table.meta.entries as f64 / count.max(1) as f64;
                // Its count if the value is one of the table's heavy
                // hitters, else the mean of its other values; at most the
                // candidate blocks' entries.
                let in_table = reader
                    .value_filters()
                    .entry(record.id)
                    .filter(|e| e.values > 0 && e.distinct_values > 0)
                    .map_or(1.0, |e| e.expected_values(hash));
                let expected = in_table.min(blocks.len() as f64 * per_block);
                if let Some(work) = out.runs.last_mut() {
                    work.candidate_blocks += blocks.len() as u64;
                    work.candidate_entries += blocks.len() as f64 * per_block;
                    work.expected_results += expected;
                }
                out.tables.push(CandidateTable {
                    reader,
                    level,
                    run,
                    blocks,
                });
            }
        }
    }
    Ok(out)
}

impl Candidates {
    /// What reading the candidates for `query` would cost, beside scanning
    /// `current`.
    pub(super) fn workload(&self, current: &SuperVersion, query: &Query) -> Workload {
        let mut work = Workload {
            total_blocks: self.store_blocks,
            total_entries: self.store_entries,
            runs: self.runs.clone(),
            ..Workload::default()
        };
        for run in &self.runs {
            work.candidate_blocks += run.candidate_blocks;
            work.candidate_entries += run.candidate_entries;
            work.expected_results += run.expected_results;
        }
        let memtables = std::iter::once(&current.active).chain(&current.immutables);
        for (memtable, posted) in memtables.zip(&query.posted) {
            let entries = memtable.len() as u64;
            work.memtable_entries += entries;
            match *posted {
                Some(keys) => work.memtable_postings += keys,
                None => work.memtable_entries_read += entries,
            }
        }
        work
    }
}
