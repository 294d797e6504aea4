//! Value indexes: which values of the stored entries each table's leaf
//! (a standard Bloom filter per table and index) holds, so that a search
//! by value reads only the tables whose leaf may hold it.
//!
//! An index is a name, an [`Extractor`] (what to take from each value) and
//! a leaf shape shared by every leaf of the index, so that leaves can be
//! OR-ed into the inner nodes of a hierarchy. Definitions live in the
//! manifest ([`IndexRecord`]); leaves are written with every table
//! (`sstable/value_filter.rs`), and tables written before an index existed
//! are rewritten by the backfill (`db/indexes.rs`).

mod def;
mod extractor;
mod json_pointer;

pub use def::IndexDef;
pub(crate) use def::{IndexRecord, expected_values};
pub use extractor::{ExtractFn, Extractor};

use sift_filter::BloomShape;

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
    /// The shape every leaf of the index has.
    pub leaf_shape: BloomShape,
    /// Live tables that carry a readable leaf of the index.
    pub tables_indexed: usize,
    /// Live tables written before the index existed, still waiting for the
    /// backfill (searches scan them).
    pub tables_missing: usize,
    /// Live tables whose leaf is damaged (searches scan them; `verify`
    /// reports them).
    pub tables_unreadable: usize,
}
