//! Search by value: "which keys have this value?", answered through value
//! indexes without scanning every table.
//!
//! An index is a name and an [`Extractor`](crate::Extractor) (what to take
//! from each value), defined in `value_def/`. Definitions live in the
//! manifest (`catalog.rs`). Every table carries, per index, a leaf (a
//! standard Bloom filter over the values it holds, sized for them by
//! `value_def/sizing.rs`) and one small filter per data block, built in
//! the pass that writes the table and pinned when it opens
//! (`sstable/filters/value/`); tables written before an index existed get
//! theirs from the backfill (`backfill.rs`). The leaves of an index are arranged
//! for search (`leaves.rs`, over `sift-value-index`). A search (`find/`)
//! probes the leaves and then the block filters, lets the planner
//! (`plan.rs`, with costs measured by `calibrate.rs`) choose between
//! reading the candidate blocks and a full scan, and validates what it
//! finds against newer versions. `stats.rs` reports each index's filters.

mod backfill;
mod calibrate;
mod catalog;
mod find;
mod leaves;
mod plan;
mod stats;

pub(in crate::db) use backfill::LockWait;
pub(in crate::db) use catalog::resolve;
pub use find::{Find, FindKeys, FindStats};
pub(in crate::db) use leaves::{DEFAULT_ORDER, IndexLeaves};
pub use stats::IndexStats;

/// What [`Db::indexes`](crate::Db::indexes) reports about one index.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct IndexInfo {
    /// The index's name.
    pub name: String,
    /// Its id in table leaf directories (unique over the database's life).
    pub id: u64,
    /// What it extracts, as [`Extractor::description`] says.
    pub extractor: String,
    /// How its leaves are sized.
    pub leaf_sizing: crate::LeafSizing,
    /// Live tables that carry a readable leaf of the index.
    pub tables_indexed: usize,
    /// Live tables written before the index existed, still waiting for the
    /// backfill (searches read them whole).
    pub tables_missing: usize,
    /// Live tables whose leaf is damaged (searches read them whole;
    /// `verify` reports them).
    pub tables_unreadable: usize,
}
